"""Workload controller decisions: deactivation, checks, stop policies, PodsReady timeout, backoff."""

from __future__ import annotations

from datetime import UTC, datetime

from controller.workload.decisions import PodsReadyPolicy, WorkloadContext, plan_workload
from controller.workload.status_plan import UNSET, ConditionSpec, WorkloadPlan
from tests.builders import ClusterQueueBuilder, LocalQueueBuilder, WorkloadBuilder

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
LQ = LocalQueueBuilder("lq", "ns", "cq").obj()
CQ = ClusterQueueBuilder("cq").flavor("default", cpu="4").obj()
CTX = WorkloadContext(local_queue=LQ, cluster_queue=CQ)


def _wl() -> WorkloadBuilder:
    return WorkloadBuilder("w", "ns").queue("lq").podset(cpu="1")


def _conds(plan: WorkloadPlan) -> dict[str, ConditionSpec]:
    return {c.type: c for c in plan.set_conditions}


def test_reserved_without_checks_and_not_admitted_becomes_admitted() -> None:
    plan = plan_workload(_wl().reserved("cq", {"cpu": "default"}).obj(), CTX, NOW)
    assert _conds(plan)["Admitted"] == ConditionSpec(
        "Admitted", "True", "Admitted", "The workload is admitted"
    )
    assert plan.newly_admitted
    assert [e.reason for e in plan.events] == ["Admitted"]


def test_admitted_workload_without_work_is_a_noop() -> None:
    assert plan_workload(_wl().reserved("cq").admitted().obj(), CTX, NOW).is_noop()


def test_finished_workload_is_left_alone() -> None:
    wl = _wl().reserved("cq").admitted().finished().active(False).obj()
    assert plan_workload(wl, CTX, NOW).is_noop()


def test_checks_initialised_pending_and_admitted_false() -> None:
    cq = ClusterQueueBuilder("cq").flavor("default", cpu="4").admission_checks("prov").obj()
    plan = plan_workload(_wl().reserved("cq").obj(), WorkloadContext(LQ, cq), NOW)
    assert plan.admission_checks == [
        {"name": "prov", "state": "Pending", "lastTransitionTime": "2026-01-01T12:00:00Z", "message": ""}
    ]
    assert _conds(plan)["Admitted"].reason == "UnsatisfiedAdmissionChecks"
    assert not plan.newly_admitted


def test_all_checks_ready_admits() -> None:
    cq = ClusterQueueBuilder("cq").flavor("default", cpu="4").admission_checks("a", "b").obj()
    wl = _wl().reserved("cq").check("a", "Ready").check("b", "Ready").obj()
    plan = plan_workload(wl, WorkloadContext(LQ, cq), NOW)
    assert _conds(plan)["Admitted"].status == "True"
    assert plan.admission_checks is UNSET


def test_retry_evicts_with_admission_check_reason_and_backoff() -> None:
    cq = ClusterQueueBuilder("cq").flavor("default", cpu="4").admission_checks("a").obj()
    wl = _wl().reserved("cq").check("a", "Retry", at="2026-01-01T11:59:50Z", requeue_after=30).obj()
    plan = plan_workload(wl, WorkloadContext(LQ, cq), NOW)
    conds = _conds(plan)
    assert conds["Evicted"] == ConditionSpec(
        "Evicted", "True", "AdmissionCheck", "At least one admission check is false"
    )
    assert conds["Requeued"].status == "False"
    assert plan.requeue_state == {"count": 0, "requeueAt": "2026-01-01T12:00:20Z"}
    assert plan.admission_checks[0]["state"] == "Pending" and plan.admission_checks[0]["retryCount"] == 1
    assert [e.reason for e in plan.events] == ["EvictedDueToAdmissionCheck"]
    assert plan.eviction is not None and plan.eviction.reason == "AdmissionCheck"


def test_retry_without_delay_is_requeued_at_once() -> None:
    cq = ClusterQueueBuilder("cq").flavor("default", cpu="4").admission_checks("a").obj()
    plan = plan_workload(_wl().reserved("cq").check("a", "Retry").obj(), WorkloadContext(LQ, cq), NOW)
    assert _conds(plan)["Requeued"].status == "True"
    assert plan.requeue_state is UNSET


