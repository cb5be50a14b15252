"""Why a workload is pending and what would admit it: a dry run of the cycle's own nomination.

:func:`explain` runs on the engine's thread (through ``EngineReads``) and calls the same code a
cycle calls for a queue head — ``cycle._nominate``: flavor assignment against the live quota
(``flavors.assign_flavors``, honouring fallback exclusions and allowed flavors) and, when only
evictions would make room, the preemptor's victim search (``Preemptor.targets``, which restores
the usage it touches). Nothing is assumed, written or requeued; no second implementation of the
rules exists. Around that it reports what the cycle does not need to say: the workloads ahead in
the queue, the ClusterQueue's state, per flavor and resource how much is needed, free and what
the cohort could lend, the admission checks that follow the reservation, and the smallest change
that would admit it now.

One thing holds admission back outside the cycle: ``waitForPodsReady.blockAdmission``. The
scheduler loop (``controller.core.scheduler``) runs no cycle while an admitted workload's pods are
not ready, as Kueue's scheduler waits in ``waitForPodsReadyIfNeeded`` before admitting anything
else. The loop passes the workloads it waits for as ``blocked_by`` (read on its own thread, so
they agree with the engine's state), and the suggestion says admission waits for them: without
that, a workload that is first and fits would read "it is next" while no cycle comes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pykueue.api.quantity import format_quantity

from . import quota
from .cycle import Holdings, _nominate
from .flavors import FIT, NO_CANDIDATES, NO_FIT, PREEMPT
from .queue_manager import QueueManager
from .quota_cache import QuotaCache
from .records import ObjectKey, WorkloadInfo
from .visibility import ordered

AHEAD_SHOWN = 5
# NO_CANDIDATES: evictions could make room in principle, but no workload may be evicted now.
OUTCOMES = {FIT: "Fits", PREEMPT: "FitsAfterPreemption", NO_CANDIDATES: "DoesNotFit", NO_FIT: "DoesNotFit"}


@dataclass(frozen=True, slots=True)
class ResourceView:
    flavor: str
    resource: str
    requested: str  # the workload's total request
    free: str  # what the ClusterQueue could take now, borrowing included
    nominal: str
    cohort_can_lend: str  # beyond the nominal quota, with the whole cohort tree idle
    missing: str  # requested - free when positive, else "0"
    missing_amount: int = 0


@dataclass(frozen=True, slots=True)
class CheckView:
    """One entry of the Workload's ``status.admissionChecks`` as stored (the check controller's words)."""

    name: str
    state: str  # Pending, Ready, Retry, Rejected
    message: str = ""
    last_transition_time: str = ""
    retry_count: int | None = None


@dataclass(frozen=True, slots=True)
class OptionView:
    """A concurrent-admission parent's option: its entry in the parent's ``status.options`` and,
    when the engine queues it, where it stands."""

    name: str
    flavors: list[str]
    status: str  # Pending, QuotaReserved, Admitted, Evicted, Removed (the parent's status.options)
    message: str = ""
    state: str = ""  # the option's own explanation state (Pending, HoldsQuota, Unknown)
    position: int | None = None
    outcome: str = ""


@dataclass(slots=True)
class Explanation:
    workload: ObjectKey
    state: str  # Pending, HoldsQuota, Unknown (not queued: no LocalQueue/ClusterQueue, inactive workload)
    cluster_queue: str = ""
    local_queue: str = ""
    queue_active: bool = True
    queue_inactive_reason: str = ""
    queue_inactive_message: str = ""
    position: int | None = None
    ahead: int = 0
    ahead_first: list[ObjectKey] = field(default_factory=list)
    outcome: str = ""
    reason: str = ""
    message: str = ""
    flavors: dict[str, dict[str, str]] = field(default_factory=dict)  # podSet -> resource -> flavor
    resources: list[ResourceView] = field(default_factory=list)
    victims: list[tuple[ObjectKey, str, str]] = field(default_factory=list)  # (workload, ClusterQueue, reason)
    admission_checks: list[str] = field(default_factory=list)
    excluded_flavors: list[str] = field(default_factory=list)
    last_reason: str = ""
    last_message: str = ""
    suggestion: str = ""
    admitted: bool = False  # HoldsQuota only: Admitted=True (every admission check Ready)
    check_states: list[CheckView] = field(default_factory=list)  # from the stored status (explain_status)
    options: list[OptionView] = field(default_factory=list)  # a concurrent-admission parent's options
    # Pending only: the admitted workloads whose pods blockAdmission waits for (nothing is admitted before).
    blocked_by: list[ObjectKey] = field(default_factory=list)
    victims_in_grace: bool = False  # some victim was admitted too recently to be evicted yet


def _q(amount: int, resource: str) -> str:
    return format_quantity(amount, resource)


def explain(
    cache: QuotaCache,
    queues: QueueManager,
    workloads: Mapping[ObjectKey, WorkloadInfo],
    holdings: Holdings,
    key: ObjectKey,
    blocked_by: Sequence[ObjectKey] = (),
    now: float | None = None,
) -> Explanation:
    """Engine thread (``Engine.explain`` passes its parts). ``holdings`` is the engine, as for the
    cycle; a dry run never calls it (``_nominate`` only reads, and the preemptor restores).
    ``blocked_by``: the admitted workloads whose pods ``waitForPodsReady.blockAdmission`` waits
    for, as the scheduler loop knows them (empty when it admits). ``now``: the engine's clock
    (default: the wall clock)."""
    admitted = cache.admitted_workload(key)
    if admitted is not None and admitted.admission is not None:
        holding = admitted.admission.cluster_queue
        result = Explanation(key, "HoldsQuota", cluster_queue=holding, local_queue=admitted.queue_name,
                             admitted=admitted.admission.admitted)
        spec = cache.cluster_queues.get(holding)
        result.admission_checks = [rule.name for rule in spec.checks] if spec is not None else []
        if admitted.admission.admitted:
            result.suggestion = "it is admitted; nothing to change"
        else:
            result.suggestion = (f"it holds quota in ClusterQueue {holding} and waits for its admission checks "
                                 f"({', '.join(result.admission_checks) or 'none configured'}) to be Ready")
        return result
    info = workloads.get(key)
    if info is None:
        return Explanation(key, "Unknown", suggestion="the scheduler does not queue this workload (finished, "
                           "deactivated, or not yet seen)")
    result = Explanation(key, "Pending", local_queue=info.queue_name, excluded_flavors=sorted(info.excluded_flavors))
    result.last_reason, result.last_message = queues.last_reason.get(key, ("", ""))
    cluster_queue = queues.cluster_queue_of(info.local_queue_key)
    if cluster_queue is None or cluster_queue not in cache.cluster_queues:
        result.suggestion = f"LocalQueue {info.queue_name} or its ClusterQueue does not exist: create it"
        return result
    result.cluster_queue = cluster_queue
    result.blocked_by = sorted(blocked_by)
    spec = cache.cluster_queues[cluster_queue]
    result.admission_checks = [rule.name for rule in spec.checks]
    snap = queues.snapshot(cluster_queue)
    if snap is not None:
        keys = [i.key for i in ordered(snap)]
        if key in keys:
            result.position = result.ahead = keys.index(key)
            result.ahead_first = keys[:min(result.position, AHEAD_SHOWN)]
    if not cache.is_active(cluster_queue):
        result.queue_active = False
        result.queue_inactive_reason, result.queue_inactive_message = cache.inactive.get(cluster_queue, ("", ""))
    _dry_run(cache, holdings, info, cluster_queue, result, time.time() if now is None else now)
    result.suggestion = _suggest(result)
    return result


def _dry_run(cache: QuotaCache, holdings: Holdings, info: WorkloadInfo, cluster_queue: str,
             result: Explanation, now: float) -> None:
    cache.ensure_forest()
    grace_ends = cache.preemptor.grace_ends  # the loop's next wake is the cycle's, not the dry run's
    try:
        entry = _nominate(cache, holdings, info, cluster_queue, now)
    finally:
        cache.preemptor.grace_ends = grace_ends
    assignment = entry.assignment
    result.outcome = OUTCOMES.get(assignment.mode, str(assignment.mode))
    result.reason, result.message = assignment.reason, assignment.message
    result.flavors = {ps.name: dict(ps.flavors) for ps in assignment.podsets}
    result.victims = [(t.victim.key, t.cluster_queue, t.reason) for t in entry.targets]
    result.victims_in_grace = entry.in_grace
    if assignment.mode == PREEMPT and not entry.targets:
        result.outcome = "DoesNotFit"
    spec = cache.cluster_queues[cluster_queue]
    node = cache.forest.cluster_queues.get(cluster_queue)
    if node is None:
        return
    excluded = info.excluded_flavors if spec.fallbacks else frozenset()
    totals: dict[str, int] = {}
    for podset in info.podsets:
        for resource, amount in podset.requests.items():
            totals[resource] = totals.get(resource, 0) + amount
    for resource, amount in sorted(totals.items()):
        group = spec.resource_group.get(resource)
        if group is None:
            continue
        for fq in spec.groups[group].flavors:
            if fq.name in excluded:
                continue
            fr = (fq.name, resource)
            free = max(0, quota.available(node, fr))
            nominal = node.nominal(fr)
            lend = max(0, quota.potential_available(node, fr) - nominal)
            missing = max(0, amount - free)
            result.resources.append(ResourceView(fq.name, resource, _q(amount, resource), _q(free, resource),
                                                 _q(nominal, resource), _q(lend, resource), _q(missing, resource),
                                                 missing))


def _waiting_for_pods(blocked_by: Sequence[ObjectKey]) -> str:
    """The blockAdmission clause: which workloads' pods must be ready before any admission."""
    if not blocked_by:
        return ""
    shown = ", ".join(blocked_by[:AHEAD_SHOWN])
    more = f" and {len(blocked_by) - AHEAD_SHOWN} more" if len(blocked_by) > AHEAD_SHOWN else ""
    return (f" once the pods of {shown}{more} are ready (waitForPodsReady.blockAdmission: nothing is "
            "admitted while an admitted workload's pods are not ready)")


