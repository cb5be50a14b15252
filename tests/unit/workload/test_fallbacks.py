"""ResourceFlavor fallbacks: the clock, the rules, the triggers, the history and what a fallback writes.

Every case runs against a fake clock (``NOW`` plus offsets): nothing sleeps.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.workload import fallbacks as fb
from controller.workload.decisions import PodsReadyPolicy, WorkloadContext, plan_workload
from controller.workload.lifecycle import back_to_pending_plan, release_plan
from controller.workload.scheduling_patches import reservation_patch
from controller.workload.status_plan import UNSET, ConditionSpec, WorkloadPlan
from pykueue.api.timestamps import format_time
from tests.builders import LocalQueueBuilder, SeedClusterQueueBuilder, SeedWorkloadBuilder

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
AT = format_time(T0)
LQ = LocalQueueBuilder("lq", "ns", "cq").obj()
TRIGGERS = "pykueue.x-k8s.io/flavor-fallback-triggers"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _cq(policy: str = "DeactivateWorkload") -> SeedClusterQueueBuilder:
    """Story 1: reservation, spot, on-demand in one resource group."""
    return (
        SeedClusterQueueBuilder("cq")
        .flavor("reservation", cpu="4")
        .flavor("spot", cpu="100")
        .flavor("on-demand", cpu="100")
        .fallback(policy)
    )


def _wl() -> SeedWorkloadBuilder:
    return SeedWorkloadBuilder("w", "ns").queue("lq").podset(cpu="1")


def _on(flavor: str, builder: SeedWorkloadBuilder | None = None) -> SeedWorkloadBuilder:
    """Quota reserved with ``flavor`` at T0, its history entry written by the reservation."""
    return (builder or _wl()).reserved("cq", {"cpu": flavor}, at=AT).flavor_assigned(flavor, AT)


def _ctx(cq: dict[str, Any], pods_ready: PodsReadyPolicy | None = None) -> WorkloadContext:
    return WorkloadContext(local_queue=LQ, cluster_queue=cq, pods_ready=pods_ready)


def _conds(plan: WorkloadPlan) -> dict[str, ConditionSpec]:
    return {c.type: c for c in plan.set_conditions}


# --- rules --------------------------------------------------------------------------------------


def test_a_flavor_rule_wins_over_the_star_rule_and_minutes_equal_a_duration() -> None:
    strategy = fb.parse_strategy(
        _cq().fallback_rule("*", minutes=30).fallback_rule("spot", timeout="90s")
        .fallback_rule("on-demand", "AdmissionCheckRejected").obj()["spec"]
    )
    assert strategy is not None
    assert strategy.timeout_for("spot") == 90
    assert strategy.timeout_for("reservation") == 1800
    assert strategy.falls_back_on_rejection("on-demand")
    assert not strategy.falls_back_on_rejection("spot")
    assert strategy.failure_policy == "DeactivateWorkload"


def test_no_strategy_and_malformed_rules_are_tolerated() -> None:
    assert fb.parse_strategy(SeedClusterQueueBuilder("cq").flavor("a", cpu="1").obj()["spec"]) is None
    spec = _cq("RetryAllFlavors").obj()["spec"]
    spec["flavorFungibility"]["fallbackStrategy"]["rules"] = ["junk", {"name": "spot", "timeout": "soon"}, {}]
    strategy = fb.parse_strategy(spec)
    assert strategy is not None and strategy.timeout_for("spot") is None
    assert strategy.failure_policy == "RetryAllFlavors"


# --- the clock ----------------------------------------------------------------------------------


def test_the_clock_starts_at_the_flavor_assignment_not_in_the_queue() -> None:
    # Created an hour before T0: time in the queue does not count.
    cq = _cq().fallback_rule("spot", timeout="10m").obj()
    wl = _on("spot", _wl().created(format_time(at(-3600)))).obj()
    plan = plan_workload(wl, _ctx(cq), at(599))
    assert plan.eviction is None
    assert plan.requeue_after == pytest.approx(1)
    assert plan_workload(wl, _ctx(cq), at(600)).eviction is not None


def test_the_clock_stops_when_the_pods_are_ready() -> None:
    cq = _cq().fallback_rule("spot", timeout="10m").obj()
    ready = _on("spot").admitted(AT).condition("PodsReady", True, "Started", at=format_time(at(60))).obj()
    assert plan_workload(ready, _ctx(cq), at(3600)).is_noop()
    # Pods that were ready once and are recovering: the flavor proved itself, the clock stays stopped.
    recovering = _on("spot").admitted(AT).condition("PodsReady", False, "WaitForRecovery").obj()
    assert plan_workload(recovering, _ctx(cq), at(3600)).eviction is None


def test_a_reservation_without_history_is_timed_from_quota_reserved() -> None:
    """A reservation made before the ClusterQueue had a strategy (or a rule edited mid-attempt)."""
    cq = _cq().fallback_rule("spot", timeout="5m").obj()
    wl = _wl().reserved("cq", {"cpu": "spot"}, at=AT).obj()
    assert fb.clock_start(wl, "spot") == T0
    assert plan_workload(wl, _ctx(cq), at(299)).eviction is None
    assert plan_workload(wl, _ctx(cq), at(300)).eviction is not None


def test_after_a_restart_the_timeout_fires_at_the_recorded_time() -> None:
    """The history in the API is the only memory: a fresh decision on the same object agrees."""
    cq = _cq().fallback_rule("spot", timeout="10m").obj()
    wl = _on("spot").obj()
    first = plan_workload(wl, _ctx(cq), at(100))
    assert first.requeue_after == pytest.approx(500)
    again = plan_workload(wl, _ctx(cq), at(450))  # a new controller process, same object
    assert again.requeue_after == pytest.approx(150)


# --- TimeoutForPodsReadyExceeded ------------------------------------------------------------------


def test_timeout_evicts_naming_flavor_and_trigger_and_keeps_the_flavor_excluded() -> None:
    cq = _cq().fallback_rule("spot", timeout="10m").obj()
    wl = _on("spot", _wl().flavor_assigned("reservation", format_time(at(-600)))).obj()
    plan = plan_workload(wl, _ctx(cq), at(600))
    evicted = _conds(plan)["Evicted"]
    assert evicted.reason == "FlavorFallback"
    assert "spot" in evicted.message and "TimeoutForPodsReadyExceeded" in evicted.message
    assert _conds(plan)["Requeued"].status == "True"  # another flavor is waiting: no backoff
    assert plan.flavor_assignment_history is UNSET  # only the failed flavor was held: nothing to drop
    assert plan.fallbacks == [("cq", "spot", "TimeoutForPodsReadyExceeded")]
    assert [e.reason for e in plan.events] == ["FlavorFallback", "EvictedDueToFlavorFallback"]


def test_a_flavor_without_a_rule_never_times_out() -> None:
    cq = _cq().fallback_rule("spot", timeout="10m").obj()
    assert plan_workload(_on("on-demand").obj(), _ctx(cq), at(86400)).eviction is None


def test_waitforpodsready_firing_first_wins_and_the_flavor_stays_usable() -> None:
    """Both timeouts run; the first to run out acts. PodsReadyTimeout is not a fallback."""
    cq = _cq().fallback_rule("spot", timeout="10m").obj()
    wl = _on("spot").admitted(AT).obj()
    policy = PodsReadyPolicy(timeout_seconds=300)
    plan = plan_workload(wl, _ctx(cq, policy), at(700))
    assert _conds(plan)["Evicted"].reason == "PodsReadyTimeout"
    assert plan.fallbacks == []
    # Before either deadline: wake at the earlier one.
    assert plan_workload(wl, _ctx(cq, policy), at(100)).requeue_after == pytest.approx(200)


def test_the_fallback_timeout_firing_first_wins_over_waitforpodsready() -> None:
    cq = _cq().fallback_rule("spot", timeout="2m").obj()
    wl = _on("spot").admitted(AT).obj()
    plan = plan_workload(wl, _ctx(cq, PodsReadyPolicy(timeout_seconds=300)), at(400))
    assert _conds(plan)["Evicted"].reason == "FlavorFallback"


def test_a_timeout_while_already_evicted_for_another_reason_does_nothing() -> None:
    """Preempted (or stopped) first: that eviction stands and the flavor is not excluded."""
    cq = _cq().fallback_rule("spot", timeout="1m").obj()
    wl = _on("spot").condition("Evicted", True, "Preempted", "preempted").owner("Job", "j", "u").obj()
    assert plan_workload(wl, _ctx(cq), at(3600)).eviction is None
    released = release_plan(wl, at(3600))
    assert released.flavor_assignment_history == []
    assert fb.excluded_flavors({"status": {"flavorAssignmentHistory": []}}) == frozenset()


# --- AdmissionCheckRejected ------------------------------------------------------------------------


def test_a_check_rejecting_the_flavor_falls_back_instead_of_deactivating() -> None:
    cq = _cq().admission_check_strategy("capacity", "spot").fallback_rule("spot", "AdmissionCheckRejected").obj()
    wl = _on("spot").check("capacity", "Rejected", message="no capacity").obj()
    plan = plan_workload(wl, _ctx(cq), at(5))
    assert _conds(plan)["Evicted"].reason == "FlavorFallback"
    assert "AdmissionCheckRejected" in _conds(plan)["Evicted"].message
    assert "DeactivationTarget" not in _conds(plan)
    assert plan.fallbacks == [("cq", "spot", "AdmissionCheckRejected")]


def test_a_rejection_on_a_flavor_without_a_rule_still_deactivates() -> None:
    cq = _cq().admission_check_strategy("capacity").fallback_rule("spot", "AdmissionCheckRejected").obj()
    wl = _on("on-demand").check("capacity", "Rejected").obj()
    plan = plan_workload(wl, _ctx(cq), at(5))
    assert _conds(plan)["DeactivationTarget"].reason == "AdmissionCheck"


# --- several resource groups --------------------------------------------------------------------


def test_only_the_flavor_that_failed_is_excluded() -> None:
    cq = (
        _cq().flavor("gpu-a", gpu="8").flavor("gpu-b", gpu="8").fallback_rule("spot", timeout="1m").obj()
    )
    wl = (
        _wl().podset("accel", gpu="1")
        .reserved("cq", {"cpu": "spot", "gpu": "gpu-a"}, at=AT)
        .flavor_assigned("spot", AT).flavor_assigned("gpu-a", AT).obj()
    )
    plan = plan_workload(wl, _ctx(cq), at(60))
    assert _conds(plan)["Evicted"].reason == "FlavorFallback"
    assert plan.flavor_assignment_history == [{"resourceFlavor": "spot", "assignmentTime": AT}]
    assert plan.fallbacks == [("cq", "spot", "TimeoutForPodsReadyExceeded")]


# --- the history ----------------------------------------------------------------------------------


def test_the_reservation_records_the_assignment_time_in_the_same_patch() -> None:
    wl = _wl().flavor_assigned("spot", format_time(at(-900))).obj()
    admission = {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "flavors": {"cpu": "on-demand"}}]}
    patch = reservation_patch(
        wl, uid="", admission=admission, admission_checks=(), message="m", now=T0, record_flavor_history=True
    )
    assert patch is not None
    status = patch.patch["status"]
    assert status["admission"] == admission
    assert status["flavorAssignmentHistory"] == [
        {"resourceFlavor": "spot", "assignmentTime": format_time(at(-900))},
        {"resourceFlavor": "on-demand", "assignmentTime": AT},
    ]
    plain = reservation_patch(wl, uid="", admission=admission, admission_checks=(), message="m", now=T0)
    assert plain is not None and "flavorAssignmentHistory" not in plain.patch["status"]


def test_excluded_flavors_are_in_the_history_and_not_held() -> None:
    wl = _on("on-demand", _wl().flavor_assigned("spot", AT)).obj()
    assert fb.excluded_flavors(wl) == frozenset({"spot"})


def test_releasing_after_a_fallback_keeps_the_failed_flavor() -> None:
    wl = _on("spot").condition("Evicted", True, "FlavorFallback", "m").owner("Job", "j", "u").obj()
    assert release_plan(wl, at(1)).flavor_assignment_history is UNSET


def test_going_back_to_pending_drops_the_held_flavors() -> None:
    wl = _on("spot", _wl().flavor_assigned("reservation", AT)).obj()
    plan = back_to_pending_plan(wl, "flavor deleted", at(1))
    assert plan.flavor_assignment_history == [{"resourceFlavor": "reservation", "assignmentTime": AT}]


# --- exhaustion -----------------------------------------------------------------------------------


def _last_flavor() -> dict[str, Any]:
    """reservation and spot already failed; on-demand (the last) is held and times out now."""
    return (
        _on("on-demand", _wl().flavor_assigned("reservation", AT).flavor_assigned("spot", AT))
        .owner("Job", "j", "u").obj()
    )


def test_deactivate_workload_when_every_flavor_failed() -> None:
    cq = _cq().fallback_rule("*", timeout="1m").obj()
    wl = _last_flavor()
    wl["metadata"]["annotations"] = {TRIGGERS: "reservation=AdmissionCheckRejected,spot=TimeoutForPodsReadyExceeded"}
    plan = plan_workload(wl, _ctx(cq), at(60))
    target = _conds(plan)["DeactivationTarget"]
    assert target.reason == "FlavorsExhausted"
    assert target.message.startswith(
        "Every flavor was tried: reservation (AdmissionCheckRejected), spot (TimeoutForPodsReadyExceeded), "
        "on-demand (TimeoutForPodsReadyExceeded); the last, on-demand: the pods were not ready"
    ), target.message
    assert plan.eviction is None  # next step: spec.active=false, then the DeactivatedDueTo... eviction
    assert plan.fallbacks == [("cq", "on-demand", "TimeoutForPodsReadyExceeded")]
    assert plan.flavor_fallback_triggers == {
        "reservation": "AdmissionCheckRejected",
        "spot": "TimeoutForPodsReadyExceeded",
        "on-demand": "TimeoutForPodsReadyExceeded",
    }


def test_a_flavor_without_a_recorded_trigger_prints_unknown() -> None:
    """The record is best effort (a crash between the status write and the annotation write)."""
    cq = _cq().fallback_rule("*", timeout="1m").obj()
    wl = _last_flavor()
    wl["metadata"]["annotations"] = {TRIGGERS: "spot=TimeoutForPodsReadyExceeded"}
    message = _conds(plan_workload(wl, _ctx(cq), at(60)))["DeactivationTarget"].message
    assert "tried: reservation (unknown), spot (TimeoutForPodsReadyExceeded), on-demand (" in message


def test_the_exhaustion_message_follows_the_cluster_queue_order_not_the_names() -> None:
    cq = (
        SeedClusterQueueBuilder("cq").flavor("zeta", cpu="4").flavor("alpha", cpu="4")
        .fallback().fallback_rule("*", timeout="1m").obj()
    )
    wl = _on("alpha", _wl().flavor_assigned("zeta", AT)).annotation(TRIGGERS, "zeta=AdmissionCheckRejected").obj()
    message = _conds(plan_workload(wl, _ctx(cq), at(60)))["DeactivationTarget"].message
    assert "tried: zeta (AdmissionCheckRejected), alpha (TimeoutForPodsReadyExceeded);" in message


def test_a_fallback_records_its_trigger_and_drops_stale_entries() -> None:
    cq = _cq().admission_check_strategy("capacity").fallback_rule("spot", "AdmissionCheckRejected").obj()
    wl = (
        _on("spot").check("capacity", "Rejected")
        .annotation(TRIGGERS, "on-demand=TimeoutForPodsReadyExceeded,reservation=AdmissionCheckRejected").obj()
    )
    wl["metadata"]["annotations"][TRIGGERS] += ",junk"
    wl["status"]["flavorAssignmentHistory"].insert(0, {"resourceFlavor": "reservation", "assignmentTime": AT})
    plan = plan_workload(wl, _ctx(cq), at(1))
    assert _conds(plan)["Evicted"].reason == "FlavorFallback"
    # on-demand is not excluded (an entry left from an earlier round): dropped
    assert plan.flavor_fallback_triggers == {"reservation": "AdmissionCheckRejected", "spot": "AdmissionCheckRejected"}


def test_an_unchanged_record_is_not_written_again() -> None:
    cq = _cq().fallback_rule("*", timeout="1m").obj()
    wl = _on("spot").annotation(TRIGGERS, "spot=TimeoutForPodsReadyExceeded").obj()
    plan = plan_workload(wl, _ctx(cq), at(60))
    assert _conds(plan)["Evicted"].reason == "FlavorFallback"
    assert plan.flavor_fallback_triggers is UNSET


def test_trigger_record_encoding_is_sorted_and_stable() -> None:
    record = {"spot": "TimeoutForPodsReadyExceeded", "on-demand": "AdmissionCheckRejected"}
    text = fb.encode_triggers(record)
    assert text == "on-demand=AdmissionCheckRejected,spot=TimeoutForPodsReadyExceeded"
    assert fb.decode_triggers(text) == record
    assert fb.encode_triggers({}) == "" and fb.decode_triggers("") == {}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, {}),
        (42, {}),
        ("garbage", {}),
        ("=X,a=,=,,b==c", {}),
        (" a = T , b=U,a=V", {"a": "V", "b": "U"}),  # spaces trimmed, the last of a repeat wins
        ("a=T,,junk,b=U", {"a": "T", "b": "U"}),
    ],
)
def test_malformed_trigger_records_are_tolerated(value: object, expected: dict[str, str]) -> None:
    assert fb.decode_triggers(value) == expected
    wl = _wl().obj()
    if value is not None:
        wl["metadata"]["annotations"] = {TRIGGERS: value}
    assert fb.triggers(wl) == expected


def test_a_record_still_applies_only_while_the_history_names_its_flavors() -> None:
    wl = _wl().flavor_assigned("spot", AT).obj()
    assert fb.triggers_still_apply(wl, {"spot": "AdmissionCheckRejected"})
    assert not fb.triggers_still_apply(wl, {"spot": "X", "on-demand": "Y"})
    assert not fb.triggers_still_apply(wl, {})  # a clear, but the history is back
    assert fb.triggers_still_apply(_wl().obj(), {})


def test_the_deactivation_eviction_says_flavors_exhausted_and_release_keeps_the_history() -> None:
    cq = _cq().fallback_rule("*", timeout="1m").obj()
    wl = _on("on-demand").active(False).condition("DeactivationTarget", True, "FlavorsExhausted", "all tried").obj()
    plan = plan_workload(wl, _ctx(cq), at(61))
    assert _conds(plan)["Evicted"].reason == "DeactivatedDueToFlavorsExhausted"
    evicted = _on("on-demand").active(False).condition("Evicted", True, "DeactivatedDueToFlavorsExhausted").obj()
    assert release_plan(evicted, at(62)).flavor_assignment_history is UNSET


def test_reactivating_after_exhaustion_starts_over() -> None:
    wl = (
        _wl().flavor_assigned("spot", AT)
        .condition("Evicted", True, "DeactivatedDueToFlavorsExhausted", "all tried")
        .condition("QuotaReserved", False, "Pending").obj()
    )
    wl["metadata"]["annotations"] = {TRIGGERS: "spot=TimeoutForPodsReadyExceeded"}
    plan = plan_workload(wl, _ctx(_cq().obj()), at(100))
    assert _conds(plan)["Evicted"].reason == "Reactivated"
    assert plan.flavor_assignment_history == []
    assert plan.flavor_fallback_triggers == {}  # the record goes with the history


def test_retry_all_flavors_clears_the_history_with_the_requeue_backoff() -> None:
    cq = _cq("RetryAllFlavors").fallback_rule("*", timeout="1m").obj()
    wl = _last_flavor()
    wl["metadata"]["annotations"] = {TRIGGERS: "reservation=AdmissionCheckRejected,spot=TimeoutForPodsReadyExceeded"}
    plan = plan_workload(wl, _ctx(cq), at(60))
    assert plan.flavor_assignment_history == []
    assert plan.flavor_fallback_triggers == {}
    assert _conds(plan)["Evicted"].reason == "FlavorFallback"
    assert "every flavor was tried: reservation (AdmissionCheckRejected), spot (TimeoutForPodsReadyExceeded), " \
        "on-demand (TimeoutForPodsReadyExceeded); RetryAllFlavors starts over" in _conds(plan)["Evicted"].message
    assert _conds(plan)["Requeued"].status == "False"  # waits for the backoff: cannot spin
    assert plan.requeue_state == {"count": 1, "requeueAt": format_time(at(120))}  # the default 60s base
    assert "DeactivationTarget" not in _conds(plan)


def test_a_flavor_removed_from_the_cluster_queue_does_not_block_exhaustion() -> None:
    """The ClusterQueue's flavor list edited mid-attempt: exhaustion is judged on the list as it is now."""
    cq = (
        SeedClusterQueueBuilder("cq").flavor("spot", cpu="100").flavor("on-demand", cpu="100")
        .fallback().fallback_rule("*", timeout="1m").obj()
    )
    plan = plan_workload(_last_flavor(), _ctx(cq), at(60))
    assert _conds(plan)["DeactivationTarget"].reason == "FlavorsExhausted"


def test_a_rule_removed_mid_attempt_stops_the_clock() -> None:
    cq = _cq().obj()  # strategy without rules
    assert plan_workload(_on("spot").obj(), _ctx(cq), at(86400)).eviction is None


def test_a_rule_shortened_mid_attempt_counts_from_the_recorded_assignment() -> None:
    """10 minutes in, the timeout is edited from 1h to 5m: the flavor fell back already."""
    wl = _on("spot").obj()
    assert plan_workload(wl, _ctx(_cq().fallback_rule("spot", timeout="1h").obj()), at(600)).eviction is None
    plan = plan_workload(wl, _ctx(_cq().fallback_rule("spot", timeout="5m").obj()), at(600))
    assert _conds(plan)["Evicted"].reason == "FlavorFallback"


def test_a_queue_with_concurrent_admission_has_no_fallbacks() -> None:
    """The webhook refuses the pair; an object that predates the rule is treated as without strategy."""
    spec = _cq().concurrent("RemoveOther").fallback_rule("spot", timeout="1m").obj()["spec"]
    assert fb.parse_strategy(spec) is None
