"""Admission fair sharing among the LocalQueues of a ClusterQueue, Kueue v0.19.2's cases re-expressed.

Each test names its source in Kueue: ``TestScheduleForAFS`` (pkg/scheduler/scheduler_afs_test.go,
half-life 10 s, sampling 1 s, one ClusterQueue of 8 cpu with ``UsageBasedAdmissionFairSharing``,
LocalQueues lq-a, lq-b, lq-c of weight 1 and lq-zero of weight 0, one head per cycle and one
cycle per workload), ``TestUpdateAfsConsumedUsage`` / ``TestRepeatedAfsSettlementFoldsPenaltyOnce``
/ ``TestDeleteSubtractsPendingAfsEntryPenalty`` (pkg/controller/core/workload_controller_test.go,
half-life = sampling = 5 min, so an entry penalty is half the request),
``TestPenaltyBookkeepingIsIdempotentAndExact`` / ``TestSubPenaltyDoesNotCreateEntry`` /
``TestPushPenaltySeedsLastUpdateOnlyWhenCreating`` (pkg/cache/queue/afs/). Kueue's initial usage
(``SetForTest``) is given here the way a restarted leader gets it: the LocalQueue's persisted
``status.fairSharing.admissionFairSharingStatus``. The time is the harness's fake clock.

Not re-expressed: TestScheduleForAFS's two "LocalQueue was deleted" cases, which delete the
LocalQueue from the API client only (to exercise Kueue's weight lookup falling back to 1) while
its queue manager still holds it; pykueue reads the weight from the LocalQueue it was fed, and a
LocalQueue deleted from the engine takes its pending workloads out of the queue, as Kueue's queue
manager does on a real deletion.
"""

from __future__ import annotations

import math

import pytest

from controller.engine.afs import AfsLedger, alpha, decayed, usage_value
from pykueue.api.config import AdmissionFairSharing
from tests.builders import ClusterQueueBuilder, LocalQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World

SCHEDULER_AFS = AdmissionFairSharing(usage_half_life_time=10.0, usage_sampling_interval=1.0)


def afs_world(consumed: dict[str, str], *, afs: AdmissionFairSharing | None = SCHEDULER_AFS, heads: int = 1,
              mode: str = "UsageBasedAdmissionFairSharing") -> World:
    world = World(heads=heads, admission_fair_sharing=afs)
    world.flavors("default")
    world.engine.upsert_cluster_queue(
        ClusterQueueBuilder("cq1").flavor("default", cpu="8", memory="8Gi").admission_mode(mode).obj()
    )
    for lq, weight in (("lq-a", "1"), ("lq-b", "1"), ("lq-c", "1"), ("lq-zero", "0")):
        builder = LocalQueueBuilder(lq, "default", "cq1").weight(weight)
        if lq in consumed:
            builder.consumed(cpu=consumed[lq])
        world.engine.upsert_local_queue(builder.obj())
    return world


def wl(world: World, name: str, lq: str, cpu: str, second: int = 0) -> None:
    world.add(PlacementWorkloadBuilder(name, "default").queue(lq).at(second).podset("one", cpu=cpu).obj())


def admitted_after_one_cycle_per_workload(world: World, count: int) -> set[str]:
    admitted: set[str] = set()
    for _ in range(count):
        admitted |= {key.split("/")[1] for key in world.admit()}
    return admitted


# --- TestScheduleForAFS --------------------------------------------------------------------------


def test_admits_workload_from_less_active_localqueue() -> None:
    """"admits workload from less active localqueue": lq-a used 8, lq-b 2; wl-a1 is older, wl-b1 wins."""
    world = afs_world({"lq-a": "8", "lq-b": "2"})
    wl(world, "wl-a1", "lq-a", "8", 0)
    wl(world, "wl-b1", "lq-b", "8", 1)
    assert admitted_after_one_cycle_per_workload(world, 2) == {"wl-b1"}


