"""Pending workloads in scheduling order with positions, parked flag and last reason."""

from __future__ import annotations

from controller.engine import visibility
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


def _two_namespaces_world() -> World:
    world = World().flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="0").obj(), lq="lq", namespace="a")
    world.engine.upsert_local_queue(LocalQueueBuilder("lq", "b", "cq").obj())  # same name, other namespace
    world.add(PlacementWorkloadBuilder("a1", "a").queue("lq").podset(cpu="1").at(0).obj())
    world.add(PlacementWorkloadBuilder("b1", "b").queue("lq").podset(cpu="1").at(1).obj())
    world.add(PlacementWorkloadBuilder("a2", "a").queue("lq").podset(cpu="1").at(2).obj())
    world.add(PlacementWorkloadBuilder("b2", "b").queue("lq").podset(cpu="1").priority(3).at(3).obj())
    return world


def test_snapshot_pages_like_kueue_cluster_and_local_queue_views() -> None:
    world = _two_namespaces_world()
    world.cycle()
    snap = world.engine.pending_snapshot("cq")
    assert snap is not None and len(snap) == 4
    order = visibility.ordered(snap)
    assert [i.key for i in order] == ["b/b2", "a/a1", "b/b1", "a/a2"]
    # LocalQueues named alike in two namespaces are two queues: positions count separately.
    cq_view = visibility.cluster_queue_page(snap, order)
    assert [(p.workload, p.position_in_cluster_queue, p.position_in_local_queue) for p in cq_view] == [
        ("b/b2", 0, 0), ("a/a1", 1, 0), ("b/b1", 2, 1), ("a/a2", 3, 1)]
    assert [p.workload for p in visibility.cluster_queue_page(snap, order, offset=1, limit=2)] == ["a/a1", "b/b1"]
    # The LocalQueue view pages within the LocalQueue and keeps the ClusterQueue position.
    lq_view = visibility.local_queue_page(snap, order, "a/lq")
    assert [(p.workload, p.position_in_cluster_queue, p.position_in_local_queue) for p in lq_view] == [
        ("a/a1", 1, 0), ("a/a2", 3, 1)]
    assert [p.workload for p in visibility.local_queue_page(snap, order, "a/lq", offset=1, limit=5)] == ["a/a2"]
    assert visibility.local_queue_page(snap, order, "a/lq", limit=1)[0].workload == "a/a1"
    assert cq_view[0].reason == "ExceedsMaxQuota"  # the head's last reason travels with the snapshot
    assert world.engine.pending_snapshot("nope") is None
    assert world.engine.cluster_queue_of("b", "lq") == "cq" and world.engine.cluster_queue_of("c", "lq") is None


def test_snapshot_is_a_copy_the_engine_may_change_after() -> None:
    world = _two_namespaces_world()
    snap = world.engine.pending_snapshot("cq")
    assert snap is not None
    world.finish("a/a1")
    world.add(PlacementWorkloadBuilder("late", "a").queue("lq").podset(cpu="1").at(9).obj())
    assert [i.key for i in visibility.ordered(snap)] == ["b/b2", "a/a1", "b/b1", "a/a2"]
    fresh = world.engine.pending_snapshot("cq")
    assert fresh is not None and [i.key for i in visibility.ordered(fresh)][-1] == "a/late"
    assert "a/a1" not in {i.key for i in visibility.ordered(fresh)}


def test_ordering_in_passes_equals_sorting_by_the_order_key() -> None:
    world = World().flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="0").obj(), lq="lq")
    with world.engine.initial_load():  # arrival 0 for all: equal timestamps fall back to the UID
        for i in range(60):
            world.add(PlacementWorkloadBuilder(f"w{i}", "ns").queue("lq").podset(cpu=str(1 + i % 2))
                      .priority((i * 7) % 5).at(i % 4).obj())
    for i in range(60, 80):
        world.add(PlacementWorkloadBuilder(f"w{i}", "ns").queue("lq").podset(cpu="1").priority(i % 3).at(2).obj())
    world.cycle()
    snap = world.engine.pending_snapshot("cq")
    assert snap is not None
    by_key = sorted((entry[2] for entry in snap.entries), key=lambda info: info.order_key)
    assert [i.key for i in visibility.ordered(snap)] == [i.key for i in by_key]
