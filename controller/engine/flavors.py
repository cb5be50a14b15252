"""Flavor assignment: pick a ResourceFlavor per resource group for every podSet.

Follows Kueue's flavor assigner (kueue/pkg/scheduler/flavorassigner/flavorassigner.go). For each
podSet, the resource groups it needs are taken in the order of their first requested resource by
name; each group's flavors are walked in the ClusterQueue's order. A flavor is *eligible* when the
podSet may use it (``allowedResourceFlavors``, fallback exclusions), tolerates its taints and
matches its node labels; it is then graded per resource against the quota tree, and the flavor's
grade is the worst of its resources':

* ``FIT``            the request fits in what is available now (possibly by borrowing; the
                     borrowing level says how high in the tree, see ``quota.lowest_fitting_subtree``);
* ``RECLAIM``        it fits once workloads of *other* queues that borrow are evicted;
* ``PREEMPT``        it fits once workloads are evicted, some of them in the queue itself;
* ``NO_CANDIDATES``  preemption could in principle help but no workload may be evicted;
* ``NO_FIT``         it can never fit (more than the queue's potential maximum), or it is above
                     the queue's nominal quota and no preemption policy may reach beyond it.

``flavorFungibility`` decides when to stop: ``whenCanBorrow``/``whenCanPreempt`` say whether a
flavor that borrows or needs evictions ends the search; otherwise the best flavor seen wins:
viable grades before ``NO_CANDIDATES``, then the better grade and lower borrowing level, compared
grade first by default and borrowing level first with ``PreemptionOverBorrowing``.

Pending messages are Kueue's: each podSet that does not simply fit contributes
``couldn't assign flavors to pod set <name>: <reasons, sorted>``, where the reasons are those of
its groups that did not fit outright, or only those of the group that failed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pykueue.api import constants as c
from pykueue.api.quantity import format_quantity

from . import quota
from .records import ClusterQueueSpec, FlavorInfo, FlavorResource, PodSetInfo, WorkloadInfo
from .selectors import flavor_mismatch

# Assignment modes, worst first. RECLAIM is a flavor grade only: an assignment needing evictions
# has mode PREEMPT whichever kind they are.
NO_FIT = 0
NO_CANDIDATES = 1
PREEMPT = 2
RECLAIM = 3
FIT = 4

_REASON_RANK = {"": -1, c.REASON_NO_MATCHING_FLAVOR: 0, c.REASON_EXCEEDS_MAX_QUOTA: 1, c.REASON_WAITING_FOR_QUOTA: 2}

# (ClusterQueue node, fr, value, workload) -> (NO_CANDIDATES, PREEMPT or RECLAIM; the borrowing
# level the preemptor would have once those evictions are done).
PreemptionOracle = Callable[[quota.QuotaNode, FlavorResource, int, WorkloadInfo], tuple[int, int]]


@dataclass(slots=True)
class PodSetFlavors:
    name: str
    count: int
    flavors: dict[str, str]  # resource -> flavor
    usage: dict[str, int]  # resource -> total amount (engine units)


@dataclass(slots=True)
class Assignment:
    """The outcome of flavor assignment for one workload."""

    mode: int
    borrowing_level: int = 0
    podsets: list[PodSetFlavors] = field(default_factory=list)
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    needs_preemption: set[FlavorResource] = field(default_factory=set)
    reason: str = ""  # QuotaReserved=False reason when the mode is not FIT
    message: str = ""

    @property
    def borrows(self) -> bool:
        return self.borrowing_level > 0


@dataclass(slots=True)
class _FlavorGrade:
    flavor: str
    mode: int
    level: int
    preempt_frs: set[FlavorResource]


def preferred(a_mode: int, a_level: int, b_mode: int, b_level: int, preemption_over_borrowing: bool) -> bool:
    """Whether grade ``a`` is better than grade ``b`` (Kueue's ``isPreferred``)."""
    if a_mode == NO_FIT:
        return False
    if b_mode == NO_FIT:
        return True
    if (a_mode == NO_CANDIDATES) != (b_mode == NO_CANDIDATES):
        return b_mode == NO_CANDIDATES
    if preemption_over_borrowing:
        if a_level != b_level:
            return a_level < b_level
        return a_mode > b_mode
    if a_mode != b_mode:
        return a_mode > b_mode
    return a_level < b_level


def _try_next(grade: _FlavorGrade, spec: ClusterQueueSpec) -> bool:
    """Whether the search goes on after ``grade`` (Kueue's ``shouldTryNextFlavor``)."""
    if grade.mode in (NO_FIT, NO_CANDIDATES):
        return True
    if grade.mode in (PREEMPT, RECLAIM) and spec.when_can_preempt_try_next:
        return True
    return grade.level > 0 and spec.when_can_borrow_try_next


def _podset_message(podset: str, reasons: list[str]) -> str:
    return f"couldn't assign flavors to pod set {podset}: {', '.join(sorted(reasons))}"


def assign_flavors(
    workload: WorkloadInfo,
    spec: ClusterQueueSpec,
    node: quota.QuotaNode,
    flavors: Mapping[str, FlavorInfo],
    oracle: PreemptionOracle,
    *,
    fair_sharing: bool = False,
) -> Assignment:
    """Assign flavors to every podSet of ``workload`` in ClusterQueue ``spec`` (quota in ``node``).

    ``fair_sharing``: a queue that may reclaim within its cohort may then also preempt while
    borrowing (Kueue's ``canPreemptWhileBorrowing``), since fair sharing judges by share."""
    result = Assignment(mode=FIT)
    messages: list[str] = []  # one per podSet that does not simply fit
    manages_pods = "pods" in spec.resource_group
    # ResourceFlavor fallbacks: flavors whose attempt failed are skipped, the rest keep their order.
    excluded = workload.excluded_flavors if spec.fallbacks else frozenset()
    for podset in workload.podsets:
        requests = podset.requests  # read only below
        if manages_pods:
            requests = dict(requests)
            requests["pods"] = podset.count
        ps_flavors: dict[str, str] = {}
        ps_usage: dict[str, int] = {}
        podset_reasons: list[str] = []
        # Groups in the order of their first requested resource by name, as Kueue walks requests.
        by_group: dict[int, list[str]] = {}
        for resource in sorted(requests):
            group = spec.resource_group.get(resource)
            if group is None:
                if requests[resource]:
                    messages.append(_podset_message(podset.name, [f"resource {resource} unavailable in ClusterQueue"]))
                    return _failed(messages, c.REASON_NO_MATCHING_FLAVOR)
                continue
            by_group.setdefault(group, []).append(resource)
        for group_index, resources in by_group.items():
            best: _FlavorGrade | None = None
            group_reasons: list[str] = []
            no_fit_reason = ""
            for fq in spec.groups[group_index].flavors:
                ineligible = _ineligible(fq.name, podset, flavors, excluded)
                if ineligible is not None:
                    group_reasons.append(ineligible)
                    no_fit_reason = _worse_reason(no_fit_reason, c.REASON_NO_MATCHING_FLAVOR)
                    continue
                grade = _FlavorGrade(fq.name, FIT, 0, set())
                for resource in resources:
                    fr = (fq.name, resource)
                    mode, level, problem, reason = _grade_resource(
                        workload, spec, node, fr, result.usage.get(fr, 0), requests[resource], oracle, fair_sharing
                    )
                    if problem:
                        group_reasons.append(problem)
                        no_fit_reason = _worse_reason(no_fit_reason, reason)
                    if mode in (PREEMPT, RECLAIM):
                        grade.preempt_frs.add(fr)
                    if preferred(grade.mode, grade.level, mode, level, spec.preemption_over_borrowing):
                        grade.mode = mode
                    grade.level = max(grade.level, level)
                if not _try_next(grade, spec):
                    best = grade
                    break
                # preferred() against no best yet is "any grade but NO_FIT".
                if (
                    grade.mode != NO_FIT
                    if best is None
                    else preferred(grade.mode, grade.level, best.mode, best.level, spec.preemption_over_borrowing)
                ):
                    best = grade
            if best is None:
                messages.append(_podset_message(podset.name, group_reasons or ["no flavor available"]))
                return _failed(messages, no_fit_reason or c.REASON_NO_MATCHING_FLAVOR)
            if best.mode != FIT:
                podset_reasons.extend(group_reasons)
            mode = PREEMPT if best.mode == RECLAIM else best.mode
            result.mode = min(result.mode, mode)
            result.borrowing_level = max(result.borrowing_level, best.level)
            result.needs_preemption |= best.preempt_frs
            for resource in resources:
                ps_flavors[resource] = best.flavor
                ps_usage[resource] = requests[resource]
                fr = (best.flavor, resource)
                result.usage[fr] = result.usage.get(fr, 0) + requests[resource]
        if podset_reasons:
            messages.append(_podset_message(podset.name, podset_reasons))
        for resource, amount in requests.items():
            if resource not in ps_usage and amount:
                ps_usage[resource] = amount  # reported in resourceUsage, not accounted in quota
        result.podsets.append(PodSetFlavors(podset.name, podset.count, ps_flavors, ps_usage))
    if result.mode != FIT:
        result.reason = c.REASON_WAITING_FOR_QUOTA
        result.message = "; ".join(messages)
    return result


def _ineligible(name: str, podset: PodSetInfo, flavors: Mapping[str, FlavorInfo], excluded: frozenset[str]) -> str | None:
    """Why flavor ``name`` cannot serve ``podset`` at all, or None when it may."""
    if name in excluded:
        return f"flavor {name} was excluded by the ClusterQueue's fallback strategy"
    if podset.allowed_flavors is not None and name not in podset.allowed_flavors:
        return f"flavor {name} is not allowed for the podSet"
    flavor = flavors.get(name)
    if flavor is None:
        return f"flavor {name} not found"
    return flavor_mismatch(podset, flavor)


def _worse_reason(current: str, new: str) -> str:
    """The pending reason that says more: waiting for quota over exceeding it over no flavor."""
    return new if _REASON_RANK.get(new, -1) > _REASON_RANK.get(current, -1) else current


def _grade_resource(
    workload: WorkloadInfo,
    spec: ClusterQueueSpec,
    node: quota.QuotaNode,
    fr: FlavorResource,
    earlier: int,
    request: int,
    oracle: PreemptionOracle,
    fair_sharing: bool = False,
) -> tuple[int, int, str, str]:
    """(mode, borrowing level, problem message, pending reason) for ``request`` more of ``fr`` on
    top of ``earlier`` (what the workload's previous podSets already take of it)."""
    flavor, resource = fr
    val = earlier + request
    maximum = quota.potential_available(node, fr)
    if val > maximum:
        return (
            NO_FIT,
            0,
            f"insufficient quota for {resource} in flavor {flavor}, previously considered podsets requests "
            f"({format_quantity(earlier, resource)}) + current podset request ({format_quantity(request, resource)}) "
            f"> maximum capacity ({format_quantity(maximum, resource)})",
            c.REASON_EXCEEDS_MAX_QUOTA,
        )
    level, may_reclaim_below_root = quota.lowest_fitting_subtree(node, fr, val)
    free = max(0, quota.available(node, fr))
    if val <= free:
        return FIT, level, "", ""
    problem = (
        f"insufficient unused quota for {resource} in flavor {flavor}, "
        f"{format_quantity(val - free, resource)} more needed"
    )
    # Evictions can help when the request is within the queue's nominal quota, when room for it
    # exists in a subtree below the root, or when the queue may preempt while borrowing.
    preempt_while_borrowing = spec.preemption.borrow_within_cohort != c.PREEMPT_NEVER or (
        fair_sharing and spec.preemption.reclaim_within_cohort != c.PREEMPT_NEVER
    )
    if val <= node.nominal(fr) or may_reclaim_below_root or preempt_while_borrowing:
        possibility, level_after = oracle(node, fr, val, workload)
        return possibility, level_after, problem, c.REASON_WAITING_FOR_QUOTA
    return NO_FIT, level, problem, c.REASON_WAITING_FOR_QUOTA


def _failed(messages: list[str], reason: str) -> Assignment:
    return Assignment(mode=NO_FIT, reason=reason, message="; ".join(messages))
