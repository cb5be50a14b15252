"""Kueue's classical preemption cases, re-expressed against pykueue's engine.

Each case names its source case of ``TestPreemption`` in
kueue/pkg/scheduler/preemption/preemption_test.go (v0.19.2). As there, the incoming workload comes
with its flavor assignment already made (the resources marked ``Preempt`` are those whose quota
must be freed) and the test asks only which admitted workloads are evicted, and why.

The ClusterQueues are Kueue's ``defaultClusterQueues`` of that test, built with our builders:
quotas written ``nominal[/borrowingLimit[/lendingLimit]]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pykueue.api.quantity import parse_quantity
from tests.builders import CohortBuilder, FungibleClusterQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World

# (resource -> (flavor, amount)) of one admitted workload's single podSet.
Usage = dict[str, tuple[str, str]]


def _queue(name: str, cohort: str | None, flavors: dict[str, dict[str, str]],
           within: str = "Never", reclaim: str = "Never", borrow: str | None = None,
           threshold: int | None = None) -> FungibleClusterQueueBuilder:
    builder = FungibleClusterQueueBuilder(name)
    if cohort:
        builder.cohort(cohort)
    for flavor, quotas in flavors.items():
        nominal: dict[str, str] = {}
        borrowing: dict[str, str] = {}
        lending: dict[str, str] = {}
        for resource, spec in quotas.items():
            parts = [*spec.split("/"), "", ""]
            nominal[resource] = parts[0]
            if parts[1]:
                borrowing[resource] = parts[1]
            if parts[2]:
                lending[resource] = parts[2]
        builder.flavor(flavor, borrowing_limit=borrowing or None, lending_limit=lending or None, **nominal)
    builder.preemption(within_cluster_queue=within, reclaim_within_cohort=reclaim, borrow_within_cohort=borrow)
    if threshold is not None:
        builder.borrow_threshold(threshold)
    return builder


def _default_queues() -> list[FungibleClusterQueueBuilder]:
    shared_borrow = {"borrow": "LowerPriority", "threshold": 0}
    return [
        _queue("standalone", None, {"default": {"cpu": "6"}, "alpha": {"memory": "3Gi"}, "beta": {"memory": "3Gi"}},
               within="LowerPriority"),
        _queue("c1", "cohort", {"default": {"cpu": "6/6", "memory": "3Gi/3Gi"}}, "LowerPriority", "LowerPriority"),
        _queue("c2", "cohort", {"default": {"cpu": "6/6", "memory": "3Gi/3Gi"}}, "Never", "Any"),
        _queue("d1", "cohort-no-limits", {"default": {"cpu": "6", "memory": "3Gi"}}, "LowerPriority", "LowerPriority"),
        _queue("d2", "cohort-no-limits", {"default": {"cpu": "6", "memory": "3Gi"}}, "Never", "Any"),
        _queue("l1", "legion", {"default": {"cpu": "6/12", "memory": "3Gi/6Gi"}}, "LowerPriority", "LowerPriority"),
        _queue("preventStarvation", None, {"default": {"cpu": "6"}}, within="LowerOrNewerEqualPriority"),
        _queue("a_standard", "with_shared_cq", {"default": {"cpu": "1/12"}}, "Never", "LowerPriority", **shared_borrow),
        _queue("b_standard", "with_shared_cq", {"default": {"cpu": "1/12"}}, "LowerPriority", "Any", **shared_borrow),
        _queue("a_best_effort", "with_shared_cq", {"default": {"cpu": "1/12"}}, "Never", "LowerPriority", **shared_borrow),
        _queue("b_best_effort", "with_shared_cq", {"default": {"cpu": "0/13"}}, "Never", "LowerPriority", **shared_borrow),
        _queue("shared", "with_shared_cq", {"default": {"cpu": "10"}}),
        _queue("lend1", "cohort-lend", {"default": {"cpu": "6//4"}}, "LowerPriority", "LowerPriority"),
        _queue("lend2", "cohort-lend", {"default": {"cpu": "6//2"}}, "LowerPriority", "LowerPriority"),
        _queue("a", "cohort-three", {"default": {"cpu": "2", "memory": "2"}}, "LowerPriority", "Any"),
        _queue("b", "cohort-three", {"default": {"cpu": "2", "memory": "2"}}),
        _queue("c", "cohort-three", {"default": {"cpu": "2", "memory": "2"}}),
    ]


@dataclass
class Admitted:
    name: str
    cluster_queue: str
    usage: Usage
    priority: int = 0
    created: int = 0  # seconds after the test's "now"
    reserved: int = 0
    evicted: bool = False  # its eviction was issued and is still going on


@dataclass
class Case:
    source: str
    target: str
    admitted: list[Admitted]
    # The incoming workload's podSets: (name, count, resource -> (flavor, amount per pod, mode)).
    incoming: list[tuple[str, int, dict[str, tuple[str, str, str]]]]
    preempted: set[tuple[str, str]]  # (victim, reason)
    priority: int = 0
    created: int = 0
    queues: list[FungibleClusterQueueBuilder] | None = None
    cohorts: list[CohortBuilder] = field(default_factory=list)


def _at(second: int) -> str:
    minute, sec = divmod(600 + second, 60)
    return f"2026-01-01T00:{minute:02d}:{sec:02d}Z"


def _targets(case: Case) -> set[tuple[str, str]]:
    world = World()
    world.flavors("default", "alpha", "beta")
    for cohort in case.cohorts:
        world.engine.upsert_cohort(cohort.obj())
    for queue in case.queues if case.queues is not None else _default_queues():
        world.queue(queue.obj())
    for wl in case.admitted:
        builder = PlacementWorkloadBuilder(wl.name, "ns").queue(f"lq-{wl.cluster_queue}").priority(wl.priority)
        builder.created(_at(wl.created)).podset(**{res: amount for res, (_flavor, amount) in wl.usage.items()})
        builder.reserved(wl.cluster_queue, {res: flavor for res, (flavor, _) in wl.usage.items()},
                         {res: amount for res, (_flavor, amount) in wl.usage.items()}, at=_at(wl.reserved))
        if wl.evicted:
            builder.condition("Evicted", True, "Preempted", "Preempted to accommodate a workload")
        world.add(builder.admitted().obj())
    incoming = PlacementWorkloadBuilder("in", "ns").queue(f"lq-{case.target}").priority(case.priority)
    incoming.created(_at(case.created))
    usage: dict[tuple[str, str], int] = {}
    needs: set[tuple[str, str]] = set()
    for name, count, requests in case.incoming:
        incoming.podset(name, count, **{res: amount for res, (_flavor, amount, _mode) in requests.items()})
        for res, (flavor, amount, mode) in requests.items():
            usage[(flavor, res)] = usage.get((flavor, res), 0) + count * parse_quantity(amount, res)
            if mode == "Preempt":
                needs.add((flavor, res))
    world.add(incoming.obj())
    engine = world.engine
    targets = engine.cache.preemptor.targets(
        engine.workloads["ns/in"], engine.cluster_queues[case.target], usage, needs
    )
    return {(t.victim.name, t.reason) for t in targets}


def cpu(amount: str, flavor: str = "default") -> Usage:
    return {"cpu": (flavor, amount)}


def main(requests: dict[str, tuple[str, str, str]]) -> list[tuple[str, int, dict[str, tuple[str, str, str]]]]:
    return [("main", 1, requests)]


def pre(amount: str, flavor: str = "default") -> tuple[str, str, str]:
    return (flavor, amount, "Preempt")


def fit(amount: str, flavor: str = "default") -> tuple[str, str, str]:
    return (flavor, amount, "Fit")


ICQ, REC, RWB = "InClusterQueue", "InCohortReclamation", "InCohortReclaimWhileBorrowing"
CPU_MEM = {"cpu": ("default", "1"), "memory": ("default", "1")}

CASES = [
    Case("preempt lowest priority", "standalone",
         [Admitted("low", "standalone", cpu("2"), -1), Admitted("mid", "standalone", cpu("2")),
          Admitted("high", "standalone", cpu("2"), 1)],
         main({"cpu": pre("2")}), {("low", ICQ)}, priority=1),
    Case("preempt multiple", "standalone",
         [Admitted("low", "standalone", cpu("2"), -1), Admitted("mid", "standalone", cpu("2")),
          Admitted("high", "standalone", cpu("2"), 1)],
         main({"cpu": pre("3")}), {("low", ICQ), ("mid", ICQ)}, priority=1),
    Case("no preemption for low priority", "standalone",
         [Admitted("low", "standalone", cpu("3"), -1), Admitted("mid", "standalone", cpu("3"))],
         main({"cpu": pre("1")}), set(), priority=-1),
    Case("not enough low priority workloads", "standalone",
         [Admitted("low", "standalone", cpu("3"), -1), Admitted("mid", "standalone", cpu("3"))],
         main({"cpu": pre("4")}), set()),
    Case("some free quota, preempt low priority", "standalone",
         [Admitted("low", "standalone", cpu("1"), -1), Admitted("mid", "standalone", cpu("1")),
          Admitted("high", "standalone", cpu("3"), 1)],
         main({"cpu": pre("2")}), {("low", ICQ)}, priority=1),
    Case("minimal set excludes low priority", "standalone",
         [Admitted("low", "standalone", cpu("1"), -1), Admitted("mid", "standalone", cpu("2")),
          Admitted("high", "standalone", cpu("3"), 1)],
         main({"cpu": pre("2")}), {("mid", ICQ)}, priority=1),
    Case("only preempt workloads using the chosen flavor", "standalone",
         [Admitted("low", "standalone", {"memory": ("alpha", "2Gi")}, -1),
          Admitted("mid", "standalone", {"memory": ("beta", "1Gi")}),
          Admitted("high", "standalone", {"memory": ("beta", "1Gi")}, 1)],
         main({"cpu": fit("1"), "memory": pre("2Gi", "beta")}), {("mid", ICQ)}, priority=1),
    Case("reclaim quota from borrower", "c1",
         [Admitted("c1-low", "c1", cpu("3"), -1), Admitted("c2-mid", "c2", cpu("3")),
          Admitted("c2-high", "c2", cpu("6"), 1)],
         main({"cpu": pre("3")}), {("c2-mid", REC)}, priority=1),
    Case("no workloads borrowing", "c1",
         [Admitted("c1-high", "c1", cpu("4"), 1), Admitted("c2-low-1", "c2", cpu("4"), -1)],
         main({"cpu": pre("4")}), set(), priority=1),
    Case("not enough workloads borrowing", "c1",
         [Admitted("c1-high", "c1", cpu("4"), 1), Admitted("c2-low-1", "c2", cpu("4"), -1),
          Admitted("c2-low-2", "c2", cpu("4"), -1)],
         main({"cpu": pre("4")}), set(), priority=1),
    Case("preempting locally and borrowing other resources in cohort, without cohort candidates", "c1",
         [Admitted("c1-low", "c1", cpu("4"), -1), Admitted("c2-low-1", "c2", cpu("4"), -1),
          Admitted("c2-high-2", "c2", cpu("4"), 1)],
         main({"cpu": pre("4"), "memory": pre("5Gi")}), {("c1-low", ICQ)}, priority=1),
    Case("preempting locally and borrowing same resource in cohort", "c1",
         [Admitted("c1-med", "c1", cpu("4")), Admitted("c1-low", "c1", cpu("4"), -1),
          Admitted("c2-low-1", "c2", cpu("4"), -1)],
         main({"cpu": pre("4")}), {("c1-low", ICQ)}, priority=1),
    Case("preempting locally and borrowing same resource in cohort; no borrowing limit in the cohort", "d1",
         [Admitted("d1-med", "d1", cpu("4")), Admitted("d1-low", "d1", cpu("4"), -1),
          Admitted("d2-low-1", "d2", cpu("4"), -1)],
         main({"cpu": pre("4")}), {("d1-low", ICQ)}, priority=1),
    Case("preempting locally and borrowing other resources in cohort, with cohort candidates", "c1",
         [Admitted("c1-med", "c1", cpu("4")), Admitted("c2-low-1", "c2", cpu("5"), -1),
          Admitted("c2-low-2", "c2", cpu("1"), -1), Admitted("c2-low-3", "c2", cpu("1"), -1)],
         main({"cpu": pre("2"), "memory": pre("5Gi")}), {("c1-med", ICQ)}, priority=1),
    Case("preempting locally and not borrowing same resource in 1-queue cohort", "l1",
         [Admitted("l1-med", "l1", cpu("4")), Admitted("l1-low", "l1", cpu("2"), -1)],
         main({"cpu": pre("4")}), {("l1-med", ICQ)}, priority=1),
    Case("do not reclaim borrowed quota from same priority for withinCohort=ReclaimFromLowerPriority", "c1",
         [Admitted("c1", "c1", cpu("2")), Admitted("c2-1", "c2", cpu("4")), Admitted("c2-2", "c2", cpu("4"))],
         main({"cpu": pre("4")}), set()),
    Case("reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny", "c2",
         [Admitted("c1-1", "c1", cpu("4")), Admitted("c1-2", "c1", cpu("4"), 1), Admitted("c2", "c2", cpu("2"))],
         main({"cpu": pre("4")}), {("c1-1", REC)}),
    Case("preempt from all ClusterQueues in cohort", "c1",
         [Admitted("c1-low", "c1", cpu("3"), -1), Admitted("c1-mid", "c1", cpu("2")),
          Admitted("c2-low", "c2", cpu("3"), -1), Admitted("c2-mid", "c2", cpu("4"))],
         main({"cpu": pre("4")}), {("c1-low", ICQ), ("c2-low", REC)}),
    Case("can't preempt workloads in ClusterQueue for withinClusterQueue=Never", "c2",
         [Admitted("c2-low", "c2", cpu("3"), -1)], main({"cpu": pre("4")}), set(), priority=1),
    Case("each podset preempts a different flavor", "standalone",
         [Admitted("low-alpha", "standalone", {"memory": ("alpha", "2Gi")}, -1),
          Admitted("low-beta", "standalone", {"memory": ("beta", "2Gi")}, -1)],
         [("launcher", 1, {"memory": pre("2Gi", "alpha")}), ("workers", 2, {"memory": pre("1Gi", "beta")})],
         {("low-alpha", ICQ), ("low-beta", ICQ)}),
    Case("preempt newer workloads with the same priority", "preventStarvation",
         [Admitted("wl1", "preventStarvation", cpu("2"), 2),
          Admitted("wl2", "preventStarvation", cpu("2"), 1, created=0, reserved=1),
          Admitted("wl3", "preventStarvation", cpu("2"), 1, created=0, reserved=0)],
         [("launcher", 1, {"cpu": pre("2")})], {("wl2", ICQ)}, priority=1, created=-15),
    Case("use BorrowWithinCohort; allow preempting a lower-priority workload from another ClusterQueue while "
         "borrowing", "a_standard",
         [Admitted("a_best_effort_low", "a_best_effort", cpu("10"), -1),
          Admitted("b_best_effort_low", "b_best_effort", cpu("1"), -1)],
         main({"cpu": pre("10")}), {("a_best_effort_low", RWB)}),
    Case("use BorrowWithinCohort; don't allow preempting a lower-priority workload with priority above "
         "MaxPriorityThreshold, if borrowing is required even after the preemption", "a_standard",
         [Admitted("b_standard", "b_standard", cpu("10"), 1)], main({"cpu": pre("10")}), set(), priority=2),
    Case("use BorrowWithinCohort; allow preempting a lower-priority workload with priority above "
         "MaxPriorityThreshold, if borrowing is not required after the preemption", "a_standard",
         [Admitted("b_standard", "b_standard", cpu("13"), 1)], main({"cpu": pre("1")}), {("b_standard", REC)},
         priority=2),
    Case("use BorrowWithinCohort; don't allow for preemption of lower-priority workload from the same ClusterQueue",
         "a_standard", [Admitted("a_standard", "a_standard", cpu("13"), 1)], main({"cpu": pre("1")}), set(),
         priority=2),
    Case("use BorrowWithinCohort; only preempt from CQ if no workloads below threshold and already above nominal",
         "b_standard",
         [Admitted("a_standard_1", "a_standard", cpu("10"), 1), Admitted("a_standard_2", "a_standard", cpu("1"), 1),
          Admitted("b_standard_1", "b_standard", cpu("1"), 1), Admitted("b_standard_2", "b_standard", cpu("1"), 2)],
         main({"cpu": pre("1")}), {("b_standard_1", ICQ)}, priority=3),
    Case("use BorrowWithinCohort; preempt from CQ and from other CQs with workloads below threshold", "b_standard",
         [Admitted("b_standard_high", "b_standard", cpu("10"), 2), Admitted("b_standard_mid", "b_standard", cpu("1"), 1),
          Admitted("a_best_effort_low", "a_best_effort", cpu("1"), -1),
          Admitted("a_best_effort_lower", "a_best_effort", cpu("1"), -2)],
         main({"cpu": pre("2")}), {("a_best_effort_lower", RWB), ("b_standard_mid", ICQ)}, priority=2),
    Case("reclaim quota from lender", "lend1",
         [Admitted("lend1-low", "lend1", cpu("3"), -1), Admitted("lend2-mid", "lend2", cpu("3")),
          Admitted("lend2-high", "lend2", cpu("4"), 1)],
         main({"cpu": pre("3")}), {("lend2-mid", REC)}, priority=1),
    Case("preempt from all ClusterQueues in cohort-lend", "lend1",
         [Admitted("lend1-low", "lend1", cpu("3"), -1), Admitted("lend1-mid", "lend1", cpu("2")),
          Admitted("lend2-low", "lend2", cpu("3"), -1), Admitted("lend2-mid", "lend2", cpu("4"))],
         main({"cpu": pre("4")}), {("lend1-low", ICQ), ("lend2-low", REC)}),
    Case("cannot preempt from other ClusterQueues if exceeds requestable quota including lending limit", "lend1",
         [Admitted("lend2-low", "lend2", cpu("10"), -1)], main({"cpu": pre("9")}), set()),
    Case("preemptions from cq when target queue is exhausted for the single requested resource", "a",
         [Admitted("a1", "a", cpu("1"), -2), Admitted("a2", "a", cpu("1"), -2), Admitted("a3", "a", cpu("1"), -1),
          Admitted("b1", "b", cpu("1")), Admitted("b2", "b", cpu("1")), Admitted("b3", "b", cpu("1"))],
         main({"cpu": pre("2")}), {("a1", ICQ), ("a2", ICQ)}),
    Case("preemptions from cq when target queue is exhausted for two requested resources", "a",
         [Admitted("a1", "a", CPU_MEM, -2), Admitted("a2", "a", CPU_MEM, -2), Admitted("a3", "a", CPU_MEM, -1),
          Admitted("b1", "b", CPU_MEM), Admitted("b2", "b", CPU_MEM), Admitted("b3", "b", CPU_MEM)],
         main({"cpu": pre("2"), "memory": pre("2")}), {("a1", ICQ), ("a2", ICQ)}),
    Case("allow preemption from other cluster queues if target cq is not exhausted for the requested resource", "a",
         [Admitted("a1", "a", cpu("1"), -1), Admitted("b1", "b", cpu("1")), Admitted("b2", "b", cpu("1")),
          Admitted("b3", "b", cpu("1")), Admitted("b4", "b", cpu("1")), Admitted("b5", "b", cpu("1"), -1)],
         main({"cpu": pre("2")}), {("a1", ICQ), ("b5", REC)}),
    Case("long range preemption", "cq-left",
         [Admitted("to-be-preempted", "cq-right", cpu("5"))], main({"cpu": pre("8")}), {("to-be-preempted", REC)},
         queues=[_queue("cq-left", "cohort-left", {"default": {"cpu": "10"}}, reclaim="Any"),
                 _queue("cq-right", "cohort-right", {"default": {"cpu": "0"}})],
         cohorts=[CohortBuilder("cohort-left").parent("root"), CohortBuilder("cohort-right").parent("root")]),
]


@pytest.mark.parametrize("case", CASES, ids=[case.source for case in CASES])
def test_kueue_preemption_case(case: Case) -> None:
    assert _targets(case) == case.preempted


# TestHierarchicalPreemptions (kueue/pkg/scheduler/preemption/preemption_hierarchical_test.go):
# Cohort r at the root, Cohort c below it holding quota of its own; queues in c and directly in r.
def hq(name: str, cohort: str, cpu: str = "0", *, reclaim: str = "Any", threshold: int | None = None,
       memory: str | None = None) -> FungibleClusterQueueBuilder:
    quotas = {"cpu": cpu, **({"memory": memory} if memory else {})}
    return _queue(name, cohort, {"default": quotas}, "LowerPriority", reclaim,
                  borrow="LowerPriority" if threshold is not None else None, threshold=threshold)


def rc(c_cpu: str = "2", r_cpu: str | None = None, c_memory: str | None = None) -> list[CohortBuilder]:
    root = CohortBuilder("r")
    if r_cpu:
        root.flavor("default", cpu=r_cpu)
    child = CohortBuilder("c").parent("r").flavor("default", cpu=c_cpu, **({"memory": c_memory} if c_memory else {}))
    return [root, child]


HIERARCHICAL = [
    Case("preempt with hierarchical advantage", "q", [Admitted("admitted2", "q_borrowing", cpu("2"))],
         main({"cpu": pre("2")}), {("admitted2", REC)},
         queues=[hq("q", "c"), hq("q_borrowing", "r")], cohorts=rc()),
    Case("avoid queues within nominal quota", "q",
         [Admitted("admitted1", "q_nominal", cpu("2"), -10), Admitted("admitted2", "q_borrowing", cpu("2"))],
         main({"cpu": pre("2")}), {("admitted2", REC)},
         queues=[hq("q_nominal", "r", "2"), hq("q", "c"), hq("q_borrowing", "r")], cohorts=rc()),
    Case("preempt multiple with hierarchical advantage", "q",
         [Admitted("admitted1", "q_borrowing", cpu("1"), 1), Admitted("admitted2", "q_borrowing", cpu("1"), 2)],
         main({"cpu": pre("2")}), {("admitted1", REC), ("admitted2", REC)},
         queues=[hq("q", "c"), hq("q_borrowing", "r")], cohorts=rc()),
    Case("preempt in cohort and own CQ", "q",
         [Admitted("admitted_not_preemptible", "q_same_cohort", cpu("1"), 1),
          Admitted("admitted_preemptible", "q_same_cohort", cpu("2")),
          Admitted("admitted_own_queue", "q", cpu("1"), -1)],
         main({"cpu": pre("2")}), {("admitted_own_queue", ICQ), ("admitted_preemptible", RWB)}, priority=1,
         queues=[hq("q", "c", threshold=0), hq("q_same_cohort", "c")], cohorts=rc("3")),
    Case("prefer to preempt hierarchical candidate", "q",
         [Admitted("admitted_borrowing", "q_borrowing", cpu("1"), 1), Admitted("admitted_same_queue", "q", cpu("1"), -2)],
         main({"cpu": pre("1")}), {("admitted_borrowing", REC)},
         queues=[hq("q", "c"), hq("q_borrowing", "r")], cohorts=rc()),
    Case("forced to preempt priority candidate", "q",
         [Admitted("admitted_nominal", "q_nominal", cpu("2"), -10),
          Admitted("admitted_same_cohort", "q_same_cohort", cpu("2"), -1)],
         main({"cpu": pre("2")}), {("admitted_same_cohort", RWB)},
         queues=[hq("q", "c", threshold=0), hq("q_nominal", "r", "2"), hq("q_same_cohort", "c")], cohorts=rc()),
    Case("incoming workload fits in CQ nominal quota", "q",
         [Admitted("admitted_borrowing", "q_borrowing", cpu("3"), 10),
          Admitted("admitted_same_cohort", "q_same_cohort", cpu("3"), 10)],
         main({"cpu": pre("4")}), {("admitted_borrowing", REC), ("admitted_same_cohort", REC)},
         queues=[hq("q", "c", "4"), hq("q_borrowing", "r"), hq("q_same_cohort", "c")], cohorts=rc()),
    Case("preempt hierarchical and priority candidates", "q",
         [Admitted("admitted_borrowing", "q_borrowing", cpu("2"), -1),
          Admitted("admitted_same_cohort_preemptible", "q_same_cohort", cpu("1"), -1),
          Admitted("admitted_borrowing_not_preemptible", "q_borrowing", cpu("2"), 1)],
         main({"cpu": pre("3")}), {("admitted_borrowing", REC), ("admitted_same_cohort_preemptible", RWB)},
         queues=[hq("q", "c", reclaim="LowerPriority", threshold=0), hq("q_borrowing", "r"), hq("q_same_cohort", "c")],
         cohorts=rc("4", r_cpu="1")),
    Case("preempt hierarchical candidates and inside CQ", "q",
         [Admitted("admitted_borrowing", "q_borrowing", cpu("2"), -1),
          Admitted("admitted_same_queue_preemptible", "q", cpu("1"), -1),
          Admitted("admitted_borrowing_not_preemptible", "q_borrowing", cpu("2"), 1)],
         main({"cpu": pre("3")}), {("admitted_borrowing", REC), ("admitted_same_queue_preemptible", ICQ)},
         queues=[hq("q", "c", reclaim="LowerPriority", threshold=0), hq("q_borrowing", "r"), hq("q_same_cohort", "c")],
         cohorts=rc("4", r_cpu="1")),
    Case("reclaim nominal quota from lowest priority workload, excluding non-borrowing", "q",
         [Admitted("admitted_borrowing_prio_8", "q_borrowing", cpu("1"), 8),
          Admitted("admitted_borrowing_prio_9", "q_borrowing", cpu("1"), 9),
          Admitted("admitted_borrowing_prio_10", "q_borrowing", cpu("1"), 9),
          Admitted("admitted_nominal", "q_nominal", cpu("2"), -2)],
         main({"cpu": pre("1")}), {("admitted_borrowing_prio_8", REC)},
         queues=[hq("q", "c"), hq("q_borrowing", "r"), hq("q_nominal", "r", "2")], cohorts=rc("3")),
    Case("infeasible preemption all available workloads in pruned subtrees", "q",
         [Admitted("admitted_other_1", "q_other", cpu("1"), -10), Admitted("admitted_other_2", "q_other", cpu("1"), -10),
          Admitted("admitted_same_cohort", "q_same_cohort", cpu("2"))],
         main({"cpu": pre("2")}), set(),
         queues=[hq("q_other", "c_other"), hq("q", "c"), hq("q_same_cohort", "c")],
         cohorts=[*rc(), CohortBuilder("c_other").parent("r").flavor("default", cpu="2")]),
    Case("hiearchical preemption with multiple resources", "q",
         [Admitted("admitted_borrowing", "q_borrowing", {"cpu": ("default", "3"), "memory": ("default", "1Gi")}),
          Admitted("admitted_same_cohort", "q_same_cohort", {"cpu": ("default", "1"), "memory": ("default", "3Gi")}, -2)],
         main({"cpu": pre("2"), "memory": pre("1Gi")}), {("admitted_borrowing", REC)}, priority=-2,
         queues=[hq("q", "c", memory="0"), hq("q_borrowing", "r", memory="0"), hq("q_same_cohort", "c", memory="0")],
         cohorts=rc("4", r_cpu="3", c_memory="4Gi")),
    Case("prefer to preempt evicted workloads", "q",
         [Admitted("admitted_borrowing", "q_borrowing", cpu("1"), -10),
          Admitted("evicted_same_cohort", "q_same_cohort", cpu("1"), -1, evicted=True)],
         main({"cpu": pre("1")}), {("evicted_same_cohort", RWB)},
         queues=[hq("q", "c", threshold=0), hq("q_borrowing", "r"), hq("q_same_cohort", "c")], cohorts=rc()),
    Case("respect lending limits", "q", [Admitted("admitted_borrowing", "q_borrowing", cpu("4"))],
         main({"cpu": pre("5")}), {("admitted_borrowing", REC)}, priority=-2,
         queues=[_queue("q", "c", {"default": {"cpu": "3//2"}}, "LowerPriority", "Any"), hq("q_borrowing", "r")],
         cohorts=rc()),
    Case("reclaim in complex hierarchy", "q5",
         [Admitted("admitted_borrowing_1", "q1", cpu("4"), -6), Admitted("admitted_borrowing_2", "q1", cpu("4"), -5),
          Admitted("admitted_borrowing_3", "q2", cpu("4"), -9), Admitted("admitted_borrowing_4", "q2", cpu("4"), -10),
          Admitted("admitted_borrowing_5", "q3", cpu("4"), -4), Admitted("admitted_borrowing_6", "q3", cpu("3"), -3),
          Admitted("admitted_borrowing_7", "q4", cpu("2"), 4), Admitted("admitted_borrowing_8", "q4", cpu("3"), 2)],
         main({"cpu": pre("7")}), {("admitted_borrowing_1", REC), ("admitted_borrowing_4", REC)}, priority=-2,
         queues=[hq("q1", "c12"), hq("q2", "c23"), hq("q3", "c22"), hq("q4", "c32"), hq("q5", "c31")],
         cohorts=[CohortBuilder("r"), *[CohortBuilder(name).parent(parent).flavor("default", cpu="4") for name, parent in (
             ("c11", "r"), ("c12", "r"), ("c21", "c11"), ("c22", "c11"), ("c23", "c11"), ("c31", "c21"), ("c32", "c21"))]]),
]


@pytest.mark.parametrize("case", HIERARCHICAL, ids=[f"TestHierarchicalPreemptions/{c.source}" for c in HIERARCHICAL])
def test_kueue_hierarchical_preemption_case(case: Case) -> None:
    assert _targets(case) == case.preempted
