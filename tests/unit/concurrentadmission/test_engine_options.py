"""The engine's side of concurrent admission: parents, preference order, migration, checks."""

from __future__ import annotations

from typing import Any

from tests.builders import PlacementWorkloadBuilder, SeedClusterQueueBuilder
from tests.unit.concurrentadmission.helpers import config_of, evicted, option, parent, reserved
from tests.unit.engine.harness import World

Obj = dict[str, Any]


def _world(cq: Obj) -> World:
    world = World(batch=0.0).flavors("reservation", "on-demand", "spot", "default-cpu")
    world.queue(cq)
    return world


def _queue(
    policy: str = "RemoveLower",
    *,
    free: tuple[str, str, str] = ("4", "4", "4"),
    target: str | None = None,
    preemption: bool = False,
) -> Obj:
    builder = (
        SeedClusterQueueBuilder("cq")
        .flavor("reservation", cpu=free[0])
        .flavor("on-demand", cpu=free[1])
        .flavor("spot", cpu=free[2])
        .concurrent(policy, target=target)
    )
    if preemption:
        builder.preemption(within_cluster_queue="LowerPriority")
    return builder.obj()


def _options(world: World, cq: Obj, p: Obj, *suffixes: str) -> dict[str, Obj]:
    config = config_of(cq)
    made = {}
    for suffix in suffixes:
        made[suffix] = world.add(option(p, config, suffix))
    return made


def _blocker(world: World, flavor: str, cpu: str, name: str = "blocker", priority: int = 0) -> Obj:
    return world.add(
        PlacementWorkloadBuilder(name, "ns")
        .queue("lq-cq")
        .podset(cpu=cpu)
        .priority(priority)
        .reserved("cq", {"cpu": flavor}, {"cpu": cpu})
        .admitted()
        .obj()
    )


def test_parents_and_not_yet_converted_workloads_are_never_scheduled() -> None:
    cq = _queue()
    world = _world(cq)
    world.add(parent(queue="lq-cq"))
    pending = parent("plain", queue="lq-cq")
    del pending["spec"]["workloadMode"]  # a job's workload before the controller marks it
    world.add(pending)
    result = world.cycle()
    assert result.reservations == [] and result.pending == []
    assert "ns/job-a-12345" not in world.engine.workloads


def test_the_most_preferred_option_that_fits_wins_and_siblings_wait() -> None:
    cq = _queue()
    world = _world(cq)
    p = parent(queue="lq-cq")
    _options(world, cq, p, "spot", "on-demand", "reservation")  # created in any order
    result = world.cycle()
    assert [r.workload for r in result.reservations] == ["ns/job-a-12345-option-reservation"]
    # A later cycle does not admit a less preferred sibling while one holds quota.
    assert world.cycle().reservations == []


def test_a_less_preferred_option_starts_when_the_preferred_flavor_is_full() -> None:
    cq = _queue()
    world = _world(cq)
    _blocker(world, "reservation", "4")
    _blocker(world, "on-demand", "4", name="blocker2")
    _options(world, cq, parent(queue="lq-cq"), "reservation", "on-demand", "spot")
    assert world.admit() == ["ns/job-a-12345-option-spot"]


def _running_on_spot(
    policy: str = "RemoveLower", target: str | None = None
) -> tuple[World, Obj, dict[str, Obj]]:
    cq = _queue(policy, target=target)
    world = _world(cq)
    _blocker(world, "reservation", "4")
    _blocker(world, "on-demand", "4", name="blocker2")
    p = parent(queue="lq-cq")
    options = _options(world, cq, p, "reservation", "on-demand", "spot")
    assert world.admit() == ["ns/job-a-12345-option-spot"]
    options["spot"] = world.add(reserved(options["spot"], "spot"))  # the admission write comes back
    return world, p, options


def _migration_evictions(result: Any) -> list[tuple[str, str]]:
    return [(e.workload, e.reason) for e in result.evictions]


