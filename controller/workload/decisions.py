"""What the workload controller does with one Workload, decided from its state alone.

Kueue's workload controller (``pkg/controller/core/workload_controller.go``) handles deactivation, admission checks,
the PodsReady timeout and requeue backoff (stop policies and "missing queue" reasons come from the
engine, which sees every queue change, through the scheduler loop). Here that logic
is one pure function, :func:`plan_workload`, taking the Workload, the queues it refers to and the
time, and returning a :class:`~controller.workload.status_plan.WorkloadPlan`. It makes **one step at a time**
(e.g. deactivate, then on the next reconcile evict): each write produces a watch event that
re-runs the reconcile with fresh state, so a conflicting writer can never make us act on a stale
picture for more than one step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from controller.workload import admissionchecks as checks
from controller.workload import fallbacks as fb
from controller.workload import view as wv
from controller.workload.requeue_backoff import (
    DEFAULT_BACKOFF_BASE_SECONDS,
    DEFAULT_BACKOFF_MAX_SECONDS,
    next_requeue,
)
from controller.workload.status_plan import (
    EVENT_NORMAL,
    EVENT_WARNING,
    ConditionSpec,
    EventSpec,
    Eviction,
    WorkloadPlan,
)
from pykueue.api import constants as C
from pykueue.api.timestamps import format_time, parse_time

# Messages (Kueue's wording where it has one).
MSG_ADMITTED = "The workload is admitted"
MSG_CHECKS_PENDING = "The workload has not all admission checks"
MSG_NO_RESERVATION = "The workload has no reservation"
MSG_BACKOFF_FINISHED = "The workload backoff was finished"
MSG_REACTIVATED = "The workload was reactivated"
MSG_DEACTIVATED = "The workload is deactivated"
MSG_CHECK_RETRY = "At least one admission check is false"


@dataclass(frozen=True, slots=True)
class PodsReadyPolicy:
    """``waitForPodsReady`` from the Configuration (only what the workload controller needs)."""

    timeout_seconds: float
    recovery_timeout_seconds: float | None = None
    backoff_base_seconds: float = DEFAULT_BACKOFF_BASE_SECONDS
    backoff_max_seconds: float = DEFAULT_BACKOFF_MAX_SECONDS
    backoff_limit_count: int | None = None


@dataclass(frozen=True, slots=True)
class WorkloadContext:
    """The objects a workload decision depends on, as the informers currently see them.

    ``cluster_queue`` is the queue holding the reservation when there is one, else the queue the
    LocalQueue points at. ``None`` means "does not exist".
    """

    local_queue: Mapping[str, Any] | None
    cluster_queue: Mapping[str, Any] | None
    pods_ready: PodsReadyPolicy | None = None


def _set(plan: WorkloadPlan, type_: str, status: bool, reason: str, message: str) -> None:
    plan.set_conditions.append(ConditionSpec(type_, "True" if status else "False", reason, message))


def _condition_differs(wl: Mapping[str, Any], type_: str, status: str, reason: str) -> bool:
    cond = wv.condition(wl, type_)
    return cond is None or cond.get("status") != status or cond.get("reason") != reason


def evict(
    plan: WorkloadPlan,
    wl: Mapping[str, Any],
    reason: str,
    message: str,
    now: datetime,
    *,
    underlying_cause: str = "",
    requeue_not_before: datetime | None = None,
    event_reason: str | None = None,
) -> None:
    """Mark ``wl`` evicted: ``Evicted=True``, checks reset to Pending, ``Requeued`` False while a
    backoff applies (else True), and the eviction Event. The quota stays reserved until the
    reservation is cleared (by us for standalone workloads, by the job integration otherwise)."""
    _set(plan, C.COND_EVICTED, True, reason, message)
    waits = requeue_not_before is not None and requeue_not_before > now
    deactivated = reason.startswith(C.REASON_DEACTIVATED)
    _set(plan, C.COND_REQUEUED, not (waits or deactivated), reason, message)
    reset = checks.reset_after_eviction(wv.status(wl).get("admissionChecks"), now)
    if reset is not None:
        plan.admission_checks = reset
    plan.events.append(EventSpec(EVENT_NORMAL, event_reason or C.evicted_event_reason(reason), message))
    plan.eviction = Eviction(wv.admitted_cluster_queue(wl), reason, underlying_cause)
    ran = _seconds_admitted(wl, now)
    if ran:
        plan.accumulated_execution_seconds = wv.accumulated_execution_seconds(wl) + ran


def _seconds_admitted(wl: Mapping[str, Any], now: datetime) -> int:
    """Whole seconds since the workload became Admitted (0 when it is not admitted)."""
    admitted = wv.condition(wl, C.COND_ADMITTED) or {}
    since = parse_time(admitted.get("lastTransitionTime")) if admitted.get("status") == "True" else None
    return max(0, int((now - since).total_seconds())) if since is not None else 0


def clear_reservation(plan: WorkloadPlan, wl: Mapping[str, Any]) -> None:
    """Release the quota of an evicted workload: drop ``status.admission``, ``QuotaReserved=False``
    (reason ``Pending`` with the eviction message) and ``Admitted=False``."""
    evicted = wv.condition(wl, C.COND_EVICTED) or {}
    message = str(evicted.get("message") or "The workload was evicted")
    plan.admission = None
    _set(plan, C.COND_QUOTA_RESERVED, False, C.REASON_PENDING, message)
    if wv.condition(wl, C.COND_ADMITTED) is not None:
        _set(plan, C.COND_ADMITTED, False, C.REASON_NO_RESERVATION, MSG_NO_RESERVATION)
    history = fb.history_after_release(wl)
    if history is not None:
        plan.flavor_assignment_history = history


def plan_workload(wl: Mapping[str, Any], ctx: WorkloadContext, now: datetime) -> WorkloadPlan:
    """Decide the next step for one Workload. Never raises on malformed input."""
    plan = WorkloadPlan()
    if wv.is_finished(wl) or wv.meta(wl).get("deletionTimestamp"):
        return plan
    if wv.workload_mode(wl) == C.WORKLOAD_MODE_PARENT:
        # Concurrent admission: a parent only mirrors its winning option's admission; the option
        # controller owns its status (docs/design/concurrent-admission.md).
        return plan
    reserved = wv.has_reservation(wl)
    evicted = wv.is_evicted(wl)
    active = wv.is_active(wl)
    target = wv.condition(wl, C.COND_DEACTIVATION_TARGET)

    # Deactivation requested (by a rejected check, the requeuing limit...): flip spec.active.
    if active and target is not None and target.get("status") == "True":
        plan.deactivate = True
        return plan

    if not active:
        if reserved and not evicted:
            cause = str((target or {}).get("reason") or "")
            reason = f"{C.REASON_DEACTIVATED}DueTo{cause}" if cause else C.REASON_DEACTIVATED
            message = str((target or {}).get("message") or MSG_DEACTIVATED)
            evict(plan, wl, reason, message, now, underlying_cause=cause)
            if target is not None:
                plan.remove_conditions.append(C.COND_DEACTIVATION_TARGET)
            return plan
        if reserved and evicted and wv.is_standalone(wl):
            clear_reservation(plan, wl)
            return plan
        if target is not None:
            plan.remove_conditions.append(C.COND_DEACTIVATION_TARGET)
        return plan

    if reserved and evicted:
        if wv.is_standalone(wl):
            clear_reservation(plan, wl)
        return plan

    if not reserved:
        _plan_pending(plan, wl, now, evicted)
        return plan

    _plan_reserved(plan, wl, ctx, now)
    return plan


def withhold_admission(plan: WorkloadPlan, wl: Mapping[str, Any], message: str) -> None:
    """Undo the admission ``plan`` decided: a concurrent-admission option whose sibling won the
    parent's race (controller/concurrentadmission/winner.py) stays reserved, not admitted, until
    the option controller deactivates it. Everything else in the plan (the synced checks) stays."""
    plan.set_conditions = [s for s in plan.set_conditions if s.type != C.COND_ADMITTED]
    plan.events = [e for e in plan.events if e.reason != C.EVENT_ADMITTED]
    plan.newly_admitted = False
    if _condition_differs(wl, C.COND_ADMITTED, "False", C.REASON_OTHER_OPTION_ADMITTED):
        _set(plan, C.COND_ADMITTED, False, C.REASON_OTHER_OPTION_ADMITTED, message)


def _plan_pending(plan: WorkloadPlan, wl: Mapping[str, Any], now: datetime, evicted: bool) -> None:
    """A pending, active workload: finish reactivation and the requeue backoff."""
    evicted_cond = wv.condition(wl, C.COND_EVICTED) or {}
    if evicted and str(evicted_cond.get("reason") or "").startswith(C.REASON_DEACTIVATED):
        _set(plan, C.COND_EVICTED, False, C.REASON_REACTIVATED, MSG_REACTIVATED)
        _set(plan, C.COND_REQUEUED, True, C.REASON_REACTIVATED, MSG_REACTIVATED)
        if wv.status(wl).get("requeueState") is not None:
            plan.requeue_state = None
        if evicted_cond.get("reason") == C.REASON_DEACTIVATED_DUE_TO_FLAVORS_EXHAUSTED:
            # reactivated after every flavor failed: start over (history and trigger record)
            if fb.history(wl):
                plan.flavor_assignment_history = []
            _record_triggers(plan, wl, {})
        return

    if wv.is_false(wl, C.COND_REQUEUED):
        requeue_at = parse_time(wv.requeue_state(wl).get("requeueAt"))
        if requeue_at is not None and requeue_at > now:
            plan.wake_in((requeue_at - now).total_seconds())
        else:
            _set(plan, C.COND_REQUEUED, True, C.REASON_BACKOFF_FINISHED, MSG_BACKOFF_FINISHED)


def _plan_reserved(plan: WorkloadPlan, wl: Mapping[str, Any], ctx: WorkloadContext, now: datetime) -> None:
    """A workload holding quota and not evicted: admission checks, then the PodsReady timeout.

    Queue-level decisions (HoldAndDrain evictions, "LocalQueue doesn't exist" pending reasons)
    are the engine's: it sees every queue change and emits them through the scheduler loop.
    """
    if ctx.cluster_queue is not None and _plan_fallback(plan, wl, ctx, now):
        return
    if ctx.cluster_queue is not None and _plan_checks(plan, wl, ctx.cluster_queue, now):
        return
    if _plan_maximum_execution_time(plan, wl, now):
        return
    _plan_pods_ready(plan, wl, ctx.pods_ready, now)


def _plan_maximum_execution_time(plan: WorkloadPlan, wl: Mapping[str, Any], now: datetime) -> bool:
    """``spec.maximumExecutionTimeSeconds``: time admitted, over all admissions, is capped; past
    it the workload is deactivated (Kueue). True when the deactivation was requested."""
    limit = wv.maximum_execution_seconds(wl)
    if limit is None or not wv.is_admitted(wl):
        return False
    used = wv.accumulated_execution_seconds(wl) + _seconds_admitted(wl, now)
    if used < limit:
        plan.wake_in(limit - used)
        return False
    _set(
        plan,
        C.COND_DEACTIVATION_TARGET,
        True,
        C.REASON_MAXIMUM_EXECUTION_TIME_EXCEEDED,
        f"The workload exceeded its maximum execution time of {limit}s",
    )
    return True


def _plan_checks(plan: WorkloadPlan, wl: Mapping[str, Any], cq: Mapping[str, Any], now: datetime) -> bool:
    """Sync ``status.admissionChecks`` and act on their verdict; True when the step is done."""
    required = checks.required_checks(wv.spec(cq), wv.admission(wl))
    existing = wv.status(wl).get("admissionChecks")
    synced = checks.sync_check_states(existing if isinstance(existing, list) else None, required, now)
    states = synced if synced is not None else (existing if isinstance(existing, list) else [])
    if synced is not None:
        plan.admission_checks = synced
    verdict = checks.evaluate(states, required)

    if verdict.verdict is checks.Verdict.REJECTED:
        message = f"Admission check(s) rejected: {verdict.message}"
        _set(plan, C.COND_DEACTIVATION_TARGET, True, C.REASON_ADMISSION_CHECK, message)
        plan.events.append(EventSpec(EVENT_WARNING, C.EVENT_ADMISSION_CHECK_REJECTED, message))
        return True
    if verdict.verdict is checks.Verdict.RETRY:
        not_before = checks.retry_not_before(states)
        evict(plan, wl, C.REASON_ADMISSION_CHECK, MSG_CHECK_RETRY, now, requeue_not_before=not_before)
        if not_before is not None and not_before > now:
            plan.requeue_state = {"count": wv.requeue_count(wl), "requeueAt": format_time(not_before)}
        return True
    if verdict.verdict is checks.Verdict.READY:
        if not wv.is_admitted(wl):
            _set(plan, C.COND_ADMITTED, True, C.REASON_ADMITTED, MSG_ADMITTED)
            plan.events.append(
                EventSpec(EVENT_NORMAL, C.EVENT_ADMITTED, f"Admitted by ClusterQueue {wv.name(cq)}")
            )
            plan.newly_admitted = True
        return synced is not None or plan.newly_admitted
    # Pending: not admitted (again) until every check is Ready.
    if _condition_differs(wl, C.COND_ADMITTED, "False", C.REASON_UNSATISFIED_CHECKS):
        _set(plan, C.COND_ADMITTED, False, C.REASON_UNSATISFIED_CHECKS, MSG_CHECKS_PENDING)
    return True


def _pods_ready_deadline(wl: Mapping[str, Any], policy: PodsReadyPolicy | None) -> datetime | None:
    """When the ``waitForPodsReady`` timeout (or recovery timeout) of ``wl`` runs out, if it runs."""
    if (
        policy is None
        or policy.timeout_seconds <= 0
        or not wv.is_admitted(wl)
        or wv.is_true(wl, C.COND_PODS_READY)
    ):
        return None
    pods_ready = wv.condition(wl, C.COND_PODS_READY) or {}
    admitted = wv.condition(wl, C.COND_ADMITTED) or {}
    timeout = policy.timeout_seconds
    since = parse_time(admitted.get("lastTransitionTime"))
    if pods_ready.get("reason") == C.REASON_WAIT_FOR_RECOVERY:
        if policy.recovery_timeout_seconds is not None:
            if policy.recovery_timeout_seconds <= 0:
                return None
            timeout = policy.recovery_timeout_seconds
        since = parse_time(pods_ready.get("lastTransitionTime")) or since
    return since + timedelta(seconds=timeout) if since is not None else None


def _plan_pods_ready(
    plan: WorkloadPlan, wl: Mapping[str, Any], policy: PodsReadyPolicy | None, now: datetime
) -> None:
    """Evict a workload whose pods did not become ready within the timeout of its admission."""
    deadline = _pods_ready_deadline(wl, policy)
    if deadline is None or policy is None:
        return
    if now < deadline:
        plan.wake_in((deadline - now).total_seconds())
        return
    decision = next_requeue(
        wv.requeue_count(wl),
        now,
        base_seconds=policy.backoff_base_seconds,
        max_seconds=policy.backoff_max_seconds,
        limit_count=policy.backoff_limit_count,
    )
    message = f"Exceeded the PodsReady timeout {wv.key(wl)}"
    if decision.limit_exceeded:
        _set(
            plan,
            C.COND_DEACTIVATION_TARGET,
            True,
            C.REASON_REQUEUING_LIMIT_EXCEEDED,
            "The workload is deactivated due to exceeding the maximum number of re-queuing retries",
        )
        plan.requeue_state = {"count": decision.count}
        return
    assert decision.requeue_at is not None
    plan.requeue_state = {"count": decision.count, "requeueAt": format_time(decision.requeue_at)}
    evict(plan, wl, C.REASON_PODS_READY_TIMEOUT, message, now, requeue_not_before=decision.requeue_at)


def _plan_fallback(plan: WorkloadPlan, wl: Mapping[str, Any], ctx: WorkloadContext, now: datetime) -> bool:
    """ResourceFlavor fallbacks (docs/design/fallbacks.md): True when a held flavor's attempt failed
    and this step evicts (or deactivates) the workload; else only asks to wake at the deadline.

    A Rejected check on a flavor with an ``AdmissionCheckRejected`` rule falls back at once. A
    timeout falls back when its deadline has passed and is not later than the ``waitForPodsReady``
    deadline: the two timeouts stay separate, and the first to run out acts (on a tie, the
    fallback, which also keeps the failed flavor out of the next assignment).
    """
    cq = ctx.cluster_queue
    strategy = fb.parse_strategy(wv.spec(cq)) if cq is not None else None
    if cq is None or strategy is None:
        return False
    failure = fb.rejection_failure(wl, strategy, wv.spec(cq))
    if failure is None:
        due = fb.timeout_deadline(wl, strategy)
        if due is None:
            return False
        deadline, _flavors = due
        if now < deadline:
            plan.wake_in((deadline - now).total_seconds())
            return False
        pods_ready_deadline = _pods_ready_deadline(wl, ctx.pods_ready)
        if pods_ready_deadline is not None and pods_ready_deadline < deadline:
            return False
        failure = fb.timeout_failure(wl, strategy, now)
        if failure is None:
            return False
    _fall_back(plan, wl, cq, strategy, failure, now, ctx.pods_ready)
    return True


def _record_triggers(plan: WorkloadPlan, wl: Mapping[str, Any], record: Mapping[str, str]) -> None:
    """Carry the fallback trigger record in the plan when it differs from the workload's."""
    change = fb.triggers_change(wl, record)
    if change is not None:
        plan.flavor_fallback_triggers = change