def test_does_not_prioritize_a_zero_weight_localqueue() -> None:
    """"does not prioritize a zero-weight localqueue": both idle; weight 0 sorts last, not first."""
    world = afs_world({"lq-a": "0", "lq-zero": "0"})
    wl(world, "wl-z1", "lq-zero", "8", 0)
    wl(world, "wl-a1", "lq-a", "8", 1)
    assert admitted_after_one_cycle_per_workload(world, 2) == {"wl-a1"}


def test_without_afs_classic_admission_decision_ignores_queue_usage() -> None:
    """"without AFS: classic admission decision ignores queue usage": the older wl-a1 wins."""
    world = afs_world({"lq-a": "8", "lq-b": "2"}, afs=None)
    wl(world, "wl-a1", "lq-a", "8", 0)
    wl(world, "wl-b1", "lq-b", "8", 1)
    assert admitted_after_one_cycle_per_workload(world, 2) == {"wl-a1"}


def test_admits_one_workload_from_each_localqueue_when_quota_is_limited() -> None:
    """"admits one workload from each localqueue when quota is limited": equal usage 4 and 4; wl-a1
    (oldest) first, then its entry penalty puts lq-a behind lq-b, so wl-b1 gets the other 4 cpu."""
    world = afs_world({"lq-a": "4", "lq-b": "4"})
    wl(world, "wl-a1", "lq-a", "4", 0)
    wl(world, "wl-a2", "lq-a", "4", 1)
    wl(world, "wl-b1", "lq-b", "4", 2)
    wl(world, "wl-b2", "lq-b", "4", 3)
    assert admitted_after_one_cycle_per_workload(world, 4) == {"wl-a1", "wl-b1"}


def test_admits_one_workload_from_each_localqueue_in_one_cycle_of_several_heads() -> None:
    """The same case with pykueue's several heads per cycle: the penalty of the first head is
    already charged when the cycle picks the second."""
    world = afs_world({"lq-a": "4", "lq-b": "4"}, heads=8)
    wl(world, "wl-a1", "lq-a", "4", 0)
    wl(world, "wl-a2", "lq-a", "4", 1)
    wl(world, "wl-b1", "lq-b", "4", 2)
    wl(world, "wl-b2", "lq-b", "4", 3)
    assert {key.split("/")[1] for key in world.admit()} == {"wl-a1", "wl-b1"}


def test_schedules_normally_when_queues_have_equal_usage() -> None:
    """"schedules normally when queues have equal usage": 4 + 3 + 1 cpu fit 8, all admitted."""
    world = afs_world({"lq-a": "2", "lq-b": "2", "lq-c": "2"})
    wl(world, "wl-a1", "lq-a", "4")
    wl(world, "wl-b1", "lq-b", "3")
    wl(world, "wl-c1", "lq-c", "1")
    assert admitted_after_one_cycle_per_workload(world, 3) == {"wl-a1", "wl-b1", "wl-c1"}


def test_admits_workload_from_lq_b_with_uninitialized_cache() -> None:
    """"admits workload from lq-b with uninitialized cache": lq-b has no history, counts as 0."""
    world = afs_world({"lq-a": "8"})
    wl(world, "wl-a1", "lq-a", "8", 0)
    wl(world, "wl-b1", "lq-b", "8", 1)
    assert admitted_after_one_cycle_per_workload(world, 2) == {"wl-b1"}


def test_a_cluster_queue_without_the_admission_mode_keeps_its_usual_order() -> None:
    """``TestShouldApplyEntryPenalty`` "skips for a ClusterQueue without usage-based admission
    mode": the section on, the queue's mode NoAdmissionFairSharing: no usage order, no penalty."""
    world = afs_world({"lq-a": "8", "lq-b": "2"}, mode="NoAdmissionFairSharing")
    wl(world, "wl-a1", "lq-a", "8", 0)
    wl(world, "wl-b1", "lq-b", "8", 1)
    assert admitted_after_one_cycle_per_workload(world, 2) == {"wl-a1"}
    afs = world.engine.afs
    assert afs is not None and not afs.has_penalty("default/lq-a", "default/wl-a1")


