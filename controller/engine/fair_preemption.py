"""Preemption under fair sharing: which admitted workloads to evict so that a pending one fits,
judged by dominant resource share (Kueue's ``fairPreemptions`` in
``pkg/scheduler/preemption/preemption.go`` and ``pkg/scheduler/preemption/fairsharing/``;
KEP 1714-fair-sharing, rules S2-a and S2-b).

* **Candidates**: from the preemptor's own ClusterQueue those its ``withinClusterQueue`` policy
  allows; from every other ClusterQueue of the cohort tree that borrows one of the flavor/resources
  needing preemption, those its ``reclaimWithinCohort`` policy allows. Sorted as the classical
  search sorts them (being evicted first, other queues first, lower priority, newest reservation).
* **Shares include the preemptor**: its usage is added to its queue for the whole search.
* **Which queue next** (``TargetOrdering``): from the root down, the child with the highest share
  that still has candidates and still borrows (a Cohort on the preemptor's path is never pruned
  for not borrowing); ties between queues go to the better head candidate, ties between a queue
  and a Cohort to the Cohort.
* **Rules**: a candidate of the preemptor's own queue is always taken. While the preemptor's queue
  stays within its nominal quota on the contested resources, any candidate is taken
  (``InCohortReclamation``; Kueue's FairSharingPreemptWithinNominal, on by default). Otherwise
  the shares compared are those of the two *almost lowest common ancestors* (the children of the
  lowest Cohort the two queues share, on each side): ``LessThanOrEqualToFinalShare`` takes a
  candidate when the preemptor's new share is at most the target's share without it;
  ``LessThanInitialShare`` when it is below the target's share before. Candidates refused by the
  first strategy are retried with the second (at most one per queue), reason
  ``InCohortFairSharing``.
* Then every victim not needed is filled back, as in the classical search.

Every change to the quota forest is undone before returning.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

from pykueue.api import constants as c
from pykueue.api.config import PREEMPT_LESS_THAN_INITIAL_SHARE, PREEMPT_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE

from . import fairshare, quota
from .fairshare import DRS
from .records import ClusterQueueSpec, FlavorResource, ObjectKey, WorkloadInfo
from .victims import Candidate as _Candidate
from .victims import uses_any as _uses_any

# (preemptor's new share, target's share before, target's share without the candidate) -> take it
Strategy = Callable[[DRS, DRS, DRS], bool]


def less_than_or_equal_to_final_share(preemptor_new: DRS, _target_old: DRS, target_new: DRS) -> bool:
    """Rule S2-a."""
    return fairshare.compare(preemptor_new, target_new) <= 0


def less_than_initial_share(preemptor_new: DRS, target_old: DRS, _target_new: DRS) -> bool:
    """Rule S2-b."""
    return fairshare.compare(preemptor_new, target_old) < 0


STRATEGIES: Mapping[str, Strategy] = {
    PREEMPT_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE: less_than_or_equal_to_final_share,
    PREEMPT_LESS_THAN_INITIAL_SHARE: less_than_initial_share,
}


class Preemptor(Protocol):
    """What the search reads of ``preemption.Preemptor``: the live state and its candidate rules."""

    _forest: quota.QuotaForest
    _admitted: Mapping[str, Mapping[ObjectKey, WorkloadInfo]]
    reserved_this_cycle: set[ObjectKey]
    passed_over_fresh: bool
    fair_strategies: tuple[str, ...]

    def _within_allows(self, policy: str, preemptor: WorkloadInfo, candidate: WorkloadInfo) -> bool: ...

    def _order(self, cand: _Candidate) -> tuple[bool, bool, float, int, float, str]: ...


class _Search:
    """The state of one fair preemption search."""

    def __init__(self, preemptor: Preemptor, node: quota.QuotaNode, usage: Mapping[FlavorResource, int]) -> None:
        self.preemptor = preemptor
        self.node = node
        self.usage = usage
        self.removed: list[_Candidate] = []

    def remove(self, cand: _Candidate) -> None:
        quota.remove_usage(cand.node, cand.info.admission.usage)  # type: ignore[union-attr]
        self.removed.append(cand)

    def fits(self) -> bool:
        """Whether the preemptor fits now (its own simulated usage taken out for the check)."""
        quota.remove_usage(self.node, self.usage)
        try:
            return quota.fits(self.node, self.usage, True)
        finally:
            quota.add_usage(self.node, self.usage)


class TargetOrdering:
    """Which ClusterQueue gives the next candidate (Kueue's ``TargetClusterQueueOrdering``)."""

    def __init__(self, preemptor_node: quota.QuotaNode, candidates: list[_Candidate],
                 order: Callable[[_Candidate], tuple[object, ...]]) -> None:
        self.preemptor_node = preemptor_node
        self.order = order
        self.ancestors: set[int] = set()
        current = preemptor_node.parent
        while current is not None:
            self.ancestors.add(id(current))
            current = current.parent
        self.by_queue: dict[str, list[_Candidate]] = {}
        for cand in candidates:
            self.by_queue.setdefault(cand.cluster_queue, []).append(cand)
        self.pruned: set[int] = set()

    def has(self, node: quota.QuotaNode) -> bool:
        return bool(self.by_queue.get(node.name))

    def pop(self, node: quota.QuotaNode) -> _Candidate:
        return self.by_queue[node.name].pop(0)

    def drop(self, node: quota.QuotaNode) -> None:
        self.pruned.add(id(node))

    def __iter__(self) -> Iterator[quota.QuotaNode]:
        """Target queues, the same one again while it stays the most unfair; the caller pops
        or drops between two steps."""
        node = self.preemptor_node
        if node.parent is None:
            while id(node) not in self.pruned and self.has(node):
                yield node
            return
        root = node
        while root.parent is not None:
            root = root.parent
        while id(root) not in self.pruned:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: quota.QuotaNode) -> quota.QuotaNode | None:
        best_cq: quota.QuotaNode | None = None
        best_cq_share = fairshare.NEGATIVE
        best_cohort: quota.QuotaNode | None = None
        best_cohort_share = fairshare.NEGATIVE
        for child in cohort.children:
            if id(child) in self.pruned:
                continue
            drs = fairshare.share(child)
            if child.is_cluster_queue:
                if (not drs.borrowing and child is not self.preemptor_node) or not self.has(child):
                    self.pruned.add(id(child))
                    continue
                order = fairshare.compare(drs, best_cq_share)
                if order > 0:
                    best_cq, best_cq_share = child, drs
                elif (
                    order == 0
                    and best_cq is not None
                    and self.order(self.by_queue[child.name][0]) < self.order(self.by_queue[best_cq.name][0])
                ):
                    best_cq = child
            else:
                if not drs.borrowing and id(child) not in self.ancestors:
                    self.pruned.add(id(child))
                elif fairshare.compare(drs, best_cohort_share) >= 0:
                    best_cohort, best_cohort_share = child, drs
        if best_cq is None and best_cohort is None:
            self.pruned.add(id(cohort))
            return None
        if best_cohort is not None and fairshare.compare(best_cohort_share, best_cq_share) >= 0:
            return self._next(best_cohort)
        return best_cq

    def shares(self, target: quota.QuotaNode) -> tuple[quota.QuotaNode, quota.QuotaNode]:
        """The almost lowest common ancestors of (preemptor, target)."""
        lca = target.parent
        while lca is not None and id(lca) not in self.ancestors:
            lca = lca.parent
        return _below(self.preemptor_node, lca), _below(target, lca)


