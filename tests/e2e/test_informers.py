"""Informers against the real apiserver: the cache converges to the server's list and recovers
from an apiserver restart and from a resourceVersion that etcd compacted away (410 Gone)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import REGISTRY

from controller.runtime.informer import FuncHandler, Informer
from controller.runtime.reflector import ListerWatcher
from pykueue.kube.client import KubeClient
from pykueue.kube.resources import CONFIG_MAPS, NAMESPACES, Resource
from tests.builders import ConfigMapBuilder
from tests.e2e.helpers.wait import wait_for

# A short read timeout: a cut connection is noticed in seconds, not minutes.
READ_TIMEOUT = 10.0
# Only the tests read ServiceAccounts, so the descriptor lives here.
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount", True)


@pytest.fixture(scope="module")
def client(cluster: Any) -> Iterator[KubeClient]:
    kube_client = KubeClient.from_config(cluster.kubeconfig, user_agent="pykueue-e2e")
    try:
        yield kube_client
    finally:
        kube_client.close()


class Tracker:
    """Replays handler notifications into name -> resourceVersion, to compare with the server."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.objects: dict[str, str] = {}
        self.tombstones: list[str] = []

    def handler(self) -> FuncHandler:
        return FuncHandler(add=self._set, update=lambda _old, new: self._set(new), delete=self._delete)

    def _set(self, obj: dict[str, Any]) -> None:
        with self.lock:
            self.objects[obj["metadata"]["name"]] = obj["metadata"]["resourceVersion"]

    def _delete(self, obj: dict[str, Any]) -> None:
        with self.lock:
            self.objects.pop(obj["metadata"]["name"], None)
            self.tombstones.append(obj["metadata"]["name"])

    def snapshot(self) -> dict[str, str]:
        with self.lock:
            return dict(self.objects)


def server_view(client: KubeClient, namespace: str) -> dict[str, str]:
    items, _ = client.list_all(CONFIG_MAPS, namespace)
    return {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in items}


def store_view(informer: Informer) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in informer.store.list()}


def converged(
    client: KubeClient, informer: Informer, tracker: Tracker, namespace: str
) -> dict[str, str] | None:
    expected = server_view(client, namespace)
    if store_view(informer) == expected and tracker.snapshot() == expected:
        return expected or {"<empty>": ""}
    return None


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def informer_factory(client: KubeClient) -> Iterator[Any]:
    started: list[Informer] = []

    def make(namespace: str, source: ListerWatcher | None = None) -> tuple[Informer, Tracker]:
        informer = Informer(source or client, CONFIG_MAPS, namespace=namespace, read_timeout=READ_TIMEOUT)
        tracker = Tracker()
        informer.add_handler(tracker.handler())
        informer.start()
        started.append(informer)
        assert informer.wait_for_sync(30), "informer did not sync"
        return informer, tracker

    yield make
    for informer in started:
        informer.stop()


