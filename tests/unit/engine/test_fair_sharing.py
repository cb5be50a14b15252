"""Fair sharing in the engine: dominant resource shares (cases of Kueue's
``TestDominantResourceShare`` in kueue/pkg/cache/scheduler/fair_sharing_test.go, v0.19.2, each
naming its source case) and the tournament order of a cycle's heads."""

from __future__ import annotations

import math
from typing import Any

import pytest

from controller.engine import fairshare, quota
from tests.builders import ClusterQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World

GPU = "example.com/gpu"


def _cq(name: str, cohort: str | None, weight: str | None, **nominal: str) -> dict[str, Any]:
    builder = ClusterQueueBuilder(name)
    if cohort:
        builder.cohort(cohort)
    obj = builder.flavor("default", **nominal).obj()
    if weight is not None:
        obj["spec"]["fairSharing"] = {"weight": weight}
    return obj


def _world(*queues: dict[str, Any], fair: bool = True) -> World:
    world = World(fair_sharing=("LessThanOrEqualToFinalShare", "LessThanInitialShare") if fair else None)
    world.flavors("default")
    for q in queues:
        world.queue(q)
    return world


# (source case, cq weight, cq nominal, lending-cq weight, lending-cq nominal, usage, (dominant, rounded share))
DRS_CASES = [
    ("usage below nominal", "1", {"cpu": "2", GPU: "5"}, "1", {"cpu": "8", GPU: "5"},
     {"cpu": 1000, GPU: 2}, ("", 0)),
    ("usage above nominal", "1", {"cpu": "2", GPU: "5"}, "1", {"cpu": "8", GPU: "5"},
     {"cpu": 3000, GPU: 7}, (GPU, 200)),
    ("usage slightly above nominal in a cohort with large quotas", "1", {GPU: "500"}, "300", {GPU: "1000"},
     {GPU: 501}, (GPU, 1)),
    ("usage way above nominal in a cohort with large quotas and weights", "300", {GPU: "500"}, "300", {GPU: "1000"},
     {GPU: 800}, (GPU, 1)),
    ("one resource above nominal", "1", {"cpu": "2", GPU: "5"}, "1", {"cpu": "8", GPU: "5"},
     {"cpu": 3000, GPU: 3}, ("cpu", 100)),
]


@pytest.mark.parametrize("case", DRS_CASES, ids=[c[0] for c in DRS_CASES])
def test_kueue_dominant_resource_share_case(case: tuple[Any, ...]) -> None:
    _source, weight, nominal, lending_weight, lending_nominal, usage, (dominant, rounded) = case
    world = _world(_cq("cq", "test-cohort", weight, **nominal), _cq("lending-cq", "test-cohort", lending_weight, **lending_nominal))
    forest = world.engine.forest
    quota.add_usage(forest.cluster_queues["cq"], {("default", r): v for r, v in usage.items()})
    drs = fairshare.share(forest.cluster_queues["cq"])
    assert (drs.dominant_resource, drs.rounded()) == (dominant, rounded)
    assert drs.borrowing == (rounded > 0)
    assert fairshare.share(forest.cluster_queues["lending-cq"]).rounded() == 0
    assert fairshare.share(forest.cohorts["test-cohort"]).rounded() == 0


def test_kueue_dominant_resource_share_no_cohort() -> None:
    """Source case "no cohort": a queue without a cohort never borrows."""
    world = _world(_cq("cq", None, None, cpu="2"))
    node = world.engine.forest.cluster_queues["cq"]
    quota.add_usage(node, {("default", "cpu"): 1000})
    assert fairshare.share(node) == fairshare.DRS()


def test_zero_weight_borrows_last_and_compares_by_unweighted_share() -> None:
    zero_small = fairshare.DRS(weight=0, unweighted=10, borrowing=True)
    zero_big = fairshare.DRS(weight=0, unweighted=20, borrowing=True)
    heavy = fairshare.DRS(weight=1, unweighted=900, borrowing=True)
    assert zero_small.rounded() == 2**63 - 1 and math.isinf(zero_small.weighted)
    assert fairshare.compare(heavy, zero_small) == -1
    assert fairshare.compare(zero_small, zero_big) == -1
    assert fairshare.compare(fairshare.DRS(weight=0), heavy) == -1  # weight 0 not borrowing: share 0


