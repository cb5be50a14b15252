"""One scheduling cycle.

The cycle runs in rounds. Each round takes the next head of every active ClusterQueue that is
still eligible this cycle, nominates it (flavor assignment, preemption targets), orders the
round's entries as Kueue does (entries that need no borrowing first, then higher priority, then
older), and processes them one by one against the live quota state, which the round mutates:

* **fit**: re-checked against the quota as it is now (an earlier entry may have taken it); then
  assumed in the cache and returned as a reservation. The queue stays eligible for the next round.
* **preempt**: victims are returned, the preemptor's usage is held for the rest of the cycle so
  nobody else takes the room being freed, and the preemptor becomes its queue's sticky head.
  Its queue takes no more heads this cycle (evictions are serialised per queue). An entry whose
  victims overlap those of an earlier entry is skipped.
* **migration** (concurrent admission, ``controller.engine.options``): an option that takes
  over from its admitted sibling evicts it instead of reserving, and waits for its quota. Until
  it reserves it keeps, like a preemptor, the quota it counts on outside the sibling's flavors
  (held for the cycle, sticky head), so a lower-priority workload cannot take it meanwhile.
* **no fit**: the pending reason is recorded; BestEffortFIFO parks the workload's shape class and
  moves on to the next head, StrictFIFO keeps it as the head and stops the queue for this cycle.

With fair sharing on, a round's entries are taken in Kueue's tournament order instead
(``fair_order``: lowest dominant resource share after admission first, chosen again before each
entry against the quota as the previous ones left it).

``heads_per_cluster_queue`` bounds the rounds. Kueue uses one head per queue per cycle, which is
its throughput ceiling; several rounds are safe because each re-checks against the mutated state
and a queue that preempts or blocks stops taking heads. The "snapshot" of Kueue is therefore the
live cache plus an undo list for the cycle's temporary reservations; nothing is copied.

Only the first round preempts. A head of a later round that needs evictions goes back to its
queue, untouched and not parked, and its queue takes no more heads this cycle: it is the queue's
first head next cycle and decides then. Kueue's cycle nominates one head per queue, all against
the snapshot taken before any of the cycle's admissions, so none of its preemptions is made for
quota that another entry of the same cycle has just taken; a later round, nominated after the
earlier rounds' borrowers took the cohort's free quota, would reclaim that quota from other
borrowers at once (``docs/design/engine.md``, "Preemption and several heads per cycle").
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from pykueue.api import constants as c
from pykueue.api.quantity import format_quantity

from . import partial, quota
from .fair_order import tournament_order
from .flavors import FIT, NO_CANDIDATES, NO_FIT, PREEMPT, Assignment, assign_flavors
from .options import OptionBook, migration_message
from .preemption import Target, preemption_message
from .queue_manager import QueueManager
from .quota_cache import QuotaCache
from .records import ClusterQueueSpec, FlavorResource, ObjectKey, OrderKey, WorkloadInfo
from .results import CycleResult, Preemption, Reservation

# Kueue's words for an entry passed over because an earlier entry of the same cycle took its room.
NO_LONGER_FITS = "Workload no longer fits after processing another workload"


class Holdings(Protocol):
    """How the cycle changes who holds quota: through the engine, which keeps the quota cache and
    the queue manager in step (a workload holding quota is never also pending) and applies
    HoldAndDrain to a restored holder."""

    def assume(self, info: WorkloadInfo, cluster_queue: str, usage: dict[FlavorResource, int], now: float,
               admitted: bool) -> None: ...

    def displace(self, holder: WorkloadInfo) -> None: ...

    def restore(self, holder: WorkloadInfo) -> None: ...


class _Entry:
    __slots__ = (
        "assignment", "cluster_queue", "displace", "in_grace", "info", "keep", "retry_next_cycle", "targets",
    )

    def __init__(
        self,
        info: WorkloadInfo,
        cluster_queue: str,
        assignment: Assignment,
        targets: list[Target],
        displace: WorkloadInfo | None = None,
        retry_next_cycle: bool = False,
        keep: dict[FlavorResource, int] | None = None,
        in_grace: bool = False,
    ) -> None:
        self.info = info
        self.cluster_queue = cluster_queue
        self.assignment = assignment
        self.targets = targets
        self.displace = displace  # concurrent admission: the sibling option this one migrates from
        # Preemption passed over workloads admitted earlier in this cycle: decide again next cycle.
        self.retry_next_cycle = retry_next_cycle
        # Concurrent admission: quota kept for an option whose winner is leaving for it (a
        # migration); it waits, and no later entry of the cycle may take that quota.
        self.keep = keep
        # Its victims (``targets``) are still in their preemption grace (docs/design/engine.md,
        # "Preemption grace"): it evicts none, and waits holding its queue's quota.
        self.in_grace = in_grace

    @property
    def usage(self) -> dict[FlavorResource, int]:
        return self.assignment.usage

    @property
    def order_key(self) -> OrderKey:
        return self.info.order_key

    def order(self) -> tuple[int, OrderKey]:
        """Kueue's entry order: no borrowing first, then the queue order (priority, timestamp)."""
        return (self.assignment.borrowing_level, self.info.order_key)


