"""Kueue's fair sharing preemption cases, re-expressed against pykueue's engine.

Each case names its source case of ``TestFairPreemptions`` in
kueue/pkg/scheduler/preemption/preemption_fair_test.go (v0.19.2). As there, the incoming workload
asks for ``default`` cpu that must be freed by preemption, and the test asks which admitted
workloads are evicted and why. Unless a case says otherwise the ClusterQueues are that test's
``baseCQs``: ``a``, ``b`` and ``c`` with 3 cpu each in cohort ``all`` (withinClusterQueue
LowerPriority, reclaimWithinCohort Any, borrowWithinCohort LowerPriority up to priority -3) and
``preemptible`` with no quota.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from pykueue.api.quantity import parse_quantity
from tests.builders import CohortBuilder, FungibleClusterQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World

FS, REC, ICQ = "InCohortFairSharing", "InCohortReclamation", "InClusterQueue"
S2A, S2B = "LessThanOrEqualToFinalShare", "LessThanInitialShare"


def cq(name: str, cohort: str | None, cpu: str, *, within: str = "LowerPriority", reclaim: str = "Any",
       borrow: bool = False, weight: str | None = None, flavors: dict[str, str] | None = None) -> dict[str, Any]:
    builder = FungibleClusterQueueBuilder(name)
    if cohort:
        builder.cohort(cohort)
    for flavor, amount in (flavors or {"default": cpu}).items():
        builder.flavor(flavor, cpu=amount)
    builder.preemption(within_cluster_queue=within, reclaim_within_cohort=reclaim,
                       borrow_within_cohort="LowerPriority" if borrow else None)
    if borrow:
        builder.borrow_threshold(-3)
    obj = builder.obj()
    if weight is not None:
        obj["spec"]["fairSharing"] = {"weight": weight}
    return obj


def base_cqs() -> list[dict[str, Any]]:
    return [
        *(cq(n, "all", "3", borrow=True) for n in ("a", "b", "c")),
        cq("preemptible", "all", "0", within="Never", reclaim="Never"),
    ]


def weighted(a: str | None = None, b: str | None = None, c: str | None = "1", *, three: bool = True) -> list[dict[str, Any]]:
    """The three queues without borrowWithinCohort, with these fair weights."""
    out = [cq("a", "all", "3", weight=a), cq("b", "all", "3", weight=b)]
    if three:
        out.append(cq("c", "all", "3", weight=c))
    return out


@dataclass
class Case:
    source: str
    target: str
    admitted: list[tuple[str, str, str, int]]  # (name, ClusterQueue, cpu, priority)
    incoming: str = "1"
    preempted: set[tuple[str, str]] = field(default_factory=set)
    strategies: tuple[str, ...] = (S2A, S2B)
    queues: list[dict[str, Any]] | None = None
    cohorts: list[dict[str, Any]] = field(default_factory=list)
    priority: int = 0
    flavor: str = "default"  # of the incoming workload's cpu


def plain(name: str, cohort: str, cpu: str, weight: str | None = None) -> dict[str, Any]:
    """A queue that preempts nothing itself (Kueue's ClusterQueue without a preemption stanza)."""
    return cq(name, cohort, cpu, within="Never", reclaim="Never", weight=weight)


def reclaimer(name: str, cohort: str, cpu: str, weight: str | None = None, within: str = "Never") -> dict[str, Any]:
    return cq(name, cohort, cpu, within=within, reclaim="Any", weight=weight)


def cohort(name: str, parent: str | None = None, cpu: str | None = None, weight: str | None = None) -> dict[str, Any]:
    builder = CohortBuilder(name)
    if parent:
        builder.parent(parent)
    if cpu is not None:
        builder.flavor("default", cpu=cpu)
    if weight is not None:
        builder.weight(weight)
    return builder.obj()


def ranked(cluster_queue: str, count: int) -> list[tuple[str, str, str, int]]:
    """``count`` one-cpu workloads of priorities 1..count, named ``<cq><priority>``."""
    return [(f"{cluster_queue}{i}", cluster_queue, "1", i) for i in range(1, count + 1)]


def units(cluster_queue: str, count: int, start: int = 1) -> list[tuple[str, str, str, int]]:
    return [(f"{cluster_queue}{i}", cluster_queue, "1", 0) for i in range(start, start + count)]


def targets(case: Case) -> set[tuple[str, str]]:
    world = World(fair_sharing=case.strategies)
    world.flavors("default", "premium", "cheap")
    for cohort in case.cohorts:
        world.engine.upsert_cohort(cohort)
    for queue in case.queues if case.queues is not None else base_cqs():
        world.queue(queue)
    for name, queue, spec, priority in case.admitted:
        amount, _, flavor = spec.partition("@")  # "1@premium": one cpu of flavor premium
        builder = PlacementWorkloadBuilder(name, "ns").queue(f"lq-{queue}").priority(priority)
        builder.created("2026-01-01T00:10:00Z").podset(cpu=amount)
        builder.reserved(queue, {"cpu": flavor or "default"}, {"cpu": amount}, at="2026-01-01T00:10:00Z")
        world.add(builder.admitted().obj())
    incoming = PlacementWorkloadBuilder("incoming", "ns").queue(f"lq-{case.target}").priority(case.priority)
    world.add(incoming.created("2026-01-01T00:10:00Z").podset(cpu=case.incoming).obj())
    engine = world.engine
    fr = (case.flavor, "cpu")
    before = {name: {fr: v for fr, v in node.usage.items() if v} for name, node in engine.forest.cluster_queues.items()}
    found = engine.cache.preemptor.targets(
        engine.workloads["ns/incoming"], engine.cluster_queues[case.target],
        {fr: parse_quantity(case.incoming, "cpu")}, {fr},
    )
    after = {name: {fr: v for fr, v in node.usage.items() if v} for name, node in engine.forest.cluster_queues.items()}
    assert before == after, "the search must leave the quota forest as it found it"
    return {(t.victim.name, t.reason) for t in found}


CASES = [
    Case("reclaim nominal from user using the most", "c",
         [*units("a", 3), *units("b", 5), *units("c", 1)], preempted={("b1", REC)}),
    Case("can reclaim from queue using less, if taking the latest workload from user using the most isn't enough", "c",
         [("a1", "a", "3", 0), ("a2", "a", "1", 0), ("b1", "b", "2", 0), ("b2", "b", "3", 0)],
         incoming="3", preempted={("a1", REC)}),
    Case("reclaim borrowable quota from user using the most", "a",
         [*units("a", 3), *units("b", 5), *units("c", 1)], preempted={("b1", FS)}),
    Case("preempt one from each CQ borrowing", "c",
         [("a1", "a", "0.5", 0), ("a2", "a", "0.5", 0), ("a3", "a", "3", 0),
          ("b1", "b", "0.5", 0), ("b2", "b", "0.5", 0), ("b3", "b", "3", 0)],
         incoming="2", preempted={("a1", REC), ("b1", REC)}),
    Case("can't preempt when everyone under nominal", "c", [*units("a", 3), *units("b", 3), *units("c", 3)]),
    Case("can't preempt when it would switch the imbalance", "a", [*units("a", 3), *units("b", 5)], incoming="2"),
    Case("can preempt lower priority workloads from same CQ", "a",
         [("a1_low", "a", "1", -1), ("a2_low", "a", "1", -1), ("a3", "a", "1", 0), ("a4", "a", "1", 0),
          *units("b", 5)],
         incoming="2", preempted={("a1_low", ICQ), ("a2_low", ICQ)}),
    Case("can preempt a combination of same CQ and highest user", "a",
         [("a_low", "a", "1", -1), *units("a", 2, 2), *units("b", 6)],
         incoming="2", preempted={("a_low", ICQ), ("b1", FS)}),
    Case("preempt huge workload if there is no other option, as long as the target CQ gets a lower share", "a",
         [("b1", "b", "9", 0)], incoming="2", preempted={("b1", REC)}),
    Case("can't preempt huge workload if the incoming is also huge", "a",
         [("a1", "a", "2", 0), ("b1", "b", "7", 0)], incoming="5"),
    Case("can't preempt 2 smaller workloads if the incoming is huge", "a",
         [("b1", "b", "2", 0), ("b2", "b", "2", 0), ("b3", "b", "3", 0)], incoming="6"),
    Case("preempt from target and others even if over nominal", "a",
         [("a1_low", "a", "2", -1), ("a2_low", "a", "1", -1), ("b1", "b", "3", 0), ("b2", "b", "3", 0)],
         incoming="4", preempted={("a1_low", ICQ), ("b1", FS)}),
    Case("prefer to preempt workloads that don't make the target CQ have the biggest share", "a",
         [("b1", "b", "2", 0), ("b2", "b", "1", 0), ("b3", "b", "2", 0), ("c1", "c", "1", 0)],
         incoming="3.5", preempted={("b2", FS)}),
    Case("preempt from different cluster queues if the end result has a smaller max share", "a",
         [("b1", "b", "2", 0), ("b2", "b", "2.5", 0), ("c1", "c", "2", 0), ("c2", "c", "2.5", 0)],
         incoming="3.5", preempted={("b1", FS), ("c1", FS)}),
    Case("scenario above does not flap", "b",
         [("a1", "a", "3.5", 0), ("b2", "b", "2.5", 0), ("c2", "c", "2.5", 0)], incoming="2"),
    Case("cannot preempt if it would make the candidate CQ go under nominal after preempting one element", "a",
         [("b1", "b", "3", 0), ("b2", "b", "3", 0), ("c1", "c", "3", 0)], incoming="4"),
    Case("workloads under priority threshold not capriciously preempted", "a",
         [*units("a", 3), *units("b", 3), *[(f"preemptible{i}", "preemptible", "1", -3) for i in (1, 2, 3)]],
         incoming="2"),
    Case("preempt lower priority first, even if big", "a",
         [("a1", "a", "3", 0), ("b_low", "b", "5", 0), ("b_high", "b", "1", 1)],
         strategies=(S2B,), preempted={("b_low", FS)}),
    Case("preempt workload that doesn't transfer the imbalance, even if high priority", "a",
         [("a1", "a", "3", 0), ("b_low", "b", "5", 0), ("b_high", "b", "1", 1)],
         strategies=(S2A,), preempted={("b_high", FS)}),
    Case("CQ with higher weight can preempt more", "a", [*units("a", 3), *units("b", 6)], incoming="2",
         queues=weighted(a="2"), preempted={("b1", FS), ("b2", FS)}),
    Case("can preempt anything borrowing from CQ with 0 weight", "a", [*units("a", 3), *units("b", 6)], incoming="3",
         queues=weighted(b="0"), preempted={("b1", FS), ("b2", FS), ("b3", FS)}),
    Case("can't preempt nominal from CQ with 0 weight", "a", [*units("a", 3), *units("b", 3)],
         queues=weighted(b="0", three=False)),
    Case("can't preempt nominal from Cohort with 0 weight", "left-cq", [("right-1", "right-cq", "1", 0)],
         queues=[cq("left-cq", "root", "0", within="Never"), cq("right-cq", "right-cohort", "0", within="Never", weight="0")],
         cohorts=[CohortBuilder("right-cohort").parent("root").flavor("default", cpu="1").weight("0").obj()]),
    Case("can preempt within cluster queue when no cohort", "a", [("a1", "a", "1", 0)],
         queues=[cq("a", None, "1", reclaim="Never")], priority=1000, preempted={("a1", ICQ)}),
    Case("hierarchical preemption", "a",
         [*ranked("b", 5), *ranked("c", 5), *ranked("d", 5), *ranked("e", 5)], incoming="5",
         queues=[reclaimer("a", "LEFT", "1", weight="2"), plain("b", "LEFT", "1"), plain("c", "ROOT", "1"),
                 plain("d", "RIGHT", "1"), plain("e", "RIGHT", "1", weight="0.99")],
         cohorts=[cohort("ROOT", cpu="5"), cohort("LEFT", "ROOT", "5", weight="2"), cohort("RIGHT", "ROOT", "5")],
         preempted={("b1", FS), ("b2", FS), ("c1", FS), ("c2", FS), ("e1", FS)}),
    Case("borrowing cq in non-borrowing cohort is protected", "a",
         [("a1", "a", "1", -1), ("a2", "a", "1", -1), ("a3", "a", "1", -1), ("b1", "b", "1", -1)], incoming="5",
         queues=[reclaimer("a", "ROOT", "5", weight="10", within="LowerPriority"), plain("b", "RIGHT", "0", weight="0.1")],
         cohorts=[cohort("ROOT"), cohort("RIGHT", "ROOT", "1", weight="0.1")],
         preempted={("a1", ICQ), ("a2", ICQ), ("a3", ICQ)}),
    Case("forced to preempt within clusterqueue because borrowing workload too important", "a",
         [("a1", "a", "1", -1), ("a2", "a", "1", -1), ("a3", "a", "1", -1), ("b1", "b", "4", 100)], incoming="4",
         queues=[cq("a", "ROOT", "5", weight="10", reclaim="LowerPriority"), plain("b", "RIGHT", "0", weight="0.1")],
         cohorts=[cohort("ROOT"), cohort("RIGHT", "ROOT", "3", weight="0.1")],
         preempted={("a1", ICQ), ("a2", ICQ), ("a3", ICQ)}),
    Case("deep preemption", "a", [("b1", "b", "1", 0)],
         queues=[reclaimer("a", "AAA", "0"), plain("b", "BBB", "0")],
         cohorts=[cohort("ROOT"), cohort("A", "ROOT", weight="1.01"), cohort("AA", "A"), cohort("AAA", "AA"),
                  cohort("B", "ROOT", weight="0.99"), cohort("BB", "B"), cohort("BBB", "BB"),
                  cohort("C", "ROOT"), cohort("CC", "C"), cohort("CCC", "CC"), cohort("CCCC", "CCC", "1")],
         preempted={("b1", FS)}),
    Case("cq with zero weight can reclaim nominal quota", "a", [("b1", "b", "1", 0)],
         queues=[reclaimer("a", "ROOT", "1", weight="0.0"), plain("b", "ROOT", "0", weight="1.0")],
         preempted={("b1", REC)}),
    Case("cohort with zero weight can reclaim nominal quota", "a", [("b1", "b", "1", 0)],
         queues=[reclaimer("a", "A", "0", weight="0.0"), plain("b", "ROOT", "0", weight="1.0")],
         cohorts=[cohort("A", "ROOT", "1", weight="0.0")],
         preempted={("b1", FS)}),
    Case("nominal first: workload fitting within nominal can preempt despite high aggregate DRS", "a",
         [("a_prem1", "a", "1@premium", 0), ("a_prem2", "a", "1@premium", 0),
          *[(f"a_cheap{i}", "a", "1@cheap", 0) for i in range(1, 6)], ("b_prem1", "b", "1@premium", 0)],
         queues=[cq("a", "all", "", within="Never", flavors={"premium": "3", "cheap": "0"}),
                 cq("b", "all", "", within="Never", reclaim="Never", flavors={"premium": "0", "cheap": "6"})],
         flavor="premium", preempted={("b_prem1", REC)}),
    Case("zero weight borrowing preemptor cannot preempt from a borrowing CQ with a non-zero weight", "a",
         [("a1", "a", "1", 0), ("b1", "b", "1", 0), ("b2", "b", "1", 0)],
         queues=[reclaimer("a", "all", "1", weight="0"), plain("b", "all", "1", weight="1")]),
    Case("zero weight borrowing preemptor can preempt from a borrowing CQ which also has zero weight", "a",
         units("b", 3), incoming="2",
         queues=[reclaimer("a", "all", "1", weight="0"), plain("b", "all", "0", weight="0")],
         cohorts=[cohort("all", cpu="3")], preempted={("b1", FS)}),
    Case("non-zero weight borrowing preemptor preempts from a borrowing CQ", "a",
         units("b", 3), incoming="2",
         queues=[reclaimer("a", "all", "1", weight="1"), plain("b", "all", "0", weight="1")],
         cohorts=[cohort("all", cpu="3")], preempted={("b1", FS)}),
    Case("candidates skipped by the first strategy are still available to the second strategy", "p",
         [("p1", "p", "2", 0), ("y1", "y", "2", 0), ("y2", "y", "2", 0), ("x1", "x", "1", 0), ("x2", "x", "1", 0)],
         queues=[reclaimer("p", "A", "2", weight="1"), plain("y", "A", "2", weight="1"), plain("x", "ROOT", "1", weight="1")],
         cohorts=[cohort("A", "ROOT", "1", weight="0")],
         preempted={("y1", FS), ("x1", FS)}),
    # TestFairPreemptionSkipsUnsatisfiableTournament: either weight of the preemptor, nothing is preempted.
    *(Case(f"skips unsatisfiable tournament: preemptor weight {w}", "a",
           [("a1", "a", "1", 0), ("b1", "b", "1", 0), ("b2", "b", "1", 0)],
           queues=[reclaimer("a", "all", "1", weight=w), plain("b", "all", "1", weight="1")]) for w in ("0", "1")),
]


@pytest.mark.parametrize("case", CASES, ids=[c.source for c in CASES])
def test_kueue_fair_preemption_case(case: Case) -> None:
    assert targets(case) == case.preempted
