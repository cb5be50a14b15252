"""Status writes concurrent admission adds to the scheduler: the migration eviction, and a
reservation that keeps an option's already-Ready checks."""

from __future__ import annotations

from datetime import UTC, datetime

from controller.workload.scheduling_patches import migration_patch, reservation_patch
from tests.unit.concurrentadmission.helpers import config_of, option, parent, reserved, three_flavor_queue

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
ADMISSION = {
    "clusterQueue": "cq",
    "podSetAssignments": [{"name": "main", "flavors": {"cpu": "spot"}, "count": 1}],
}


def _conditions(patch: dict) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in patch["status"]["conditions"]}


def test_migration_patch_evicts_and_clears_the_reservation_in_one_write() -> None:
    holder = reserved(option(parent(), config_of(three_flavor_queue()), "spot"), "spot")
    built = migration_patch(holder, message="moving to on-demand", now=NOW)
    assert built is not None
    assert built.patch["status"]["admission"] is None
    conds = _conditions(built.patch)
    assert conds["Evicted"] == ("True", "FlavorMigration")
    assert conds["QuotaReserved"] == ("False", "Pending")
    assert conds["Admitted"] == ("False", "NoReservation")
    assert built.patch["metadata"]["resourceVersion"] == "1"
    assert [e.reason for e in built.events] == ["EvictedDueToFlavorMigration"]


def test_migration_patch_is_a_no_op_once_the_sibling_holds_nothing() -> None:
    assert (
        migration_patch(option(parent(), config_of(three_flavor_queue()), "spot"), message="m", now=NOW)
        is None
    )


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