def _below(node: quota.QuotaNode, lca: quota.QuotaNode | None) -> quota.QuotaNode:
    while node.parent is not None and node.parent is not lca:
        node = node.parent
    return node


def _target_share_without(target: quota.QuotaNode, almost_lca: quota.QuotaNode, cand: _Candidate) -> DRS:
    usage = cand.info.admission.usage  # type: ignore[union-attr]
    quota.remove_usage(target, usage)
    try:
        return fairshare.share(almost_lca)
    finally:
        quota.add_usage(target, usage)


def _candidates(
    preemptor: Preemptor, wl: WorkloadInfo, spec: ClusterQueueSpec, frs: set[FlavorResource]
) -> list[_Candidate]:
    """Kueue's ``findCandidates`` under fair sharing, in the classical candidate order."""
    node = preemptor._forest.cluster_queues[spec.name]
    policy = spec.preemption
    found: list[_Candidate] = []

    def collect(queue: quota.QuotaNode, rule: str, same: bool) -> None:
        for info in preemptor._admitted.get(queue.name, {}).values():
            if info.key == wl.key or not _uses_any(info, frs):
                continue
            if info.key in preemptor.reserved_this_cycle:
                preemptor.passed_over_fresh = True
                continue
            if rule == c.PREEMPT_ANY or preemptor._within_allows(rule, wl, info):
                reason = c.REASON_IN_CLUSTER_QUEUE if same else c.REASON_IN_COHORT_FAIR_SHARING
                found.append(_Candidate(info, queue.name, queue, same, reason))

    if policy.within_cluster_queue != c.PREEMPT_NEVER:
        collect(node, policy.within_cluster_queue, True)
    if node.parent is not None and policy.reclaim_within_cohort != c.PREEMPT_NEVER:
        for other in list(node.tree_borrowers):
            if other is not node and not other.borrowing.isdisjoint(frs):
                collect(other, policy.reclaim_within_cohort, False)
    return sorted(found, key=preemptor._order)


