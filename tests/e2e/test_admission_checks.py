"""Two-phase admission driven by the test playing an admission-check controller:
Ready admits, Retry evicts and requeues (checks reset, retryCount counted), Rejected deactivates.
An inactive AdmissionCheck makes its ClusterQueue inactive."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import AdmissionCheckBuilder
from tests.e2e.helpers.kueue import KueueApi, condition, holds_quota, is_admitted, make_queues, submit, unique
from tests.e2e.helpers.wait import wait_for


def _check_state(kueue: KueueApi, namespace: str, name: str, check: str) -> dict[str, Any] | None:
    for state in (kueue.workload(namespace, name).get("status") or {}).get("admissionChecks") or []:
        if state["name"] == check:
            return state
    return None


def _setup(kueue: KueueApi, namespace: str) -> tuple[str, str]:
    check = unique("check")
    kueue.create(AdmissionCheckBuilder(check).obj())
    _, cq = make_queues(kueue, namespace, cpu="4", admission_checks=(check,))
    wait_for(
        lambda: (
            (condition(kueue.get("ClusterQueue", cq) or {}, "Active") or {}).get("reason")
            == "AdmissionCheckInactive"
        ),
        timeout=30,
        message="a queue whose check is not Active is inactive",
    )
    kueue.set_active_condition("AdmissionCheck", check, True)
    wait_for(
        lambda: (condition(kueue.get("ClusterQueue", cq) or {}, "Active") or {}).get("status") == "True",
        timeout=30,
        message="the queue becomes active with its check",
    )
    return check, cq


def _reserved_with_pending_check(kueue: KueueApi, namespace: str, name: str, check: str) -> bool:
    wl = kueue.workload(namespace, name)
    state = _check_state(kueue, namespace, name, check)
    return holds_quota(wl) and not is_admitted(wl) and state is not None and state["state"] == "Pending"


def test_ready_admits(kueue: KueueApi, namespace: str) -> None:
    check, _ = _setup(kueue, namespace)
    submit(kueue, namespace, "w")
    wait_for(
        lambda: _reserved_with_pending_check(kueue, namespace, "w", check),
        timeout=30,
        message="quota reserved, check Pending, not yet admitted",
    )
    assert condition(kueue.workload(namespace, "w"), "Admitted")["reason"] == "UnsatisfiedAdmissionChecks"

    kueue.set_check_state(namespace, "w", check, "Ready", "capacity is there")
    wait_for(lambda: is_admitted(kueue.workload(namespace, "w")), timeout=30, message="Ready admits")


@pytest.mark.both_versions  # also in v1beta2, through the conversion webhook
def test_retry_evicts_and_requeues_with_reset_checks(kueue: KueueApi, namespace: str) -> None:
    check, _ = _setup(kueue, namespace)
    submit(kueue, namespace, "w")
    wait_for(
        lambda: _reserved_with_pending_check(kueue, namespace, "w", check), timeout=30, message="reserved"
    )

    kueue.set_check_state(namespace, "w", check, "Retry", "try again later", requeue_after_seconds=2)

    def evicted() -> dict[str, Any] | None:
        wl = kueue.workload(namespace, "w")
        cond = condition(wl, "Evicted")
        return wl if cond and cond["status"] == "True" and cond["reason"] == "AdmissionCheck" else None

    wl = wait_for(evicted, timeout=30, message="Retry evicts with reason AdmissionCheck")
    state = _check_state(kueue, namespace, "w", check)
    assert state["state"] == "Pending" and state["retryCount"] == 1, state
    assert state["message"] == "Reset to Pending after eviction. Previously: Retry"

    def reserved_again() -> bool:
        current = kueue.workload(namespace, "w")
        return holds_quota(current) and (condition(current, "Evicted") or {}).get("status") == "False"

    wait_for(reserved_again, timeout=60, message="after the retry delay the workload reserves quota again")
    requeued = condition(kueue.workload(namespace, "w"), "Requeued")
    assert requeued is not None and requeued["status"] == "True", requeued
    assert wl["status"].get("requeueState", {}).get("requeueAt"), "the retry delay was recorded"
    kueue.set_check_state(namespace, "w", check, "Ready")
    wait_for(lambda: is_admitted(kueue.workload(namespace, "w")), timeout=30, message="then Ready admits")


def test_rejected_deactivates(kueue: KueueApi, namespace: str) -> None:
    check, cq = _setup(kueue, namespace)
    submit(kueue, namespace, "w")
    wait_for(
        lambda: _reserved_with_pending_check(kueue, namespace, "w", check), timeout=30, message="reserved"
    )

    kueue.set_check_state(namespace, "w", check, "Rejected", "will never fit")

    def deactivated() -> dict[str, Any] | None:
        wl = kueue.workload(namespace, "w")
        cond = condition(wl, "Evicted")
        if wl["spec"].get("active") is False and cond and cond["status"] == "True" and not holds_quota(wl):
            return wl
        return None

    wl = wait_for(deactivated, timeout=30, message="Rejected deactivates, evicts and releases the quota")
    assert condition(wl, "Evicted")["reason"] == "DeactivatedDueToAdmissionCheck"
    assert condition(wl, "DeactivationTarget") is None, "the deactivation marker is consumed"
    wait_for(
        lambda: ((kueue.get("ClusterQueue", cq) or {}).get("status") or {}).get("pendingWorkloads") == 0,
        timeout=30,
        message="an inactive workload is not counted as pending",
    )

    # Reactivating puts it back in the queue: Requeued=True (Reactivated), quota reserved again.
    kueue.patch("Workload", "w", {"spec": {"active": True}}, namespace)

    def reactivated() -> dict[str, Any] | None:
        current = kueue.workload(namespace, "w")
        requeued = condition(current, "Requeued") or {}
        return current if requeued.get("reason") == "Reactivated" and holds_quota(current) else None

    again = wait_for(reactivated, timeout=30, message="a reactivated workload is requeued and reserves quota")
    assert _check_state(kueue, namespace, "w", check)["state"] == "Pending"
    assert not is_admitted(again)
