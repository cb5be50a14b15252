"""Preemption: each policy, victim order, minimal sets, reasons, no double eviction."""

from __future__ import annotations

import pytest

from tests.builders import FungibleClusterQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World


def _running(world: World, name: str, cq: str, cpu: str, priority: int, at: int = 0, reserved_at: int = 0) -> None:
    when = f"2026-01-01T01:{reserved_at // 60:02d}:{reserved_at % 60:02d}Z"
    world.add(PlacementWorkloadBuilder(name, "ns").queue(f"lq-{cq}").podset(cpu=cpu).priority(priority).at(at)
              .reserved(cq, {"cpu": "default"}, {"cpu": cpu}, at=when).admitted().obj())


def _world(*queues: FungibleClusterQueueBuilder) -> World:
    world = World().flavors("default")
    for cq in queues:
        world.queue(cq.obj())
    return world


@pytest.mark.parametrize(
    ("name", "policy", "running", "incoming", "victims"),
    [
        ("LowerPriority evicts the lowest priority first", "LowerPriority",
         [("low", "2", 0), ("mid", "2", 5)], ("new", "2", 10), ["ns/low"]),
        ("LowerPriority never evicts equal priority", "LowerPriority",
         [("same", "4", 10)], ("new", "2", 10), []),
        ("Never evicts nothing", "Never", [("low", "4", 0)], ("new", "2", 10), []),
        # Minimal set: greedy takes low1 (1 cpu, not enough) then low2, fill-back returns low1.
        ("fill-back keeps the minimal set", "LowerPriority",
         [("low1", "1", 0), ("low2", "3", 1)], ("new", "3", 10), ["ns/low2"]),
        ("several victims when one is not enough", "LowerPriority",
         [("low1", "2", 0), ("low2", "2", 1)], ("new", "4", 10), ["ns/low1", "ns/low2"]),
    ],
)
def test_within_cluster_queue(name, policy, running, incoming, victims) -> None:
    world = _world(FungibleClusterQueueBuilder("cq").flavor("default", cpu="4").preemption(within_cluster_queue=policy))
    for wl_name, cpu, prio in running:
        _running(world, wl_name, "cq", cpu, prio)
    new_name, cpu, prio = incoming
    world.add(PlacementWorkloadBuilder(new_name, "ns").queue("lq-cq").podset(cpu=cpu).priority(prio).at(30).obj())
    result = world.cycle()
    assert result.reservations == [], name
    assert sorted(p.victim for p in result.preemptions) == victims, name
    assert all(p.reason == "InClusterQueue" for p in result.preemptions)


def test_lower_or_newer_equal_priority() -> None:
    world = _world(FungibleClusterQueueBuilder("cq").flavor("default", cpu="4")
                   .preemption(within_cluster_queue="LowerOrNewerEqualPriority"))
    _running(world, "older", "cq", "2", 10, at=0)
    _running(world, "newer", "cq", "2", 10, at=50)
    world.add(PlacementWorkloadBuilder("new", "ns").queue("lq-cq").podset(cpu="2").priority(10).at(20).obj())
    assert [p.victim for p in world.cycle().preemptions] == ["ns/newer"]


def test_most_recently_reserved_goes_first_among_equals() -> None:
    world = _world(FungibleClusterQueueBuilder("cq").flavor("default", cpu="4").preemption(within_cluster_queue="LowerPriority"))
    _running(world, "early", "cq", "2", 0, reserved_at=1)
    _running(world, "late", "cq", "2", 0, reserved_at=9)
    world.add(PlacementWorkloadBuilder("new", "ns").queue("lq-cq").podset(cpu="2").priority(5).at(30).obj())
    assert [p.victim for p in world.cycle().preemptions] == ["ns/late"]


def _cohort_world(a: FungibleClusterQueueBuilder, b: FungibleClusterQueueBuilder) -> World:
    world = _world(a, b)
    # b holds 6 cpu: its 2 and 4 borrowed from a.
    _running(world, "b-own", "b", "2", 1, reserved_at=1)
    _running(world, "b-borrowed", "b", "4", 1, reserved_at=2)
    return world