def run_cycle(
    cache: QuotaCache,
    queues: QueueManager,
    holdings: Holdings,
    heads_per_cluster_queue: int,
    now: float,
    result: CycleResult,
) -> None:
    """One cycle over the live state of ``cache`` and ``queues``; decisions go into ``result``."""
    exhausted: set[str] = set()
    held: list[tuple[quota.QuotaNode, dict[FlavorResource, int]]] = []
    targeted = _Targeted()
    cache.preemptor.reserved_this_cycle.clear()
    cache.preemptor.grace_ends = None
    try:
        for round_index in range(heads_per_cluster_queue):
            entries: list[_Entry] = []
            for name, queue in queues.queues.items():
                if name in exhausted or not cache.is_active(name):
                    continue
                info = queue.pop()
                if info is None:
                    exhausted.add(name)
                    continue
                entries.append(_nominate(cache, holdings, info, name, now))
            if not entries:
                break
            result.heads_tried += len(entries)
            entries.sort(key=_Entry.order)
            ordered = tournament_order(entries, cache.forest) if cache.preemptor.fair_strategies else entries
            for entry in ordered:
                if round_index and entry.targets and not entry.in_grace:
                    _defer_preemption(queues, entry, exhausted)
                    continue
                _process(cache, queues, holdings, entry, now, result, exhausted, held, targeted)
    finally:
        for node, usage in held:
            quota.remove_usage(node, usage)
        cache.preemptor.reserved_this_cycle.clear()


def _defer_preemption(queues: QueueManager, entry: _Entry, exhausted: set[str]) -> None:
    """A head of a later round that would preempt: back to its queue as it was (not parked, no
    reason written), and its queue is done for this cycle, so it is the first head next cycle and
    no workload behind it takes the quota it waits for meanwhile."""
    queues.requeue(entry.info, entry.cluster_queue)
    exhausted.add(entry.cluster_queue)


def _nominate(cache: QuotaCache, holdings: Holdings, info: WorkloadInfo, cluster_queue: str, now: float) -> _Entry:
    preemptor = cache.preemptor
    preemptor.begin_nomination()  # quota is not changed while a head is nominated
    try:
        return _nominate_head(cache, holdings, info, cluster_queue, now)
    finally:
        preemptor.end_nomination()


