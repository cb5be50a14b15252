"""Writes for scheduling decisions: reservation, preemption, engine evictions, pending reasons."""

from __future__ import annotations

from datetime import UTC, datetime

from controller.workload.scheduling_patches import (
    eviction_patch,
    pending_patch,
    preemption_patch,
    reservation_patch,
)
from tests.builders import WorkloadBuilder

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
ADMISSION = {
    "clusterQueue": "cq",
    "podSetAssignments": [
        {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}
    ],
}


def _conds(patch: dict) -> dict[str, dict]:
    return {c["type"]: c for c in patch["status"]["conditions"]}


def _reserve(wl: dict, checks: tuple[str, ...] = ()) -> object:
    return reservation_patch(
        wl,
        uid=wl["metadata"]["uid"],
        admission=ADMISSION,
        admission_checks=checks,
        message="Quota reserved in ClusterQueue cq",
        now=NOW,
    )


def test_reservation_without_checks_admits_in_the_same_patch() -> None:
    wl = WorkloadBuilder("w", "ns").podset(cpu="1").obj()
    wl["metadata"]["resourceVersion"] = "7"
    result = _reserve(wl)
    assert result.patch["metadata"] == {"resourceVersion": "7"}
    assert result.patch["status"]["admission"] == ADMISSION
    conds = _conds(result.patch)
    assert (conds["QuotaReserved"]["status"], conds["QuotaReserved"]["reason"]) == ("True", "QuotaReserved")
    assert (conds["Admitted"]["status"], conds["Admitted"]["reason"]) == ("True", "Admitted")
    assert [e.reason for e in result.events] == ["QuotaReserved", "Admitted"]
    assert "wait time since queued was 43200s" in result.events[0].message


def test_reservation_with_checks_sets_pending_states_and_not_admitted() -> None:
    result = _reserve(WorkloadBuilder("w").podset(cpu="1").obj(), ("prov",))
    assert result.patch["status"]["admissionChecks"] == [
        {"name": "prov", "state": "Pending", "lastTransitionTime": "2026-01-01T12:00:00Z", "message": ""}
    ]
    assert _conds(result.patch)["Admitted"]["reason"] == "UnsatisfiedAdmissionChecks"
    assert [e.reason for e in result.events] == ["QuotaReserved"]


def test_readmission_flips_evicted_and_preempted_to_false() -> None:
    wl = (
        WorkloadBuilder("w")
        .podset(cpu="1")
        .condition("Evicted", True, "Preempted", "by x")
        .condition("Preempted", True, "InClusterQueue", "by x")
        .obj()
    )
    conds = _conds(_reserve(wl).patch)
    assert conds["Evicted"]["status"] == "False" and conds["Evicted"]["message"] == "Previously: by x"
    assert conds["Preempted"]["status"] == "False"


def test_reservation_refused_for_stale_decisions() -> None:
    assert _reserve(WorkloadBuilder("w").podset(cpu="1").reserved("other").obj()) is None
    assert _reserve(WorkloadBuilder("w").podset(cpu="1").finished().obj()) is None
    assert _reserve(WorkloadBuilder("w").podset(cpu="1").active(False).obj()) is None
    recreated = WorkloadBuilder("w").podset(cpu="1").obj()
    assert (
        reservation_patch(
            recreated, uid="old-uid", admission=ADMISSION, admission_checks=(), message="m", now=NOW
        )
        is None
    )


def test_preemption_evicts_with_reasons_and_event() -> None:
    victim = WorkloadBuilder("v").podset(cpu="1").reserved("cq").admitted().check("ac", "Ready").obj()
    result = preemption_patch(
        victim,
        uid=victim["metadata"]["uid"],
        reason="InCohortReclamation",
        message="Preempted to accommodate a workload (UID: u) due to reclamation",
        now=NOW,
    )
    conds = _conds(result.patch)
    assert (conds["Evicted"]["status"], conds["Evicted"]["reason"]) == ("True", "Preempted")
    assert (conds["Preempted"]["status"], conds["Preempted"]["reason"]) == ("True", "InCohortReclamation")
    assert (conds["Requeued"]["status"], conds["Requeued"]["reason"]) == ("True", "Preempted")
    assert result.patch["status"]["admissionChecks"][0]["state"] == "Pending"
    assert [e.reason for e in result.events] == ["Preempted"]
    assert "admission" not in result.patch["status"]  # quota is released by clearing, not here


def test_preemption_skipped_when_victim_moved_on() -> None:
    pending = WorkloadBuilder("v").podset(cpu="1").obj()
    assert preemption_patch(pending, uid="", reason="InClusterQueue", message="m", now=NOW) is None
    evicted = WorkloadBuilder("v").reserved("cq").condition("Evicted", True, "Preempted").obj()
    assert preemption_patch(evicted, uid="", reason="InClusterQueue", message="m", now=NOW) is None
    # Finished while the preemption was on its way: it frees its quota anyway, no Evicted on it.
    finished = WorkloadBuilder("v").reserved("cq").admitted().condition("Finished", True, "Succeeded").obj()
    assert preemption_patch(finished, uid="", reason="InClusterQueue", message="m", now=NOW) is None


def test_engine_eviction_for_stopped_queue() -> None:
    wl = WorkloadBuilder("w").reserved("cq").admitted().obj()
    result = eviction_patch(wl, reason="ClusterQueueStopped", message="The ClusterQueue is stopped", now=NOW)
    assert _conds(result.patch)["Evicted"]["reason"] == "ClusterQueueStopped"
    assert [e.reason for e in result.events] == ["EvictedDueToClusterQueueStopped"]


def test_pending_reason_written_only_when_changed() -> None:
    wl = WorkloadBuilder("w").podset(cpu="1").obj()
    first = pending_patch(wl, reason="WaitingForQuota", message="couldn't assign flavors", now=NOW)
    assert _conds(first.patch)["QuotaReserved"]["reason"] == "WaitingForQuota"
    assert [(e.type, e.reason) for e in first.events] == [("Warning", "WaitingForQuota")]
    wl["status"] = first.patch["status"]
    assert pending_patch(wl, reason="WaitingForQuota", message="couldn't assign flavors", now=NOW) is None
    reserved = WorkloadBuilder("w").reserved("cq").obj()
    assert pending_patch(reserved, reason="WaitingForQuota", message="x", now=NOW) is None
