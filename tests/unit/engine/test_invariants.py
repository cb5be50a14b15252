"""Randomised runs: whatever happens, no quota is over-committed and nothing is admitted twice."""

from __future__ import annotations

import random

import pytest

from controller.engine import quota
from tests.builders import CohortBuilder, FungibleClusterQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World

FR = ("default", "cpu")


def _world(rng: random.Random) -> World:
    world = World(heads=rng.choice([1, 3, 8]), batch=rng.choice([0.0, 1.0])).flavors("default", "spot")
    world.engine.upsert_cohort(CohortBuilder("left").parent("root").obj())
    world.engine.upsert_cohort(CohortBuilder("right").parent("root").flavor("default", cpu="2").obj())
    for i in range(5):
        cq = FungibleClusterQueueBuilder(f"cq{i}").cohort(rng.choice(["left", "right", "root"]))
        limits = {}
        if rng.random() < 0.5:
            limits["borrowing_limit"] = {"cpu": str(rng.randint(0, 4))}
        if rng.random() < 0.5:
            limits["lending_limit"] = {"cpu": str(rng.randint(0, 3))}
        cq.flavor("default", cpu=str(rng.randint(0, 4)), **limits)
        cq.flavor("spot", cpu=str(rng.randint(0, 2)))
        cq.preemption(
            within_cluster_queue=rng.choice(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]),
            reclaim_within_cohort=rng.choice(["Never", "LowerPriority", "Any"]),
        )
        if rng.random() < 0.3:
            cq.strategy("StrictFIFO")
        world.queue(cq.obj())
    return world


def _check_invariants(world: World, admitted_once: dict[str, str]) -> None:
    engine = world.engine
    for name, node in engine.forest.cluster_queues.items():
        held = sum(w.admission.usage.get(fr, 0) for w in engine.admitted[name].values()
                   for fr in [FR] if w.admission is not None)
        assert node.usage.get(FR, 0) == held, name
        # The borrowing index used by preemption matches the usage.
        expected = {fr for fr, used in node.usage.items() if used > node.nominal(fr)}
        assert node.borrowing == expected, name
        assert (node in node.tree_borrowers) == bool(expected), name
        # Every queue is within what it could ever get, and the whole tree within its quota.
        for fr in (FR, ("spot", "cpu")):
            assert node.usage.get(fr, 0) <= quota.potential_available(node, fr), (name, fr)
    for node in engine.forest.cohorts.values():
        if node.parent is None:
            for fr in (FR, ("spot", "cpu")):
                assert node.usage.get(fr, 0) <= node.subtree.get(fr, 0)


@pytest.mark.parametrize("seed", range(25))
def test_random_operations_keep_invariants(seed: int) -> None:
    rng = random.Random(seed)
    world = _world(rng)
    holding: dict[str, str] = {}  # key -> uid holding quota
    counter = 0
    for _step in range(80):
        action = rng.random()
        if action < 0.45:
            counter += 1
            cq = f"cq{rng.randrange(5)}"
            world.add(PlacementWorkloadBuilder(f"w{counter}", "ns").queue(f"lq-{cq}").podset(cpu=rng.choice(["500m", "1", "2", "3"]))
                      .priority(rng.choice([0, 5, 10])).at(counter % 3600).obj())
        elif action < 0.6 and holding:
            key = rng.choice(sorted(holding))
            world.finish(key)
            holding.pop(key)
        else:
            result = world.cycle(advance=rng.choice([0.1, 0.5, 1.5]))
            for reservation in result.reservations:
                assert reservation.workload not in holding, "admitted twice"
                holding[reservation.workload] = reservation.uid
                if rng.random() < 0.15:
                    world.engine.rollback(reservation.workload)
                    holding.pop(reservation.workload)
                else:
                    world.engine.confirm(reservation.workload)
            for preemption in result.preemptions:
                # The eviction completes: the victim goes back to pending without quota.
                assert preemption.victim in holding or preemption.victim not in world.engine.workloads
                if preemption.victim in holding:
                    obj = PlacementWorkloadBuilder(preemption.victim.split("/")[1], "ns").obj()
                    info = world.engine.workloads[preemption.victim]
                    obj["spec"]["queueName"] = info.queue_name
                    obj["spec"]["podSets"] = [{"name": "main", "count": 1, "template": {"spec": {"containers": [
                        {"name": "c", "resources": {"requests": {"cpu": f"{info.podsets[0].requests['cpu']}m"}}}]}}}]
                    obj["spec"]["priority"] = info.priority
                    world.add(obj)
                    holding.pop(preemption.victim)
        _check_invariants(world, holding)