def _within_nominal(node: quota.QuotaNode, frs: set[FlavorResource]) -> bool:
    return all(node.usage.get(fr, 0) <= node.nominal(fr) for fr in frs)


def _first_strategy(
    search: _Search, ordering: TargetOrdering, strategy: Strategy, frs: set[FlavorResource]
) -> tuple[bool, list[_Candidate]]:
    retry: list[_Candidate] = []
    within_nominal = _within_nominal(search.node, frs)
    for target in ordering:
        if target is search.node:
            search.remove(ordering.pop(target))
            if search.fits():
                return True, retry
            continue
        if within_nominal:
            cand = ordering.pop(target)
            cand.reason = c.REASON_IN_COHORT_RECLAMATION
            search.remove(cand)
            if search.fits():
                return True, retry
            continue
        preemptor_lca, target_lca = ordering.shares(target)
        preemptor_new, target_old = fairshare.share(preemptor_lca), fairshare.share(target_lca)
        if math.isinf(preemptor_new.weighted) and not math.isinf(target_old.weighted):
            while ordering.has(target):  # no candidate here can pass either rule
                retry.append(ordering.pop(target))
            continue
        while ordering.has(target):
            cand = ordering.pop(target)
            if strategy(preemptor_new, target_old, _target_share_without(target, target_lca, cand)):
                cand.reason = c.REASON_IN_COHORT_FAIR_SHARING
                search.remove(cand)
                if search.fits():
                    return True, retry
                break  # the shares changed: choose the target queue again
            retry.append(cand)
    return False, retry


def _second_strategy(search: _Search, retry: list[_Candidate]) -> bool:
    ordering = TargetOrdering(search.node, retry, search.preemptor._order)
    for target in ordering:
        preemptor_lca, target_lca = ordering.shares(target)
        passed = less_than_initial_share(fairshare.share(preemptor_lca), fairshare.share(target_lca), fairshare.NEGATIVE)
        cand = ordering.pop(target)
        if passed:
            cand.reason = c.REASON_IN_COHORT_FAIR_SHARING
            search.remove(cand)
            if search.fits():
                return True
        ordering.drop(target)  # rule S2-b applies at most once per queue
    return False


def fair_search(
    preemptor: Preemptor,
    wl: WorkloadInfo,
    spec: ClusterQueueSpec,
    usage: Mapping[FlavorResource, int],
    frs: set[FlavorResource],
) -> list[_Candidate]:
    """The victims that let ``usage`` fit in ``spec``'s queue by the fair sharing rules; empty
    when the strategies cannot free enough."""
    candidates = _candidates(preemptor, wl, spec, frs)
    if not candidates:
        return []
    node = preemptor._forest.cluster_queues[spec.name]
    strategies = [STRATEGIES[name] for name in preemptor.fair_strategies if name in STRATEGIES]
    search = _Search(preemptor, node, usage)
    quota.add_usage(node, usage)
    try:
        fits, retry = _first_strategy(search, TargetOrdering(node, candidates, preemptor._order), strategies[0], frs)
        if not fits and len(strategies) > 1:
            fits = _second_strategy(search, retry)
    finally:
        quota.remove_usage(node, usage)
    if not fits:
        for cand in reversed(search.removed):
            quota.add_usage(cand.node, cand.info.admission.usage)  # type: ignore[union-attr]
        return []
    targets = list(search.removed)
    # Fill back, newest removal first except the last: a victim not needed stays.
    for i in range(len(targets) - 2, -1, -1):
        cand = targets[i]
        quota.add_usage(cand.node, cand.info.admission.usage)  # type: ignore[union-attr]
        if quota.fits(node, usage, True):
            targets[i] = targets[-1]
            targets.pop()
        else:
            quota.remove_usage(cand.node, cand.info.admission.usage)  # type: ignore[union-attr]
    for cand in targets:
        quota.add_usage(cand.node, cand.info.admission.usage)  # type: ignore[union-attr]
    return targets
