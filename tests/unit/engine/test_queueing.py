"""Queue manager: ordering, StrictFIFO vs BestEffortFIFO, requeue triggers, backoff, selectors, stop."""

from __future__ import annotations

import pytest

from controller.engine import Engine
from tests.builders import (
    AdmissionCheckBuilder,
    FungibleClusterQueueBuilder,
    LocalQueueBuilder,
    PlacementWorkloadBuilder,
    ResourceFlavorBuilder,
)
from tests.unit.engine.harness import World


def _one_queue(cq: FungibleClusterQueueBuilder | None = None, **kw) -> World:
    world = World(**kw).flavors("default")
    world.queue((cq or FungibleClusterQueueBuilder("cq").flavor("default", cpu="1")).obj())
    return world


def test_priority_then_timestamp_order() -> None:
    world = _one_queue(heads=1)
    world.add(PlacementWorkloadBuilder("old-low", "ns").queue("lq-cq").podset(cpu="1").priority(0).at(0).obj())
    world.add(PlacementWorkloadBuilder("new-high", "ns").queue("lq-cq").podset(cpu="1").priority(5).at(10).obj())
    world.add(PlacementWorkloadBuilder("old-high", "ns").queue("lq-cq").podset(cpu="1").priority(5).at(5).obj())
    order = []
    for _ in range(3):
        (key,) = world.admit()
        order.append(key)
        world.finish(key)
    assert order == ["ns/old-high", "ns/new-high", "ns/old-low"]


@pytest.mark.parametrize(("strategy", "admitted"), [("StrictFIFO", []), ("BestEffortFIFO", ["ns/small"])])
def test_blocked_head(strategy: str, admitted: list[str]) -> None:
    world = _one_queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="4").strategy(strategy))
    world.add(PlacementWorkloadBuilder("running", "ns").queue("lq-cq").podset(cpu="2")
              .reserved("cq", {"cpu": "default"}, {"cpu": "2"}).admitted().obj())
    world.add(PlacementWorkloadBuilder("big", "ns").queue("lq-cq").podset(cpu="3").priority(10).at(0).obj())
    world.add(PlacementWorkloadBuilder("small", "ns").queue("lq-cq").podset(cpu="1").priority(0).at(5).obj())
    result = world.cycle()
    assert [r.workload for r in result.reservations] == admitted
    assert [p.workload for p in result.pending] == ["ns/big"]
    # StrictFIFO keeps blocking on every cycle; the head is still the head.
    assert [r.workload for r in world.cycle().reservations] == []
    world.finish("ns/running")
    assert world.admit()[0] == "ns/big"


def test_best_effort_parks_the_whole_shape_class() -> None:
    world = _one_queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="2"))
    for i in range(50):
        world.add(PlacementWorkloadBuilder(f"big-{i}", "ns").queue("lq-cq").podset(cpu="3").at(i).obj())
    world.add(PlacementWorkloadBuilder("small", "ns").queue("lq-cq").podset(cpu="1").at(99).obj())
    result = world.cycle()
    # One head of the big class fails; the other 49 are parked with it, not tried one by one.
    assert [r.workload for r in result.reservations] == ["ns/small"]
    assert result.heads_tried == 2
    assert world.cycle().heads_tried == 0
    assert world.engine.pending_count("cq") == 50


def test_requeue_after_quota_is_freed_is_batched() -> None:
    world = _one_queue(batch=1.0)
    world.add(PlacementWorkloadBuilder("first", "ns").queue("lq-cq").podset(cpu="1").at(0).obj())
    world.add(PlacementWorkloadBuilder("second", "ns").queue("lq-cq").podset(cpu="1").at(1).obj())
    assert world.admit() == ["ns/first"]
    world.finish("ns/first")
    # Quota is free, but the parked class comes back only after the batch period.
    assert world.admit(advance=0.1) == []
    assert world.admit(advance=0.5) == []
    assert world.admit(advance=0.6) == ["ns/second"]


