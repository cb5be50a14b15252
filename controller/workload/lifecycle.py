"""What the job integration writes on its Workload's status, as :class:`~controller.workload.status_plan.WorkloadPlan`s.

The plans are turned into resourceVersion-guarded status merge patches by
:func:`controller.workload.patches.workload_status_patch`, the same writer the workload controller
uses, so the two controllers write conditions with the same semantics (lastTransitionTime moves
only on a status flip; observedGeneration is the generation decided on).

- :func:`finish_plan`: the Job completed or failed → ``Finished=True`` (``Succeeded``/``Failed``)
  with the Job's message. Finished workloads stop counting against quota.
- :func:`failed_to_start_plan`: the admission cannot be applied to the Job (conflicting
  podSetUpdates) → ``Finished=True``/``FailedToStart``: retrying could never succeed.
- :func:`release_plan`: after an eviction, once the Job's pods are gone, give the quota back:
  no ``status.admission``, ``QuotaReserved=False``/``Pending``, ``Admitted=False``, ``Requeued``
  as Kueue sets it (True only for preemption and node failures; the workload controller may have
  set it already with its backoff decision, which is kept), admission checks reset to Pending,
  and ``PodsReady`` back to ``WaitForStart`` so a re-admission is timed from scratch.
- :func:`back_to_pending_plan`: a reservation that cannot be used before any pod exists goes
  back to pending instead of retrying: nothing has started, so nothing needs stopping
  (docs/design/jobs.md, "Delayed pod creation").
- :func:`pods_ready_plan`: keep ``PodsReady`` in step with the running Job.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from controller.workload import admissionchecks as checks
from controller.workload import view as wv
from controller.workload.decisions import MSG_NO_RESERVATION, clear_reservation
from controller.workload.fallbacks import history_after_release
from controller.workload.podsready import MSG_NOT_READY, differs, pods_ready_condition
from controller.workload.status_plan import ConditionSpec, WorkloadPlan
from pykueue.api.constants import (
    COND_ADMITTED,
    COND_EVICTED,
    COND_FINISHED,
    COND_PODS_READY,
    COND_QUOTA_RESERVED,
    COND_REQUEUED,
    REASON_FAILED,
    REASON_NO_RESERVATION,
    REASON_OUT_OF_SYNC,
    REASON_PENDING,
    REASON_PREEMPTED,
    REASON_SUCCEEDED,
    REASON_WAIT_FOR_START,
)

REASON_FAILED_TO_START = "FailedToStart"
REASON_NODE_FAILURES = "NodeFailures"
# Eviction reasons after which the workload may be admitted again at once (Kueue's rule).
REQUEUE_IMMEDIATELY_REASONS = frozenset({REASON_PREEMPTED, REASON_NODE_FAILURES})


def finish_plan(success: bool, message: str) -> WorkloadPlan:
    """``Finished=True``: ``Succeeded`` or ``Failed`` with the job's own message."""
    plan = WorkloadPlan()
    reason = REASON_SUCCEEDED if success else REASON_FAILED
    plan.set_conditions.append(ConditionSpec(COND_FINISHED, "True", reason, message))
    return plan


def out_of_sync_plan(message: str) -> WorkloadPlan:
    """``Finished=True``/``OutOfSync``: a prebuilt Workload that no longer describes its Job."""
    plan = WorkloadPlan()
    plan.set_conditions.append(ConditionSpec(COND_FINISHED, "True", REASON_OUT_OF_SYNC, message))
    return plan


def failed_to_start_plan(message: str) -> WorkloadPlan:
    plan = WorkloadPlan()
    plan.set_conditions.append(ConditionSpec(COND_FINISHED, "True", REASON_FAILED_TO_START, message))
    return plan


def release_plan(workload: dict[str, Any], now: datetime) -> WorkloadPlan:
    """Clear the reservation of an evicted Workload whose Job has no pods left."""
    plan = WorkloadPlan()
    clear_reservation(plan, workload)
    if wv.condition(workload, COND_REQUEUED) is None:
        evicted = wv.condition(workload, COND_EVICTED) or {}
        reason = str(evicted.get("reason") or REASON_PREEMPTED)
        requeue = "True" if reason in REQUEUE_IMMEDIATELY_REASONS else "False"
        plan.set_conditions.append(
            ConditionSpec(COND_REQUEUED, requeue, reason, str(evicted.get("message") or ""))
        )
    reset = checks.reset_after_eviction(wv.status(workload).get("admissionChecks"), now)
    if reset is not None:
        plan.admission_checks = reset
    if wv.condition(workload, COND_PODS_READY) is not None:
        plan.set_conditions.append(
            ConditionSpec(COND_PODS_READY, "False", REASON_WAIT_FOR_START, MSG_NOT_READY)
        )
    return plan


def back_to_pending_plan(workload: dict[str, Any], message: str, now: datetime) -> WorkloadPlan:
    """Give up a reservation that cannot be used (the Job was never started, so no pods exist).

    Delayed pod creation's rule (docs/design/jobs.md): when what admission promised vanishes
    before the pods exist (an admitted ResourceFlavor was deleted), the workload goes back to
    pending instead of retrying the start forever; the scheduler then decides again from the
    current objects.
    """
    plan = WorkloadPlan()
    plan.admission = None
    plan.set_conditions.append(ConditionSpec(COND_QUOTA_RESERVED, "False", REASON_PENDING, message))
    history = history_after_release(workload)  # the flavors held did not fail a fallback rule
    if history is not None:
        plan.flavor_assignment_history = history
    if wv.condition(workload, COND_ADMITTED) is not None:
        plan.set_conditions.append(
            ConditionSpec(COND_ADMITTED, "False", REASON_NO_RESERVATION, MSG_NO_RESERVATION)
        )
    reset = checks.reset_after_eviction(wv.status(workload).get("admissionChecks"), now)
    if reset is not None:
        plan.admission_checks = reset
    return plan


def pods_ready_plan(pods_ready: bool, workload: dict[str, Any]) -> WorkloadPlan | None:
    """The PodsReady update for a running job, or ``None`` when the condition is current."""
    wanted = pods_ready_condition(pods_ready, workload)
    if not differs(workload, wanted):
        return None
    plan = WorkloadPlan()
    plan.set_conditions.append(wanted)
    return plan
