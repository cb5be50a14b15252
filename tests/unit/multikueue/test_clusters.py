"""MultiKueueCluster: client per kubeconfig, Active condition with Kueue's reasons, backoff, rotation."""

from __future__ import annotations

import base64
from typing import Any

import yaml

from controller.multikueue.clusters import ClusterController, Registry, retry_delay
from controller.runtime.events import RecordingEvents
from pykueue.kube import resources as R
from tests.builders import MultiKueueClusterBuilder
from tests.unit.multikueue.fake import FakeClient, FakeInformer
from tests.unit.multikueue.test_kubeconfig import kubeconfig

NS = "pykueue-system"


def secret(name: str, document: dict[str, Any]) -> dict[str, Any]:
    data = base64.b64encode(yaml.safe_dump(document).encode()).decode()
    return {"metadata": {"name": name, "namespace": NS}, "data": {"kubeconfig": data}}


class Setup:
    def __init__(self, document: dict[str, Any] | None = None) -> None:
        self.manager = FakeClient()
        self.cluster = self.manager.put(R.MULTIKUEUE_CLUSTERS, MultiKueueClusterBuilder("w1").obj())
        if document is not None:
            self.manager.put(R.SECRETS, secret("w1-kubeconfig", document))
        self.informer = FakeInformer(self.cluster)
        self.remote = FakeClient()
        self.built: list[dict[str, Any]] = []
        self.events = RecordingEvents()
        self.registry = Registry()
        self.controller = ClusterController(
            self.manager, self.informer, self.registry, namespace=NS, events=self.events,
            client_factory=self._factory, probe_interval=5.0,
        )

    def _factory(self, document: dict[str, Any]) -> Any:
        self.built.append(document)
        return self.remote

    def active(self) -> dict[str, Any]:
        cluster = self.manager.get(R.MULTIKUEUE_CLUSTERS, "w1")
        assert cluster is not None
        self.informer.store.put(cluster)
        [cond] = cluster["status"]["conditions"]
        return cond


def test_a_reachable_worker_is_active_and_probed_again() -> None:
    s = Setup(kubeconfig())
    assert s.controller.reconcile("w1") == 5.0
    cond = s.active()
    assert (cond["status"], cond["reason"], cond["message"]) == ("True", "Active", "Connected")
    assert s.registry.active_client("w1") is s.remote
    assert s.events.reasons() == ["Active"]


def test_an_exec_plugin_is_refused_with_bad_config_and_no_client() -> None:
    s = Setup(kubeconfig(user={"exec": {"command": "/bin/sh"}}))
    assert s.controller.reconcile("w1") is None
    cond = s.active()
    assert (cond["status"], cond["reason"]) == ("False", "BadConfig")
    assert "exec credential plugins are not allowed" in cond["message"]
    assert s.built == [] and s.registry.active_client("w1") is None


def test_a_missing_secret_is_a_bad_config() -> None:
    s = Setup(None)
    s.controller.reconcile("w1")
    assert s.active()["message"] == f"Secret {NS}/w1-kubeconfig not found"


def test_an_unreachable_worker_is_retried_with_growing_delays_then_recovers() -> None:
    s = Setup(kubeconfig())
    s.controller.reconcile("w1")
    s.remote.down = True
    delays = [s.controller.reconcile("w1") for _ in range(4)]
    assert delays == [1.0, 2.0, 4.0, 8.0]
    cond = s.active()
    assert (cond["status"], cond["reason"]) == ("False", "ClientConnectionFailed")
    assert s.registry.active_client("w1") is None
    s.remote.down = False
    assert s.controller.reconcile("w1") == 5.0
    assert s.active()["status"] == "True"
    assert s.events.reasons() == ["Active", "ClientConnectionFailed", "Active"]


def test_a_rotated_secret_rebuilds_the_client() -> None:
    s = Setup(kubeconfig())
    s.controller.reconcile("w1")
    s.controller.reconcile("w1")
    assert len(s.built) == 1  # unchanged kubeconfig: same client
    rotated = kubeconfig(user={"token": "rotated"})
    s.manager.put(R.SECRETS, secret("w1-kubeconfig", rotated))
    s.controller.reconcile("w1")
    assert len(s.built) == 2 and s.built[-1]["users"][0]["user"]["token"] == "rotated"


def test_a_deleted_cluster_forgets_its_client() -> None:
    s = Setup(kubeconfig())
    s.controller.reconcile("w1")
    s.informer.store.items.clear()
    assert s.controller.reconcile("w1") is None
    assert s.registry.names() == []


def test_retry_delay_is_capped() -> None:
    assert [retry_delay(n, cap=10) for n in (0, 1, 2, 3, 4, 5, 40)] == [1, 1, 2, 4, 8, 10, 10]
