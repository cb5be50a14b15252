"""The option state machine: which options a parent must have and what status.options says."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

from controller.concurrentadmission.parent_plan import ParentPlan, plan_parent
from tests.builders import SeedClusterQueueBuilder, condition
from tests.unit.concurrentadmission.helpers import (
    config_of,
    evicted,
    option,
    parent,
    reserved,
    three_flavor_queue,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _statuses(plan: ParentPlan) -> dict[str, str]:
    return {entry["name"].rsplit("-option-", 1)[1]: entry["status"] for entry in plan.options_status}


def _deleted(plan: ParentPlan) -> list[str]:
    return sorted(r.option["metadata"]["name"].rsplit("-option-", 1)[1] for r in plan.delete)


def _deactivated(plan: ParentPlan) -> list[str]:
    return sorted(r.option["metadata"]["name"].rsplit("-option-", 1)[1] for r in plan.deactivate)


def test_a_new_parent_gets_one_option_per_flavor_in_preference_order() -> None:
    config = config_of(three_flavor_queue())
    plan = plan_parent(parent(), config, [], T0)
    assert [name for name, _ in plan.create] == [
        "job-a-12345-option-reservation",
        "job-a-12345-option-on-demand",
        "job-a-12345-option-spot",
    ]
    assert _statuses(plan) == {"reservation": "Pending", "on-demand": "Pending", "spot": "Pending"}
    assert plan.delete == [] and plan.requeue_after is None


def test_existing_options_are_reported_from_their_own_conditions() -> None:
    config = config_of(three_flavor_queue())
    p = parent()
    res = option(p, config, "reservation")
    res["status"] = {"conditions": [condition("QuotaReserved", False, "Pending", "insufficient quota")]}
    plan = plan_parent(p, config, [res, option(p, config, "on-demand"), option(p, config, "spot")], T0)
    assert plan.create == []
    entry = plan.options_status[0]
    assert entry == {
        "name": "job-a-12345-option-reservation",
        "resourceFlavors": ["reservation"],
        "status": "Pending",
        "message": "insufficient quota",
    }


def test_remove_lower_keeps_only_more_preferred_options_once_one_is_admitted() -> None:
    config = config_of(three_flavor_queue("RemoveLower"))
    p = parent()
    options = [
        option(p, config, "reservation"),
        reserved(option(p, config, "on-demand"), "on-demand"),
        option(p, config, "spot"),
    ]
    plan = plan_parent(p, config, options, T0)
    assert _deleted(plan) == [] and _deactivated(plan) == ["spot"]  # deactivated, not deleted
    assert _statuses(plan) == {"reservation": "Pending", "on-demand": "Admitted", "spot": "Removed"}


def test_remove_other_removes_every_other_option() -> None:
    config = config_of(three_flavor_queue("RemoveOther"))
    p = parent()
    options = [
        option(p, config, "reservation"),
        option(p, config, "on-demand"),
        reserved(option(p, config, "spot"), "spot"),
    ]
    plan = plan_parent(p, config, options, T0)
    assert _deactivated(plan) == ["on-demand", "reservation"] and plan.delete == []
    assert _statuses(plan)["spot"] == "Admitted"
    assert "RemoveOther" in plan.options_status[0]["message"]


def test_remove_below_target_keeps_only_options_that_reach_the_target() -> None:
    config = config_of(three_flavor_queue("RemoveBelowTarget", target="reservation"))
    p = parent()
    options = [
        option(p, config, "reservation"),
        option(p, config, "on-demand"),
        reserved(option(p, config, "spot"), "spot"),
    ]
    plan = plan_parent(p, config, options, T0)
    assert _deactivated(plan) == ["on-demand"]
    assert _statuses(plan) == {"reservation": "Pending", "on-demand": "Removed", "spot": "Admitted"}


def test_losing_the_holder_re_arms_every_option() -> None:
    config = config_of(three_flavor_queue("RemoveOther"))
    p = parent()
    # The holder was preempted and its quota released: nothing holds quota any more.
    spot = evicted(option(p, config, "spot"))
    plan = plan_parent(p, config, [spot], T0)
    assert sorted(name.rsplit("-option-", 1)[1] for name, _ in plan.create) == ["on-demand", "reservation"]
    assert _statuses(plan)["spot"] == "Evicted"


def test_an_evicted_holder_still_holding_quota_is_reported_evicted_and_kept() -> None:
    config = config_of(three_flavor_queue("RemoveLower"))
    p = parent()
    spot = evicted(reserved(option(p, config, "spot"), "spot"))
    plan = plan_parent(p, config, [spot], T0)
    assert plan.delete == [] and plan.release == []  # the Job integration releases it
    assert _statuses(plan)["spot"] == "Evicted"


def test_evicted_options_of_a_standalone_parent_are_released_by_the_controller() -> None:
    config = config_of(three_flavor_queue("RemoveLower"))
    p = parent(with_job=False)
    spot = evicted(reserved(option(p, config, "spot"), "spot"))
    plan = plan_parent(p, config, [spot], T0)
    assert [o["metadata"]["name"] for o in plan.release] == ["job-a-12345-option-spot"]


def _delayed_queue() -> dict:
    return (
        SeedClusterQueueBuilder("cq")
        .flavor("reservation", cpu="4")
        .flavor("on-demand", cpu="4")
        .concurrent("RemoveLower")
        .option("reservation", "reservation", delete_delay=100)
        .option("on-demand", "on-demand", create_delay=60)
        .obj()
    )


def test_create_delay_postpones_the_option_and_asks_to_be_woken() -> None:
    config = config_of(_delayed_queue())
    p = parent()
    plan = plan_parent(p, config, [], T0 + timedelta(seconds=10))
    assert [name.rsplit("-option-", 1)[1] for name, _ in plan.create] == ["reservation"]
    assert _statuses(plan)["on-demand"] == "Pending"
    assert "createDelaySeconds 60" in plan.options_status[1]["message"]
    assert plan.requeue_after == 50.0
    later = plan_parent(p, config, [option(p, config, "reservation")], T0 + timedelta(seconds=60))
    assert [name.rsplit("-option-", 1)[1] for name, _ in later.create] == ["on-demand"]


def test_delete_delay_closes_the_migration_window_but_never_removes_the_holder() -> None:
    config = config_of(_delayed_queue())
    p = parent()
    res, od = option(p, config, "reservation"), reserved(option(p, config, "on-demand"), "on-demand")
    inside = plan_parent(p, config, [res, od], T0 + timedelta(seconds=99))
    assert inside.deactivate == [] and inside.requeue_after == 1.0
    after = plan_parent(p, config, [res, od], T0 + timedelta(seconds=100))
    assert _deactivated(after) == ["reservation"]
    assert "deleteDelaySeconds (100) elapsed" in after.options_status[0]["message"]
    holder = reserved(option(p, config, "reservation"), "reservation")
    late = plan_parent(p, config, [holder], T0 + timedelta(seconds=500))
    assert late.delete == [] and late.deactivate == []


def test_a_finished_parent_loses_all_options_and_an_inactive_one_deactivates_its_holder() -> None:
    config = config_of(three_flavor_queue())
    p = parent()
    options = [option(p, config, "reservation"), reserved(option(p, config, "spot"), "spot")]
    finished = parent()
    finished["status"] = {"conditions": [condition("Finished", True, "Succeeded")]}
    assert _deleted(plan_parent(finished, config, options, T0)) == ["reservation", "spot"]
    inactive = parent()
    inactive["spec"]["active"] = False
    plan = plan_parent(inactive, config, options, T0)
    assert _deleted(plan) == []
    assert _deactivated(plan) == ["reservation", "spot"]  # the winner too: its eviction stops the Job
    assert plan.create == []


def test_cluster_queue_changes_replace_stale_options_but_keep_the_holder() -> None:
    old = config_of(three_flavor_queue())
    p = parent()
    options = [option(p, old, "reservation"), reserved(option(p, old, "spot"), "spot")]
    # The admin drops "spot" and renames nothing else: the holder on spot keeps running.
    new_cq = (
        SeedClusterQueueBuilder("cq")
        .flavor("reservation", cpu="4")
        .flavor("gold", cpu="4")
        .concurrent("RemoveLower")
        .obj()
    )
    plan = plan_parent(p, config_of(new_cq), options, T0)
    assert plan.delete == []
    # Every configured option now ranks above the holder's flavor, which left the queue: they may
    # take the parent over.
    assert [name.rsplit("-option-", 1)[1] for name, _ in plan.create] == ["gold"]
    assert _statuses(plan)["spot"] == "Admitted"
    # Without a holder the removed flavor's option goes and the new one comes.
    plan = plan_parent(p, config_of(new_cq), [options[0], option(p, old, "spot")], T0)
    assert _deleted(plan) == ["spot"]
    assert [name.rsplit("-option-", 1)[1] for name, _ in plan.create] == ["gold"]


def test_engine_annotations_follow_a_policy_change() -> None:
    p = parent()
    existing = option(p, config_of(three_flavor_queue("RemoveOther")), "reservation")
    plan = plan_parent(p, config_of(three_flavor_queue("RemoveLower")), [existing], T0)
    ((target, patch),) = plan.annotate
    assert target is existing
    assert patch["metadata"]["annotations"] == {"kueue.x-k8s.io/option-migration-target": "true"}


def _admitted_at(obj: dict, flavor: str, when: str) -> dict:
    obj = reserved(obj, flavor)
    for cond in obj["status"]["conditions"]:
        if cond["type"] == "Admitted":
            cond["lastTransitionTime"] = when
    return obj


def _off_by_us(obj: dict, reason: str = "RemoveOther: option x is admitted") -> dict:
    obj["spec"]["active"] = False
    obj["metadata"].setdefault("annotations", {})["kueue.x-k8s.io/option-removed"] = reason
    return obj


def _rejected(obj: dict, message: str) -> dict:
    obj["spec"]["active"] = False
    obj.setdefault("status", {})["conditions"] = [
        condition("Evicted", True, "DeactivatedDueToAdmissionCheck", message),
        condition("QuotaReserved", False, "Pending", message),
    ]
    return obj


def test_options_race_several_reservations_while_none_is_admitted() -> None:
    config = config_of(three_flavor_queue("RemoveOther"))
    p = parent()
    options = [
        reserved(option(p, config, "reservation"), "reservation", admitted=False),
        reserved(option(p, config, "on-demand"), "on-demand", admitted=False),
        option(p, config, "spot"),
    ]
    plan = plan_parent(p, config, options, T0)
    assert plan.winner is None and plan.deactivate == [] and plan.release == [] and plan.delete == []
    assert _statuses(plan) == {"reservation": "QuotaReserved", "on-demand": "QuotaReserved", "spot": "Pending"}


def test_the_first_option_to_become_admitted_wins_and_the_losers_are_deactivated() -> None:
    config = config_of(three_flavor_queue("RemoveOther"))
    p = parent()
    res = _admitted_at(option(p, config, "reservation"), "reservation", "2026-01-01T00:00:09Z")
    spot = _admitted_at(option(p, config, "spot"), "spot", "2026-01-01T00:00:05Z")  # earlier
    od = reserved(option(p, config, "on-demand"), "on-demand", admitted=False)
    plan = plan_parent(p, config, [res, od, spot], T0)
    assert plan.winner is spot  # first Admitted wins, even over a more preferred option
    assert _deactivated(plan) == ["on-demand", "reservation"]
    # Once the workload controller has evicted a deactivated loser, its quota goes back at once:
    # it never had pods.
    res_evicted = evicted(_off_by_us(res), "DeactivatedDueToNothing")
    again = plan_parent(p, config, [res_evicted, od, spot], T0)
    assert [o["metadata"]["name"] for o in again.release] == ["job-a-12345-option-reservation"]


def test_a_migration_target_holding_a_reservation_gives_it_back_when_a_sibling_wins() -> None:
    config = config_of(three_flavor_queue("RemoveLower"))
    p = parent()
    res = reserved(option(p, config, "reservation"), "reservation", admitted=False)
    spot = reserved(option(p, config, "spot"), "spot")
    plan = plan_parent(p, config, [res, option(p, config, "on-demand"), spot], T0)
    ((removal,),) = [[r for r in plan.deactivate if r.option is res]]
    assert removal.cause == "race" and "keeps queueing to migrate" in removal.reason
    # Released and still wanted: it comes back and queues again.
    released = _off_by_us(option(p, config, "reservation"), removal.reason)
    later = plan_parent(p, config, [released, option(p, config, "on-demand"), spot], T0)
    assert [o["metadata"]["name"] for o in later.reactivate] == ["job-a-12345-option-reservation"]


def test_a_migration_target_its_check_is_rejecting_is_left_to_the_rejection_not_claimed_by_the_race() -> None:
    """Its check turned Rejected (DeactivationTarget set, spec.active not yet flipped) just as the
    old winner was admitted again: the option is reported with the check's message and not
    deactivated by us, or our reason would hide the rejection for good (found in e2e)."""
    config = config_of(three_flavor_queue("RemoveLower"))
    p = parent()
    res = reserved(option(p, config, "reservation"), "reservation", admitted=False)
    res["status"]["conditions"].append(
        condition("DeactivationTarget", True, "AdmissionCheck", "Admission check(s) rejected: no capacity")
    )
    spot = reserved(option(p, config, "spot"), "spot")
    plan = plan_parent(p, config, [res, option(p, config, "on-demand"), spot], T0)
    assert [r for r in plan.deactivate if r.option is res] == []
    entry = next(e for e in plan.options_status if e["name"].endswith("-option-reservation"))
    assert "no capacity" in entry["message"]


def test_a_migration_target_whose_check_state_is_rejected_is_not_claimed_before_the_workload_controller_acts() -> None:
    """Earlier still: the check controller wrote ``Rejected`` in status.admissionChecks and the
    workload controller has not set DeactivationTarget yet. The option counts as rejected with
    the check's message already."""
    config = config_of(three_flavor_queue("RemoveLower"))
    p = parent()
    res = reserved(option(p, config, "reservation"), "reservation", admitted=False)
    res["status"]["admissionChecks"] = [
        {"name": "capacity", "state": "Rejected", "message": "no capacity", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    ]
    spot = reserved(option(p, config, "spot"), "spot")
    plan = plan_parent(p, config, [res, option(p, config, "on-demand"), spot], T0)
    assert [r for r in plan.deactivate if r.option is res] == []
    entry = next(e for e in plan.options_status if e["name"].endswith("-option-reservation"))
    assert entry["message"].startswith("Admission check(s) rejected: capacity: no capacity")


def test_a_former_winner_deactivated_with_its_parent_comes_back_when_the_parent_is_reactivated() -> None:
    config = config_of(three_flavor_queue("RemoveOther"))
    p = parent()
    # The parent was deactivated: every option, the former winner too, carries our reason.
    options = [
        _off_by_us(option(p, config, name), "The parent workload is inactive")
        for name in ("reservation", "on-demand", "spot")
    ]
    plan = plan_parent(p, config, options, T0)  # the parent is active again
    assert sorted(o["metadata"]["name"].rsplit("-option-", 1)[1] for o in plan.reactivate) == [
        "on-demand",
        "reservation",
        "spot",
    ]


def test_a_rejected_option_stays_off_and_every_option_rejected_deactivates_the_parent() -> None:
    config = config_of(three_flavor_queue("RemoveOther"))
    p = parent()
    res = _rejected(option(p, config, "reservation"), "Admission check(s) rejected: prov: no capacity")
    others = [option(p, config, "on-demand"), option(p, config, "spot")]
    plan = plan_parent(p, config, [res, *others], T0)
    assert plan.reactivate == [] and plan.deactivate_parent is None
    assert plan.options_status[0]["status"] == "Removed"
    assert "no capacity" in plan.options_status[0]["message"]
    all_rejected = [res] + [_rejected(o, f"Admission check(s) rejected: {i}") for i, o in enumerate(others)]
    plan = plan_parent(p, config, all_rejected, T0)
    assert plan.deactivate_parent is not None
    assert plan.deactivate_parent.startswith("Every option was rejected: job-a-12345-option-reservation")
    assert "no capacity" in plan.deactivate_parent
    # When the parent is then inactive, it claims the rejected options so that reactivating it
    # gives them all a new chance.
    inactive = parent()
    inactive["spec"]["active"] = False
    claimed = plan_parent(inactive, config, all_rejected, T0)
    assert _deactivated(claimed) == ["on-demand", "reservation", "spot"]
    assert claimed.deactivate_parent is None


def test_a_priority_change_of_the_parent_reaches_its_options() -> None:
    config = config_of(three_flavor_queue("RemoveOther"))
    p = parent()
    options = [option(p, config, name) for name in ("reservation", "on-demand", "spot")]
    p["spec"].update(priority=1000, priorityClassName="urgent", priorityClassSource="kueue.x-k8s.io/workloadpriorityclass")
    plan = plan_parent(p, config, options, T0)
    assert len(plan.annotate) == 3
    for _option, patch in plan.annotate:
        assert patch["spec"] == {
            "priority": 1000,
            "priorityClassName": "urgent",
            "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
        }
        assert patch["metadata"]["resourceVersion"] == "1"


def test_maximum_execution_time_counts_per_parent_across_options() -> None:
    """The job ran 60 s on spot before migrating to on-demand: its 100 s budget is spent 40 s
    into the new option, not 100 s into it."""
    config = config_of(three_flavor_queue("RemoveLower"))
    p = parent()
    p["spec"]["maximumExecutionTimeSeconds"] = 100
    spot = evicted(option(p, config, "spot"), "FlavorMigration", "migrated")
    spot["status"]["accumulatedPastExexcutionTimeSeconds"] = 60
    assert "maximumExecutionTimeSeconds" not in spot["spec"], "options do not count on their own"
    od = _admitted_at(option(p, config, "on-demand"), "on-demand", "2026-01-01T00:00:00Z")
    res = option(p, config, "reservation")
    early = plan_parent(p, config, [res, od, spot], T0 + timedelta(seconds=30))
    assert early.deactivate_parent is None and early.requeue_after == 10.0
    assert early.accumulated_seconds == 60
    late = plan_parent(p, config, [res, od, spot], T0 + timedelta(seconds=40))
    assert late.deactivate_parent == "The workload exceeded its maximum execution time of 100s"
    assert late.deactivate_reason == "MaximumExecutionTimeExceeded"


def test_the_preemption_gate_is_passed_on_once_its_option_reserved() -> None:
    config = config_of(three_flavor_queue("RemoveOther"))
    p = parent()
    waiting = option(p, config, "spot")
    waiting["metadata"]["annotations"]["kueue.x-k8s.io/option-preemption-gate"] = "2026-01-01T00:00:00Z"
    assert plan_parent(p, config, [waiting], T0).annotate == [] or all(
        "kueue.x-k8s.io/option-preemption-gate" not in (patch["metadata"].get("annotations") or {})
        for _o, patch in plan_parent(p, config, [waiting], T0).annotate
    )
    used = reserved(waiting, "spot", admitted=False)
    ((_, patch),) = [(o, pt) for o, pt in plan_parent(p, config, [used], T0).annotate if o is used]
    assert patch["metadata"]["annotations"]["kueue.x-k8s.io/option-preemption-gate"] is None


def _migrated(obj: dict, when: str = "2026-01-01T00:01:00Z") -> dict:
    """Evicted by a migration and released (its pods are gone)."""
    obj = copy.deepcopy(obj)
    obj.setdefault("status", {})["conditions"] = [
        {**condition("Evicted", True, "FlavorMigration", "migrating"), "lastTransitionTime": when},
        condition("QuotaReserved", False, "Pending", "migrating"),
    ]
    return obj


def test_while_migrating_only_the_more_preferred_targets_are_active() -> None:
    """The winner (spot) was evicted to migrate to the reservation and its quota is back: the job
    must not come back on spot (or on-demand, below the target) before the reservation had its
    chance; if the reservation is rejected, every option races again."""
    config = config_of(three_flavor_queue("RemoveBelowTarget", target="reservation"))
    p = parent()
    res = option(p, config, "reservation")
    od = _off_by_us(option(p, config, "on-demand"), "RemoveBelowTarget: ...")
    spot = _migrated(option(p, config, "spot"))
    plan = plan_parent(p, config, [res, od, spot], T0 + timedelta(minutes=2))
    assert _deactivated(plan) == ["spot"] and plan.reactivate == []
    assert plan.deactivate[0].reason.startswith("Migrating from option job-a-12345-option-spot")
    rejected = _rejected(option(p, config, "reservation"), "Admission check(s) rejected: no capacity")
    spot_off = _off_by_us(_migrated(option(p, config, "spot")), "Migrating from option ...")
    again = plan_parent(p, config, [rejected, od, spot_off], T0 + timedelta(minutes=3))
    assert sorted(o["metadata"]["name"].rsplit("-option-", 1)[1] for o in again.reactivate) == ["on-demand", "spot"]


def test_a_migration_is_over_once_its_target_was_admitted() -> None:
    config = config_of(three_flavor_queue("RemoveBelowTarget", target="reservation"))
    p = parent()
    res = option(p, config, "reservation")
    res["status"] = {
        "conditions": [
            {**condition("Admitted", False, "NoReservation", "preempted since"), "lastTransitionTime": "2026-01-01T00:05:00Z"}
        ]
    }
    spot = _off_by_us(_migrated(option(p, config, "spot")), "Migrating from option ...")
    od = _off_by_us(option(p, config, "on-demand"), "RemoveBelowTarget: ...")
    plan = plan_parent(p, config, [res, od, spot], T0 + timedelta(minutes=6))
    assert sorted(o["metadata"]["name"].rsplit("-option-", 1)[1] for o in plan.reactivate) == ["on-demand", "spot"]
