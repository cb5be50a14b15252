"""The local cluster is a real Kubernetes cluster: Jobs run to completion on simulated nodes.

No pykueue component is involved here: these tests prove the ground the other e2e tests stand
on (apiserver, controller manager, scheduler and kwok working together).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException
from urllib3.exceptions import ProtocolError

from hack.localcluster import SIMULATED_NODE_LABEL, LocalCluster, binaries
from hack.localcluster.https import get_status, tls_context
from hack.localcluster.pki import APISERVER_ETCD_CLIENT
from tests.builders import JobBuilder, PodBuilder
from tests.e2e.helpers.wait import wait_for


def _simulated_node_names(core: k8s.CoreV1Api) -> set[str]:
    nodes = core.list_node(label_selector=SIMULATED_NODE_LABEL).items
    return {node.metadata.name for node in nodes}


def _job_condition(job: Any, type_: str) -> bool:
    return any(c.type == type_ and c.status == "True" for c in (job.status.conditions or []))


def test_plain_job_runs_on_simulated_nodes_and_completes(kube: k8s.ApiClient, namespace: str) -> None:
    core, batch = k8s.CoreV1Api(kube), k8s.BatchV1Api(kube)
    simulated_nodes = _simulated_node_names(core)
    assert simulated_nodes, "the cluster has no simulated (kwok) nodes"

    job = JobBuilder("plain", namespace).parallelism(3).completions(3).requests(cpu="1").run_seconds(1).obj()
    batch.create_namespaced_job(namespace, job)

    def three_scheduled_pods() -> list[Any]:
        pods = core.list_namespaced_pod(namespace, label_selector="job-name=plain").items
        return pods if len(pods) == 3 and all(p.spec.node_name for p in pods) else []

    pods = wait_for(three_scheduled_pods, timeout=60, message="3 pods of Job plain scheduled")
    assert {p.spec.node_name for p in pods} <= simulated_nodes

    completed = wait_for(
        lambda: (j := batch.read_namespaced_job("plain", namespace)) and _job_condition(j, "Complete") and j,
        timeout=60,
        message="Job plain Complete",
    )
    assert completed.status.succeeded == 3
    assert not _job_condition(completed, "Failed")

    finished = core.list_namespaced_pod(namespace, label_selector="job-name=plain").items
    assert sorted(p.status.phase for p in finished) == ["Succeeded"] * 3


def test_simulated_nodes_renew_their_leases(kube: k8s.ApiClient) -> None:
    """Without renewed Leases the node-lifecycle controller would mark the nodes NotReady."""
    core, coordination = k8s.CoreV1Api(kube), k8s.CoordinationV1Api(kube)
    node = sorted(_simulated_node_names(core))[0]
    first = wait_for(
        lambda: coordination.read_namespaced_lease(node, "kube-node-lease"),
        timeout=30,
        message=f"Lease of node {node}",
    )
    wait_for(
        lambda: (
            coordination.read_namespaced_lease(node, "kube-node-lease").spec.renew_time
            > first.spec.renew_time
        ),
        timeout=45,
        message=f"Lease of node {node} renewed",
    )


def test_pod_with_negative_run_seconds_keeps_running(kube: k8s.ApiClient, namespace: str) -> None:
    core = k8s.CoreV1Api(kube)
    core.create_namespaced_pod(namespace, PodBuilder("forever", namespace).run_seconds(-1).obj())

    def running_and_ready(name: str) -> bool:
        pod = core.read_namespaced_pod(name, namespace)
        ready = [c for c in pod.status.conditions or [] if c.type == "Ready"]
        return pod.status.phase == "Running" and bool(ready) and ready[0].status == "True"

    wait_for(lambda: running_and_ready("forever"), timeout=60, message="pod forever Running and Ready")

    # A control pod started later with a 1s run time finishes while `forever` keeps running,
    # so the simulator was demonstrably completing pods during the observation.
    core.create_namespaced_pod(namespace, PodBuilder("brief", namespace).run_seconds(1).obj())
    wait_for(
        lambda: core.read_namespaced_pod("brief", namespace).status.phase == "Succeeded",
        timeout=60,
        message="pod brief Succeeded",
    )
    forever = core.read_namespaced_pod("forever", namespace)
    assert forever.spec.node_name in _simulated_node_names(core)
    assert running_and_ready("forever"), f"pod forever left Running: {forever.status.phase}"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.removeprefix("v").split("."))


@pytest.mark.needs_local_cluster
def test_control_plane_runs_the_pinned_builds_cached_outside_the_repository(
    cluster: LocalCluster, kube: k8s.ApiClient
) -> None:
    """The processes serving the suite are the pinned v1.36 control plane and an etcd new enough
    for v1.36's watch cache (3.5.13+), each executing from its per-pin cache directory."""
    pins = binaries.read_versions()
    assert k8s.VersionApi(kube).get_code().git_version == pins["K8S_VERSION"]
    assert _version(pins["K8S_VERSION"])[:2] == (1, 36)

    ports, pki = cluster.ports, cluster.layout.pki
    assert ports is not None
    context = tls_context(
        pki.ca_cert, pki.client_cert(APISERVER_ETCD_CLIENT), pki.client_key(APISERVER_ETCD_CLIENT)
    )
    status, body = get_status(f"https://127.0.0.1:{ports.etcd_client}/version", context)
    assert status == 200, body
    etcd_version = json.loads(body)["etcdserver"]
    assert etcd_version == pins["ETCD_VERSION"].removeprefix("v")
    assert _version(etcd_version) >= (3, 5, 13)

    bin_root = binaries.cache_root() / "bin"
    running = cluster.status()["processes"]
    for name, pid in running.items():
        assert pid is not None, f"{name} is not running"
        executable = Path(f"/proc/{pid}/exe").resolve()
        expected = binaries.binary_path(name, pins, bin_root).resolve()
        assert executable == expected, f"{name} runs {executable}, not the pinned {expected}"
        assert binaries.REPO_ROOT not in executable.parents


