"""Borrowing in a cohort, reclaim by the lender, and preemption of lower-priority workloads."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from kubernetes import client as k8s

from tests.e2e.helpers.kueue import (
    KueueApi,
    admitted_names,
    condition,
    holds_quota,
    is_admitted,
    make_queues,
    submit,
    unique,
)
from tests.e2e.helpers.wait import wait_for


def _borrowed(kueue: KueueApi, cq: str) -> str | None:
    status = (kueue.get("ClusterQueue", cq) or {}).get("status") or {}
    for flavor in status.get("flavorsReservation") or []:
        for resource in flavor["resources"]:
            if resource["name"] == "cpu":
                return resource.get("borrowed")
    return None


def _events(kube: k8s.ApiClient, namespace: str, name: str) -> list[str]:
    events = k8s.CoreV1Api(kube).list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={name}"
    )
    return [e.reason for e in events.items]


def _wait_for_event(kube: k8s.ApiClient, namespace: str, name: str, reason: str) -> None:
    """Events are sent in the background after the write they describe: wait for them."""
    wait_for(
        lambda: reason in _events(kube, namespace, name),
        timeout=30,
        message=f"Event {reason} on {name}",
    )


@pytest.mark.both_versions  # also in v1beta2, through the conversion webhook
def test_borrowing_from_a_cohort_and_reclaim_by_the_lender(
    kueue: KueueApi, kube: k8s.ApiClient, namespace: str
) -> None:
    cohort = unique("co")
    flavor, borrower = make_queues(kueue, namespace, cpu="2", lq="lq-a", cohort=cohort)
    make_queues(kueue, namespace, cpu="2", lq="lq-b", cohort=cohort, flavor=flavor, preemption=(None, "Any"))

    for i in range(4):
        submit(kueue, namespace, f"a{i}", queue="lq-a")
    wait_for(
        lambda: len(admitted_names(kueue, namespace)) == 4,
        timeout=30,
        message="the borrower runs 4 cpu on 2 of its own by borrowing the lender's idle 2",
    )
    assert wait_for(
        lambda: _borrowed(kueue, borrower) == "2", timeout=30, message="borrowed cpu in the status"
    )

    submit(kueue, namespace, "b0", cpu="2", queue="lq-b")
    wait_for(
        lambda: is_admitted(kueue.workload(namespace, "b0")),
        timeout=60,
        message="the lender reclaims its quota for its own workload",
    )

    victims = [
        wl
        for wl in kueue.workloads(namespace)
        if wl["metadata"]["name"].startswith("a")
        and (condition(wl, "Preempted") or {}).get("status") == "True"
    ]
    assert len(victims) == 2, [wl["metadata"]["name"] for wl in victims]
    for victim in victims:
        assert condition(victim, "Preempted")["reason"] == "InCohortReclamation"
        assert condition(victim, "Evicted")["reason"] == "Preempted"
        assert not holds_quota(victim), "a preempted standalone workload gives its reservation back"
        _wait_for_event(kube, namespace, victim["metadata"]["name"], "Preempted")
    _wait_for_event(kube, namespace, "b0", "PreemptedWorkload")
    assert sum(holds_quota(wl) for wl in kueue.workloads(namespace)) == 3  # 2 (borrower) + 1 (lender's 2-cpu)


def test_lower_priority_workload_is_preempted_within_the_queue(
    kueue: KueueApi, kube: k8s.ApiClient, namespace: str
) -> None:
    make_queues(kueue, namespace, cpu="2", preemption=("LowerPriority",))
    submit(kueue, namespace, "low-1", priority=10)
    submit(kueue, namespace, "low-2", priority=20)
    wait_for(
        lambda: admitted_names(kueue, namespace) == {"low-1", "low-2"},
        timeout=30,
        message="both low admitted",
    )

    submit(kueue, namespace, "high", priority=1000)
    wait_for(
        lambda: is_admitted(kueue.workload(namespace, "high")),
        timeout=60,
        message="the high-priority workload is admitted by preempting",
    )

    low1 = kueue.workload(namespace, "low-1")
    low2 = kueue.workload(namespace, "low-2")
    assert condition(low1, "Preempted")["reason"] == "InClusterQueue", "the lowest priority goes first"
    assert condition(low1, "Evicted")["reason"] == "Preempted"
    assert is_admitted(low2), "only as much is preempted as needed"

    def victim_requeued() -> dict[str, Any] | None:
        wl = kueue.workload(namespace, "low-1")
        cond = condition(wl, "QuotaReserved")
        return (
            wl
            if cond
            and cond["status"] == "False"
            and (condition(wl, "Requeued") or {}).get("status") == "True"
            else None
        )

    wait_for(victim_requeued, timeout=30, message="the victim is back in the queue, waiting")
    _wait_for_event(kube, namespace, "high", "PreemptedWorkload")


def _since(earlier: dict[str, Any], later: dict[str, Any]) -> float:
    """Seconds between two conditions' lastTransitionTime (whole seconds, both written by the
    controller's clock)."""
    def at(cond: dict[str, Any]) -> datetime:
        return datetime.fromisoformat(cond["lastTransitionTime"].replace("Z", "+00:00"))

    return (at(later) - at(earlier)).total_seconds()


def test_a_workload_admitted_moments_ago_is_preempted_only_once_its_grace_ends(
    kueue: KueueApi, namespace: str
) -> None:
    """The controller's preemption grace (default 4 s, docs/design/engine.md): the victim Kueue's
    rules choose is evicted, but not within 4 s of its reservation (both times are the
    controller's, in whole seconds, and the grace starts after the reservation's write)."""
    make_queues(kueue, namespace, cpu="2", preemption=("LowerPriority",))
    submit(kueue, namespace, "low", cpu="2", priority=10)
    def reservation() -> dict[str, Any] | None:
        low = kueue.workload(namespace, "low")
        return condition(low, "QuotaReserved") if holds_quota(low) else None

    reserved = wait_for(reservation, timeout=30, message="low holds the queue's quota")
    submit(kueue, namespace, "high", cpu="2", priority=1000)
    wait_for(
        lambda: is_admitted(kueue.workload(namespace, "high")),
        timeout=60,
        message="the high-priority workload is admitted by preempting low",
    )
    low = kueue.workload(namespace, "low")
    evicted = condition(low, "Evicted")
    assert evicted["reason"] == "Preempted" and condition(low, "Preempted")["reason"] == "InClusterQueue"
    assert _since(reserved, evicted) >= 4.0, (reserved, evicted)


def test_equal_priority_does_not_preempt(kueue: KueueApi, namespace: str) -> None:
    make_queues(kueue, namespace, cpu="1", preemption=("LowerPriority",))
    submit(kueue, namespace, "first", priority=5)
    wait_for(lambda: is_admitted(kueue.workload(namespace, "first")), timeout=30, message="first admitted")
    submit(kueue, namespace, "second", priority=5)

    def second_waits() -> dict[str, Any] | None:
        cond = condition(kueue.workload(namespace, "second"), "QuotaReserved")
        return cond if cond and cond["status"] == "False" else None

    waiting = wait_for(second_waits, timeout=30, message="the equal-priority workload waits with a reason")
    # Waiting for quota, not for a victim: a preemption would show WaitingForPreemptedWorkloads.
    assert waiting["reason"] != "WaitingForPreemptedWorkloads", waiting
    first = kueue.workload(namespace, "first")
    assert is_admitted(first)
    assert (condition(first, "Evicted") or {}).get("status") != "True", first["status"]
