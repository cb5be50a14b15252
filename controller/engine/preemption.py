"""Classical preemption: which admitted workloads to evict so that a pending one fits.

Kueue's rules, applied to the live quota forest (every removal is undone before returning):

* Candidates use at least one flavor/resource the preemptor needs preempted. From the preemptor's
  own ClusterQueue they must satisfy ``withinClusterQueue`` (``LowerPriority``: strictly lower
  priority; ``LowerOrNewerEqualPriority``: also equal priority with a newer queue timestamp). From
  other ClusterQueues of the same cohort tree they must satisfy ``reclaimWithinCohort``
  (``LowerPriority`` or ``Any``) and their queue must be borrowing one of those resources.
* Order: workloads already being evicted first (they are free), other queues before the
  preemptor's own, lower priority first, most recently reserved first, then UID.
* Greedy removal in that order until the preemptor fits, skipping a cross-queue candidate whose
  queue has stopped borrowing; then *fill back*: walk the chosen set backwards and put back every
  workload whose eviction turns out not to be needed. The result is a minimal set for that order.
* Borrowing: without ``borrowWithinCohort`` the preemptor may only reclaim from other queues when
  it ends within its nominal quota; otherwise it may only evict in its own queue. With
  ``borrowWithinCohort: LowerPriority`` it may also borrow while reclaiming, from workloads of
  lower priority (and at most ``maxPriorityThreshold``); reclaiming its own nominal quota is not
  held to that threshold.

Reasons recorded on victims: ``InClusterQueue``, ``InCohortReclamation``,
``InCohortReclaimWhileBorrowing``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pykueue.api import constants as c

from . import quota
from .flavors import NO_CANDIDATES, PREEMPT, RECLAIM
from .records import ClusterQueueSpec, FlavorResource, ObjectKey, WorkloadInfo

_HUMAN_REASON = {
    c.REASON_IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    c.REASON_IN_COHORT_RECLAMATION: "reclamation within the cohort",
    c.REASON_IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}


@dataclass(frozen=True, slots=True)
class Target:
    victim: WorkloadInfo
    cluster_queue: str
    reason: str


@dataclass(slots=True)
class _Candidate:
    info: WorkloadInfo
    cluster_queue: str
    node: quota.QuotaNode
    same_queue: bool


def preemption_message(preemptor: WorkloadInfo, reason: str, preemptor_path: str, victim_path: str) -> str:
    """The Preempted condition / event message, in Kueue's words."""
    return (
        f"Preempted to accommodate a workload (UID: {preemptor.uid}, JobUID: {preemptor.job_uid or 'UNKNOWN'}) "
        f"due to {_HUMAN_REASON.get(reason, reason)}; preemptor path: {preemptor_path}; preemptee path: {victim_path}"
    )


