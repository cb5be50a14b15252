"""Status writes of the scheduler for options: the migration eviction, and an option's
two-phase reservation."""

from __future__ import annotations

from datetime import UTC, datetime

from controller.workload.scheduling_patches import eviction_patch, reservation_patch
from tests.unit.concurrentadmission.helpers import config_of, option, parent, reserved, three_flavor_queue

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
ADMISSION = {
    "clusterQueue": "cq",
    "podSetAssignments": [{"name": "main", "flavors": {"cpu": "spot"}, "count": 1}],
}


def _conditions(patch: dict) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in patch["status"]["conditions"]}


def test_a_migration_eviction_keeps_the_reservation_until_the_pods_are_gone() -> None:
    """Migration after admission is an ordinary eviction (reason FlavorMigration): the quota is
    released later, by the Job integration once the Job's pods are gone."""
    holder = reserved(option(parent(), config_of(three_flavor_queue()), "spot"), "spot")
    built = eviction_patch(holder, reason="FlavorMigration", message="moving to on-demand", now=NOW)
    assert built is not None
    assert "admission" not in built.patch["status"]
    conds = _conditions(built.patch)
    assert conds["Evicted"] == ("True", "FlavorMigration")
    assert "QuotaReserved" not in conds or conds["QuotaReserved"][0] == "True"
    assert [e.reason for e in built.events] == ["EvictedDueToFlavorMigration"]


def test_an_option_is_two_phase_its_checks_start_pending_at_the_reservation() -> None:
    """Options are ordinary workloads: a Ready state left from an earlier attempt does not admit
    a new reservation; the checks of the assigned flavors run again after it."""
    wl = option(parent(), config_of(three_flavor_queue()), "spot")
    wl["status"] = {"admissionChecks": [{"name": "check-spot", "state": "Ready", "message": "provisioned"}]}
    built = reservation_patch(
        wl, uid="", admission=ADMISSION, admission_checks=("check-spot",), message="m", now=NOW
    )
    assert built is not None
    assert built.patch["status"]["admissionChecks"][0]["state"] == "Pending"
    assert _conditions(built.patch)["Admitted"] == ("False", "UnsatisfiedAdmissionChecks")


def test_a_regular_workloads_stale_ready_check_is_still_reset() -> None:
    wl = parent()
    del wl["spec"]["workloadMode"]
    wl["status"] = {"admissionChecks": [{"name": "check", "state": "Ready", "message": ""}]}
    built = reservation_patch(
        wl, uid="", admission=ADMISSION, admission_checks=("check",), message="m", now=NOW
    )
    assert built is not None
    assert built.patch["status"]["admissionChecks"][0]["state"] == "Pending"
    assert _conditions(built.patch)["Admitted"] == ("False", "UnsatisfiedAdmissionChecks")
