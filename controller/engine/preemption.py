"""Classical preemption: which admitted workloads to evict so that a pending one fits.

Kueue's algorithm (kueue/pkg/scheduler/preemption/classical/), applied to the live quota forest
(every removal is undone before returning):

* **Candidates** use at least one flavor/resource the preemptor needs freed. From the preemptor's
  own ClusterQueue they must satisfy ``withinClusterQueue`` (``LowerPriority``: strictly lower
  priority; ``LowerOrNewerEqualPriority``: also equal priority with a newer queue timestamp). From
  other ClusterQueues they must satisfy ``reclaimWithinCohort`` and their queue — and every Cohort
  between it and the Cohort it shares with the preemptor — must be above its nominal quota in one
  of those resources (it uses quota that is not its own).
* **Hierarchical advantage**: walking up from the preemptor, once some subtree would hold the
  request within its own quota, queues reached from that subtree's Cohort or above are using
  quota the preemptor is closer to; their workloads are reclaimable whatever the
  ``borrowWithinCohort`` rules (reason ``InCohortReclamation``). Others are *priority
  candidates*: without ``borrowWithinCohort`` only while the preemptor does not borrow
  (``InCohortReclamation``); with it, those of lower priority and at most
  ``maxPriorityThreshold`` may be taken while borrowing (``InCohortReclaimWhileBorrowing``).
* **Order**: workloads already being evicted first; then hierarchy candidates, priority
  candidates, own-queue candidates, each ordered other queues first, lower priority, most
  recently reserved.
* **Search**: greedy removal in that order until the preemptor fits (with or without borrowing,
  tried in Kueue's order for the policy), skipping a candidate whose queue or subtree has come
  back within its nominal quota; then *fill back* every removed workload that was not needed.

Flavor assignment asks the oracle once per flavor and resource, and the cycle then asks for the
targets of the assignment it chose, usually the very same question. Inside
:meth:`Preemptor.nomination` (the cycle opens one per head it nominates, and nothing changes the
quota between those questions) each search is answered once: the candidate lists and the
ancestors' advantage map are built per distinct question, not per caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from pykueue.api import constants as c

from . import quota
from .fair_preemption import fair_search
from .flavors import NO_CANDIDATES, PREEMPT, RECLAIM
from .records import ClusterQueueSpec, FlavorResource, ObjectKey, WorkloadInfo
from .victims import Candidate as _Candidate
from .victims import uses_any as _uses_any

_HUMAN_REASON = {
    c.REASON_IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    c.REASON_IN_COHORT_RECLAMATION: "reclamation within the cohort",
    c.REASON_IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
    c.REASON_IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
}


@dataclass(frozen=True, slots=True)
class Target:
    victim: WorkloadInfo
    cluster_queue: str
    reason: str


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
        # Admission fair sharing (Kueue's CandidatesOrdering, criterion 2): in a ClusterQueue with
        # UsageBasedAdmissionFairSharing, own-queue victims of the most used LocalQueue go first.
        # The LocalQueue's usage, or None while admission fair sharing is off.
        self.afs_usage: Callable[[ObjectKey], float] | None = None
        # Set when a search passed over such a workload: the preemptor may find its victims next
        # cycle, so it must be retried then rather than set aside as unschedulable.
        self.passed_over_fresh = False
        # Fair sharing's preemption strategies (Configuration fairSharing.preemptionStrategies);
        # empty: fair sharing is off and the classical rules apply.
        self.fair_strategies: tuple[str, ...] = ()
        # The searches of the nomination in progress (None outside one), by question.
        self._memo: dict[tuple[object, ...], list[_Candidate]] | None = None
        # Preemption grace (docs/design/engine.md, "Preemption grace"): a victim whose quota was
        # reserved less than this many seconds ago is not evicted yet; its preemptor waits.
        # ``grace_ends``: when the first grace the cycle waited for ends (None: none).
        self.preemption_grace: float = 0.0
        self.grace_ends: float | None = None

    @contextmanager
    def nomination(self) -> Iterator[None]:
        """The questions about one head, against quota that does not change meanwhile.

        Resets :attr:`passed_over_fresh` and answers a repeated search from memory. A repeat finds
        :attr:`passed_over_fresh` as the first search left it, which is what it would set again.
        """
        self.begin_nomination()
        try:
            yield
        finally:
            self.end_nomination()

    def begin_nomination(self) -> None:
        """:meth:`nomination` without the context manager, for the cycle, which opens one per
        head: the caller ends it with :meth:`end_nomination` in a ``finally``."""
        self.passed_over_fresh = False
        self._memo = {}

    def end_nomination(self) -> None:
        self._memo = None

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
        self, preemptor: WorkloadInfo, spec: ClusterQueueSpec, usage: Mapping[FlavorResource, int],
        frs: set[FlavorResource],
    ) -> tuple[list[_Candidate], int, bool]:
        """Candidates in search order, how many come from other queues, and whether any of those
        is reclaimable by hierarchical advantage."""
        policy = spec.preemption
        own_node = self._forest.cluster_queues[spec.name]
        same: list[_Candidate] = []
        if policy.within_cluster_queue != c.PREEMPT_NEVER:
            for info in self._admitted.get(spec.name, {}).values():
                if info.key == preemptor.key or not _uses_any(info, frs):
                    continue
                if info.key in self.reserved_this_cycle:
                    self.passed_over_fresh = True
                    continue
                if self._within_allows(policy.within_cluster_queue, preemptor, info):
                    same.append(_Candidate(info, spec.name, own_node, True))
        hierarchy: list[_Candidate] = []
        by_priority: list[_Candidate] = []
        if own_node.parent is not None and policy.reclaim_within_cohort != c.PREEMPT_NEVER:
            advantage: dict[quota.QuotaNode, bool] | None = None  # built once a borrower qualifies
            forbidden = policy.borrow_within_cohort == c.PREEMPT_NEVER
            threshold = policy.max_priority_threshold
            # Only queues above nominal quota hold reclaimable workloads; the tree indexes them.
            for node in own_node.tree_borrowers:
                if node is own_node or node.borrowing.isdisjoint(frs):
                    continue
                if advantage is None:
                    advantage = _advantage_by_ancestor(own_node, usage)
                lca = _shared_cohort(node, advantage)
                if lca is None or not _over_nominal_below(node, lca, frs):
                    continue
                for info in self._admitted.get(node.name, {}).values():
                    if not _uses_any(info, frs):
                        continue
                    if info.key in self.reserved_this_cycle:
                        self.passed_over_fresh = True
                        continue
                    if policy.reclaim_within_cohort == c.PREEMPT_LOWER_PRIORITY and info.priority >= preemptor.priority:
                        continue
                    if advantage[lca]:
                        hierarchy.append(_Candidate(info, node.name, node, False, c.REASON_IN_COHORT_RECLAMATION, lca))
                        continue
                    above_threshold = info.priority >= preemptor.priority or (
                        threshold is not None and info.priority > threshold
                    )
                    if forbidden or above_threshold:
                        by_priority.append(
                            _Candidate(info, node.name, node, False, c.REASON_IN_COHORT_RECLAMATION, lca, True)
                        )
                    else:
                        by_priority.append(
                            _Candidate(info, node.name, node, False, c.REASON_IN_COHORT_RECLAIM_WHILE_BORROWING, lca)
                        )
        free: list[_Candidate] = []
        rest: list[_Candidate] = []
        for group in (hierarchy, by_priority, same):
            for cand in sorted(group, key=self._order):
                (free if self._is_free(cand) else rest).append(cand)
        return free + rest, len(hierarchy) + len(by_priority), bool(hierarchy)

    def waits_for_grace(self, targets: Iterable[Target], now: float) -> bool:
        """Whether any of ``targets`` is still in its preemption grace (then none is evicted this
        cycle); notes when the first such grace ends in :attr:`grace_ends`. A victim already
        being evicted has no grace, nor one whose reservation time is ahead of ``now``: that time
        came from another clock (a former leader's, or Kueue's), and a grace measured from it
        could last as long as the clocks' skew."""
        if self.preemption_grace <= 0.0:
            return False
        waits = False
        for target in targets:
            info = target.victim
            if self._leaving(info) or info.admission is None:
                continue
            since = info.admission.visible_since
            ends = since + self.preemption_grace
            if since <= now < ends:
                waits = True
                if self.grace_ends is None or ends < self.grace_ends:
                    self.grace_ends = ends
        return waits

    def _is_free(self, cand: _Candidate) -> bool:
        return self._leaving(cand.info)

    def _leaving(self, info: WorkloadInfo) -> bool:
        """Evicted, or its eviction is in flight: its quota is on its way out already."""
        return info.evicted or info.key in self._being_evicted

    def _order(self, cand: _Candidate) -> tuple[bool, bool, float, int, float, str]:
        info = cand.info
        reserved_at = info.admission.reserved_at if info.admission is not None else 0.0
        return (not self._is_free(cand), cand.same_queue, -self._lq_usage(cand), info.priority, -reserved_at, info.uid)

    def _lq_usage(self, cand: _Candidate) -> float:
        """The candidate's LocalQueue usage where Kueue compares it (own-queue candidates of an
        admission-fair-sharing ClusterQueue), else 0 (no effect on the order)."""
        usage_of = self.afs_usage
        if usage_of is None or not cand.same_queue:
            return 0.0
        spec = self._specs.get(cand.cluster_queue)
        return usage_of(cand.info.local_queue_key) if spec is not None and spec.admission_fair_sharing else 0.0

    # --- search ----------------------------------------------------------------------------------
    @staticmethod
    def _still_valid(cand: _Candidate, frs: set[FlavorResource], allow_borrowing: bool) -> bool:
        """Kueue's candidateIsValid: an own-queue candidate always is; another queue's only while
        it (and its subtree up to the shared Cohort) still uses quota that is not its own."""
        if cand.same_queue:
            return True
        if allow_borrowing and cand.without_borrowing_only:
            return False
        if cand.node.borrowing.isdisjoint(frs):
            return False
        return _over_nominal_below(cand.node, cand.lca, frs)

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
            if not self._still_valid(cand, frs, allow_borrowing):
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
    ) -> list[_Candidate]:
        """The victims, in the order Kueue tries borrowing and not borrowing for the policy."""
        if self._memo is None:
            return self._search_now(preemptor, spec, usage, frs)
        question = (preemptor.key, preemptor.priority, spec.name, frozenset(usage.items()), frozenset(frs))
        answer = self._memo.get(question)
        if answer is None:
            answer = self._memo[question] = self._search_now(preemptor, spec, usage, frs)
        return answer

    def _search_now(
        self, preemptor: WorkloadInfo, spec: ClusterQueueSpec, usage: Mapping[FlavorResource, int], frs: set[FlavorResource]
    ) -> list[_Candidate]:
        if self.fair_strategies:
            return fair_search(self, preemptor, spec, usage, frs)
        node = self._forest.cluster_queues[spec.name]
        candidates, from_other_queues, any_hierarchical = self._candidates(preemptor, spec, usage, frs)
        if not candidates:
            return []
        forbidden = spec.preemption.borrow_within_cohort == c.PREEMPT_NEVER
        under_nominal = all(node.usage.get(fr, 0) < node.nominal(fr) for fr in frs)
        attempts: tuple[bool, ...]
        if from_other_queues == 0 or (forbidden and not under_nominal):
            attempts = (True,)
        elif forbidden and not any_hierarchical:
            attempts = (False, True)
        else:
            attempts = (True, False)
        for allow_borrowing in attempts:
            targets = self._minimal(node, usage, frs, candidates, allow_borrowing)
            if targets:
                return targets
        return []

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
        chosen = self._search(preemptor, spec, {fr: val}, {fr})
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
        return [Target(cand.info, cand.cluster_queue, cand.reason) for cand in self._search(preemptor, spec, usage, frs)]