def test_switching_the_admission_mode_refiles_the_pending_workloads() -> None:
    world = afs_world({"lq-a": "8", "lq-b": "2"}, mode="NoAdmissionFairSharing")
    wl(world, "wl-a1", "lq-a", "8", 0)
    wl(world, "wl-b1", "lq-b", "8", 1)
    world.engine.upsert_cluster_queue(
        ClusterQueueBuilder("cq1").flavor("default", cpu="8", memory="8Gi").admission_mode().obj()
    )
    assert admitted_after_one_cycle_per_workload(world, 2) == {"wl-b1"}


def test_a_weight_change_reorders_at_the_next_head() -> None:
    """lq-a used 8 and lq-b 2, but lq-a's weight 8 makes its usage 1 (below lq-b's 2)."""
    world = afs_world({"lq-a": "8", "lq-b": "2"})
    world.engine.upsert_local_queue(LocalQueueBuilder("lq-a", "default", "cq1").weight("8").obj())
    wl(world, "wl-a1", "lq-a", "8", 1)
    wl(world, "wl-b1", "lq-b", "8", 0)
    assert admitted_after_one_cycle_per_workload(world, 2) == {"wl-a1"}


def test_priority_orders_only_within_equal_usage() -> None:
    """Usage first, priority second (Kueue's queueOrderingFunc): a higher-priority workload of the
    busier LocalQueue waits for the idle one's."""
    world = afs_world({"lq-a": "8", "lq-b": "2"})
    world.add(PlacementWorkloadBuilder("wl-a1", "default").queue("lq-a").priority(100).podset("one", cpu="8").obj())
    wl(world, "wl-b1", "lq-b", "8", 1)
    assert admitted_after_one_cycle_per_workload(world, 2) == {"wl-b1"}


# --- the entry penalty's lifecycle (workload_controller_test.go, pkg/cache/queue/afs/) -------------

FIVE_MINUTES = AdmissionFairSharing(usage_half_life_time=300.0, usage_sampling_interval=300.0)


def _lq_with_checks(world: World) -> None:
    """A ClusterQueue whose reservations wait for an admission check, so that the time between
    the penalty (reservation) and its settlement (Admitted) is the test's to choose."""
    world.engine.upsert_admission_check({
        "metadata": {"name": "check"}, "spec": {"controllerName": "test"},
        "status": {"conditions": [{"type": "Active", "status": "True"}]},
    })
    world.engine.upsert_cluster_queue(
        ClusterQueueBuilder("cq").flavor("default", cpu="8").admission_mode().admission_checks("check").obj()
    )


def _five_minute_world(consumed: str | None = None) -> World:
    world = World(heads=1, admission_fair_sharing=FIVE_MINUTES)
    world.flavors("default")
    _lq_with_checks(world)
    builder = LocalQueueBuilder("lq", "ns", "cq")
    if consumed is not None:
        builder.consumed(cpu=consumed)
    world.engine.upsert_local_queue(builder.obj())
    return world


def _reserve(world: World, name: str = "wl", cpu: str = "4") -> PlacementWorkloadBuilder:
    builder = PlacementWorkloadBuilder(name, "ns").queue("lq").podset(cpu=cpu)
    world.add(builder.obj())
    assert world.admit(advance=0) == [f"ns/{name}"]
    return builder.reserved("cq", {"cpu": "default"}, {"cpu": cpu})


def _consumed_cpu(world: World, lq: str = "ns/lq") -> float:
    afs = world.engine.afs
    assert afs is not None
    entry = afs.entry(lq)
    assert entry is not None
    return entry.consumed.get("cpu", 0.0)


def test_penalty_is_half_the_request_when_half_life_equals_sampling() -> None:
    """Reserved, not yet Admitted: the 4 cpu workload costs its LocalQueue a 2 cpu penalty."""
    world = _five_minute_world()
    _reserve(world)
    afs = world.engine.afs
    assert afs is not None
    assert afs.has_penalty("ns/lq", "ns/wl")
    assert afs.usage("ns/lq") == pytest.approx(2.0)
    assert _consumed_cpu(world) == 0.0


