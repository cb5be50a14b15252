"""Several heads per cycle make only the preemptions Kueue's one-head cycles make.

Kueue's scheduler (kueue/pkg/scheduler/scheduler.go, v0.14.8, ``schedule``) takes one head per
ClusterQueue per cycle and nominates all of them against the snapshot taken before any of the
cycle's admissions; an entry that another entry of the same cycle left without room is skipped
("no longer fits"), never turned into a preemption. The engine takes up to
``heads_per_cluster_queue`` heads per queue in rounds, each nominated against the quota the earlier
rounds left. A later round's head that needs evictions is therefore deferred to the next cycle,
where it is its queue's first head (``controller.engine.cycle``; ``docs/design/engine.md``).

These cases failed before that rule: the second head of a queue preempted in the cycle that
admitted the first, reclaiming from another queue the cohort quota that the same cycle had just
lent out.
"""

from __future__ import annotations

from tests.builders import FungibleClusterQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World

# Before the harness clock (epoch second 1,000), so the cycles' reservations are the newer ones.
LONG_AGO = "1970-01-01T00:00:01Z"


def _running(name: str, cluster_queue: str, cpu: str, priority: int = 0) -> dict[str, object]:
    return (PlacementWorkloadBuilder(name, "ns").queue(f"lq-{cluster_queue}").podset(cpu=cpu).priority(priority)
            .reserved(cluster_queue, {"cpu": "default"}, {"cpu": cpu}, at=LONG_AGO).admitted(at=LONG_AGO).obj())


def _pending(name: str, cluster_queue: str, cpu: str, at: int, priority: int = 0) -> dict[str, object]:
    return PlacementWorkloadBuilder(name, "ns").queue(f"lq-{cluster_queue}").podset(cpu=cpu).priority(priority).at(at).obj()


def test_the_second_head_of_a_queue_preempts_in_the_next_cycle_not_in_the_first_ones() -> None:
    # One queue, 10 cpu; "low" (priority 0) runs on 6. Kueue's first cycle has one head, "first"
    # (priority 10), which fits; "second" (priority 5) is its queue's head only in the next cycle,
    # and preempts "low" there.
    world = World(heads=8).flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="10")
                .preemption(within_cluster_queue="LowerPriority").obj())
    world.add(_running("low", "cq", "6"))
    world.add(_pending("first", "cq", "4", at=0, priority=10))
    world.add(_pending("second", "cq", "4", at=1, priority=5))

    first = world.cycle()
    assert [r.workload for r in first.reservations] == ["ns/first"]
    assert first.preemptions == []
    world.engine.confirm("ns/first")

    second = world.cycle()
    assert [(p.preemptor, p.victim, p.reason) for p in second.preemptions] == [("ns/second", "ns/low", "InClusterQueue")]
    assert second.reservations == []


def test_quota_lent_in_a_cycle_is_not_reclaimed_by_a_later_head_of_the_same_cycle() -> None:
    # Two queues of 10 cpu in one cohort, both reclaiming from anyone. "b-big" runs on 12 in cq-b
    # (2 borrowed from cq-a): 8 cpu of the cohort are free. Kueue's cycle nominates "a1" (4, within
    # cq-a's nominal) and "b1" (4, borrowing) against those 8: both fit and are admitted, the
    # non-borrowing one first. "a2" is not a head of that cycle. Before the rule, a second round
    # nominated "a2" after "b1" had taken the last free cpu and evicted the 12-cpu "b-big" at once.
    world = World(heads=8).flavors("default")
    for name in ("cq-a", "cq-b"):
        world.queue(FungibleClusterQueueBuilder(name).cohort("co").flavor("default", cpu="10")
                    .preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any").obj())
    world.add(_running("b-big", "cq-b", "12"))
    world.add(_pending("a1", "cq-a", "4", at=0))
    world.add(_pending("a2", "cq-a", "4", at=1))
    world.add(_pending("b1", "cq-b", "4", at=0))

    first = world.cycle()
    assert [r.workload for r in first.reservations] == ["ns/a1", "ns/b1"]
    assert first.preemptions == []
    for reservation in first.reservations:
        world.engine.confirm(reservation.workload)

    # Next cycle "a2" is cq-a's head and reclaims its nominal quota, as Kueue's next cycle does:
    # from the most recently admitted borrower of the same priority, 4 cpu instead of 12.
    second = world.cycle()
    assert [(p.preemptor, p.victim, p.reason) for p in second.preemptions] == [
        ("ns/a2", "ns/b1", "InCohortReclamation")
    ]
    world.finish("ns/b1")
    assert world.admit() == ["ns/a2"]