def _nominate_head(
    cache: QuotaCache, holdings: Holdings, info: WorkloadInfo, cluster_queue: str, now: float
) -> _Entry:
    spec = cache.cluster_queues[cluster_queue]
    node = cache.forest.cluster_queues[cluster_queue]
    holder = cache.option_holder(info) if info.option is not None else None
    if holder is not None:
        return _nominate_migration(cache, holdings, info, cluster_queue, holder, now)
    target = cache.migration_target_pending(info) if info.option is not None else None
    if target is not None:
        blocked = Assignment(
            mode=NO_FIT,
            reason=c.REASON_PENDING,
            message=f"the job is migrating to option {target.name} of the same parent, which goes first",
        )
        return _Entry(info, cluster_queue, blocked, [])
    assignment = assign_flavors(info, spec, node, cache.flavors, cache.preemptor.preemption_level,
                                fair_sharing=bool(cache.preemptor.fair_strategies))
    targets: list[Target] = []
    if assignment.mode == PREEMPT:
        if cache.option_preempting(info, now):
            assignment = _blocked(assignment, "another option of the same parent is preempting workloads")
        else:
            targets = cache.preemptor.targets(info, spec, assignment.usage, assignment.needs_preemption)
    if assignment.mode != FIT and not targets and any(ps.min_count is not None for ps in info.podsets):
        reduced = _partial_assignment(cache, info, cluster_queue)
        if reduced is not None:
            assignment, targets = reduced
    if targets and cache.preemptor.waits_for_grace(targets, now):
        # The victims Kueue's rules chose, not others: they are evicted once their grace ends,
        # unless they finish first. Kept on the entry for the visibility API's dry run.
        return _Entry(info, cluster_queue, assignment, targets, retry_next_cycle=True, in_grace=True)
    retry = cache.preemptor.passed_over_fresh and assignment.mode != FIT and not targets
    return _Entry(info, cluster_queue, assignment, targets, retry_next_cycle=retry)


def _partial_assignment(
    cache: QuotaCache, info: WorkloadInfo, cluster_queue: str
) -> tuple[Assignment, list[Target]] | None:
    """Partial admission (``controller.engine.partial``): the assignment, and victims if it must
    preempt, of the largest pod counts down to each podSet's ``minCount`` that can be admitted."""
    spec = cache.cluster_queues[cluster_queue]
    node = cache.forest.cluster_queues[cluster_queue]

    def fits(counts: list[int]) -> tuple[Assignment, list[Target]] | None:
        reduced = replace(info, podsets=tuple(ps.scaled(n) for ps, n in zip(info.podsets, counts, strict=True)))
        assignment = assign_flavors(reduced, spec, node, cache.flavors, cache.preemptor.preemption_level,
                                    fair_sharing=bool(cache.preemptor.fair_strategies))
        if assignment.mode == FIT:
            return assignment, []
        if assignment.mode == PREEMPT:
            targets = cache.preemptor.targets(info, spec, assignment.usage, assignment.needs_preemption)
            if targets:
                return assignment, targets
        return None

    full = [ps.count for ps in info.podsets]
    minimum = [ps.min_count if ps.min_count is not None else ps.count for ps in info.podsets]
    return partial.search(full, minimum, fits)


def _blocked(assignment: Assignment, why: str) -> Assignment:
    message = f"{assignment.message}; {why}" if assignment.message else why
    return Assignment(mode=NO_FIT, reason=assignment.reason or c.REASON_WAITING_FOR_QUOTA, message=message)


def _nominate_migration(
    cache: QuotaCache, holdings: Holdings, info: WorkloadInfo, cluster_queue: str, holder: WorkloadInfo, now: float
) -> _Entry:
    """An option whose sibling is admitted: a migration candidate (``controller.engine.options``).

    The sibling's quota counts as free for it. If it would fit only by preempting others (lower
    priority, as the queue's policy allows), it preempts them first, holding its parent's
    preemption gate; the winner is evicted once the migration fits.
    """
    if holder.evicted:
        blocked = Assignment(
            mode=NO_FIT,
            reason=c.REASON_PENDING,
            message=f"waiting for option {holder.name} of the same parent to give its quota back",
        )
        keep = _migration_keep(cache, holdings, info, cluster_queue, holder)
        return _Entry(info, cluster_queue, blocked, [], keep=keep)
    if not OptionBook.may_displace(info, holder):
        blocked = Assignment(
            mode=NO_FIT,
            reason=c.REASON_PENDING,
            message=f"option {holder.name} of the same parent holds quota and this option may not replace it",
        )
        return _Entry(info, cluster_queue, blocked, [])
    spec = cache.cluster_queues[cluster_queue]
    node = cache.forest.cluster_queues[cluster_queue]
    targets: list[Target] = []
    holdings.displace(holder)
    try:
        assignment = assign_flavors(info, spec, node, cache.flavors, cache.preemptor.preemption_level,
                                    fair_sharing=bool(cache.preemptor.fair_strategies))
        if assignment.mode == PREEMPT:
            if cache.option_preempting(info, now):
                assignment = _blocked(assignment, "another option of the same parent is preempting workloads")
            else:
                # Counted with the winner's quota free: the winner itself is never a victim.
                family = info.option.family if info.option is not None else ""
                targets = [
                    t
                    for t in cache.preemptor.targets(info, spec, assignment.usage, assignment.needs_preemption)
                    if t.victim.option is None or t.victim.option.family != family
                ]
    finally:
        holdings.restore(holder)
    if assignment.mode == FIT:
        return _Entry(info, cluster_queue, assignment, [], displace=holder)
    if assignment.mode == PREEMPT and targets:
        # Preempt first (one option of the parent at a time, the gate); once the victims are gone
        # the migration fits and the winner is evicted (rule 4 of the design note).
        return _Entry(info, cluster_queue, assignment, targets)
    if assignment.mode == PREEMPT:
        assignment = _blocked(assignment, f"migration from option {holder.name} finds nothing to preempt")
    return _Entry(info, cluster_queue, assignment, [])