@pytest.mark.parametrize(
    ("name", "reclaim", "priority", "victims"),
    [
        ("Any reclaims regardless of priority", "Any", 0, ["ns/b-borrowed"]),
        ("LowerPriority reclaims only from lower priority", "LowerPriority", 5, ["ns/b-borrowed"]),
        ("LowerPriority cannot reclaim from higher priority", "LowerPriority", 0, []),
        ("Never waits for the borrower to finish", "Never", 10, []),
    ],
)
def test_reclaim_within_cohort(name, reclaim, priority, victims) -> None:
    world = _cohort_world(
        FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="4").preemption(reclaim_within_cohort=reclaim),
        FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="2"),
    )
    world.add(PlacementWorkloadBuilder("new", "ns").queue("lq-a").podset(cpu="3").priority(priority).at(30).obj())
    result = world.cycle()
    assert [p.victim for p in result.preemptions] == victims, name
    assert all(p.reason == "InCohortReclamation" for p in result.preemptions)
    if victims:
        p = result.preemptions[0]
        assert p.message.startswith("Preempted to accommodate a workload (UID: uid-ns-new, JobUID: UNKNOWN) due to "
                                    "reclamation within the cohort; preemptor path: /co/a; preemptee path: /co/b")
    else:
        assert result.pending[0].reason == "WaitingForQuota"


def test_no_reclaim_from_a_queue_that_is_not_borrowing() -> None:
    world = _world(FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="2").preemption(reclaim_within_cohort="Any"),
                   FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="4"))
    _running(world, "b-own", "b", "4", 0)
    _running(world, "a-own", "a", "2", 0)
    world.add(PlacementWorkloadBuilder("new", "ns").queue("lq-a").podset(cpu="2").priority(10).obj())
    result = world.cycle()
    assert result.preemptions == []


def _borrow_world(threshold: int | None) -> World:
    a = (FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="2")
         .preemption(reclaim_within_cohort="LowerPriority", borrow_within_cohort="LowerPriority"))
    if threshold is not None:
        a.borrow_threshold(threshold)
    world = _world(a, FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="2"),
                   FungibleClusterQueueBuilder("lender").cohort("co").flavor("default", cpu="2"))
    _running(world, "a-own", "a", "2", 10)
    _running(world, "b-own", "b", "2", 1, reserved_at=1)
    _running(world, "b-borrowed", "b", "2", 1, reserved_at=2)
    return world


@pytest.mark.parametrize(
    ("name", "threshold", "victims"),
    [
        ("borrowWithinCohort reclaims while borrowing", None, ["ns/b-borrowed"]),
        ("maxPriorityThreshold protects higher priorities", 0, []),
        ("maxPriorityThreshold is inclusive", 1, ["ns/b-borrowed"]),
    ],
)
def test_borrow_within_cohort(name, threshold, victims) -> None:
    world = _borrow_world(threshold)
    world.add(PlacementWorkloadBuilder("new", "ns").queue("lq-a").podset(cpu="2").priority(5).at(30).obj())
    result = world.cycle()
    assert [p.victim for p in result.preemptions] == victims, name
    assert all(p.reason == "InCohortReclaimWhileBorrowing" for p in result.preemptions)


def test_without_borrow_within_cohort_a_full_queue_cannot_reclaim_while_borrowing() -> None:
    world = _world(FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="2").preemption(reclaim_within_cohort="Any"),
                   FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="2"),
                   FungibleClusterQueueBuilder("lender").cohort("co").flavor("default", cpu="2"))
    _running(world, "a-own", "a", "2", 10)
    _running(world, "b-own", "b", "2", 1)
    _running(world, "b-borrowed", "b", "2", 1)
    world.add(PlacementWorkloadBuilder("new", "ns").queue("lq-a").podset(cpu="2").priority(5).obj())
    assert world.cycle().preemptions == []


def test_other_queues_before_own_queue() -> None:
    world = _world(FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="4")
                   .preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any"),
                   FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="2"))
    _running(world, "a-low", "a", "1", 0)  # lowest priority, but in the preemptor's own queue
    _running(world, "b-own", "b", "2", 1, reserved_at=1)
    _running(world, "b-borrowed", "b", "3", 1, reserved_at=2)
    world.add(PlacementWorkloadBuilder("new", "ns").queue("lq-a").podset(cpu="1").priority(5).obj())
    assert [p.victim for p in world.cycle().preemptions] == ["ns/b-borrowed"]