def test_rejected_sets_deactivation_target_then_deactivates_then_evicts() -> None:
    cq = ClusterQueueBuilder("cq").flavor("default", cpu="4").admission_checks("a").obj()
    ctx = WorkloadContext(LQ, cq)
    wl = _wl().reserved("cq").check("a", "Rejected", message="no capacity")
    step1 = plan_workload(wl.obj(), ctx, NOW)
    target = _conds(step1)["DeactivationTarget"]
    assert (target.status, target.reason) == ("True", "AdmissionCheck")
    assert "no capacity" in target.message
    assert [e.reason for e in step1.events] == ["AdmissionCheckRejected"]

    wl.condition("DeactivationTarget", True, "AdmissionCheck", "rejected")
    step2 = plan_workload(wl.obj(), ctx, NOW)
    assert step2.deactivate and not step2.has_status_changes()

    wl.active(False)
    step3 = plan_workload(wl.obj(), ctx, NOW)
    assert _conds(step3)["Evicted"].reason == "DeactivatedDueToAdmissionCheck"
    assert step3.remove_conditions == ["DeactivationTarget"]
    assert step3.admission_checks[0]["state"] == "Pending"


def test_deactivated_without_target_evicts_with_plain_reason() -> None:
    plan = plan_workload(_wl().reserved("cq").admitted().active(False).obj(), CTX, NOW)
    assert _conds(plan)["Evicted"].reason == "Deactivated"
    assert _conds(plan)["Requeued"].status == "False"


def test_standalone_evicted_workload_gets_its_reservation_cleared() -> None:
    wl = _wl().reserved("cq").admitted().condition("Evicted", True, "Preempted", "Preempted by x").obj()
    plan = plan_workload(wl, CTX, NOW)
    assert plan.admission is None
    conds = _conds(plan)
    assert conds["QuotaReserved"] == ConditionSpec("QuotaReserved", "False", "Pending", "Preempted by x")
    assert conds["Admitted"].reason == "NoReservation"


def test_job_owned_evicted_workload_is_left_for_the_job_integration() -> None:
    wl = (
        _wl()
        .owner("Job", "j", "uid-j")
        .reserved("cq")
        .admitted()
        .condition("Evicted", True, "Preempted")
        .obj()
    )
    assert plan_workload(wl, CTX, NOW).is_noop()


def test_stop_policies_are_left_to_the_engine() -> None:
    wl = _wl().reserved("cq").admitted().obj()
    drain = ClusterQueueBuilder("cq").stop_policy("HoldAndDrain").obj()
    assert plan_workload(wl, WorkloadContext(LQ, drain), NOW).is_noop()


def test_pods_ready_timeout_waits_then_evicts_with_backoff() -> None:
    policy = PodsReadyPolicy(timeout_seconds=60, backoff_base_seconds=10)
    ctx = WorkloadContext(LQ, CQ, policy)
    early = plan_workload(_wl().reserved("cq").admitted(at="2026-01-01T11:59:30Z").obj(), ctx, NOW)
    assert early.is_noop() and early.requeue_after == 30

    wl = _wl().reserved("cq").admitted(at="2026-01-01T11:58:00Z").requeue_state(count=1).obj()
    late = plan_workload(wl, ctx, NOW)
    assert _conds(late)["Evicted"].reason == "PodsReadyTimeout"
    assert _conds(late)["Requeued"].status == "False"
    assert late.requeue_state == {"count": 2, "requeueAt": "2026-01-01T12:00:20Z"}


def test_pods_ready_true_stops_the_timer() -> None:
    ctx = WorkloadContext(LQ, CQ, PodsReadyPolicy(timeout_seconds=1))
    wl = (
        _wl().reserved("cq").admitted(at="2026-01-01T00:00:00Z").condition("PodsReady", True, "Started").obj()
    )
    assert plan_workload(wl, ctx, NOW).is_noop()


