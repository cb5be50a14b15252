"""Status patches for what a scheduling cycle decided (reservations, preemptions, pending reasons).

Pure functions from (current Workload, engine decision, now) to a resourceVersion-guarded merge
patch plus Events, or ``None`` when the decision no longer applies to the object as it is now
(another writer got there first, the workload finished, was deleted and recreated...). The
scheduler loop treats ``None`` for a reservation as a failed write and rolls the assumption back.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller.workload import fallbacks as fb
from controller.workload import view as wv
from controller.workload.admissionchecks import assigned_flavors
from controller.workload.decisions import MSG_ADMITTED, evict
from controller.workload.patches import workload_status_patch
from controller.workload.status_plan import (
    EVENT_NORMAL,
    EVENT_WARNING,
    ConditionSpec,
    EventSpec,
    WorkloadPlan,
)
from pykueue.api import constants as C
from pykueue.api.timestamps import format_time, parse_time


@dataclass(slots=True)
class CyclePatch:
    patch: dict[str, Any]
    events: list[EventSpec] = field(default_factory=list)


def _uid(wl: Mapping[str, Any]) -> str:
    return str(wv.meta(wl).get("uid") or "")


def _schedulable(wl: Mapping[str, Any], uid: str) -> bool:
    return (
        (not uid or _uid(wl) == uid)
        and wv.is_active(wl)
        and not wv.is_finished(wl)
        and not wv.has_reservation(wl)
        and not wv.meta(wl).get("deletionTimestamp")
    )


def queued_since(wl: Mapping[str, Any]) -> datetime | None:
    """Creation time, or the last requeue (Kueue measures wait time from there)."""
    since = parse_time(wv.meta(wl).get("creationTimestamp"))
    requeued = wv.condition(wl, C.COND_REQUEUED)
    if requeued is not None and requeued.get("status") == "True":
        since = parse_time(requeued.get("lastTransitionTime")) or since
    return since


def reservation_patch(
    wl: Mapping[str, Any],
    *,
    uid: str,
    admission: Mapping[str, Any],
    admission_checks: Sequence[str],
    message: str,
    now: datetime,
    record_flavor_history: bool = False,
) -> CyclePatch | None:
    """``status.admission`` + ``QuotaReserved=True`` (+ ``Admitted=True`` when there are no checks,
    else Pending check states). Earlier ``Evicted``/``Preempted`` conditions flip to False so the
    workload reads as running again, as Kueue does.

    ``record_flavor_history`` (the ClusterQueue has a fallback strategy): the assigned flavors'
    ``status.flavorAssignmentHistory`` entries get ``now`` in this same patch, so no reservation
    ever exists without the time its fallback clock started (docs/design/fallbacks.md)."""
    if not _schedulable(wl, uid):
        return None
    plan = WorkloadPlan(admission=copy.deepcopy(dict(admission)))
    if record_flavor_history:
        plan.flavor_assignment_history = fb.history_with_assignment(wl, assigned_flavors(admission), now)
    plan.set_conditions.append(ConditionSpec(C.COND_QUOTA_RESERVED, "True", C.REASON_QUOTA_RESERVED, message))
    for type_ in (C.COND_EVICTED, C.COND_PREEMPTED):
        cond = wv.condition(wl, type_)
        if cond is not None and cond.get("status") == "True":
            previous = str(cond.get("message") or "")
            plan.set_conditions.append(
                ConditionSpec(type_, "False", C.REASON_QUOTA_RESERVED, f"Previously: {previous}")
            )
    cq = str(admission.get("clusterQueue") or "")
    since = queued_since(wl)
    waited = f", wait time since queued was {max(0, int((now - since).total_seconds()))}s" if since else ""
    events = [EventSpec(EVENT_NORMAL, C.EVENT_QUOTA_RESERVED, f"Quota reserved in ClusterQueue {cq}{waited}")]
    checks_passed = False
    if admission_checks:
        existing = {
            s.get("name"): s
            for s in wv.as_list(wv.status(wl).get("admissionChecks"))
            if isinstance(s, Mapping)
        }
        kept = (C.CHECK_PENDING,)
        plan.admission_checks = [
            dict(existing[name])
            if name in existing and existing[name].get("state") in kept
            else {
                "name": name,
                "state": C.CHECK_PENDING,
                "lastTransitionTime": format_time(now),
                "message": "",
            }
            for name in admission_checks
        ]
        checks_passed = all(s.get("state") == C.CHECK_READY for s in plan.admission_checks)
    if admission_checks and not checks_passed:
        plan.set_conditions.append(
            ConditionSpec(
                C.COND_ADMITTED,
                "False",
                C.REASON_UNSATISFIED_CHECKS,
                "The workload has not all admission checks",
            )
        )
    else:
        if not admission_checks and wv.status(wl).get("admissionChecks"):
            plan.admission_checks = []
        plan.set_conditions.append(ConditionSpec(C.COND_ADMITTED, "True", C.REASON_ADMITTED, MSG_ADMITTED))
        events.append(EventSpec(EVENT_NORMAL, C.EVENT_ADMITTED, f"Admitted by ClusterQueue {cq}{waited}"))
    patch = workload_status_patch(wl, plan, now)
    return CyclePatch(patch, events) if patch is not None else None


def preemption_patch(
    victim: Mapping[str, Any], *, uid: str, reason: str, message: str, now: datetime
) -> CyclePatch | None:
    """Evict a victim: ``Evicted=True`` (reason ``Preempted``), ``Preempted=True`` (reason
    ``InClusterQueue``/``InCohortReclamation``/...), ``Requeued=True``, checks reset; Event
    ``Preempted``. ``None`` when the victim no longer holds quota, is already evicted or has
    finished (it frees its quota anyway; the engine decided from a view older than that)."""
    if (
        (uid and _uid(victim) != uid)
        or not wv.has_reservation(victim)
        or wv.is_evicted(victim)
        or wv.is_finished(victim)
    ):
        return None
    plan = WorkloadPlan()
    evict(plan, victim, C.REASON_PREEMPTED, message, now, event_reason=C.EVENT_PREEMPTED)
    plan.set_conditions.append(ConditionSpec(C.COND_PREEMPTED, "True", reason, message))
    patch = workload_status_patch(victim, plan, now)
    return CyclePatch(patch, plan.events) if patch is not None else None


def eviction_patch(wl: Mapping[str, Any], *, reason: str, message: str, now: datetime) -> CyclePatch | None:
    """Evict for a non-preemption reason the engine decided (e.g. ``ClusterQueueStopped``)."""
    if not wv.has_reservation(wl) or wv.is_evicted(wl) or wv.is_finished(wl):
        return None
    plan = WorkloadPlan()
    evict(plan, wl, reason, message, now)
    patch = workload_status_patch(wl, plan, now)
    return CyclePatch(patch, plan.events) if patch is not None else None


def pending_patch(wl: Mapping[str, Any], *, reason: str, message: str, now: datetime) -> CyclePatch | None:
    """``QuotaReserved=False`` with the engine's reason, only if the workload is still pending and
    the condition differs (the engine already filters unchanged reasons; the object may have
    moved on since). One Warning Event with the same reason, as Kueue emits."""
    if wv.has_reservation(wl) or wv.is_finished(wl):
        return None
    cond = wv.condition(wl, C.COND_QUOTA_RESERVED)
    if (
        cond is not None
        and cond.get("status") == "False"
        and cond.get("reason") == reason
        and cond.get("message") == message
    ):
        return None
    plan = WorkloadPlan(set_conditions=[ConditionSpec(C.COND_QUOTA_RESERVED, "False", reason, message)])
    patch = workload_status_patch(wl, plan, now)
    return CyclePatch(patch, [EventSpec(EVENT_WARNING, reason, message)]) if patch is not None else None