def test_migration_evicts_the_winner_and_reserves_only_once_its_quota_is_back() -> None:
    """Migration after admission: the winner is evicted (FlavorMigration) instead of reserving; its
    quota stays until its pods are gone (the reservation is released by the Job integration), and
    only then does the preferred option reserve. Quota is never held twice."""
    world, _, options = _running_on_spot()
    world.finish("ns/blocker2")  # on-demand frees up
    result = world.cycle()
    assert result.reservations == []
    assert _migration_evictions(result) == [("ns/job-a-12345-option-spot", "FlavorMigration")]
    assert world.usage("cq", "spot") == 2000 and world.usage("cq", "on-demand") == 0
    # Emitted once, not again on every cycle while the write is under way.
    assert _migration_evictions(world.cycle(advance=5)) == []
    # The eviction is written: the winner is evicted and still holds quota (pods going away).
    world.add(evicted(options["spot"], "FlavorMigration", "migrating"))
    assert world.cycle(advance=5).reservations == []
    reason = world.engine.last_pending_reason("ns/job-a-12345-option-on-demand")
    assert reason is not None and "to give its quota back" in reason[1]
    # The pods are gone and the quota is released: on-demand reserves.
    released = option(parent(queue="lq-cq"), config_of(_queue()), "spot")
    released["status"] = {"conditions": evicted(released, "FlavorMigration", "migrating")["status"]["conditions"]}
    world.add(released)
    assert world.admit(advance=5) == ["ns/job-a-12345-option-on-demand"]
    assert world.usage("cq", "spot") == 0 and world.usage("cq", "on-demand") == 2000


def test_remove_other_never_migrates() -> None:
    world, _, _ = _running_on_spot("RemoveOther")
    world.finish("ns/blocker2")
    world.finish("ns/blocker")
    result = world.cycle()
    assert result.reservations == [] and result.evictions == []
    assert world.usage("cq", "spot") == 2000


def test_remove_below_target_migrates_only_to_the_target() -> None:
    world, _, _ = _running_on_spot("RemoveBelowTarget", target="reservation")
    world.finish("ns/blocker2")
    result = world.cycle()
    assert result.reservations == [] and result.evictions == []  # on-demand is below the target
    world.finish("ns/blocker")
    assert _migration_evictions(world.cycle()) == [("ns/job-a-12345-option-spot", "FlavorMigration")]


def test_migration_counts_the_siblings_own_usage_of_a_shared_flavor_as_free() -> None:
    cq = (
        SeedClusterQueueBuilder("cq")
        .flavor("reservation", **{"nvidia.com/gpu": "1"})
        .flavor("on-demand", **{"nvidia.com/gpu": "1"})
        .flavor("default-cpu", cpu="2")
        .concurrent("RemoveLower")
        .option("res", "reservation", "default-cpu")
        .option("od", "on-demand", "default-cpu")
        .obj()
    )
    world = _world(cq)
    gpu_blocker = (
        PlacementWorkloadBuilder("gpu-blocker", "ns").queue("lq-cq").podset(**{"nvidia.com/gpu": "1"})
    )
    world.add(
        gpu_blocker.reserved("cq", {"nvidia.com/gpu": "reservation"}, {"nvidia.com/gpu": "1"})
        .admitted()
        .obj()
    )
    p = parent(queue="lq-cq")
    p["spec"]["podSets"] = [
        {
            "name": "gpu",
            "count": 1,
            "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}
            },
        },
        {
            "name": "cpu",
            "count": 1,
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}},
        },
    ]
    config = config_of(cq)
    res, od = world.add(option(p, config, "res")), world.add(option(p, config, "od"))
    (first,) = world.cycle().reservations
    assert first.workload == "ns/job-a-12345-option-od"
    assert {a["name"]: a["flavors"] for a in first.admission["podSetAssignments"]} == {
        "gpu": {"nvidia.com/gpu": "on-demand"},
        "cpu": {"cpu": "default-cpu"},
    }
    world.engine.confirm(first.workload)
    od["status"] = {"admission": first.admission, "conditions": reserved(od, "x")["status"]["conditions"]}
    world.add(od)
    world.finish("ns/gpu-blocker")
    # default-cpu is full (2 of 2, held by the sibling) yet the migration fits: the sibling is
    # evicted for it.
    assert _migration_evictions(world.cycle()) == [("ns/job-a-12345-option-od", "FlavorMigration")]
    assert world.usage("cq", "default-cpu") == 2000
    assert res["metadata"]["name"] == "job-a-12345-option-res"


