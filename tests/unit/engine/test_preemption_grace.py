"""The preemption grace: a workload admitted moments ago is not a victim yet; its preemptor waits
for the grace to end (docs/design/engine.md, "Preemption grace")."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controller.engine import Engine
from pykueue.api.timestamps import format_time
from tests.builders import FungibleClusterQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World

GRACE = 2.0


def _stamp(epoch: float) -> str:
    """A condition time (whole seconds) for the engine-clock moment ``epoch``."""
    return format_time(datetime.fromtimestamp(epoch, UTC))


def _workload(name: str, cq: str, cpu: str, priority: int, at: int = 0) -> dict:
    return PlacementWorkloadBuilder(name, "ns").queue(f"lq-{cq}").podset(cpu=cpu).priority(priority).at(at).obj()


def _cohort(grace: float, fair_sharing: tuple[str, ...] | None = None) -> World:
    """``a`` owns 4 cpu and reclaims from anyone; ``b`` owns 2 and lends nothing to ``a`` yet."""
    world = World(preemption_grace=grace, fair_sharing=fair_sharing).flavors("default")
    world.queue(FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="4")
                .preemption(reclaim_within_cohort="Any").obj())
    world.queue(FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="2").obj())
    return world


def _borrower_admitted(world: World) -> None:
    """``b`` takes all 6 cpu of the cohort, 4 of them ``a``'s, admitted by the engine now."""
    world.add(_workload("b-borrower", "b", "6", 0))
    assert world.admit() == ["ns/b-borrower"]


def test_a_borrower_admitted_moments_ago_is_reclaimed_once_its_grace_ends() -> None:
    world = _cohort(GRACE)
    _borrower_admitted(world)
    admitted_at = world.now
    world.add(_workload("a-owner", "a", "4", 0, at=30))

    waiting = world.cycle(advance=0.5)
    assert waiting.preemptions == [] and waiting.reservations == []
    assert waiting.pending == []  # no "no candidates" reason: it waits for the grace, not for quota
    assert world.engine.next_timer() == admitted_at + GRACE  # the loop wakes for it

    assert world.cycle(advance=1.0).preemptions == []  # 1.5 s after the admission: still in its grace
    reclaimed = world.cycle(advance=0.5)  # 2.0 s
    assert [(p.victim, p.reason) for p in reclaimed.preemptions] == [("ns/b-borrower", "InCohortReclamation")]


def test_the_grace_holds_under_fair_sharing_too() -> None:
    world = _cohort(GRACE, fair_sharing=())
    _borrower_admitted(world)
    world.add(_workload("a-owner", "a", "4", 0, at=30))
    assert world.cycle(advance=0.5).preemptions == []
    result = world.cycle(advance=1.5)
    assert [(p.victim, p.reason) for p in result.preemptions] == [("ns/b-borrower", "InCohortReclamation")]


def test_without_a_grace_the_borrower_is_reclaimed_at_once_as_kueue_does() -> None:
    world = _cohort(0.0)
    _borrower_admitted(world)
    world.add(_workload("a-owner", "a", "4", 0, at=30))
    result = world.cycle(advance=0.5)
    assert [p.victim for p in result.preemptions] == ["ns/b-borrower"]
    assert world.engine.next_timer() is None


def test_a_borrower_that_finishes_within_its_grace_is_never_evicted() -> None:
    world = _cohort(GRACE)
    _borrower_admitted(world)
    world.add(_workload("a-owner", "a", "4", 0, at=30))
    assert world.cycle(advance=0.5).preemptions == []
    world.finish("ns/b-borrower")
    result = world.cycle(advance=0.5)
    assert result.preemptions == []
    assert [r.workload for r in result.reservations] == ["ns/a-owner"]


def test_the_grace_applies_to_preemption_within_a_cluster_queue_too() -> None:
    world = World(preemption_grace=GRACE).flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="4")
                .preemption(within_cluster_queue="LowerPriority").obj())
    world.add(_workload("low", "cq", "4", 0))
    assert world.admit() == ["ns/low"]
    world.add(_workload("high", "cq", "4", 10, at=30))
    assert world.cycle(advance=1.0).preemptions == []
    result = world.cycle(advance=1.0)
    assert [(p.victim, p.reason) for p in result.preemptions] == [("ns/low", "InClusterQueue")]


def test_the_victims_are_the_ones_kueue_chooses_only_later() -> None:
    """Kueue evicts the most recently reserved of equal candidates; the grace does not make it
    take an older one instead (more of whose run would be lost), it waits for the recent one."""
    world = World(preemption_grace=GRACE).flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="4")
                .preemption(within_cluster_queue="LowerPriority").obj())
    world.add(_workload("old", "cq", "2", 0))
    assert world.admit(advance=1.0) == ["ns/old"]
    world.now += 60.0
    world.add(_workload("recent", "cq", "2", 0, at=1))
    assert world.admit(advance=1.0) == ["ns/recent"]
    world.add(_workload("high", "cq", "2", 10, at=30))
    assert world.cycle(advance=0.5).preemptions == []
    result = world.cycle(advance=1.5)
    assert [p.victim for p in result.preemptions] == ["ns/recent"]


def test_a_workload_admitted_long_ago_has_no_grace() -> None:
    world = _cohort(GRACE)
    _borrower_admitted(world)
    world.add(_workload("a-owner", "a", "4", 0, at=30))
    result = world.cycle(advance=GRACE)  # the first look comes exactly when the grace ends
    assert [p.victim for p in result.preemptions] == ["ns/b-borrower"]