@pytest.mark.parametrize(
    "trigger",
    ["quota increase", "flavor created", "admission check activated", "lender joins cohort"],
)
def test_requeue_triggers(trigger: str) -> None:
    world = World(batch=0.0).flavors("default")
    cq = FungibleClusterQueueBuilder("cq").cohort("co").flavor("default", cpu="1")
    if trigger == "flavor created":
        cq = FungibleClusterQueueBuilder("cq").cohort("co").flavor("default", cpu="1").flavor("spot", cpu="4")
    if trigger == "admission check activated":
        cq.admission_checks("check")
        world.engine.upsert_admission_check(AdmissionCheckBuilder("check").active(False).obj())
    world.queue(cq.obj())
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="3").obj())
    assert world.admit() == []
    if trigger == "quota increase":
        world.engine.upsert_cluster_queue(FungibleClusterQueueBuilder("cq").cohort("co").flavor("default", cpu="3").obj())
    elif trigger == "flavor created":
        world.engine.upsert_resource_flavor(ResourceFlavorBuilder("spot").obj())
    elif trigger == "admission check activated":
        world.engine.upsert_cluster_queue(
            FungibleClusterQueueBuilder("cq").cohort("co").flavor("default", cpu="3").admission_checks("check").obj()
        )
        assert world.admit() == []  # still inactive: the check is not Active
        world.engine.upsert_admission_check(AdmissionCheckBuilder("check").active(True).obj())
    else:
        world.queue(FungibleClusterQueueBuilder("lender").cohort("co").flavor("default", cpu="2").obj())
    assert world.admit() == ["ns/wl"]


def test_backoff_until_requeue_at() -> None:
    world = _one_queue()
    world.now = 1767225600.0  # 2026-01-01T00:00:00Z
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").requeue_state(1, "2026-01-01T00:01:00Z").obj())
    assert world.admit(advance=30) == []
    assert world.admit(advance=31) == ["ns/wl"]


def test_requeued_false_holds_until_the_object_changes() -> None:
    world = _one_queue()
    wl = PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").condition("Requeued", False, "PodsReadyTimeout")
    world.add(wl.obj())
    assert world.admit() == []
    world.add(wl.condition("Requeued", True, "BackoffFinished").obj())
    assert world.admit() == ["ns/wl"]


def test_namespace_selector() -> None:
    world = World().flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="1")
                .namespace_selector({"matchLabels": {"team": "a"}}).obj())
    world.engine.set_namespace("ns", {"team": "b"})
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").obj())
    result = world.cycle()
    assert result.reservations == []
    assert [(p.reason, p.message) for p in result.pending] == [
        ("Inadmissible", "Workload namespace doesn't match ClusterQueue selector")]
    world.engine.set_namespace("ns", {"team": "a"})
    assert world.admit() == ["ns/wl"]


def test_nil_namespace_selector_matches_nothing() -> None:
    world = World().flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="1").namespace_selector(None).obj())
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").obj())
    assert world.admit() == []


def test_missing_local_queue_then_created() -> None:
    world = _one_queue()
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("nope").podset(cpu="1").obj())
    result = world.cycle()
    assert [(p.reason, p.message) for p in result.pending] == [("Misconfigured", "LocalQueue nope doesn't exist")]
    world.engine.upsert_local_queue(LocalQueueBuilder("nope", "ns", "cq").obj())
    assert world.admit() == ["ns/wl"]


def test_pending_reason_written_only_when_it_changes() -> None:
    world = _one_queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="2"))
    world.add(PlacementWorkloadBuilder("running", "ns").queue("lq-cq").podset(cpu="2")
              .reserved("cq", {"cpu": "default"}, {"cpu": "2"}).admitted().obj())
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").obj())
    assert len(world.cycle().pending) == 1
    # A status-only update of the ClusterQueue changes nothing: no requeue, no attempt.
    with_status = FungibleClusterQueueBuilder("cq").flavor("default", cpu="2").obj()
    with_status["status"] = {"pendingWorkloads": 1}
    world.engine.upsert_cluster_queue(with_status)
    assert world.cycle().heads_tried == 0
    # A spec change requeues; the workload is tried again, fails the same way: no new write.
    world.engine.upsert_cluster_queue(
        FungibleClusterQueueBuilder("cq").flavor("default", cpu="2").preemption(within_cluster_queue="LowerPriority").obj()
    )
    retried = world.cycle()
    assert retried.heads_tried == 1
    assert retried.pending == []
    # The reason the object already carries counts as written.
    world2 = _one_queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="0"))
    msg = "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default, " \
          "previously considered podsets requests (0) + current podset request (1) > maximum capacity (0)"
    world2.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1")
               .condition("QuotaReserved", False, "ExceedsMaxQuota", msg).obj())
    assert world2.cycle().pending == []