def cm(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return ConfigMapBuilder(name, namespace).data(**data).obj()


def test_store_converges_after_creates_updates_and_deletes(
    client: KubeClient, namespace: str, informer_factory
) -> None:
    for i in range(5):
        client.create(CONFIG_MAPS, cm(f"before-{i}", namespace, n=str(i)))
    informer, tracker = informer_factory(namespace)
    assert {f"before-{i}" for i in range(5)} <= set(store_view(informer)), "initial list filled the store"

    for i in range(20):
        client.create(CONFIG_MAPS, cm(f"cm-{i}", namespace, n=str(i)))
    for i in range(0, 20, 2):
        client.patch(CONFIG_MAPS, f"cm-{i}", {"data": {"n": f"updated-{i}"}}, namespace)
    for i in range(0, 20, 5):
        client.delete(CONFIG_MAPS, f"cm-{i}", namespace)
    client.delete(CONFIG_MAPS, "before-0", namespace)

    final = wait_for(
        lambda: converged(client, informer, tracker, namespace),
        timeout=30,
        message="informer converged to the server",
    )
    assert "cm-0" not in final and "before-0" not in final and "cm-2" in final
    assert informer.store.get(f"{namespace}/cm-2")["data"] == {"n": "updated-2"}
    assert all("managedFields" not in o["metadata"] for o in informer.store.list()), "cache is trimmed"


@pytest.mark.needs_local_cluster
def test_informer_recovers_after_apiserver_restart(
    cluster: Any, client: KubeClient, namespace: str, informer_factory
) -> None:
    """Restarts kube-apiserver, a process only the local cluster controls."""
    client.create(CONFIG_MAPS, cm("stays", namespace))
    client.create(CONFIG_MAPS, cm("goes", namespace))
    informer, tracker = informer_factory(namespace)
    restarts_before = sum(
        metric("pykueue_reflector_watch_restarts_total", resource="configmaps", reason=r)
        for r in ("disconnected", "stalled", "timeout", "error", "expired")
    )

    cluster.restart_apiserver()
    assert_new_namespaces_work_at_once(client)

    client.create(CONFIG_MAPS, cm("after-restart", namespace))
    client.patch(CONFIG_MAPS, "stays", {"data": {"v": "2"}}, namespace)
    client.delete(CONFIG_MAPS, "goes", namespace)
    final = wait_for(
        lambda: converged(client, informer, tracker, namespace),
        timeout=60,
        message="informer converged after restart",
    )
    assert set(final) >= {"stays", "after-restart"} and "goes" not in final
    restarts_after = sum(
        metric("pykueue_reflector_watch_restarts_total", resource="configmaps", reason=r)
        for r in ("disconnected", "stalled", "timeout", "error", "expired")
    )
    assert restarts_after > restarts_before, "the cut watch was noticed and re-opened"


def assert_new_namespaces_work_at_once(client: KubeClient) -> None:
    """restart_apiserver() returns only once the controller manager caught up: a namespace made
    right after it gets its ``default`` ServiceAccount within seconds, not after a watch backoff."""
    probe = f"after-restart-{uuid.uuid4().hex[:6]}"
    client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": probe}})
    try:
        wait_for(
            lambda: client.get(SERVICE_ACCOUNTS, "default", probe),
            timeout=10,
            message=f"ServiceAccount default in {probe} right after the restart",
        )
    finally:
        client.delete(NAMESPACES, probe)


class PartitionedSource:
    """The real client, with a switch that cuts the open watch and holds reconnects back.

    This simulates a long network partition between the controller and the apiserver; every
    byte still comes from the real apiserver.
    """

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._open = threading.Event()
        self._open.set()
        self._lock = threading.Lock()
        self._streams: list[Any] = []
        self.watch_resource_versions: list[str] = []

    def list_pages(self, *args: Any, **kwargs: Any) -> Any:
        return self._client.list_pages(*args, **kwargs)

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        self._open.wait(120)
        stream = self._client.watch(*args, **kwargs)
        with self._lock:
            self._streams.append(stream)
            self.watch_resource_versions.append(kwargs["resource_version"])
        return stream

    def watching(self) -> bool:
        with self._lock:
            return bool(self._streams)

    def partition(self) -> None:
        self._open.clear()
        with self._lock:
            for stream in self._streams:
                stream.close()

    def heal(self) -> None:
        self._open.set()


@pytest.mark.needs_local_cluster
def test_informer_relists_after_compaction_and_reports_vanished_objects(
    cluster: Any, client: KubeClient, namespace: str, informer_factory
) -> None:
    """Compacts etcd (and restarts kube-apiserver), processes only the local cluster controls."""
    for name in ("keep", "changed", "deleted-1", "deleted-2"):
        client.create(CONFIG_MAPS, cm(name, namespace))
    source = PartitionedSource(client)
    informer, tracker = informer_factory(namespace, source)
    wait_for(source.watching, timeout=10, message="watch opened")
    expired_before = metric("pykueue_reflector_relists_total", resource="configmaps", reason="expired")

    # While the informer is cut off: changes it cannot see, then etcd compacts the history it
    # would resume from (the apiserver's watch cache follows the compaction).
    source.partition()
    resume_from = informer.reflector.last_sync_resource_version
    client.delete(CONFIG_MAPS, "deleted-1", namespace)
    client.delete(CONFIG_MAPS, "deleted-2", namespace)
    client.patch(CONFIG_MAPS, "changed", {"data": {"v": "new"}}, namespace)
    client.create(CONFIG_MAPS, cm("created", namespace))
    cluster.compact_etcd()
    source.heal()

    final = wait_for(
        lambda: converged(client, informer, tracker, namespace),
        timeout=60,
        message="informer converged after 410 Gone",
    )
    assert set(final) - {"kube-root-ca.crt"} == {"keep", "changed", "created"}
    assert resume_from in source.watch_resource_versions, "the reflector first tried to resume"
    assert (
        metric("pykueue_reflector_relists_total", resource="configmaps", reason="expired")
        == expired_before + 1
    )
    assert {"deleted-1", "deleted-2"} <= set(tracker.tombstones), "deletes missed by the watch were reported"
    assert informer.store.get(f"{namespace}/changed")["data"] == {"v": "new"}