def test_a_reservation_time_ahead_of_the_clock_gives_no_grace() -> None:
    """Written by another clock (a former leader's, Kueue's): a grace measured from it could last
    as long as the skew, so there is none."""
    world = _cohort(GRACE)
    ahead = _stamp(world.now + 600)
    world.add(PlacementWorkloadBuilder("b-borrower", "ns").queue("lq-b").podset(cpu="6").priority(0)
              .reserved("b", {"cpu": "default"}, {"cpu": "6"}, at=ahead).admitted().obj())
    world.add(_workload("a-owner", "a", "4", 0, at=30))
    assert [p.victim for p in world.cycle(advance=0.5).preemptions] == ["ns/b-borrower"]


def _three_queues() -> World:
    """``a`` owns 4 cpu, ``b`` and ``c`` 1 each; ``b`` borrows 5 of the 6, admitted now."""
    world = World(preemption_grace=GRACE).flavors("default")
    world.queue(FungibleClusterQueueBuilder("a").cohort("co").flavor("default", cpu="4")
                .preemption(reclaim_within_cohort="Any").obj())
    world.queue(FungibleClusterQueueBuilder("b").cohort("co").flavor("default", cpu="1").obj())
    world.queue(FungibleClusterQueueBuilder("c").cohort("co").flavor("default", cpu="1").obj())
    world.add(_workload("b-big", "b", "4", 0))
    world.add(_workload("b-small", "b", "1", 0, at=1))
    assert sorted(world.admit()) == ["ns/b-big", "ns/b-small"]
    return world


@pytest.mark.parametrize("owner_waits", [True, False])
def test_quota_freed_during_the_grace_is_held_for_the_waiting_owner(owner_waits: bool) -> None:
    world = _three_queues()
    if owner_waits:
        world.add(_workload("a-owner", "a", "4", 0, at=30))
        assert world.cycle(advance=0.5).preemptions == []
    world.finish("ns/b-small")  # 2 cpu of the cohort free now, 1 of them c's own
    world.add(_workload("c-borrower", "c", "2", 0, at=40))
    admitted = [r.workload for r in world.cycle(advance=0.1).reservations]
    # Waiting, ``a`` holds what its queue is owed: ``c`` may not borrow it and start a grace
    # of its own that ``a`` would then wait out too. Nobody waiting: ``c`` borrows it.
    assert admitted == ([] if owner_waits else ["ns/c-borrower"])


def test_a_negative_grace_is_refused() -> None:
    with pytest.raises(ValueError, match="preemption_grace_seconds must not be negative"):
        Engine(preemption_grace_seconds=-1.0)


def test_the_dry_run_names_the_victims_and_says_they_wait_for_their_grace() -> None:
    """The visibility API's explain: the outcome is the cycle's (FitsAfterPreemption, these
    victims), and the suggestion says why nothing is evicted yet; the dry run leaves the loop's
    timer alone."""
    world = _cohort(GRACE)
    _borrower_admitted(world)
    world.add(_workload("a-owner", "a", "4", 0, at=30))
    world.now += 0.5
    result = world.engine.explain("ns/a-owner")
    assert result.outcome == "FitsAfterPreemption" and result.victims_in_grace
    assert result.victims == [("ns/b-borrower", "b", "InCohortReclamation")]
    assert "ns/b-borrower, once their preemption grace ends" in result.suggestion
    assert world.engine.next_timer() is None
    world.now += GRACE
    after = world.engine.explain("ns/a-owner")
    assert after.outcome == "FitsAfterPreemption" and not after.victims_in_grace
    assert "grace" not in after.suggestion


def _borrower_echo(world: World, reserved_at: float, extra_label: str | None = None) -> None:
    """The informer's copy of ``b-borrower`` with the reservation the engine wrote."""
    builder = (PlacementWorkloadBuilder("b-borrower", "ns").queue("lq-b").podset(cpu="6").priority(0)
               .reserved("b", {"cpu": "default"}, {"cpu": "6"}, at=_stamp(reserved_at)).admitted())
    if extra_label:
        builder = builder.label(extra_label, "x")
    world.engine.upsert_workload(builder.obj())


def test_the_grace_counts_from_when_the_reservation_came_back_from_the_api() -> None:
    """At a busy client budget the reservation lands seconds after the engine decided it, and no
    job starts before; counted from the decision, the grace could be over before the job ran."""
    world = _cohort(GRACE)
    _borrower_admitted(world)
    decided_at = world.now
    world.now += 3.0  # the write and its echo took 3 s
    _borrower_echo(world, decided_at)
    echo_at = world.now
    world.add(_workload("a-owner", "a", "4", 0, at=30))

    assert world.cycle(advance=0.5).preemptions == []  # 3.5 s after the decision, 0.5 s after the echo
    assert world.engine.next_timer() == echo_at + GRACE
    _borrower_echo(world, decided_at, extra_label="later-update")  # a later status write: same reservation
    assert world.cycle(advance=1.0).preemptions == []
    reclaimed = world.cycle(advance=0.5)
    assert [p.victim for p in reclaimed.preemptions] == ["ns/b-borrower"]


def test_a_reservation_this_engine_did_not_make_counts_from_its_reservation_time() -> None:
    """Read at start-up or written by a former leader: no echo to wait for, the condition's time."""
    world = _cohort(GRACE)
    reserved_at = world.now - 1.0
    _borrower_echo(world, reserved_at)
    world.add(_workload("a-owner", "a", "4", 0, at=30))
    assert world.cycle(advance=0.5).preemptions == []
    assert world.engine.next_timer() == reserved_at + GRACE
    assert [p.victim for p in world.cycle(advance=0.5).preemptions] == ["ns/b-borrower"]