def _checked_queue_world() -> tuple[World, Obj]:
    cq = _queue()
    cq["spec"]["admissionChecksStrategy"] = {
        "admissionChecks": [
            {"name": "check-res", "onFlavors": ["reservation"]},
            {"name": "check-spot", "onFlavors": ["spot"]},
        ]
    }
    world = _world(cq)
    for name in ("check-res", "check-spot"):
        world.engine.upsert_admission_check(
            {
                "metadata": {"name": name},
                "spec": {"controllerName": "test"},
                "status": {"conditions": [{"type": "Active", "status": "True"}]},
            }
        )
    return world, cq


def test_options_reserve_first_and_race_the_checks_of_their_assigned_flavors() -> None:
    """Two-phase admission: every option reserves (none waits for a check), each reservation
    carries only the checks of its own assigned flavor, and none is admitted yet."""
    world, cq = _checked_queue_world()
    p = parent(queue="lq-cq")
    _options(world, cq, p, "reservation", "spot")
    reserved_now: dict[str, tuple[str, ...]] = {}
    for _ in range(3):
        for r in world.cycle().reservations:
            reserved_now[r.workload] = r.admission_checks
    assert reserved_now == {
        "ns/job-a-12345-option-reservation": ("check-res",),
        "ns/job-a-12345-option-spot": ("check-spot",),
    }
    for key in reserved_now:
        admission = world.engine.workloads[key].admission
        assert admission is not None and not admission.admitted


def test_once_a_sibling_is_admitted_a_less_preferred_option_waits() -> None:
    world, cq = _checked_queue_world()
    p = parent(queue="lq-cq")
    options = _options(world, cq, p, "reservation", "on-demand", "spot")
    world.add(reserved(options["spot"], "spot", admitted=False))  # still checking
    world.add(reserved(options["reservation"], "reservation", admitted=True))  # won the race
    for _ in range(2):
        assert world.cycle().reservations == []
    reason = world.engine.last_pending_reason("ns/job-a-12345-option-on-demand")
    assert reason is not None and "option job-a-12345-option-reservation" in reason[1]


def test_only_one_option_of_a_parent_preempts_at_a_time() -> None:
    cq = _queue(preemption=True)
    world = _world(cq)
    for flavor in ("reservation", "on-demand", "spot"):
        _blocker(world, flavor, "4", name=f"low-{flavor}", priority=-10)
    p = parent(queue="lq-cq")
    _options(world, cq, p, "reservation", "on-demand", "spot")
    first = world.cycle()
    assert [pr.victim for pr in first.preemptions] == ["ns/low-reservation"]
    # The queue's sticky head already serialises one queue; lose it (an update of the preemptor
    # re-files it) and park the preemptor, so a sibling reaches the head while the victim is
    # still on its way out: it must not issue preemptions of its own.
    queue = world.engine.queues["cq"]
    preemptor = world.engine.workloads["ns/job-a-12345-option-reservation"]
    queue.sticky = None
    queue.park_shape_of(preemptor)
    for _ in range(3):
        result = world.cycle()
        assert result.preemptions == []
    reason = world.engine.last_pending_reason("ns/job-a-12345-option-on-demand")
    assert "another option of the same parent is preempting" in reason[1]


def test_malformed_option_metadata_never_crashes_the_engine() -> None:
    from controller.engine.options import parse_mode

    is_parent, info = parse_mode(
        {
            "namespace": "ns",
            "annotations": {"kueue.x-k8s.io/option-preference": "first"},
            "ownerReferences": "x",
        },
        {"workloadMode": {"type": "ResourceFlavorOption"}},
    )
    assert not is_parent and info is not None and info.rank == 0 and not info.migration_target
    assert parse_mode({"labels": {"kueue.x-k8s.io/concurrent-admission-parent": "true"}}, {}) == (True, None)
    assert parse_mode({}, {"workloadMode": "Parent"}) == (False, None)
    cq = _queue()
    world = _world(cq)
    orphan = option(parent(queue="lq-cq"), config_of(cq), "spot")
    orphan["metadata"]["ownerReferences"] = []
    orphan["metadata"]["annotations"]["kueue.x-k8s.io/option-preference"] = "-3"
    world.add(orphan)
    assert [r.workload for r in world.cycle().reservations] == ["ns/job-a-12345-option-spot"]