def test_stop_policy_hold_and_drain() -> None:
    world = _one_queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="2"))
    world.add(PlacementWorkloadBuilder("running", "ns").queue("lq-cq").podset(cpu="1")
              .reserved("cq", {"cpu": "default"}, {"cpu": "1"}).admitted().obj())
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").obj())
    world.engine.upsert_cluster_queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="2").stop_policy("Hold").obj())
    result = world.cycle()
    assert result.reservations == [] and result.evictions == []
    assert world.engine.inactive["cq"][0] == "Stopped"
    assert [(p.reason, p.message) for p in result.pending] == [("Suspended", "ClusterQueue cq is stopped")]

    world.engine.upsert_cluster_queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="2").stop_policy("HoldAndDrain").obj())
    result = world.cycle()
    assert [(e.workload, e.reason) for e in result.evictions] == [("ns/running", "ClusterQueueStopped")]
    assert world.cycle().evictions == []  # emitted once

    world.engine.upsert_cluster_queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="2").obj())
    assert world.admit() == ["ns/wl"]


def test_local_queue_stop_policy() -> None:
    world = _one_queue()
    world.engine.upsert_local_queue(LocalQueueBuilder("lq-cq", "ns", "cq").stop_policy("Hold").obj())
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").obj())
    result = world.cycle()
    assert [(p.reason, p.message) for p in result.pending] == [("Suspended", "LocalQueue lq-cq is stopped")]
    assert world.engine.pending_in_local_queue("ns/lq-cq") == 1
    world.engine.upsert_local_queue(LocalQueueBuilder("lq-cq", "ns", "cq").obj())
    assert world.admit() == ["ns/wl"]


@pytest.mark.parametrize(("heads", "per_cycle"), [(1, 1), (3, 3), (8, 5)])
def test_heads_per_cluster_queue(heads: int, per_cycle: int) -> None:
    world = _one_queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="5"), heads=heads)
    for i in range(10):
        world.add(PlacementWorkloadBuilder(f"w{i}", "ns").queue("lq-cq").podset(cpu="1").at(i).obj())
    assert len(world.admit()) == per_cycle


@pytest.mark.parametrize(
    ("setup", "reason", "message"),
    [
        ("missing flavor", "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s): gone."),
        ("missing check", "AdmissionCheckNotFound",
         "Can't admit new workloads: references missing AdmissionCheck(s): ac."),
        ("inactive check", "AdmissionCheckInactive",
         "Can't admit new workloads: references inactive AdmissionCheck(s): ac."),
    ],
)
def test_inactive_cluster_queue(setup: str, reason: str, message: str) -> None:
    world = World().flavors("default")
    cq = FungibleClusterQueueBuilder("cq").flavor("default", cpu="4")
    if setup == "missing flavor":
        cq.flavor("gone", cpu="4")
    else:
        cq.admission_checks("ac")
    if setup == "inactive check":
        world.engine.upsert_admission_check(AdmissionCheckBuilder("ac").active(False).obj())
    world.queue(cq.obj())
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").obj())
    result = world.cycle()
    assert result.reservations == []
    assert not world.engine.is_active("cq")
    assert world.engine.inactive["cq"] == (reason, message)
    assert [(p.reason, p.message) for p in result.pending] == [("Inadmissible", "ClusterQueue cq is inactive")]


def test_moving_a_pending_workload_to_another_local_queue() -> None:
    world = World().flavors("default")
    world.queue(FungibleClusterQueueBuilder("a").flavor("default", cpu="0").obj())
    world.queue(FungibleClusterQueueBuilder("b").flavor("default", cpu="1").obj())
    wl = PlacementWorkloadBuilder("wl", "ns").queue("lq-a").podset(cpu="1")
    world.add(wl.obj())
    assert world.admit() == []
    world.add(wl.queue("lq-b").obj())
    assert world.engine.pending_in_local_queue("ns/lq-a") == 0
    assert world.engine.pending_in_local_queue("ns/lq-b") == 1
    assert world.admit() == ["ns/wl"]
    assert world.engine.pending_in_local_queue("ns/lq-b") == 0