def _migration_keep(
    cache: QuotaCache, holdings: Holdings, info: WorkloadInfo, cluster_queue: str, holder: WorkloadInfo
) -> dict[FlavorResource, int] | None:
    """The quota to keep for ``info`` while ``holder``, evicted for its migration to ``info``
    (``FlavorMigration``), gives its quota back: what ``info`` would use with the holder's quota
    counted as free, when that fits. Without it, the quota the migration found free (or freed by
    preempting) could be taken by a lower-priority workload meanwhile, which the migration would
    then preempt a second time."""
    if holder.option is None or not holder.option.migrated_away or not OptionBook.may_displace(info, holder):
        return None
    spec = cache.cluster_queues[cluster_queue]
    node = cache.forest.cluster_queues[cluster_queue]
    holdings.displace(holder)
    try:
        assignment = assign_flavors(info, spec, node, cache.flavors, cache.preemptor.preemption_level)
    finally:
        holdings.restore(holder)
    if assignment.mode != FIT:
        return None
    # Only what lies outside the holder's own flavors: that part comes back with its release.
    held_by_holder = holder.admission.usage if holder.admission is not None else {}
    keep = {fr: amount for fr, amount in assignment.usage.items() if fr not in held_by_holder}
    return keep or None


def _keep_for_migration(
    queues: QueueManager,
    entry: _Entry,
    usage: dict[FlavorResource, int],
    node: quota.QuotaNode,
    held: list[tuple[quota.QuotaNode, dict[FlavorResource, int]]],
    exhausted: set[str],
) -> None:
    """Hold ``usage`` for the rest of the cycle and keep ``entry`` at the head of its queue (not
    parked), so that nothing behind it takes the quota its migration counts on."""
    name = entry.cluster_queue
    if usage:
        quota.add_usage(node, usage)
        held.append((node, usage))
    queues.requeue(entry.info, name)
    queues.queues[name].sticky = entry.info.key
    exhausted.add(name)