def test_a_restarted_engine_rebuilds_the_holders_from_the_objects_alone() -> None:
    cq = _queue("RemoveLower")
    world = _world(cq)  # a fresh engine, as after a controller restart or a leader change
    p = parent(queue="lq-cq")
    config = config_of(cq)
    world.add(option(p, config, "reservation"))
    world.add(reserved(option(p, config, "spot"), "spot"))
    assert world.usage("cq", "spot") == 2000
    result = world.cycle()
    assert result.reservations == []
    assert _migration_evictions(result) == [("ns/job-a-12345-option-spot", "FlavorMigration")]
    assert world.usage("cq", "spot") == 2000  # until its pods are gone


def test_siblings_are_options_of_the_same_parent_object_not_of_the_same_name() -> None:
    """A parent deleted and re-created under the same name: an option of the old one that still
    holds quota (the garbage collector has not taken it yet) does not block the new one's."""
    cq = _queue("RemoveOther")
    world = _world(cq)
    old = parent(queue="lq-cq")
    old["metadata"]["uid"] = "uid-old-parent"
    (spot,) = _options(world, cq, old, "spot").values()
    world.add(reserved(spot, "spot"))
    new = parent(queue="lq-cq")
    new["metadata"]["uid"] = "uid-new-parent"
    _options(world, cq, new, "reservation")
    assert [r.workload for r in world.cycle().reservations] == ["ns/job-a-12345-option-reservation"]


def test_preference_is_compared_before_timestamps_among_siblings() -> None:
    """A re-created (or delayed) option is younger than its siblings; it shares the parent's queue
    timestamp, so it still comes before a less preferred sibling."""
    cq = _queue("RemoveOther", free=("2", "2", "2"))
    world = _world(cq)
    p = parent(queue="lq-cq")
    options = _options(world, cq, p, "reservation", "spot")
    recreated = options["reservation"]
    recreated["metadata"]["creationTimestamp"] = "2026-01-01T00:10:00Z"  # ten minutes later
    world.add(recreated)
    assert world.admit()[0] == "ns/job-a-12345-option-reservation"
    info = world.engine.workloads["ns/job-a-12345-option-spot"]
    assert info.queue_ts == world.engine.workloads["ns/job-a-12345-option-reservation"].queue_ts


def _gated(obj: Obj, when: str) -> Obj:
    obj["metadata"]["annotations"]["kueue.x-k8s.io/option-preemption-gate"] = when
    return obj


def test_the_preemption_gate_recorded_in_the_api_holds_siblings_back_across_a_restart() -> None:
    """A fresh engine (a restart, a new leader) knows nothing of evictions in flight; the gate that
    the spot option recorded when it preempted still keeps its siblings from preempting, even the
    more preferred ones, until it lapses."""
    cq = _queue(preemption=True)
    world = _world(cq)
    for flavor in ("reservation", "on-demand", "spot"):
        _blocker(world, flavor, "4", name=f"low-{flavor}", priority=-10)
    p = parent(queue="lq-cq")
    config = config_of(cq)
    world.add(option(p, config, "reservation"))
    world.add(option(p, config, "on-demand"))
    world.add(_gated(option(p, config, "spot"), "1970-01-01T00:16:30Z"))  # 10 s before the harness clock
    # The gate holder is its queue's third head: only a cycle's first round preempts
    # (controller.engine.cycle), so it preempts in the next cycle, once its blocked siblings are parked.
    victims = [pr.victim for pr in world.cycle().preemptions] + [pr.victim for pr in world.cycle().preemptions]
    assert victims == ["ns/low-spot"], victims  # only the gate holder may preempt
    reason = world.engine.last_pending_reason("ns/job-a-12345-option-reservation")
    assert reason is not None and "another option of the same parent is preempting" in reason[1]


def test_a_lapsed_preemption_gate_lets_a_sibling_preempt() -> None:
    cq = _queue(preemption=True)
    world = _world(cq)
    for flavor in ("reservation", "on-demand", "spot"):
        _blocker(world, flavor, "4", name=f"low-{flavor}", priority=-10)
    p = parent(queue="lq-cq")
    config = config_of(cq)
    world.add(_gated(option(p, config, "spot"), "1970-01-01T00:01:00Z"))  # long ago
    world.add(option(p, config, "reservation"))
    assert [pr.victim for pr in world.cycle().preemptions] == ["ns/low-reservation"]