def _fall_back(
    plan: WorkloadPlan,
    wl: Mapping[str, Any],
    cq: Mapping[str, Any],
    strategy: fb.FallbackStrategy,
    failure: fb.Failure,
    now: datetime,
    policy: PodsReadyPolicy | None,
) -> None:
    """Write one fallback: the history keeps the failed flavors (and drops the other held ones),
    the trigger record gets the failed flavors' trigger, then an eviction naming flavor and
    trigger, or, when no flavor is left, the failure policy: its message lists every excluded
    flavor with the trigger that ended it, in ClusterQueue order."""
    cq_name = wv.admitted_cluster_queue(wl) or wv.name(cq)
    held = fb.held_flavors(wl)
    failed = set(failure.flavors)
    history = fb.history_without(wl, held - failed)
    excluded_after = fb.excluded_flavors(wl) | failed
    flavors = ", ".join(failure.flavors)
    message = f"Flavor {flavors} fell back after {failure.trigger}: {failure.detail}"
    plan.fallbacks.extend((cq_name, f, failure.trigger) for f in failure.flavors)
    plan.events.append(EventSpec(EVENT_WARNING, C.REASON_FLAVOR_FALLBACK, message))
    if not fb.exhausted(wv.spec(cq), excluded_after, failed):
        _record_triggers(plan, wl, fb.triggers_after_fallback(wl, failure, excluded_after))
        if history is not None:
            plan.flavor_assignment_history = history
        evict(plan, wl, C.REASON_FLAVOR_FALLBACK, f"{message}; requeued without it", now)
        return
    record = fb.triggers_after_fallback(wl, failure, excluded_after)
    tried = fb.tried_text(wv.spec(cq), excluded_after, record)
    if strategy.failure_policy == C.FALLBACK_RETRY_ALL:
        decision = next_requeue(
            wv.requeue_count(wl),
            now,
            base_seconds=policy.backoff_base_seconds if policy else DEFAULT_BACKOFF_BASE_SECONDS,
            max_seconds=policy.backoff_max_seconds if policy else DEFAULT_BACKOFF_MAX_SECONDS,
        )
        assert decision.requeue_at is not None
        plan.flavor_assignment_history = []
        _record_triggers(plan, wl, {})
        plan.requeue_state = {"count": decision.count, "requeueAt": format_time(decision.requeue_at)}
        evict(
            plan,
            wl,
            C.REASON_FLAVOR_FALLBACK,
            f"{message}; every flavor was tried: {tried}; {C.FALLBACK_RETRY_ALL} starts over "
            f"at {format_time(decision.requeue_at)}",
            now,
            requeue_not_before=decision.requeue_at,
        )
        return
    if history is not None:
        plan.flavor_assignment_history = history
    _record_triggers(plan, wl, record)  # kept with the history as the record of what was tried
    _set(
        plan,
        C.COND_DEACTIVATION_TARGET,
        True,
        fb.REASON_FLAVORS_EXHAUSTED,
        f"Every flavor was tried: {tried}; the last, {flavors}: {failure.detail}. "
        f"The workload is deactivated ({C.FALLBACK_DEACTIVATE})",
    )