def _process(
    cache: QuotaCache,
    queues: QueueManager,
    holdings: Holdings,
    entry: _Entry,
    now: float,
    result: CycleResult,
    exhausted: set[str],
    held: list[tuple[quota.QuotaNode, dict[FlavorResource, int]]],
    targeted: _Targeted,
) -> None:
    info, name, assignment = entry.info, entry.cluster_queue, entry.assignment
    queue = queues.queues[name]
    node = cache.forest.cluster_queues[name]
    spec = cache.cluster_queues[name]

    if assignment.mode == FIT:
        holder = entry.displace
        if holder is not None:
            # Migration after admission: evict the winner (FlavorMigration) instead of reserving.
            # Its quota comes back once its pods are gone, as for every eviction; this option
            # reserves then (controller.engine.options).
            if cache.admitted_workload(holder.key) is holder:
                flavors = ", ".join(sorted({f for ps in assignment.podsets for f in ps.flavors.values()}))
                cache.evict_for_migration(holder, migration_message(info, flavors), result.evictions)
            held_by_holder = holder.admission.usage if holder.admission is not None else {}
            keep = {fr: n for fr, n in assignment.usage.items() if fr not in held_by_holder}
            _keep_for_migration(queues, entry, keep if quota.fits(node, keep) else {}, node, held, exhausted)
            return
        if not quota.fits(node, assignment.usage):
            # Another entry of this cycle took the room; try again next cycle, not parked.
            queues.requeue(info, name)
            exhausted.add(name)
            queues.emit_reason(result, info.key, c.REASON_PENDING, NO_LONGER_FITS)
            return
        flavors_used = {f for ps in assignment.podsets for f in ps.flavors.values()}
        checks = tuple(r.name for r in spec.checks if not r.on_flavors or r.on_flavors & flavors_used)
        checks_passed = not checks  # two-phase: the checks run after the reservation
        holdings.assume(info, name, dict(assignment.usage), now, admitted=checks_passed)
        cache.preemptor.reserved_this_cycle.add(info.key)
        if queue.sticky == info.key:
            queue.sticky = None
        result.reservations.append(
            Reservation(
                workload=info.key,
                uid=info.uid,
                cluster_queue=name,
                admission=_admission_dict(name, assignment),
                admission_checks=checks,
                borrowing=assignment.borrows,
                message=f"Quota reserved in ClusterQueue {name}",
                record_flavor_history=spec.fallbacks,
            )
        )
        return

    if assignment.mode == PREEMPT and entry.targets and not entry.in_grace:
        victims = [t.victim.key for t in entry.targets]
        if any(v in targeted for v in victims):
            # Kueue skips a preemptor whose victims another entry of this cycle already claimed.
            queues.requeue(info, name)
            exhausted.add(name)
            queues.emit_reason(result, info.key, c.REASON_PENDING, NO_LONGER_FITS)
            return
        if not _fits_after_evicting(cache, node, entry, targeted):
            # Earlier entries of this cycle took quota the victims' would not give back: evicting
            # them now would be for nothing (Kueue re-checks the fit before preempting too).
            queues.requeue(info, name)
            exhausted.add(name)
            queues.emit_reason(result, info.key, c.REASON_PENDING, NO_LONGER_FITS)
            return
        targeted.add(cache, victims)
        usage = dict(assignment.usage)
        quota.add_usage(node, usage)
        held.append((node, usage))
        preemptor_path = node.path()
        for target in entry.targets:
            victim = target.victim
            if victim.evicted or victim.key in cache.being_evicted:
                continue  # already on its way out; nothing new to issue
            cache.being_evicted[victim.key] = info.key
            victim_node = cache.forest.cluster_queues[target.cluster_queue]
            result.preemptions.append(
                Preemption(
                    victim=victim.key,
                    victim_uid=victim.uid,
                    victim_cluster_queue=target.cluster_queue,
                    preemptor=info.key,
                    preemptor_cluster_queue=name,
                    reason=target.reason,
                    message=preemption_message(info, target.reason, preemptor_path, victim_node.path()),
                )
            )
        queues.requeue(info, name)
        queue.sticky = info.key
        exhausted.add(name)
        pending = f"Pending the preemption of {len(entry.targets)} workload(s)"
        queues.emit_reason(
            result,
            info.key,
            c.REASON_WAITING_FOR_PREEMPTED,
            f"{assignment.message}. {pending}" if assignment.message else pending,
        )
        return

    if (
        assignment.mode in (PREEMPT, NO_CANDIDATES)
        and node.parent is not None
        and (spec.preemption.reclaim_within_cohort != c.PREEMPT_ANY or entry.in_grace)
    ):
        # Evictions could make room but none may happen now: keep what the workload could claim
        # from being lent to other queues' entries later in this cycle, or borrowers would keep
        # taking the quota it waits for (Kueue's reserveCapacityForUnreclaimablePreempt). A queue
        # that may reclaim from anyone gets its quota back by preemption, so it does not hold it,
        # unless its victims are in their preemption grace: lent to a borrower now, the quota
        # would start a new grace it then waits out too.
        # The queue takes no more heads this cycle, as in Kueue, whose cycle has one per queue.
        reserve = _reservable(node, spec, assignment)
        if reserve:
            quota.add_usage(node, reserve)
            held.append((node, reserve))
            exhausted.add(name)

    if entry.keep is not None:
        _keep_for_migration(queues, entry, entry.keep, node, held, exhausted)
        queues.emit_reason(result, info.key, assignment.reason or c.REASON_PENDING, assignment.message)
        return

    if entry.retry_next_cycle:
        queues.requeue(info, name)  # its victims were admitted this cycle: they are candidates next
        exhausted.add(name)
        return

    # No fit, or preemption without candidates.
    reason = assignment.reason or c.REASON_WAITING_FOR_QUOTA
    message = assignment.message or "couldn't assign flavors"
    queues.requeue(info, name)
    if queue.sticky == info.key:
        queue.sticky = None
    queues.emit_reason(result, info.key, reason, message)
    if spec.strict_fifo:
        exhausted.add(name)
    else:
        queue.park_shape_of(info)