def test_a_migration_preempts_a_lower_priority_workload_then_evicts_the_winner() -> None:
    """The reservation is held by a lower-priority workload: the preferred option preempts it
    (never its own sibling), and once the victim is gone the winner is evicted to migrate."""
    cq = _queue("RemoveLower", free=("2", "0", "2"), preemption=True)
    world = _world(cq)
    _blocker(world, "reservation", "2", name="low", priority=-10)
    p = parent(queue="lq-cq")
    config = config_of(cq)
    world.add(reserved(option(p, config, "spot"), "spot"))  # the job runs on spot
    world.add(option(p, config, "reservation"))
    result = world.cycle()
    assert [(pr.victim, pr.preemptor) for pr in result.preemptions] == [
        ("ns/low", "ns/job-a-12345-option-reservation")
    ]
    assert result.evictions == [] and result.reservations == []
    world.finish("ns/low")  # the victim's quota is back
    result = world.cycle(advance=5)
    assert _migration_evictions(result) == [("ns/job-a-12345-option-spot", "FlavorMigration")]


def _pending_low(world: World, cq: Obj) -> Obj:
    """A lower-priority job of the same queue: its reservation option, pending."""
    other = parent("job-b-67890", queue="lq-cq")
    other["metadata"]["uid"] = "uid-job-b"
    other["spec"]["priority"] = -10
    return world.add(option(other, config_of(cq), "reservation"))


def test_a_preempting_migration_keeps_the_quota_its_victims_free() -> None:
    """Once the victim is gone, the reservation quota it freed is the migrating option's: a
    lower-priority workload that is pending meanwhile does not take it, neither in the cycle
    that evicts the winner nor while the winner's pods go away; the option reserves it once the
    winner's quota is back."""
    cq = _queue("RemoveLower", free=("2", "0", "2"), preemption=True)
    world = _world(cq)
    _blocker(world, "reservation", "2", name="low", priority=-10)
    p = parent(queue="lq-cq")
    config = config_of(cq)
    spot = world.add(reserved(option(p, config, "spot"), "spot"))  # the job runs on spot
    world.add(option(p, config, "reservation"))
    assert [pr.victim for pr in world.cycle().preemptions] == ["ns/low"]
    _pending_low(world, cq)  # a lower-priority job waits for the same quota
    world.finish("ns/low")  # the victim's quota is back
    result = world.cycle(advance=5)
    assert _migration_evictions(result) == [("ns/job-a-12345-option-spot", "FlavorMigration")]
    assert result.reservations == [], "the freed quota is kept for the migrating option"
    # The eviction's echo: the winner's pods are going away; the quota is still kept.
    spot = world.add(evicted(spot, "FlavorMigration", "migrating"))
    for _ in range(3):
        result = world.cycle(advance=5)
        assert result.reservations == [] and result.preemptions == []
    assert world.usage("cq", "reservation") == 0
    # The winner's quota is released (its pods are gone): the option reserves the reservation.
    released = dict(spot)
    released["status"] = {}
    world.add(released)
    assert world.admit(advance=5) == ["ns/job-a-12345-option-reservation"]


def test_a_migrated_option_waits_while_its_target_checks_then_returns_when_they_reject() -> None:
    """After the migration eviction the target reserves and its check runs: the option the job
    left must not reserve meanwhile (it would be admitted at once and race the target's check);
    once the target's check rejects it, the job may come back on the option it left."""
    cq = _queue()
    cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "check-res", "onFlavors": ["reservation"]}]}
    world = _world(cq)
    world.engine.upsert_admission_check(
        {
            "metadata": {"name": "check-res"},
            "spec": {"controllerName": "test"},
            "status": {"conditions": [{"type": "Active", "status": "True"}]},
        }
    )
    p = parent(queue="lq-cq")
    config = config_of(cq)
    target = world.add(option(p, config, "reservation"))
    left = option(p, config, "spot")
    left["status"] = {"conditions": evicted(left, "FlavorMigration", "migrating")["status"]["conditions"]}
    world.add(left)  # evicted by the migration, its quota back
    assert world.admit() == ["ns/job-a-12345-option-reservation"]
    target = world.add(reserved(target, "reservation", admitted=False))  # its check is pending
    for _ in range(3):
        assert world.cycle(advance=5).reservations == []
    reason = world.engine.last_pending_reason("ns/job-a-12345-option-spot")
    assert reason is not None and "goes first" in reason[1]
    # Its check is rejected: it is deactivated and its reservation released.
    off = option(p, config, "reservation")
    off["spec"]["active"] = False
    world.add(off)
    assert world.admit(advance=5) == ["ns/job-a-12345-option-spot"]
