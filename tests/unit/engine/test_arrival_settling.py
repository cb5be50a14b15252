"""Arrival settling: a cohort tree's new workloads are queued together once the tree is quiet.

``controller.engine.settling`` and its use by the queue manager. The engine's default is off (every
Kueue case elsewhere is one Kueue cycle over workloads that are all queued); the controller holds a
tree's arrivals until it had none for 0.1 s, at most 1 s (``controller.core.setup``).
"""

from __future__ import annotations

import pytest

from controller.engine.settling import ArrivalSettling
from tests.builders import FungibleClusterQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World

SETTLE = (0.1, 1.0)


def _pending(name: str, cluster_queue: str, cpu: str, priority: int) -> dict[str, object]:
    return PlacementWorkloadBuilder(name, "ns").queue(f"lq-{cluster_queue}").podset(cpu=cpu).priority(priority).at(0).obj()


def _cohort_of_two(settle: tuple[float, float]) -> World:
    """cq-a and cq-b, 10 cpu each, one cohort, both reclaiming from any borrower."""
    world = World(settle=settle).flavors("default")
    for name in ("cq-a", "cq-b"):
        world.queue(FungibleClusterQueueBuilder(name).cohort("c").flavor("default", cpu="10")
                    .preemption(reclaim_within_cohort="Any").obj())
    return world


def _burst(world: World) -> list[list[str]]:
    """cq-b's two 8-cpu workloads, then cq-a's 10-cpu one 10 ms later, a cycle after each
    arrival as the scheduler loop runs them; returns what each cycle reserved."""
    reserved = []
    for name, cq, cpu, priority in (("b-1", "cq-b", "8", 100), ("b-2", "cq-b", "8", 100), ("a-large", "cq-a", "10", 200)):
        world.add(_pending(name, cq, cpu, priority))
        result = world.cycle(0.005)
        reserved.append([r.workload for r in result.reservations])
        assert result.preemptions == []
        for r in result.reservations:
            world.engine.confirm(r.workload)
    return reserved


def test_without_settling_the_first_arrivals_borrow_and_a_later_one_reclaims_from_them() -> None:
    # What the settling is for: b-2 borrows 6 of cq-a's idle cpu, then cq-a's own 10-cpu workload
    # arrives and, under reclaimWithinCohort: Any, evicts b-2 to get its nominal quota back.
    world = _cohort_of_two((0.0, 0.0))
    world.add(_pending("b-1", "cq-b", "8", 100))
    assert [r.workload for r in world.cycle(0.005).reservations] == ["ns/b-1"]
    world.engine.confirm("ns/b-1")
    world.add(_pending("b-2", "cq-b", "8", 100))
    assert [r.workload for r in world.cycle(0.005).reservations] == ["ns/b-2"]
    world.engine.confirm("ns/b-2")
    world.add(_pending("a-large", "cq-a", "10", 200))
    result = world.cycle(0.005)
    assert [(p.preemptor, p.victim, p.reason) for p in result.preemptions] == [
        ("ns/a-large", "ns/b-2", "InCohortReclamation")
    ]


def test_a_burst_is_queued_together_and_ordered_before_anything_is_admitted() -> None:
    world = _cohort_of_two(SETTLE)
    assert _burst(world) == [[], [], []]  # nothing is tried while the cohort still receives arrivals
    assert world.cycle(0.05).reservations == []  # 0.06 s since the last arrival: not quiet yet
    settled = world.cycle(0.05)  # 0.11 s since the last arrival
    # Kueue's entry order over all three: within nominal first (b-1, a-large), then borrowing.
    assert sorted(r.workload for r in settled.reservations) == ["ns/a-large", "ns/b-1"]
    assert settled.preemptions == []
    assert world.usage("cq-a") == 10_000 and world.usage("cq-b") == 8_000


def test_a_steady_stream_is_released_at_most_max_seconds_after_its_first_arrival() -> None:
    world = World(settle=SETTLE, heads=32).flavors("default")  # room to admit a window in one cycle
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="100").obj())
    started = world.now
    admitted_at = {}
    for i in range(30):  # one new workload every 0.05 s, never 0.1 s quiet
        world.add(_pending(f"w{i}", "cq", "1", 0))
        for r in world.cycle(0.05).reservations:
            admitted_at[r.workload] = round(world.now - started, 2)
    # w0 is stamped by the cycle after it (0.05 s); the window closes 1 s after that stamp, with
    # every arrival stamped by then (w20 arrived at 1.0 s and is stamped by the closing cycle).
    assert {admitted_at[f"ns/w{i}"] for i in range(21)} == {1.05}
    assert "ns/w21" not in admitted_at  # the next window is still open


def test_trees_settle_apart_and_workloads_already_queued_are_not_held() -> None:
    world = World(settle=SETTLE).flavors("default")
    for name, cohort in (("cq-1", "one"), ("cq-2", "two")):
        world.queue(FungibleClusterQueueBuilder(name).cohort(cohort).flavor("default", cpu="10").obj())
    with world.engine.initial_load():  # a cache handed over at start-up is not an arrival
        world.add(_pending("old", "cq-1", "1", 0))
    world.add(_pending("new-1", "cq-1", "1", 0))
    assert [r.workload for r in world.cycle(0.01).reservations] == ["ns/old"]
    world.cycle(0.06)
    world.add(_pending("new-2", "cq-2", "1", 0))  # another tree: its own window
    assert [r.workload for r in world.cycle(0.05).reservations] == ["ns/new-1"]  # 0.11 s quiet
    assert world.cycle(0.06).reservations == []  # new-2 stamped 0.06 s ago
    assert [r.workload for r in world.cycle(0.05).reservations] == ["ns/new-2"]


def test_a_held_arrival_counts_as_pending_is_listed_and_can_be_deleted_or_updated() -> None:
    world = World(settle=SETTLE).flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="10").obj())
    world.add(_pending("a", "cq", "1", 0))
    world.add(_pending("b", "cq", "1", 0))
    world.cycle(0.01)
    engine = world.engine
    assert engine.pending_count("cq") == 2
    assert [p.workload for p in engine.pending_workloads("cq")] == ["ns/a", "ns/b"]
    assert engine.next_timer() == pytest.approx(world.now + 0.1)

    world.finish("ns/a")  # deleted while held: gone from the window
    updated = _pending("b", "cq", "1", 5)  # an update: decided like any queued workload, at once
    world.add(updated)
    assert [r.workload for r in world.cycle(0.01).reservations] == ["ns/b"]
    assert engine.pending_count("cq") == 0
    assert engine.next_timer() is None


def test_the_window_arithmetic() -> None:
    settling = ArrivalSettling(0.1, 1.0)
    assert settling.next_due(5.0) is None
    settling.hold("ns/a", "t1")
    assert settling.next_due(5.0) == 5.0  # not stamped yet: due at the next cycle
    assert settling.release(10.0) == []
    assert settling.next_due(10.0) == pytest.approx(10.1)
    settling.hold("ns/b", "t1")
    settling.hold("ns/c", "t2")
    assert settling.release(10.05) == []
    assert settling.release(10.149) == []
    assert settling.release(10.15) == ["ns/a", "ns/b", "ns/c"]  # both trees quiet for 0.1 s
    assert len(settling) == 0 and settling.next_due(11.0) is None
    settling.hold("ns/d", "t1")
    settling.drop("ns/d")
    assert settling.next_due(12.0) is None
    with pytest.raises(ValueError, match="quiet_seconds <= max_seconds"):
        ArrivalSettling(1.0, 0.5)
    assert not ArrivalSettling(0.0, 0.0).enabled