def test_preemptor_waits_without_reissuing_and_is_admitted_once_victims_leave() -> None:
    world = _world(FungibleClusterQueueBuilder("cq").flavor("default", cpu="4").preemption(within_cluster_queue="LowerPriority"))
    _running(world, "low", "cq", "4", 0)
    world.add(PlacementWorkloadBuilder("high", "ns").queue("lq-cq").podset(cpu="4").priority(10).obj())
    world.add(PlacementWorkloadBuilder("other", "ns").queue("lq-cq").podset(cpu="1").priority(1).at(5).obj())
    first = world.cycle()
    assert [p.victim for p in first.preemptions] == ["ns/low"]
    assert [(p.workload, p.reason) for p in first.pending] == [("ns/high", "WaitingForPreemptedWorkloads")]
    # Victim not gone yet: no second eviction, no repeated pending write, and the sticky
    # preemptor keeps the head so "other" does not grab the capacity being freed.
    second = world.cycle()
    assert second.preemptions == [] and second.reservations == [] and second.pending == []
    # The victim is evicted and its quota released (admission cleared): the preemptor fits.
    world.finish("ns/low")
    assert world.admit()[0] == "ns/high"


def test_two_preemptors_do_not_share_victims_in_one_cycle() -> None:
    world = _world(FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="2").preemption(reclaim_within_cohort="Any"),
                   FungibleClusterQueueBuilder("c").cohort("co").flavor("default", cpu="2").preemption(reclaim_within_cohort="Any"),
                   FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="0"))
    _running(world, "b-big", "b", "4", 0)
    world.add(PlacementWorkloadBuilder("from-a", "ns").queue("lq-a").podset(cpu="2").priority(5).obj())
    world.add(PlacementWorkloadBuilder("from-c", "ns").queue("lq-c").podset(cpu="2").priority(5).obj())
    result = world.cycle()
    assert [p.victim for p in result.preemptions] == ["ns/b-big"]


def test_failed_eviction_lets_the_victim_be_chosen_again() -> None:
    world = _world(FungibleClusterQueueBuilder("cq").flavor("default", cpu="4").preemption(within_cluster_queue="LowerPriority"))
    _running(world, "low", "cq", "4", 0)
    world.add(PlacementWorkloadBuilder("high", "ns").queue("lq-cq").podset(cpu="4").priority(10).obj())
    assert [p.victim for p in world.cycle().preemptions] == ["ns/low"]
    assert world.cycle().preemptions == []
    world.engine.preemption_failed("ns/low")
    assert [p.victim for p in world.cycle().preemptions] == ["ns/low"]


def test_priority_from_workload_priority_class_when_spec_priority_is_missing() -> None:
    from tests.builders import WorkloadPriorityClassBuilder

    world = _world(FungibleClusterQueueBuilder("cq").flavor("default", cpu="4").preemption(within_cluster_queue="LowerPriority"))
    world.engine.upsert_priority_class(WorkloadPriorityClassBuilder("urgent", 1000).obj())
    _running(world, "low", "cq", "4", 0)
    world.add(PlacementWorkloadBuilder("classy", "ns").queue("lq-cq").podset(cpu="4").priority_class("urgent").obj())
    assert [p.victim for p in world.cycle().preemptions] == ["ns/low"]
    assert world.engine.priority_value("urgent") == 1000


def test_no_eviction_when_an_earlier_entry_of_the_cycle_took_the_room_it_would_free() -> None:
    """b-high needs its own low-priority workload's 2 cpu plus 1 borrowed; a-new, processed first
    (it does not borrow), takes the cohort's spare quota, so evicting b-low would not be enough:
    nothing is evicted and b-high is told it no longer fits (Kueue re-checks before preempting)."""
    world = _world(
        FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="2"),
        FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="2")
        .preemption(within_cluster_queue="LowerPriority", borrow_within_cohort="LowerPriority"),
    )
    _running(world, "b-low", "b", "2", 0)
    world.add(PlacementWorkloadBuilder("a-new", "ns").queue("lq-a").podset(cpu="2").at(10).obj())
    world.add(PlacementWorkloadBuilder("b-high", "ns").queue("lq-b").podset(cpu="3").priority(10).at(5).obj())
    result = world.cycle()
    assert [r.workload for r in result.reservations] == ["ns/a-new"]
    assert result.preemptions == []
    assert {p.workload: p.message for p in result.pending}["ns/b-high"] == (
        "Workload no longer fits after processing another workload"
    )
