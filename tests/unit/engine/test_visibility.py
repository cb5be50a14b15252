"""Pending workloads in scheduling order with positions, parked flag and last reason."""

from __future__ import annotations

from tests.builders import FungibleClusterQueueBuilder, LocalQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World


def test_pending_workloads_in_order_with_positions() -> None:
    world = World().flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="1").obj(), lq="a")
    world.engine.upsert_local_queue(LocalQueueBuilder("b", "ns", "cq").obj())
    world.add(PlacementWorkloadBuilder("running", "ns").queue("a").podset(cpu="1")
              .reserved("cq", {"cpu": "default"}, {"cpu": "1"}).admitted().obj())
    world.add(PlacementWorkloadBuilder("low", "ns").queue("a").podset(cpu="1").priority(0).at(0).obj())
    world.add(PlacementWorkloadBuilder("high", "ns").queue("b").podset(cpu="1").priority(9).at(5).obj())
    world.add(PlacementWorkloadBuilder("mid", "ns").queue("a").podset(cpu="2").priority(5).at(1).obj())
    world.cycle()
    listed = world.engine.pending_workloads("cq")
    assert [(p.workload, p.position_in_cluster_queue, p.local_queue, p.position_in_local_queue) for p in listed] == [
        ("ns/high", 0, "b", 0), ("ns/mid", 1, "a", 0), ("ns/low", 2, "a", 1)]
    assert all(p.parked for p in listed)  # every shape failed once and waits for a requeue
    assert listed[1].reason == "ExceedsMaxQuota"
    page = world.engine.pending_workloads("cq", offset=1, limit=1)
    assert [(p.workload, p.position_in_local_queue) for p in page] == [("ns/mid", 0)]
    assert world.engine.pending_workloads("nope") == []