class _Targeted:
    """The victims this cycle's preemptors claimed, and their usage summed per ClusterQueue.

    Removing and adding usage is additive (removing ``a`` then ``b`` from a queue leaves every
    node of its tree as removing ``a + b`` at once, lending limits included), so the fit re-check
    before each preemption removes one running sum per queue instead of every earlier victim
    again, which made a cycle with many preemptors quadratic in its victims.
    """

    __slots__ = ("by_node", "keys")

    def __init__(self) -> None:
        self.keys: set[ObjectKey] = set()
        self.by_node: dict[quota.QuotaNode, dict[FlavorResource, int]] = {}

    def __contains__(self, key: object) -> bool:
        return key in self.keys

    def add(self, cache: QuotaCache, victims: list[ObjectKey]) -> None:
        for key in victims:
            if key not in self.keys:
                self.keys.add(key)
                _add_victim_usage(cache, key, self.by_node)


def _add_victim_usage(
    cache: QuotaCache, key: ObjectKey, sums: dict[quota.QuotaNode, dict[FlavorResource, int]]
) -> None:
    victim = cache.admitted_workload(key)
    admission = victim.admission if victim is not None else None
    victim_node = cache.forest.cluster_queues.get(admission.cluster_queue) if admission is not None else None
    if admission is not None and victim_node is not None:
        total = sums.setdefault(victim_node, {})
        for fr, amount in admission.usage.items():
            total[fr] = total.get(fr, 0) + amount


def _fits_after_evicting(cache: QuotaCache, node: quota.QuotaNode, entry: _Entry, targeted: _Targeted) -> bool:
    """Whether ``entry``'s usage fits once its victims — and those earlier entries of this cycle
    are evicting — have given their quota back, against the quota as this cycle has left it
    (Kueue's fit check before preempting)."""
    sums = {victim_node: dict(usage) for victim_node, usage in targeted.by_node.items()}
    for key in {t.victim.key for t in entry.targets} - targeted.keys:
        _add_victim_usage(cache, key, sums)
    for victim_node, usage in sums.items():
        quota.remove_usage(victim_node, usage)
    try:
        return quota.fits(node, entry.assignment.usage)
    finally:
        for victim_node, usage in sums.items():
            quota.add_usage(victim_node, usage)


def _reservable(node: quota.QuotaNode, spec: ClusterQueueSpec, assignment: Assignment) -> dict[FlavorResource, int]:
    """What a waiting entry holds back for the rest of the cycle: its usage, capped at what its
    queue may still take — up to the borrowing limit when it would borrow, else up to its
    nominal quota (Kueue's ``quotaResourcesToReserve``)."""
    reserve: dict[FlavorResource, int] = {}
    for fr, amount in assignment.usage.items():
        used = node.usage.get(fr, 0)
        if assignment.borrows:
            limit = spec.quota_of(*fr)
            cap = amount if limit is None or limit.borrowing_limit is None else (
                node.nominal(fr) + limit.borrowing_limit - used
            )
            value = min(amount, cap)
        else:
            value = min(amount, node.nominal(fr) - used)
        if value > 0:
            reserve[fr] = value
    return reserve


def _admission_dict(cluster_queue: str, assignment: Assignment) -> dict[str, object]:
    return {
        "clusterQueue": cluster_queue,
        "podSetAssignments": [
            {
                "name": ps.name,
                "flavors": dict(ps.flavors),
                "resourceUsage": {res: format_quantity(amount, res) for res, amount in ps.usage.items()},
                "count": ps.count,
            }
            for ps in assignment.podsets
        ],
    }
