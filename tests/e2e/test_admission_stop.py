"""ClusterQueue and LocalQueue stopPolicy: Hold keeps running work and admits nothing new,
HoldAndDrain also evicts what runs; back to None resumes admission."""

from __future__ import annotations

import pytest

from tests.e2e.helpers.kueue import (
    KueueApi,
    condition,
    holds_for,
    holds_quota,
    is_admitted,
    make_queues,
    submit,
)
from tests.e2e.helpers.wait import wait_for


def _active(kueue: KueueApi, kind: str, name: str, namespace: str | None = None) -> dict | None:
    return condition(kueue.get(kind, name, namespace) or {}, "Active")


@pytest.mark.both_versions  # also in v1beta2, through the conversion webhook
def test_cluster_queue_hold_then_hold_and_drain(kueue: KueueApi, namespace: str) -> None:
    _, cq = make_queues(kueue, namespace, cpu="1")
    submit(kueue, namespace, "running")
    wait_for(
        lambda: is_admitted(kueue.workload(namespace, "running")), timeout=30, message="running admitted"
    )

    kueue.patch("ClusterQueue", cq, {"spec": {"stopPolicy": "Hold"}})
    wait_for(
        lambda: (_active(kueue, "ClusterQueue", cq) or {}).get("reason") == "Stopped",
        timeout=30,
        message="a held ClusterQueue is inactive with reason Stopped",
    )
    submit(kueue, namespace, "held")
    kueue.finish(kueue.workload(namespace, "running"))
    holds_for(
        lambda: not holds_quota(kueue.workload(namespace, "held")),
        4,
        "Hold must not admit new workloads even with free quota",
    )

    kueue.patch("ClusterQueue", cq, {"spec": {"stopPolicy": "None"}})
    wait_for(
        lambda: is_admitted(kueue.workload(namespace, "held")),
        timeout=30,
        message="admission resumes when the stop policy is lifted",
    )

    kueue.patch("ClusterQueue", cq, {"spec": {"stopPolicy": "HoldAndDrain"}})

    def drained() -> dict | None:
        wl = kueue.workload(namespace, "held")
        evicted = condition(wl, "Evicted")
        return wl if evicted and evicted["status"] == "True" and not holds_quota(wl) else None

    wl = wait_for(
        drained, timeout=30, message="HoldAndDrain evicts admitted workloads and releases their quota"
    )
    assert condition(wl, "Evicted")["reason"] == "ClusterQueueStopped"
    cq_status = (kueue.get("ClusterQueue", cq) or {}).get("status") or {}
    wait_for(
        lambda: ((kueue.get("ClusterQueue", cq) or {}).get("status") or {}).get("reservingWorkloads") == 0,
        timeout=30,
        message=f"no reservation left in a drained queue: {cq_status}",
    )


def test_local_queue_hold_and_drain(kueue: KueueApi, namespace: str) -> None:
    make_queues(kueue, namespace, cpu="2")
    submit(kueue, namespace, "w1")
    wait_for(lambda: is_admitted(kueue.workload(namespace, "w1")), timeout=30, message="w1 admitted")

    kueue.patch("LocalQueue", "lq", {"spec": {"stopPolicy": "HoldAndDrain"}}, namespace)

    def evicted_reason() -> str | None:
        wl = kueue.workload(namespace, "w1")
        cond = condition(wl, "Evicted")
        return cond["reason"] if cond and cond["status"] == "True" and not holds_quota(wl) else None

    assert wait_for(evicted_reason, timeout=30, message="LocalQueue drain evicts") == "LocalQueueStopped"
    wait_for(
        lambda: (_active(kueue, "LocalQueue", "lq", namespace) or {}).get("reason") == "Stopped",
        timeout=30,
        message="a stopped LocalQueue is inactive with reason Stopped",
    )
    submit(kueue, namespace, "w2")
    holds_for(
        lambda: not holds_quota(kueue.workload(namespace, "w2")), 3, "a stopped LocalQueue admits nothing"
    )

    kueue.patch("LocalQueue", "lq", {"spec": {"stopPolicy": "None"}}, namespace)
    wait_for(
        lambda: is_admitted(kueue.workload(namespace, "w1")) and is_admitted(kueue.workload(namespace, "w2")),
        timeout=30,
        message="both run again once the LocalQueue is resumed",
    )