def _suggest(result: Explanation) -> str:
    if not result.queue_active:
        return (f"ClusterQueue {result.cluster_queue} admits nothing ({result.queue_inactive_reason}: "
                f"{result.queue_inactive_message}); make it active (e.g. set spec.stopPolicy to None)")
    checks = f"; then admission checks {', '.join(result.admission_checks)} must pass" if result.admission_checks else ""
    waiting = _waiting_for_pods(result.blocked_by)
    if result.outcome == "Fits":
        if result.ahead == 0:
            if waiting:
                return f"it is next: it fits now and will be admitted{waiting}{checks}"
            return f"it is next: it fits now and will be admitted by the next scheduling cycle{checks}"
        return f"it fits now, after the {result.ahead} workload(s) ahead of it{',' if waiting else ''}{waiting}{checks}"
    if result.outcome == "FitsAfterPreemption":
        names = ", ".join(v[0] for v in result.victims)
        grace = (", once their preemption grace ends (a workload admitted moments ago is evicted only "
                 "seconds later)") if result.victims_in_grace else ""
        return (f"it would be admitted after preempting {len(result.victims)} workload(s): {names}{grace}"
                f"{',' if waiting else ''}{waiting}{checks}")
    by_flavor: dict[str, list[ResourceView]] = {}
    for view in result.resources:
        by_flavor.setdefault(view.flavor, []).append(view)
    for flavor, views in by_flavor.items():
        missing = [v for v in views if v.missing_amount > 0]
        if missing:
            parts = [f"{v.missing} of {v.resource}" for v in missing]
            return (f"free {' and '.join(parts)} in flavor {flavor} (or raise its nominalQuota by as much) "
                    f"in ClusterQueue {result.cluster_queue}{'; and it is admitted only' if waiting else ''}{waiting}{checks}")
    return result.message or "no flavor can take it; see the reason"
