"""On kind: two controller replicas of the chart, the leader's pod deleted, the standby takes over.

The chart's controller runs with ``--leader-elect`` and ``--identity=$(POD_NAME)`` on the Lease
``pykueue-controller-leader`` (client-go's 15 s lease by default). With two replicas, deleting the
leader's pod must hand the Lease to another pod within the lease duration (plus a retry period),
admission must carry on under the new leader, and no Workload may be admitted twice (one
``Admitted`` Event each, the first Workload's QuotaReserved condition and its Job's pod unchanged
across the failover, the ClusterQueue's usage the sum of the two).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kind.kube import BUSYBOX, NAMESPACE, get, kubectl, wait_for

LEASE = "pykueue-controller-leader"
DEPLOYMENT = "pykueue-controller"
LEASE_DURATION = 15.0
RETRY_PERIOD = 2.0


def holder() -> str:
    lease = get("lease", LEASE, "-n", NAMESPACE)
    return str(lease["spec"].get("holderIdentity") or "")


def ready_pods() -> list[str]:
    pods = get("pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/component=controller")["items"]
    return [
        pod["metadata"]["name"]
        for pod in pods
        if not pod["metadata"].get("deletionTimestamp")
        and any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", []))
    ]


@pytest.fixture
def two_replicas() -> Iterator[None]:
    kubectl("scale", "deployment", DEPLOYMENT, "-n", NAMESPACE, "--replicas=2")
    try:
        wait_for(lambda: len(ready_pods()) == 2, 180, "the second controller replica never became Ready")
        yield
    finally:
        kubectl("scale", "deployment", DEPLOYMENT, "-n", NAMESPACE, "--replicas=1")
        kubectl("rollout", "status", "deployment", DEPLOYMENT, "-n", NAMESPACE, "--timeout=180s", check=False)


def submit(ns: str, name: str) -> None:
    job = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "main"}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{
            "name": "c", "image": BUSYBOX, "imagePullPolicy": "Never",
            "command": ["sleep", "3600"], "resources": {"requests": {"cpu": "250m", "memory": "16Mi"}}}]}}},
    }  # fmt: skip
    created = json.loads(kubectl("create", "-o", "json", "-f", "-", input=json.dumps(job)))
    assert created["spec"]["suspend"] is True


def admitted(ns: str, name: str) -> bool:
    return get("job", name, "-n", ns)["spec"].get("suspend") is False


def quota_reserved_at(ns: str) -> dict[str, str]:
    """Each Workload's QuotaReserved lastTransitionTime (a second reservation would move it)."""
    return {
        wl["metadata"]["name"]: c["lastTransitionTime"]
        for wl in get("workloads", "-n", ns)["items"]
        for c in wl.get("status", {}).get("conditions", [])
        if c["type"] == "QuotaReserved" and c["status"] == "True"
    }


def job_pods(ns: str, name: str) -> list[str]:
    return sorted(pod["metadata"]["uid"] for pod in get("pods", "-n", ns, "-l", f"job-name={name}")["items"])


def test_deleting_the_leader_pod_hands_admission_to_the_other_replica(
    two_replicas: None, queue: tuple[str, str]
) -> None:
    ns, cq = queue
    leader = wait_for(lambda: holder() in ready_pods() and holder(), 60, "no Ready pod holds the Lease")
    submit(ns, "before")
    wait_for(lambda: admitted(ns, "before"), 90, "the first leader never admitted the Job")

    reserved_before = quota_reserved_at(ns)
    assert len(reserved_before) == 1, reserved_before
    pods_before = wait_for(lambda: job_pods(ns, "before"), 60, "the first Job's pod exists")
    deleted_at = time.monotonic()
    kubectl("delete", "pod", leader, "-n", NAMESPACE, "--wait=false")
    new_leader = wait_for(
        lambda: holder() not in ("", leader) and holder(), LEASE_DURATION + 4 * RETRY_PERIOD + 10,
        f"the Lease never left {leader}",
    )
    took = time.monotonic() - deleted_at
    assert took <= LEASE_DURATION + 4 * RETRY_PERIOD + 10, took

    submit(ns, "after")
    wait_for(lambda: admitted(ns, "after"), 90, f"the new leader {new_leader} never admitted the second Job")

    workloads = get("workloads", "-n", ns)["items"]
    assert len(workloads) == 2
    # The new leader took over the first admission as it was: not reserved again, the Job not
    # stopped and restarted (its pod is the same one).
    reserved_after = quota_reserved_at(ns)
    assert {name: reserved_after.get(name) for name in reserved_before} == reserved_before
    assert job_pods(ns, "before") == pods_before
    events: list[dict[str, Any]] = get("events", "-n", ns, "--field-selector", "reason=Admitted")["items"]
    per_workload: dict[str, int] = {}
    for event in events:
        if event["involvedObject"]["kind"] == "Workload":
            per_workload[event["involvedObject"]["name"]] = per_workload.get(
                event["involvedObject"]["name"], 0
            ) + int(event.get("count") or 1)
    assert sorted(per_workload.values()) == [1, 1], per_workload

    def usage() -> dict[str, Any] | None:
        status = get("clusterqueue", cq)["status"]
        return status if status.get("admittedWorkloads") == 2 else None

    status = wait_for(usage, 30, "the ClusterQueue never counted two admitted workloads")
    (flavor,) = status["flavorsUsage"]
    used = {r["name"]: r["total"] for r in flavor["resources"]}
    assert used["cpu"] == "500m", used