def _advantage_by_ancestor(node: quota.QuotaNode, usage: Mapping[FlavorResource, int]) -> dict[quota.QuotaNode, bool]:
    """For each Cohort above ``node``: whether, by the time the walk up reaches it, some subtree
    on the way (``node`` included) holds the request within its own quota — then the preemptor has
    a hierarchical advantage over queues met from that Cohort on (Kueue's
    ``collectCandidatesForHierarchicalReclaim``)."""
    result: dict[quota.QuotaNode, bool] = {}
    has_advantage, remaining = _fits_in_quota(node, usage)
    current = node.parent
    while current is not None:
        result[current] = has_advantage
        fits, remaining = _fits_in_quota(current, remaining)
        has_advantage = has_advantage or fits
        current = current.parent
    return result


def _fits_in_quota(node: quota.QuotaNode, usage: Mapping[FlavorResource, int]) -> tuple[bool, dict[FlavorResource, int]]:
    """Whether ``usage`` more fits in ``node``'s own subtree quota, and what is left of it once the
    node's private (non-lendable) headroom is taken."""
    fits = True
    remaining: dict[FlavorResource, int] = {}
    for fr, value in usage.items():
        if node.usage.get(fr, 0) + value > node.subtree.get(fr, 0):
            fits = False
        remaining[fr] = max(0, value - max(0, node.local_quota(fr) - node.usage.get(fr, 0)))
    return fits, remaining


def _shared_cohort(node: quota.QuotaNode, ancestors: Mapping[quota.QuotaNode, bool]) -> quota.QuotaNode | None:
    """The lowest Cohort above ``node`` that is also above the preemptor (None: other tree)."""
    current = node.parent
    while current is not None:
        if current in ancestors:
            return current
        current = current.parent
    return None


def _over_nominal_below(node: quota.QuotaNode, lca: quota.QuotaNode | None, frs: set[FlavorResource]) -> bool:
    """Whether every Cohort between ``node`` and ``lca`` (both excluded) uses more than its own
    subtree quota of one of ``frs``: a subtree within its quota lends nothing to reclaim."""
    current = node.parent
    while current is not None and current is not lca:
        if all(current.usage.get(fr, 0) <= current.subtree.get(fr, 0) for fr in frs):
            return False
        current = current.parent
    return True