def _pending(world: World, name: str, queue: str, cpu: str, *, second: int = 0, priority: int = 0) -> None:
    world.add(PlacementWorkloadBuilder(name, "ns").queue(f"lq-{queue}").priority(priority)
              .created(f"2026-01-01T00:00:{second:02d}Z").podset(cpu=cpu).obj())


def _reclaiming(name: str, weight: str | None) -> dict[str, Any]:
    obj = _cq(name, "all", weight, cpu="0")
    obj["spec"]["preemption"] = {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"}
    return obj


def test_the_scarce_head_goes_to_the_queue_with_the_lowest_share_after_admission() -> None:
    """One cpu to lend, one head each: b (weight 2) would end at half a's share, so b takes it."""
    world = _world(_cq("lender", "all", None, cpu="1"), _cq("a", "all", "1", cpu="0"), _cq("b", "all", "2", cpu="0"))
    _pending(world, "a1", "a", "1", second=0)
    _pending(world, "b1", "b", "1", second=5)
    assert world.admit() == ["ns/b1"]


def test_the_scarce_head_goes_to_the_older_workload_without_fair_sharing() -> None:
    world = _world(_cq("lender", "all", None, cpu="1"), _cq("a", "all", "1", cpu="0"), _cq("b", "all", "2", cpu="0"),
                   fair=False)
    _pending(world, "a1", "a", "1", second=0)
    _pending(world, "b1", "b", "1", second=5)
    assert world.admit() == ["ns/a1"]


def test_weights_one_and_two_converge_to_shares_one_to_two_by_preemption() -> None:
    """Both queues borrow all they use; preemption by share moves the split to 3:6 and stops there."""
    world = _world(_cq("lender", "all", None, cpu="9"), _reclaiming("a", "1"), _reclaiming("b", "2"))
    for i in range(9):
        _pending(world, f"a{i}", "a", "1", second=i)
    world.admit()
    world.admit()
    assert world.usage("a") == 9000
    for i in range(9):
        _pending(world, f"b{i}", "b", "1", second=30 + i)
    for _ in range(20):
        result = world.cycle()
        for r in result.reservations:
            world.engine.confirm(r.workload)
        for p in result.preemptions:
            world.finish(p.victim)  # its pods are gone: the quota comes back
    assert (world.usage("a"), world.usage("b")) == (3000, 6000)


def test_a_queue_not_borrowing_goes_before_a_lower_share_that_borrows() -> None:
    """Kueue's FairSharingPrioritizeNonBorrowing: the entry within its queue's nominal quota first."""
    world = _world(_cq("a", "all", None, cpu="1"), _cq("b", "all", "100", cpu="0"))
    _pending(world, "b1", "b", "1", second=0)
    _pending(world, "a1", "a", "1", second=5)
    assert world.admit() == ["ns/a1"]


def test_equal_shares_fall_back_to_priority_then_age() -> None:
    world = _world(_cq("lender", "all", None, cpu="1"), _cq("a", "all", None, cpu="0"), _cq("b", "all", None, cpu="0"))
    _pending(world, "a1", "a", "1", second=0)
    _pending(world, "b1", "b", "1", second=5, priority=10)
    assert world.admit() == ["ns/b1"]


def test_weighted_shares_for_status() -> None:
    world = _world(_cq("lender", "all", None, cpu="8"), _cq("a", "all", "2", cpu="0"), _cq("z", "all", "0", cpu="0"))
    _pending(world, "a1", "a", "4")
    _pending(world, "z1", "z", "1")
    world.admit()
    queues, cohorts = world.engine.weighted_shares()
    # a borrows 4 of the 8 the cohort could lend it: 500, halved by its weight.
    assert queues["a"] == (250, "all")
    assert queues["z"] == (2**63 - 1, "all")
    assert queues["lender"] == (0, "all")
    assert cohorts == {"all": 0}