def test_pods_ready_limit_exceeded_requests_deactivation() -> None:
    ctx = WorkloadContext(LQ, CQ, PodsReadyPolicy(timeout_seconds=1, backoff_limit_count=1))
    wl = _wl().reserved("cq").admitted(at="2026-01-01T00:00:00Z").requeue_state(count=1).obj()
    plan = plan_workload(wl, ctx, NOW)
    assert _conds(plan)["DeactivationTarget"].reason == "RequeuingLimitExceeded"
    assert "Evicted" not in _conds(plan)


def test_backoff_finished_sets_requeued_true() -> None:
    base = (
        _wl().condition("Requeued", False, "PodsReadyTimeout").condition("Evicted", True, "PodsReadyTimeout")
    )
    waiting = plan_workload(base.requeue_state(1, "2026-01-01T12:00:45Z").obj(), CTX, NOW)
    assert not waiting.has_status_changes() and waiting.requeue_after == 45
    done = plan_workload(base.requeue_state(1, "2026-01-01T11:59:59Z").obj(), CTX, NOW)
    assert _conds(done)["Requeued"] == ConditionSpec(
        "Requeued", "True", "BackoffFinished", "The workload backoff was finished"
    )


def test_reactivation_requeues_and_resets_requeue_state() -> None:
    wl = (
        _wl()
        .condition("Evicted", True, "DeactivatedDueToAdmissionCheck")
        .requeue_state(2, "2026-01-01T13:00:00Z")
        .obj()
    )
    plan = plan_workload(wl, CTX, NOW)
    assert _conds(plan)["Requeued"].reason == "Reactivated"
    assert _conds(plan)["Evicted"].status == "False"
    assert plan.requeue_state is None


def test_malformed_workload_does_not_raise() -> None:
    for junk in ({}, {"status": "x", "spec": 3}, {"status": {"conditions": ["x", {"type": 1}]}}):
        plan_workload(junk, CTX, NOW)


def _with_max_exec(builder: WorkloadBuilder, seconds: int, accumulated: int | None = None) -> dict:
    wl = builder.obj()
    wl["spec"]["maximumExecutionTimeSeconds"] = seconds
    if accumulated is not None:
        wl["status"]["accumulatedPastExexcutionTimeSeconds"] = accumulated
    return wl


def test_maximum_execution_time_counts_past_admissions_then_deactivates() -> None:
    running = _wl().reserved("cq").admitted(at="2026-01-01T11:59:00Z")
    waiting = plan_workload(_with_max_exec(running, 100, accumulated=30), CTX, NOW)
    assert waiting.is_noop() and waiting.requeue_after == 10
    exceeded = plan_workload(_with_max_exec(running, 100, accumulated=40), CTX, NOW)
    target = _conds(exceeded)["DeactivationTarget"]
    assert (target.status, target.reason) == ("True", "MaximumExecutionTimeExceeded")


def test_eviction_accumulates_the_time_spent_admitted() -> None:
    cq = ClusterQueueBuilder("cq").flavor("default", cpu="4").admission_checks("a").obj()
    wl = _wl().reserved("cq").admitted(at="2026-01-01T11:58:20Z").check("a", "Retry").obj()
    wl["status"]["accumulatedPastExexcutionTimeSeconds"] = 5
    plan = plan_workload(wl, WorkloadContext(LQ, cq), NOW)
    assert _conds(plan)["Evicted"].reason == "AdmissionCheck"
    assert plan.accumulated_execution_seconds == 105


def test_a_concurrent_admission_parent_is_left_to_the_option_controller() -> None:
    """A parent mirrors its winning option's admission; the core workload controller must not run
    the parent's checks or timeouts on that mirror (docs/design/concurrent-admission.md)."""
    from controller.workload.decisions import WorkloadContext, plan_workload
    from tests.builders import ClusterQueueBuilder, WorkloadBuilder

    cq = ClusterQueueBuilder("cq").flavor("default", cpu="4").obj()
    cq["spec"]["admissionChecks"] = ["prov"]
    wl = WorkloadBuilder("p", "ns").podset(cpu="1").reserved("cq", {"cpu": "default"}, {"cpu": "1"}).obj()
    wl["spec"]["workloadMode"] = {"type": "Parent"}
    plan = plan_workload(wl, WorkloadContext(local_queue=None, cluster_queue=cq), datetime(2026, 1, 1, tzinfo=UTC))
    assert plan.is_noop()
