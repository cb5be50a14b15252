"""The local cluster is a real Kubernetes cluster: Jobs run to completion on simulated nodes.

No pykueue component is involved here: these tests prove the ground the other e2e tests stand
on (apiserver, controller manager, scheduler and kwok working together).
"""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s

from hack.localcluster import SIMULATED_NODE_LABEL
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