def test_creates_a_penalty_only_entry_and_settles_it_on_admitted() -> None:
    """TestUpdateAfsConsumedUsage "creates a penalty-only entry on a cache miss": settled at once
    (no time elapsed), consumed is exactly the 2 cpu penalty."""
    world = _five_minute_world()
    builder = _reserve(world)
    world.add(builder.check("check", "Ready").admitted().obj())
    assert _consumed_cpu(world) == pytest.approx(2.0)
    afs = world.engine.afs
    assert afs is not None and not afs.has_penalty("ns/lq", "ns/wl")
    assert afs.usage("ns/lq") == pytest.approx(2.0)


def test_folds_into_an_existing_entry() -> None:
    """TestUpdateAfsConsumedUsage "folds into an existing entry ...": 8 persisted + 2 = 10."""
    world = _five_minute_world(consumed="8")
    builder = _reserve(world)
    world.add(builder.check("check", "Ready").admitted().obj())
    assert _consumed_cpu(world) == pytest.approx(10.0)


def test_repeated_settlement_folds_the_penalty_once() -> None:
    """TestRepeatedAfsSettlementFoldsPenaltyOnce: the same Admitted object seen again folds nothing."""
    world = _five_minute_world(consumed="8")
    admitted = _reserve(world).check("check", "Ready").admitted().obj()
    world.add(admitted)
    world.add(admitted)
    assert _consumed_cpu(world) == pytest.approx(10.0)


def test_settlement_decays_with_the_admitted_usage_over_the_elapsed_time() -> None:
    """Settled one half-life after the entry's last update: 8 * 1/2 + 4 admitted * 1/2 + 2 = 8."""
    world = _five_minute_world(consumed="8")
    builder = _reserve(world)
    world.now += 300.0
    world.add(builder.check("check", "Ready").admitted().obj())
    assert _consumed_cpu(world) == pytest.approx(8.0)


def test_delete_subtracts_the_pending_penalty() -> None:
    """TestDeleteSubtractsPendingAfsEntryPenalty: deleted before Admitted, nothing is folded."""
    world = _five_minute_world()
    _reserve(world)
    world.finish("ns/wl")
    afs = world.engine.afs
    assert afs is not None
    assert not afs.has_penalty("ns/lq", "ns/wl")
    assert afs.usage("ns/lq") == 0.0
    assert _consumed_cpu(world) == 0.0


def test_a_failed_reservation_write_drops_the_penalty() -> None:
    """Kueue subtracts the penalty when the admission patch fails (``updateEntryPenalty`` subtract)."""
    world = _five_minute_world()
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq").podset(cpu="4").obj())
    result = world.cycle(advance=0)
    assert [r.workload for r in result.reservations] == ["ns/wl"]
    world.engine.rollback("ns/wl")
    afs = world.engine.afs
    assert afs is not None and afs.usage("ns/lq") == 0.0


def test_penalty_bookkeeping_is_idempotent_and_exact() -> None:
    """TestPenaltyBookkeepingIsIdempotentAndExact: a re-push replaces, a drop removes exactly that
    workload's record, a drop without a record is a no-op."""
    ledger = AfsLedger(300.0, 300.0)
    ledger.push_penalty("ns/lq", "ns/a", {("f", "cpu"): 4000}, now=0.0)
    ledger.push_penalty("ns/lq", "ns/a", {("f", "cpu"): 4000}, now=0.0)
    ledger.push_penalty("ns/lq", "ns/b", {("f", "cpu"): 2000}, now=0.0)
    assert ledger.usage("ns/lq") == pytest.approx(3.0)
    assert ledger.drop_penalty("ns/lq", "ns/a")
    assert not ledger.drop_penalty("ns/lq", "ns/a")
    assert ledger.usage("ns/lq") == pytest.approx(1.0)


def test_sub_penalty_does_not_create_an_entry() -> None:
    """TestSubPenaltyDoesNotCreateEntry."""
    ledger = AfsLedger(300.0, 300.0)
    assert not ledger.drop_penalty("ns/gone", "ns/wl")
    assert ledger.entry("ns/gone") is None


