"""Flavor assignment: pick a ResourceFlavor per resource group for every podSet.

Mirrors Kueue's flavor assigner. For each podSet and each resource group it needs, the group's
flavors are walked in the ClusterQueue's order. A flavor is *eligible* when the podSet may use it
(``allowedResourceFlavors``), tolerates its taints and matches its node labels; it is then graded
per resource against the quota tree:

* ``FIT``       the request fits in what is available now (possibly by borrowing; the borrowing
                level says how far up the tree);
* ``PREEMPT``   it does not fit now, but evicting admitted workloads would make room (the
                preemption oracle found candidates);
* ``NO_CANDIDATES`` preemption could in principle help but no workload may be evicted;
* ``NO_FIT``    it can never fit (more than the queue's potential maximum), or no preemption
                policy could help.

``flavorFungibility`` decides when to stop: by default the first flavor that fits (even by
borrowing) is taken and a flavor that needs preemption only if no later flavor fits. When the
walk ends without stopping, the best flavor seen wins (better mode, then lower borrowing level;
the other way round with ``PreemptionOverBorrowing``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pykueue.api import constants as c
from pykueue.api.quantity import format_quantity

from . import quota
from .records import ClusterQueueSpec, FlavorInfo, FlavorResource, WorkloadInfo
from .selectors import flavor_mismatch

NO_FIT = 0
NO_CANDIDATES = 1
PREEMPT = 2
FIT = 3

_REASON_RANK = {c.REASON_NO_MATCHING_FLAVOR: 0, c.REASON_EXCEEDS_MAX_QUOTA: 1, c.REASON_WAITING_FOR_QUOTA: 2}

# (ClusterQueue node, fr, value, workload) -> borrowing level once evictions make room, or None
# when no evictions can.
PreemptionOracle = Callable[[quota.QuotaNode, FlavorResource, int, WorkloadInfo], int | None]


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


def _better(a: _FlavorGrade, b: _FlavorGrade | None, preemption_over_borrowing: bool) -> bool:
    if b is None:
        return True
    if preemption_over_borrowing:
        return (a.level, -a.mode) < (b.level, -b.mode)
    return (-a.mode, a.level) < (-b.mode, b.level)


def assign_flavors(
    workload: WorkloadInfo,
    spec: ClusterQueueSpec,
    node: quota.QuotaNode,
    flavors: Mapping[str, FlavorInfo],
    oracle: PreemptionOracle,
) -> Assignment:
    """Assign flavors to every podSet of ``workload`` in ClusterQueue ``spec`` (quota in ``node``)."""
    result = Assignment(mode=FIT)
    considered: list[str] = []  # every problem met on the way, for the pending message
    manages_pods = "pods" in spec.resource_group
    # ResourceFlavor fallbacks: flavors whose attempt failed are skipped, the rest keep their order.
    excluded = workload.excluded_flavors if spec.fallbacks else frozenset()
    for podset in workload.podsets:
        requests = dict(podset.requests)
        if manages_pods:
            requests["pods"] = podset.count
        ps_flavors: dict[str, str] = {}
        ps_usage: dict[str, int] = {}
        problems: list[str] = []
        no_fit_reason = c.REASON_NO_MATCHING_FLAVOR
        by_group: dict[int, list[str]] = {}
        for resource, amount in requests.items():
            group = spec.resource_group.get(resource)
            if group is None:
                if amount:
                    problems.append(f"resource {resource} unavailable in ClusterQueue")
                continue
            by_group.setdefault(group, []).append(resource)
        if problems:
            return _no_fit(podset.name, problems, c.REASON_NO_MATCHING_FLAVOR)
        for group_index in sorted(by_group):
            resources = by_group[group_index]
            best: _FlavorGrade | None = None
            for fq in spec.groups[group_index].flavors:
                if fq.name in excluded:
                    problems.append(f"flavor {fq.name} was excluded by the ClusterQueue's fallback strategy")
                    continue
                if podset.allowed_flavors is not None and fq.name not in podset.allowed_flavors:
                    problems.append(f"flavor {fq.name} is not allowed for the podSet")
                    continue
                flavor = flavors.get(fq.name)
                if flavor is None:
                    problems.append(f"flavor {fq.name} not found")
                    continue
                mismatch = flavor_mismatch(podset, flavor)
                if mismatch is not None:
                    problems.append(mismatch)
                    continue
                grade = _FlavorGrade(fq.name, FIT, 0, set())
                for resource in resources:
                    fr = (fq.name, resource)
                    val = result.usage.get(fr, 0) + requests[resource]
                    mode, level, problem, reason = _grade_resource(workload, spec, node, fr, val, oracle)
                    if mode < grade.mode:
                        grade.mode = mode
                    grade.level = max(grade.level, level)
                    if mode == PREEMPT:
                        grade.preempt_frs.add(fr)
                    if problem:
                        problems.append(problem)
                        # A flavor that could fit later beats one that never can beats none eligible.
                        if _REASON_RANK[reason] > _REASON_RANK[no_fit_reason]:
                            no_fit_reason = reason
                if grade.mode in (NO_FIT, NO_CANDIDATES):
                    if grade.mode == NO_CANDIDATES and (best is None or best.mode == NO_CANDIDATES):
                        best = grade if best is None else best
                    continue
                keep_searching = (grade.mode == PREEMPT and spec.when_can_preempt_try_next) or (
                    grade.level > 0 and spec.when_can_borrow_try_next
                )
                if not keep_searching:
                    best = grade
                    break
                if best is None or best.mode == NO_CANDIDATES or _better(grade, best, spec.preemption_over_borrowing):
                    best = grade
            if best is None or best.mode == NO_FIT:
                return _no_fit(podset.name, problems, no_fit_reason)
            if best.mode == NO_CANDIDATES:
                nc = _no_fit(podset.name, problems, c.REASON_WAITING_FOR_QUOTA)
                nc.mode = NO_CANDIDATES
                return nc
            considered.extend(problems)
            problems = []
            result.mode = min(result.mode, best.mode)
            result.borrowing_level = max(result.borrowing_level, best.level)
            result.needs_preemption |= best.preempt_frs
            for resource in resources:
                ps_flavors[resource] = best.flavor
                ps_usage[resource] = requests[resource]
                fr = (best.flavor, resource)
                result.usage[fr] = result.usage.get(fr, 0) + requests[resource]
        for resource, amount in requests.items():
            if resource not in ps_usage and amount:
                ps_usage[resource] = amount  # reported in resourceUsage, not accounted in quota
        result.podsets.append(PodSetFlavors(podset.name, podset.count, ps_flavors, ps_usage))
    if result.mode != FIT:
        result.reason = c.REASON_WAITING_FOR_QUOTA
        result.message = ", ".join(dict.fromkeys(considered))
    return result


def _grade_resource(
    workload: WorkloadInfo,
    spec: ClusterQueueSpec,
    node: quota.QuotaNode,
    fr: FlavorResource,
    val: int,
    oracle: PreemptionOracle,
) -> tuple[int, int, str, str]:
    """(mode, borrowing level, problem message, pending reason) for ``val`` of ``fr``."""
    flavor, resource = fr
    maximum = quota.potential_available(node, fr)
    if val > maximum:
        return (
            NO_FIT,
            0,
            f"insufficient quota for {resource} in flavor {flavor}, request > maximum capacity "
            f"({format_quantity(val, resource)} > {format_quantity(maximum, resource)})",
            c.REASON_EXCEEDS_MAX_QUOTA,
        )
    free = quota.available(node, fr)
    if val <= free:
        return FIT, quota.borrowing_level(node, fr, val), "", ""
    problem = (
        f"insufficient unused quota for {resource} in flavor {flavor}, "
        f"{format_quantity(val - free, resource)} more needed"
    )
    policy = spec.preemption
    could_preempt = (val <= node.nominal(fr) and (
        policy.within_cluster_queue != c.PREEMPT_NEVER or policy.reclaim_within_cohort != c.PREEMPT_NEVER
    )) or policy.borrow_within_cohort != c.PREEMPT_NEVER
    if not could_preempt:
        return NO_FIT, 0, problem, c.REASON_WAITING_FOR_QUOTA
    level = oracle(node, fr, val, workload)
    if level is not None:
        return PREEMPT, level, problem, c.REASON_WAITING_FOR_QUOTA
    return NO_CANDIDATES, 0, problem, c.REASON_WAITING_FOR_QUOTA


def _no_fit(podset: str, problems: list[str], reason: str) -> Assignment:
    detail = ", ".join(dict.fromkeys(problems)) or "no flavor available"
    return Assignment(mode=NO_FIT, reason=reason, message=f"couldn't assign flavors to pod set {podset}: {detail}")