class Preemptor:
    """Finds preemption targets against the engine's live state (read-only after it returns)."""

    def __init__(
        self,
        forest: quota.QuotaForest,
        specs: Mapping[str, ClusterQueueSpec],
        admitted: Mapping[str, Mapping[ObjectKey, WorkloadInfo]],
        being_evicted: Mapping[ObjectKey, object],
    ) -> None:
        self._forest = forest
        self._specs = specs
        self._admitted = admitted
        self._being_evicted = being_evicted
        # Workloads that reserved quota earlier in the running cycle: never victims in that same
        # cycle (Kueue nominates every head against the snapshot taken before any of them is
        # admitted, so it cannot evict what it has just admitted; neither do we).
        self.reserved_this_cycle: set[ObjectKey] = set()
        # Set when a search passed over such a workload: the preemptor may find its victims next
        # cycle, so it must be retried then rather than set aside as unschedulable.
        self.passed_over_fresh = False

    # --- candidates ------------------------------------------------------------------------------
    def _within_allows(self, policy: str, preemptor: WorkloadInfo, candidate: WorkloadInfo) -> bool:
        if policy == c.PREEMPT_LOWER_PRIORITY:
            return candidate.priority < preemptor.priority
        if policy == c.PREEMPT_LOWER_OR_NEWER_EQUAL_PRIORITY:
            return candidate.priority < preemptor.priority or (
                candidate.priority == preemptor.priority and candidate.queue_ts > preemptor.queue_ts
            )
        return False

    def _candidates(
        self, preemptor: WorkloadInfo, spec: ClusterQueueSpec, frs: set[FlavorResource]
    ) -> list[_Candidate]:
        policy = spec.preemption
        found: list[_Candidate] = []
        own_node = self._forest.cluster_queues[spec.name]
        if policy.within_cluster_queue != c.PREEMPT_NEVER:
            for info in self._admitted.get(spec.name, {}).values():
                if info.key == preemptor.key or not _uses_any(info, frs):
                    continue
                if info.key in self.reserved_this_cycle:
                    self.passed_over_fresh = True
                    continue
                if self._within_allows(policy.within_cluster_queue, preemptor, info):
                    found.append(_Candidate(info, spec.name, own_node, True))
        if spec.cohort and policy.reclaim_within_cohort != c.PREEMPT_NEVER:
            # Only queues that borrow can be reclaimed from; the tree keeps them indexed.
            for node in own_node.tree_borrowers:
                if node is own_node or node.borrowing.isdisjoint(frs):
                    continue
                for info in self._admitted.get(node.name, {}).values():
                    if not _uses_any(info, frs):
                        continue
                    if info.key in self.reserved_this_cycle:
                        self.passed_over_fresh = True
                        continue
                    if policy.reclaim_within_cohort == c.PREEMPT_ANY or info.priority < preemptor.priority:
                        found.append(_Candidate(info, node.name, node, False))
        found.sort(key=self._order)
        return found

    def _order(self, cand: _Candidate) -> tuple[bool, bool, int, float, str]:
        info = cand.info
        free = info.evicted or info.key in self._being_evicted
        reserved_at = info.admission.reserved_at if info.admission is not None else 0.0
        return (not free, cand.same_queue, info.priority, -reserved_at, info.uid)

    # --- search ----------------------------------------------------------------------------------
    def _minimal(
        self,
        node: quota.QuotaNode,
        usage: Mapping[FlavorResource, int],
        frs: set[FlavorResource],
        candidates: Iterable[_Candidate],
        allow_borrowing: bool,
    ) -> list[_Candidate]:
        removed: list[_Candidate] = []
        fitted = False
        for cand in candidates:
            if not cand.same_queue and not any(quota.is_borrowing(cand.node, fr) for fr in frs):
                continue
            quota.remove_usage(cand.node, cand.info.admission.usage)  # type: ignore[union-attr]
            removed.append(cand)
            if quota.fits(node, usage, allow_borrowing):
                fitted = True
                break
        if not fitted:
            for cand in reversed(removed):
                quota.add_usage(cand.node, cand.info.admission.usage)  # type: ignore[union-attr]
            return []
        targets = [removed[-1]]
        for cand in reversed(removed[:-1]):
            quota.add_usage(cand.node, cand.info.admission.usage)  # type: ignore[union-attr]
            if not quota.fits(node, usage, allow_borrowing):
                quota.remove_usage(cand.node, cand.info.admission.usage)  # type: ignore[union-attr]
                targets.append(cand)
        for cand in targets:
            quota.add_usage(cand.node, cand.info.admission.usage)  # type: ignore[union-attr]
        return targets

    def _search(
        self, preemptor: WorkloadInfo, spec: ClusterQueueSpec, usage: Mapping[FlavorResource, int], frs: set[FlavorResource]
    ) -> tuple[list[_Candidate], bool]:
        """(targets, whether the cross-queue ones were taken while the preemptor borrows)."""
        node = self._forest.cluster_queues[spec.name]
        candidates = self._candidates(preemptor, spec, frs)
        if not candidates:
            return [], False
        same = [cand for cand in candidates if cand.same_queue]
        if len(same) == len(candidates):
            return self._minimal(node, usage, frs, candidates, True), False
        policy = spec.preemption
        within_nominal = all(node.usage.get(fr, 0) < node.nominal(fr) for fr in frs)
        if policy.borrow_within_cohort == c.PREEMPT_LOWER_PRIORITY:
            # Reclaiming what the queue is owed needs no borrowing, so the priority threshold does
            # not apply to it; only evictions that let the preemptor borrow are held to it.
            if within_nominal:
                targets = self._minimal(node, usage, frs, candidates, False)
                if targets:
                    return targets, False
            threshold = policy.max_priority_threshold
            allowed = [
                cand
                for cand in candidates
                if cand.same_queue
                or (cand.info.priority < preemptor.priority and (threshold is None or cand.info.priority <= threshold))
            ]
            return self._minimal(node, usage, frs, allowed, True), True
        if within_nominal:
            targets = self._minimal(node, usage, frs, candidates, False)
            if targets:
                return targets, False
        return self._minimal(node, usage, frs, same, True), False

    def preemption_level(
        self, node: quota.QuotaNode, fr: FlavorResource, val: int, preemptor: WorkloadInfo
    ) -> tuple[int, int]:
        """The preemption oracle used by flavor assignment for one flavor/resource.

        Returns what evictions could do for ``val`` of ``fr`` (``NO_CANDIDATES``; ``PREEMPT`` when
        some victim is in the preemptor's own queue; ``RECLAIM`` when all are borrowers elsewhere,
        which flavor assignment prefers) and the borrowing level the preemptor would have once
        they are done (``quota.lowest_fitting_subtree``), as Kueue's preemption oracle.
        """
        spec = self._specs[node.name]
        chosen, _ = self._search(preemptor, spec, {fr: val}, {fr})
        if not chosen:
            return NO_CANDIDATES, quota.borrowing_level(node, fr, val)
        for cand in chosen:
            quota.remove_usage(cand.node, cand.info.admission.usage)  # type: ignore[union-attr]
        level = quota.borrowing_level(node, fr, val)
        for cand in chosen:
            quota.add_usage(cand.node, cand.info.admission.usage)  # type: ignore[union-attr]
        return (PREEMPT if any(cand.same_queue for cand in chosen) else RECLAIM), level

    def targets(
        self,
        preemptor: WorkloadInfo,
        spec: ClusterQueueSpec,
        usage: Mapping[FlavorResource, int],
        frs: set[FlavorResource],
    ) -> list[Target]:
        """Victims to evict so that ``usage`` fits in ``spec``'s queue; empty when impossible."""
        chosen, borrow_mode = self._search(preemptor, spec, usage, frs)
        if not chosen:
            return []
        node = self._forest.cluster_queues[spec.name]
        for cand in chosen:
            quota.remove_usage(cand.node, cand.info.admission.usage)  # type: ignore[union-attr]
        borrows = any(node.usage.get(fr, 0) + val > node.nominal(fr) for fr, val in usage.items())
        for cand in chosen:
            quota.add_usage(cand.node, cand.info.admission.usage)  # type: ignore[union-attr]
        result = []
        for cand in chosen:
            if cand.same_queue:
                reason = c.REASON_IN_CLUSTER_QUEUE
            elif borrow_mode and borrows:
                reason = c.REASON_IN_COHORT_RECLAIM_WHILE_BORROWING
            else:
                reason = c.REASON_IN_COHORT_RECLAMATION
            result.append(Target(cand.info, cand.cluster_queue, reason))
        return result


def _uses_any(info: WorkloadInfo, frs: set[FlavorResource]) -> bool:
    admission = info.admission
    if admission is None:
        return False
    return any(fr in admission.usage for fr in frs)