def test_next_timer_reports_backoff_and_requeue_batches() -> None:
    world = _one_queue(batch=1.0)
    world.now = 1767225600.0  # 2026-01-01T00:00:00Z
    assert world.engine.next_timer() is None
    world.add(PlacementWorkloadBuilder("backoff", "ns").queue("lq-cq").podset(cpu="1")
              .requeue_state(1, "2026-01-01T00:01:00Z").obj())
    assert world.engine.next_timer() == 1767225660.0
    world.add(PlacementWorkloadBuilder("running", "ns").queue("lq-cq").podset(cpu="1").at(1).obj())
    world.add(PlacementWorkloadBuilder("parked", "ns").queue("lq-cq").podset(cpu="1").at(2).obj())
    assert world.admit() == ["ns/running"]  # "parked" does not fit and is parked
    world.finish("ns/running")  # frees quota: "parked" comes back when the batch period is over
    assert world.admit(advance=0.1) == []
    due = world.engine.next_timer()
    assert due is not None and world.now < due <= world.now + 1.0
    assert world.admit(advance=due - world.now) == ["ns/parked"]
    assert world.engine.next_timer() == 1767225660.0  # only the backoff is left


def test_a_preempting_queue_takes_no_more_heads_until_the_preemptor_is_admitted() -> None:
    world = _one_queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="4")
                       .preemption(within_cluster_queue="LowerPriority"), heads=8)
    world.add(PlacementWorkloadBuilder("low", "ns").queue("lq-cq").podset(cpu="3").priority(0)
              .reserved("cq", {"cpu": "default"}, {"cpu": "3"}).admitted().obj())
    world.add(PlacementWorkloadBuilder("preemptor", "ns").queue("lq-cq").podset(cpu="4").priority(10).at(0).obj())
    world.add(PlacementWorkloadBuilder("small", "ns").queue("lq-cq").podset(cpu="1").priority(5).at(1).obj())
    first = world.cycle()
    assert [p.victim for p in first.preemptions] == ["ns/low"]
    assert first.reservations == [] and first.heads_tried == 1
    # "small" would fit in the free cpu, but the sticky preemptor keeps the queue's head.
    assert world.cycle().reservations == []
    world.finish("ns/low")
    assert world.admit() == ["ns/preemptor"]


def test_strict_fifo_takes_heads_until_the_first_that_does_not_fit() -> None:
    world = _one_queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="3").strategy("StrictFIFO"), heads=8)
    for i, cpu in enumerate(["1", "1", "2", "1"]):
        world.add(PlacementWorkloadBuilder(f"w{i}", "ns").queue("lq-cq").podset(cpu=cpu).at(i).obj())
    result = world.cycle()
    assert [r.workload for r in result.reservations] == ["ns/w0", "ns/w1"]
    assert result.heads_tried == 3  # w2 blocks; w3 (which would fit) is not tried


def test_a_changed_pending_workload_is_retried_but_a_status_echo_is_not() -> None:
    world = _one_queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="1"))
    world.add(PlacementWorkloadBuilder("running", "ns").queue("lq-cq").podset(cpu="1")
              .reserved("cq", {"cpu": "default"}, {"cpu": "1"}).admitted().obj())
    waiting = [PlacementWorkloadBuilder(f"w{i}", "ns").queue("lq-cq").podset(cpu="1").at(i) for i in range(3)]
    for builder in waiting:
        world.add(builder.obj())
    first = world.cycle()
    assert first.heads_tried == 1  # w0 fails, its class (all three) is parked
    (reason,) = first.pending
    # Our own pending-reason write comes back: nothing to retry.
    world.add(waiting[0].condition("QuotaReserved", False, reason.reason, reason.message).obj())
    assert world.cycle().heads_tried == 0
    # w2's priority changes: it alone is tried again.
    world.add(waiting[2].priority(50).obj())
    retried = world.cycle()
    assert retried.heads_tried == 1 and [p.workload for p in retried.pending] == ["ns/w2"]