def test_push_penalty_seeds_last_update_only_when_creating() -> None:
    """TestPushPenaltySeedsLastUpdateOnlyWhenCreating."""
    ledger = AfsLedger(300.0, 300.0)
    ledger.push_penalty("ns/lq", "ns/a", {("f", "cpu"): 1000}, now=10.0)
    ledger.push_penalty("ns/lq", "ns/b", {("f", "cpu"): 1000}, now=20.0)
    entry = ledger.entry("ns/lq")
    assert entry is not None and entry.last_update == 10.0


# --- sampling and decay ------------------------------------------------------------------------


def test_sampling_decays_towards_the_admitted_usage_every_interval() -> None:
    """Kueue's LocalQueue reconciler: every usageSamplingInterval, consumed moves towards what the
    LocalQueue has admitted; after one half-life half the way."""
    afs = AdmissionFairSharing(usage_half_life_time=60.0, usage_sampling_interval=10.0)
    world = World(heads=1, admission_fair_sharing=afs)
    world.flavors("default")
    world.engine.upsert_cluster_queue(ClusterQueueBuilder("cq").flavor("default", cpu="8").admission_mode().obj())
    world.engine.upsert_local_queue(LocalQueueBuilder("lq", "ns", "cq").obj())
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq").podset(cpu="4").obj())
    assert world.admit(advance=0) == ["ns/wl"]
    # The reservation came back Admitted (no checks): settled at once, consumed = the 4 cpu penalty
    # times alpha(10 s, 60 s).
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq").podset(cpu="4")
              .reserved("cq", {"cpu": "default"}, {"cpu": "4"}).admitted().obj())
    penalty = 4 * alpha(10.0, 60.0)
    assert _consumed_cpu(world) == pytest.approx(penalty)
    engine_afs = world.engine.afs
    assert engine_afs is not None
    assert world.engine.next_timer() == pytest.approx(world.now + 10.0)
    sampled = world.cycle(advance=10.0).afs_sampled
    assert sampled == ["ns/lq"]
    expected = decayed({"cpu": penalty}, {"cpu": 4.0}, 10.0, 60.0)["cpu"]
    assert _consumed_cpu(world) == pytest.approx(expected)
    assert world.cycle(advance=5.0).afs_sampled == []  # not due yet
    for _ in range(60):
        world.cycle(advance=10.0)
    assert _consumed_cpu(world) == pytest.approx(4.0, rel=1e-3)  # converged on what it holds
    published = engine_afs.published()["ns/lq"]
    assert published.consumed["cpu"] == pytest.approx(_consumed_cpu(world))
    assert published.last_update == world.now
    # Finished: nothing admitted any more; one half-life later half is left.
    world.finish("ns/wl")
    before = _consumed_cpu(world)
    for _ in range(6):
        world.cycle(advance=10.0)
    assert _consumed_cpu(world) == pytest.approx(before / 2)


def test_a_half_life_of_zero_forgets_at_every_sample() -> None:
    """Kueue resets consumed usage when usageHalfLifeTime is 0 (and charges no penalty: alpha 0)."""
    ledger = AfsLedger(0.0, 10.0)
    ledger.track("ns/lq", "cq", 1.0, now=0.0, seed={"cpu": 5.0})
    ledger.push_penalty("ns/lq", "ns/wl", {("f", "cpu"): 4000}, now=0.0)
    assert ledger.usage("ns/lq") == pytest.approx(5.0)
    ledger.sample("ns/lq", now=10.0)
    assert ledger.usage("ns/lq") == 0.0


# --- the formulas --------------------------------------------------------------------------------


def test_usage_weights_resources_and_divides_by_the_local_queue_weight() -> None:
    """Kueue's CalculateUsage: unlisted resources weigh 1; weight 0 gives +inf, never NaN."""
    assert usage_value({"cpu": 2.0, "memory": 10.0}, {"cpu": 1.0}, 2.0, {"memory": 0.5}) == pytest.approx(4.0)
    assert usage_value({}, {}, 0.0, {}) == math.inf
    assert usage_value({"cpu": 1.0}, {}, 0.0, {}) == math.inf


