"""Quota arithmetic in cohort trees: nominal quota, borrowingLimit, lendingLimit, 2 and 3 levels."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.engine import quota
from controller.engine.parse import parse_cluster_queue, parse_cohort
from tests.builders import CohortBuilder, FungibleClusterQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World

FR = ("default", "cpu")


def _admit_ones(world: World, cq: str, count: int) -> int:
    """Submit ``count`` one-cpu workloads to ``cq`` and return how many get admitted."""
    for i in range(count):
        world.add(PlacementWorkloadBuilder(f"{cq}-{i}", "ns").queue(f"lq-{cq}").podset(cpu="1").at(i).obj())
    admitted = []
    for _ in range(3):
        admitted += world.admit()
    return len(admitted)


def _world(*queues: FungibleClusterQueueBuilder, cohorts: tuple[CohortBuilder, ...] = ()) -> World:
    world = World(heads=64).flavors("default")
    for cohort in cohorts:
        world.engine.upsert_cohort(cohort.obj())
    for cq in queues:
        world.queue(cq.obj())
    return world


@pytest.mark.parametrize(
    ("name", "queues", "cohorts", "preload", "target", "expected"),
    [
        ("no cohort: nominal only", [FungibleClusterQueueBuilder("a").flavor("default", cpu="4")], [], {}, "a", 4),
        ("borrow everything the lender has",
         [FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="4"),
          FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="10")], [], {}, "a", 14),
        ("borrowingLimit caps borrowing",
         [FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="4", borrowing_limit={"cpu": "2"}),
          FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="10")], [], {}, "a", 6),
        ("lendingLimit caps lending",
         [FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="4"),
          FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="10", lending_limit={"cpu": "3"})], [], {}, "a", 7),
        # b keeps 7 private; using 8 spills 1 into the shared pool, leaving a 4 + 3 - 1 = 6.
        ("lender's own use beyond its private part reduces the pool",
         [FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="4"),
          FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="10", lending_limit={"cpu": "3"})], [],
         {"b": "8"}, "a", 6),
        ("lender within its private part does not",
         [FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="4"),
          FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="10", lending_limit={"cpu": "3"})], [],
         {"b": "7"}, "a", 7),
        ("cohort object quota is a shared pool",
         [FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="0")],
         [CohortBuilder("co").flavor("default", cpu="5")], {}, "a", 5),
        # Three levels: root <- left <- l1 and root <- right <- r1. r1 lends 2 of its 6.
        ("three levels: borrow across subtrees",
         [FungibleClusterQueueBuilder("l1").cohort("left").flavor("default", cpu="4"),
          FungibleClusterQueueBuilder("r1").cohort("right").flavor("default", cpu="6", lending_limit={"cpu": "2"})],
         [CohortBuilder("left").parent("root"), CohortBuilder("right").parent("root")], {}, "l1", 6),
        ("three levels: cohort borrowingLimit caps the subtree",
         [FungibleClusterQueueBuilder("l1").cohort("left").flavor("default", cpu="4"),
          FungibleClusterQueueBuilder("r1").cohort("right").flavor("default", cpu="6", lending_limit={"cpu": "2"})],
         [CohortBuilder("left").parent("root").flavor("default", cpu="0", borrowing_limit={"cpu": "1"}),
          CohortBuilder("right").parent("root")], {}, "l1", 5),
        ("three levels: cohort lendingLimit caps what the subtree lends",
         [FungibleClusterQueueBuilder("l1").cohort("left").flavor("default", cpu="4"),
          FungibleClusterQueueBuilder("r1").cohort("right").flavor("default", cpu="6")],
         [CohortBuilder("left").parent("root"),
          CohortBuilder("right").parent("root").flavor("default", cpu="0", lending_limit={"cpu": "1"})],
         {}, "l1", 5),
        ("three levels: root quota shared by all",
         [FungibleClusterQueueBuilder("l1").cohort("left").flavor("default", cpu="1"),
          FungibleClusterQueueBuilder("r1").cohort("right").flavor("default", cpu="1")],
         [CohortBuilder("left").parent("root"), CohortBuilder("right").parent("root"),
          CohortBuilder("root").flavor("default", cpu="3")], {"r1": "2"}, "l1", 3),
    ],
)
def test_capacity(name, queues, cohorts, preload, target, expected) -> None:
    world = _world(*queues, cohorts=tuple(cohorts))
    for cq, amount in preload.items():
        world.add(PlacementWorkloadBuilder(f"pre-{cq}", "ns").queue(f"lq-{cq}").podset(cpu=amount)
                  .reserved(cq, {"cpu": "default"}, {"cpu": amount}).admitted().obj())
    assert _admit_ones(world, target, 20) == expected, name
    # Never over-committed: the root of the tree is within its subtree quota.
    for node in world.engine.forest.cohorts.values():
        if node.parent is None:
            assert node.usage.get(FR, 0) <= node.subtree.get(FR, 0), name


def test_exceeds_max_quota_uses_potential_capacity() -> None:
    world = _world(FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="4", borrowing_limit={"cpu": "2"}),
                   FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="10"))
    world.add(PlacementWorkloadBuilder("seven", "ns").queue("lq-a").podset(cpu="7").obj())
    world.add(PlacementWorkloadBuilder("six", "ns").queue("lq-a").podset(cpu="6").obj())
    result = world.cycle()
    assert [r.workload for r in result.reservations] == ["ns/six"]
    assert result.reservations[0].borrowing is True
    (pending,) = result.pending
    assert pending.reason == "ExceedsMaxQuota"


def test_borrowing_workloads_go_after_non_borrowing_in_a_round() -> None:
    world = _world(FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="0"),
                   FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="2"))
    # a's workload is older and higher priority but must borrow; b's fits its own quota.
    world.add(PlacementWorkloadBuilder("borrower", "ns").queue("lq-a").podset(cpu="2").priority(100).at(0).obj())
    world.add(PlacementWorkloadBuilder("owner", "ns").queue("lq-b").podset(cpu="2").priority(0).at(5).obj())
    result = world.cycle()
    assert [r.workload for r in result.reservations] == ["ns/owner"]


def test_cohort_cycle_disables_member_queues() -> None:
    world = _world(FungibleClusterQueueBuilder("a").cohort("x").flavor("default", cpu="4"),
                   cohorts=(CohortBuilder("x").parent("y"), CohortBuilder("y").parent("x")))
    assert not world.engine.is_active("a")
    assert "its cohort tree has a cycle" in world.engine.inactive["a"][1]
    world.add(PlacementWorkloadBuilder("w", "ns").queue("lq-a").podset(cpu="1").obj())
    assert world.cycle().reservations == []
    world.engine.upsert_cohort(CohortBuilder("y").obj())  # cycle fixed
    assert [r.workload for r in world.cycle().reservations] == ["ns/w"]


# --- property: usage bookkeeping is exact under any sequence of add/remove ------------------------

_TREE_QUEUES = [
    FungibleClusterQueueBuilder("q1").cohort("left").flavor("default", cpu="5", lending_limit={"cpu": "2"}).obj(),
    FungibleClusterQueueBuilder("q2").cohort("left").flavor("default", cpu="3").obj(),
    FungibleClusterQueueBuilder("q3").cohort("right").flavor("default", cpu="4", lending_limit={"cpu": "4"}).obj(),
]
_TREE_COHORTS = [
    CohortBuilder("left").parent("root").flavor("default", cpu="1", lending_limit={"cpu": "1"}).obj(),
    CohortBuilder("right").parent("root").obj(),
    CohortBuilder("root").flavor("default", cpu="2").obj(),
]


def _forest() -> quota.QuotaForest:
    forest = quota.QuotaForest()
    forest.rebuild({q["metadata"]["name"]: parse_cluster_queue(q) for q in _TREE_QUEUES},
                   {c["metadata"]["name"]: parse_cohort(c) for c in _TREE_COHORTS})
    return forest


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q1", "q2", "q3"]), st.integers(1, 4000)), max_size=12))
def test_usage_is_exact_and_reversible(ops) -> None:
    forest = _forest()
    for name, amount in ops:
        quota.add_usage(forest.cluster_queues[name], {FR: amount})
    # Incremental usage equals a from-scratch recomputation at every cohort.
    expected = quota.QuotaForest()
    expected.rebuild({q["metadata"]["name"]: parse_cluster_queue(q) for q in _TREE_QUEUES},
                     {c["metadata"]["name"]: parse_cohort(c) for c in _TREE_COHORTS})
    for name, node in forest.cluster_queues.items():
        expected.cluster_queues[name].usage = dict(node.usage)
    expected._compute_usage(expected.cohorts["root"])
    for name, node in forest.cohorts.items():
        assert node.usage.get(FR, 0) == expected.cohorts[name].usage.get(FR, 0), name
    for name, amount in reversed(ops):
        quota.remove_usage(forest.cluster_queues[name], {FR: amount})
    for node in [*forest.cluster_queues.values(), *forest.cohorts.values()]:
        assert node.usage.get(FR, 0) == 0


def test_subtree_quota_three_levels() -> None:
    forest = _forest()
    # q1 lends 2 of 5, q2 lends all 3: left = 1 (own) + 2 + 3 = 6, of which left lends 1.
    assert forest.cohorts["left"].subtree[FR] == 6000
    assert forest.cohorts["right"].subtree[FR] == 4000
    assert forest.cohorts["root"].subtree[FR] == 2000 + 1000 + 4000
    assert quota.potential_available(forest.cluster_queues["q2"], FR) == 5000 + 7000
    assert quota.potential_available(forest.cluster_queues["q3"], FR) == 7000


def test_registering_many_queues_rebuilds_the_forest_once(monkeypatch) -> None:
    calls = []
    original = quota.QuotaForest.rebuild
    monkeypatch.setattr(quota.QuotaForest, "rebuild", lambda self, *a: calls.append(1) or original(self, *a))
    world = World().flavors("default")
    for i in range(50):
        world.queue(FungibleClusterQueueBuilder(f"cq{i}").cohort(f"co{i % 5}").flavor("default", cpu="1").obj())
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq7").podset(cpu="2").obj())
    assert calls == []
    assert world.admit() == ["ns/wl"]  # borrows from its cohort: the forest is complete
    assert calls == [1]


def _using(world: World, cq: str, cpu: str, name: str) -> None:
    world.add(PlacementWorkloadBuilder(name, "ns").queue(f"lq-{cq}").podset(cpu=cpu)
              .reserved(cq, {"cpu": "default"}, {"cpu": cpu}).admitted().obj())


def test_borrowing_level_is_the_height_of_the_cohort_that_lends_not_its_distance() -> None:
    """A queue hanging directly off a root whose other branch is a Cohort of queues borrows from a
    subtree of height 2 (Kueue's ``FindHeightOfLowestSubtreeThatFits``), as a queue of that branch
    borrowing from the root does: entries of both compare at the same level."""
    world = _world(
        FungibleClusterQueueBuilder("r").cohort("root").flavor("default", cpu="1"),
        FungibleClusterQueueBuilder("a1").cohort("branch").flavor("default", cpu="1"),
        cohorts=(CohortBuilder("root").flavor("default", cpu="10"), CohortBuilder("branch").parent("root")),
    )
    r, a1 = world.engine.forest.cluster_queues["r"], world.engine.forest.cluster_queues["a1"]  # cpu in millicores
    assert quota.lowest_fitting_subtree(r, FR, 1000) == (0, True)
    assert quota.lowest_fitting_subtree(r, FR, 3000) == (2, False)
    assert quota.lowest_fitting_subtree(a1, FR, 3000) == (2, False)


def test_borrowing_level_counts_a_queues_unused_quota_once() -> None:
    """Room left in a queue's own nominal quota is part of its Cohort's subtree already; counting it
    again on the way up would place the borrowing one level too low."""
    world = _world(
        FungibleClusterQueueBuilder("a").cohort("mid").flavor("default", cpu="4"),
        FungibleClusterQueueBuilder("b").cohort("mid").flavor("default", cpu="4"),
        FungibleClusterQueueBuilder("c").cohort("top").flavor("default", cpu="8"),
        cohorts=(CohortBuilder("mid").parent("top"), CohortBuilder("top")),
    )
    _using(world, "a", "3", "a-used")
    _using(world, "b", "4", "b-used")
    a = world.engine.forest.cluster_queues["a"]
    # a wants 2: 1 from its own nominal, 1 more; mid (8) already holds 7, so mid cannot give 2
    # without counting a's free cpu twice: the room is in top.
    assert quota.lowest_fitting_subtree(a, FR, 2000) == (2, False)
    assert quota.lowest_fitting_subtree(a, FR, 1000) == (0, True)


def test_remembered_quota_figures_follow_a_quota_change() -> None:
    """Quota nodes remember private quota and potential availability (fixed between rebuilds);
    a quota change rebuilds the forest, so a workload above the old maximum fits the new one."""
    world = _world(FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="4"),
                   FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="5", lending_limit={"cpu": "3"}))
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-a").podset(cpu="9").obj())
    assert world.admit() == []  # at most 4 + 3
    node = world.engine.cache.forest.cluster_queues["a"]
    assert quota.potential_available(node, FR) == 7000
    assert world.engine.cache.forest.cluster_queues["b"].local_quota(FR) == 2000
    world.queue(FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="10", lending_limit={"cpu": "5"}).obj())
    assert world.admit() == ["ns/wl"]  # 4 + 5
    assert quota.potential_available(world.engine.cache.forest.cluster_queues["a"], FR) == 9000
    assert world.engine.cache.forest.cluster_queues["b"].local_quota(FR) == 5000
