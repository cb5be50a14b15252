"""Kueue's fair sharing scheduling cases, re-expressed against pykueue's engine.

Each case names its source case of ``TestScheduleForFairSharing`` in
kueue/pkg/scheduler/scheduler_fs_test.go (v0.19.2). As there, one scheduling cycle runs with one
head per ClusterQueue (Kueue's cycle) and fair sharing on; the test asks which pending workloads
got a quota reservation. Quotas are cpu of one flavor; Cohorts may hold quota themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.builders import ClusterQueueBuilder, CohortBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World


def cq(name: str, cohort: str | None, cpu: str, weight: str | None = None, reclaim: str | None = None) -> dict[str, Any]:
    builder = ClusterQueueBuilder(name)
    if cohort:
        builder.cohort(cohort)
    builder.flavor("on-demand", cpu=cpu)
    if weight is not None:
        builder.weight(weight)
    if reclaim:
        builder.preemption("Never", reclaim)
    return builder.obj()


def cohort(name: str, parent: str | None = None, cpu: str | None = None) -> dict[str, Any]:
    builder = CohortBuilder(name)
    if parent:
        builder.parent(parent)
    if cpu:
        builder.flavor("on-demand", cpu=cpu)
    return builder.obj()


@dataclass
class Wl:
    name: str
    queue: str
    cpu: str
    admitted: bool = False  # already holds quota when the cycle runs
    priority: int = 0
    second: int = 0  # creation, seconds after the case's start


@dataclass
class Case:
    source: str
    queues: list[dict[str, Any]]
    cohorts: list[dict[str, Any]]
    workloads: list[Wl]
    admitted: set[str]  # pending workloads the cycle gives quota to
    extra: dict[str, Any] = field(default_factory=dict)


def _at(second: int) -> str:
    return f"2026-01-01T00:00:{second:02d}Z"


def reserved_by_one_cycle(case: Case) -> set[str]:
    world = World(heads=1, fair_sharing=("LessThanOrEqualToFinalShare", "LessThanInitialShare"))
    world.flavors("on-demand")
    for obj in case.cohorts:
        world.engine.upsert_cohort(obj)
    for obj in case.queues:
        world.queue(obj)
    for wl in case.workloads:
        builder = PlacementWorkloadBuilder(wl.name, "ns").queue(f"lq-{wl.queue}").priority(wl.priority)
        builder.created(_at(wl.second)).podset(cpu=wl.cpu)
        if wl.admitted:
            builder.reserved(wl.queue, {"cpu": "on-demand"}, {"cpu": wl.cpu}, at=_at(wl.second)).admitted()
        world.add(builder.obj())
    return {key.split("/")[1] for key in world.admit()}


CASES = [
    Case("hierarchical fair sharing schedule workload which wins tournament",
         [cq("d", "B", "0"), cq("e", "B", "0"), cq("f", "C", "0"), cq("g", "C", "0")],
         [cohort("A", cpu="200"), cohort("B", "A"), cohort("C", "A")],
         [Wl("d0", "d", "10", True), Wl("e0", "e", "20", True), Wl("g0", "g", "100", True),
          Wl("d1", "d", "70"), Wl("e1", "e", "61"), Wl("f1", "f", "1"), Wl("g1", "g", "1")],
         {"d1"}),
    Case("fair sharing schedule workload with lowest drf after admission",
         [cq("b", "A", "0"), cq("c", "A", "0")], [cohort("A", cpu="100")],
         [Wl("b0", "b", "10", True), Wl("b1", "b", "50"), Wl("c1", "c", "75")],
         {"b1"}),
    Case("fair sharing two queues with weight 0 schedules workload which borrows less",
         [cq("b", "A", "0", weight="0", reclaim="Any"), cq("c", "A", "0", weight="0", reclaim="Any")],
         [cohort("A", cpu="8")],
         [Wl("b0", "b", "4", True), Wl("b1", "b", "4", priority=9001), Wl("c1", "c", "4")],
         {"c1"}),
    Case("fair sharing two queues with high weight schedules workload which borrows less",
         [cq("b", "A", "0", weight="123456789", reclaim="Any"), cq("c", "A", "0", weight="123456789", reclaim="Any")],
         [cohort("A", cpu="8")],
         [Wl("b0", "b", "4", True), Wl("b1", "b", "4", priority=9001), Wl("c1", "c", "4")],
         {"c1"}),
    Case("fair sharing schedule singleton cqs and cq without cohort",
         [cq("a", "A", "0"), cq("b", "B", "10"), cq("c", None, "10")], [cohort("A", cpu="10"), cohort("B")],
         [Wl("a1", "a", "10"), Wl("b1", "b", "10"), Wl("c1", "c", "10")],
         {"a1", "b1", "c1"}),
    Case("fair sharing schedule highest priority first",
         [cq("b", "A", "0"), cq("c", "A", "0")], [cohort("A", cpu="10"), cohort("B")],
         [Wl("b1", "b", "10", priority=99), Wl("c1", "c", "10", priority=101)],
         {"c1"}),
    Case("fair sharing schedule earliest timestamp first",
         [cq("b", "A", "0"), cq("c", "A", "0")], [cohort("A", cpu="10"), cohort("B")],
         [Wl("b1", "b", "10", priority=101, second=1), Wl("c1", "c", "10", priority=101)],
         {"c1"}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.source for c in CASES])
def test_kueue_fair_scheduling_case(case: Case) -> None:
    assert reserved_by_one_cycle(case) == case.admitted