def test_alpha_is_the_decay_of_one_half_life() -> None:
    assert alpha(60.0, 60.0) == pytest.approx(0.5)
    assert alpha(120.0, 60.0) == pytest.approx(0.75)
    assert alpha(10.0, 0.0) == 0.0


def test_resource_weights_of_the_configuration_apply_to_ordering() -> None:
    """resourceWeights: cpu weighed 0 makes lq-a's 8 cpu of history count for nothing, and the
    older wl-a1 goes first again."""
    afs = AdmissionFairSharing(usage_half_life_time=10.0, usage_sampling_interval=1.0, resource_weights={"cpu": 0.0})
    world = afs_world({"lq-a": "8", "lq-b": "2"}, afs=afs)
    wl(world, "wl-a1", "lq-a", "8", 0)
    wl(world, "wl-b1", "lq-b", "8", 1)
    assert admitted_after_one_cycle_per_workload(world, 2) == {"wl-a1"}


# --- preemption (Kueue's CandidatesOrdering) ------------------------------------------------------


def _preemption_world(afs: AdmissionFairSharing | None) -> World:
    world = World(heads=1, admission_fair_sharing=afs)
    world.flavors("default")
    world.engine.upsert_cluster_queue(
        ClusterQueueBuilder("cq").flavor("default", cpu="2").admission_mode().preemption("LowerPriority").obj()
    )
    for lq, consumed in (("lq-a", "8"), ("lq-b", "1"), ("lq-c", "0")):
        world.engine.upsert_local_queue(LocalQueueBuilder(lq, "ns", "cq").consumed(cpu=consumed).obj())
    # Both hold 1 cpu at the same priority; lq-b's was reserved later (the usual first victim).
    for name, lq, at in (("old-a", "lq-a", "2026-01-01T00:00:01Z"), ("new-b", "lq-b", "2026-01-01T00:00:05Z")):
        world.add(PlacementWorkloadBuilder(name, "ns").queue(lq).podset(cpu="1")
                  .reserved("cq", {"cpu": "default"}, {"cpu": "1"}, at=at).admitted(at=at).obj())
    world.add(PlacementWorkloadBuilder("urgent", "ns").queue("lq-c").priority(10).podset(cpu="1").obj())
    return world


def test_own_queue_victims_of_the_most_used_local_queue_go_first() -> None:
    """CandidatesOrdering criterion 2 (pkg/scheduler/preemption/common/ordering.go): between
    candidates of the same ClusterQueue and different LocalQueues, the higher LocalQueue usage is
    preempted first, before priority and reservation time."""
    world = _preemption_world(SCHEDULER_AFS)
    assert [p.victim for p in world.cycle().preemptions] == ["ns/old-a"]


def test_without_afs_the_most_recently_reserved_victim_goes_first() -> None:
    world = _preemption_world(None)
    assert [p.victim for p in world.cycle().preemptions] == ["ns/new-b"]


def test_pending_positions_follow_local_queue_usage() -> None:
    """The visibility API's order for such a ClusterQueue is the scheduler's: Kueue sorts its
    Snapshot by LocalQueue usage first (``buildSnapshotSort``), then the usual order."""
    world = afs_world({"lq-a": "8", "lq-b": "2", "lq-c": "4"})
    wl(world, "wl-a1", "lq-a", "1", 0)
    world.add(PlacementWorkloadBuilder("wl-a2", "default").queue("lq-a").priority(100).at(1).podset("one", cpu="1").obj())
    wl(world, "wl-c1", "lq-c", "1", 2)
    wl(world, "wl-b1", "lq-b", "1", 3)
    order = [p.workload.split("/")[1] for p in world.engine.pending_workloads("cq1")]
    assert order == ["wl-b1", "wl-c1", "wl-a2", "wl-a1"]
    snap = world.engine.pending_snapshot("cq1")
    assert snap is not None and snap.local_queue_usage is not None