@pytest.mark.parametrize(
    ("checks", "on_flavors", "reason"),
    [
        ({"mk1": "kueue.x-k8s.io/multikueue", "mk2": "kueue.x-k8s.io/multikueue"}, {}, "MultipleMultiKueueAdmissionChecks"),
        ({"mk": "kueue.x-k8s.io/multikueue"}, {"mk": ["default"]}, "MultiKueueAdmissionCheckAppliedPerFlavor"),
        # Every flavor of the queue plus one it does not have: still per flavor, as in Kueue.
        ({"mk": "kueue.x-k8s.io/multikueue"}, {"mk": ["default", "spot", "ghost"]}, "MultiKueueAdmissionCheckAppliedPerFlavor"),
        ({"mk": "kueue.x-k8s.io/multikueue", "prov": "kueue.x-k8s.io/provisioning-request"}, {},
         "MultiKueueWithProvisioningRequest"),
        ({"mk": "kueue.x-k8s.io/multikueue", "other": "example.com/check"}, {"mk": ["default", "spot"]}, None),
    ],
)
def test_multikueue_check_restrictions(checks: dict[str, str], on_flavors: dict[str, list[str]], reason: str | None) -> None:
    world = World().flavors("default", "spot")
    cq = FungibleClusterQueueBuilder("cq").flavor("default", cpu="1").flavor("spot", cpu="1")
    for name, controller in checks.items():
        world.engine.upsert_admission_check(AdmissionCheckBuilder(name, controller).active(True).obj())
        cq.admission_check_strategy(name, *on_flavors.get(name, []))
    world.queue(cq.obj())
    assert world.engine.is_active("cq") == (reason is None)
    assert world.engine.inactive.get("cq", ("Ready", ""))[0] == (reason or "Ready")


@pytest.mark.parametrize(
    ("evicted_by", "requeuing_timestamp", "first"),
    [
        ("PodsReadyTimeout", "Eviction", "ns/newer"),  # Kueue's default: to the back
        ("PodsReadyTimeout", "Creation", "ns/evicted"),  # keeps its place by creation time
        ("AdmissionCheck", "Creation", "ns/newer"),  # a check eviction always uses the eviction time
        ("Preempted", "Eviction", "ns/evicted"),  # preemption keeps the creation time
    ],
)
def test_queue_order_after_an_eviction(evicted_by: str, requeuing_timestamp: str, first: str) -> None:
    world = World(heads=1, requeuing_timestamp=requeuing_timestamp).flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="1").obj())
    world.add(PlacementWorkloadBuilder("evicted", "ns").queue("lq-cq").podset(cpu="1").at(0)
              .condition("Evicted", True, evicted_by, at="2026-01-01T00:01:00Z")
              .condition("Requeued", True, evicted_by).obj())
    world.add(PlacementWorkloadBuilder("newer", "ns").queue("lq-cq").podset(cpu="1").at(30).obj())
    assert world.admit() == [first]


def test_unknown_requeuing_timestamp_is_refused_with_the_field_name() -> None:
    with pytest.raises(ValueError, match="requeuing_timestamp: Unsupported value: 'Later'"):
        Engine(requeuing_timestamp="Later")


def test_a_terminating_cluster_queue_admits_nothing_new() -> None:
    world = _one_queue()
    terminating = FungibleClusterQueueBuilder("cq").flavor("default", cpu="1").obj()
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    world.engine.upsert_cluster_queue(terminating)
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").obj())
    assert world.admit() == []
    assert world.engine.inactive["cq"] == ("Terminating", "Can't admit new workloads: is terminating.")


def test_a_higher_priority_arrival_is_tried_although_its_shape_is_parked() -> None:
    """A parked class holds workloads no better than its failed head; a new arrival of the same
    shape but higher priority is not one of them: it may preempt where the head could not."""
    world = _one_queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="2")
                       .preemption(within_cluster_queue="LowerPriority"))
    world.add(PlacementWorkloadBuilder("running", "ns").queue("lq-cq").podset(cpu="2").priority(5)
              .reserved("cq", {"cpu": "default"}, {"cpu": "2"}).admitted().obj())
    world.add(PlacementWorkloadBuilder("low", "ns").queue("lq-cq").podset(cpu="2").priority(0).at(0).obj())
    assert world.cycle().preemptions == []  # no victim of lower priority: its shape is parked
    world.add(PlacementWorkloadBuilder("high", "ns").queue("lq-cq").podset(cpu="2").priority(10).at(5).obj())
    result = world.cycle()
    assert [(p.preemptor, p.victim) for p in result.preemptions] == [("ns/high", "ns/running")]