def _watch_events(
    core: k8s.CoreV1Api, namespace: str, resource_version: str, timeout: int
) -> list[dict[str, Any]]:
    """All events of a configmap watch from `resource_version`, read until the server ends it."""
    response = core.list_namespaced_config_map(
        namespace,
        watch=True,
        resource_version=resource_version,
        timeout_seconds=timeout,
        _preload_content=False,
    )
    try:
        body = response.read().decode()
    finally:
        response.release_conn()
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def _status_of(call: Callable[[], Any]) -> int | None:
    """HTTP status of an API call that is expected to fail (None while it still succeeds)."""
    try:
        call()
    except ApiException as err:
        return err.status
    return None


@pytest.mark.needs_local_cluster
def test_restarting_the_apiserver_ends_watches_and_keeps_objects(
    cluster: LocalCluster, kube: k8s.ApiClient, namespace: str
) -> None:
    """Restarts kube-apiserver, a process only the local cluster controls."""
    core = k8s.CoreV1Api(kube)
    core.create_namespaced_config_map(namespace, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="kept")))
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    watch = core.list_namespaced_config_map(
        namespace, watch=True, resource_version=rv, timeout_seconds=120, _preload_content=False
    )
    cluster.restart_apiserver()
    started = time.monotonic()
    try:
        watch.read()  # returns (or breaks) once the server side of the stream is gone
    except ProtocolError:
        pass  # the apiserver went away mid-stream: the watch ended, which is what we check
    finally:
        watch.release_conn()
    assert time.monotonic() - started < 30, "the watch outlived the apiserver restart"
    kept = wait_for(
        lambda: core.read_namespaced_config_map("kept", namespace),
        timeout=30,
        message="configmap kept readable after the restart",
    )
    assert kept.metadata.name == "kept"


@pytest.mark.needs_local_cluster
def test_compacting_etcd_expires_older_resource_versions(
    cluster: LocalCluster, kube: k8s.ApiClient, namespace: str
) -> None:
    """Compacts etcd and restarts kube-apiserver, processes only the local cluster controls."""
    core = k8s.CoreV1Api(kube)
    for i in range(3):
        core.create_namespaced_config_map(
            namespace, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name=f"cm-{i}"))
        )
    page = core.list_namespaced_config_map(namespace, limit=1)
    continue_token, old_rv = page.metadata._continue, page.metadata.resource_version
    assert continue_token, "expected a paginated list"
    # Before compaction both are still served.
    assert (
        _status_of(lambda: core.list_namespaced_config_map(namespace, limit=1, _continue=continue_token))
        is None
    )
    assert all(e["type"] != "ERROR" for e in _watch_events(core, namespace, old_rv, timeout=1))

    compacted_at = cluster.compact_etcd()
    assert compacted_at > int(old_rv)

    wait_for(
        lambda: (
            _status_of(lambda: core.list_namespaced_config_map(namespace, limit=1, _continue=continue_token))
            == 410
        ),
        timeout=30,
        message="continuing a list from before the compaction answers 410 Gone",
    )
    events = _watch_events(core, namespace, old_rv, timeout=5)
    assert [(e["type"], e["object"].get("code")) for e in events] == [("ERROR", 410)]
