"""Flavor assignment: flavor order, fungibility, node labels/affinity, taints, allowedResourceFlavors."""

from __future__ import annotations

import pytest

from tests.builders import FungibleClusterQueueBuilder, PlacementWorkloadBuilder, TaintedFlavorBuilder
from tests.unit.engine.harness import World


def _flavors_of(result, key: str) -> dict[str, str]:
    (reservation,) = [r for r in result.reservations if r.workload == key]
    return reservation.admission["podSetAssignments"][0]["flavors"]


def _two_flavor_world(cq: FungibleClusterQueueBuilder, *, preload: dict[str, str] | None = None) -> World:
    world = World().flavors("on-demand", "spot")
    world.queue(cq.obj())
    # A lender in the same cohort: on-demand can be borrowed, spot cannot.
    world.queue(FungibleClusterQueueBuilder("lender").cohort("co").flavor("on-demand", cpu="8").flavor("spot", cpu="0").obj())
    for flavor, amount in (preload or {}).items():
        world.add(PlacementWorkloadBuilder(f"pre-{flavor}", "ns").queue("lq-cq").podset(cpu=amount).priority(0)
                  .reserved("cq", {"cpu": flavor}, {"cpu": amount}).admitted().obj())
    return world


@pytest.mark.parametrize(
    ("name", "cq", "preload", "cpu", "expected"),
    [
        ("first flavor that fits", FungibleClusterQueueBuilder("cq").flavor("on-demand", cpu="4").flavor("spot", cpu="4"),
         {}, "2", "on-demand"),
        ("full first flavor falls through", FungibleClusterQueueBuilder("cq").flavor("on-demand", cpu="4").flavor("spot", cpu="4"),
         {"on-demand": "4"}, "2", "spot"),
        # whenCanBorrow=MayStopSearch (default, v1beta1 "Borrow"): borrowing in the first flavor wins.
        ("borrow stops the search",
         FungibleClusterQueueBuilder("cq").cohort("co").flavor("on-demand", cpu="1").flavor("spot", cpu="4")
         .fungibility(when_can_borrow="Borrow"), {}, "2", "on-demand"),
        ("TryNextFlavor prefers no borrowing",
         FungibleClusterQueueBuilder("cq").cohort("co").flavor("on-demand", cpu="1").flavor("spot", cpu="4")
         .fungibility(when_can_borrow="TryNextFlavor"), {}, "2", "spot"),
        # whenCanPreempt=TryNextFlavor (default): a later flavor that fits beats preempting.
        ("preemption tries next flavor",
         FungibleClusterQueueBuilder("cq").flavor("on-demand", cpu="4").flavor("spot", cpu="4")
         .preemption(within_cluster_queue="LowerPriority"), {"on-demand": "4"}, "2", "spot"),
        # whenCanPreempt=Preempt (v1beta1 for MayStopSearch): stop at the first flavor that can preempt.
        ("Preempt stops at the first flavor that can preempt",
         FungibleClusterQueueBuilder("cq").flavor("on-demand", cpu="4").flavor("spot", cpu="4")
         .preemption(within_cluster_queue="LowerPriority").fungibility(when_can_preempt="Preempt"),
         {"on-demand": "4"}, "2", None),
    ],
)
def test_fungibility(name, cq, preload, cpu, expected) -> None:
    world = _two_flavor_world(cq, preload=preload)
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu=cpu).priority(10).obj())
    result = world.cycle()
    if expected is None:
        assert result.reservations == []
        assert [p.victim for p in result.preemptions] == ["ns/pre-on-demand"], name
    else:
        assert _flavors_of(result, "ns/wl") == {"cpu": expected}, name


def test_preference_preemption_over_borrowing() -> None:
    # on-demand would need borrowing, spot would need preemption. Both TryNextFlavor.
    cq = (FungibleClusterQueueBuilder("cq").cohort("co").flavor("on-demand", cpu="1").flavor("spot", cpu="4")
          .preemption(within_cluster_queue="LowerPriority")
          .fungibility("TryNextFlavor", "TryNextFlavor", "PreemptionOverBorrowing"))
    world = _two_flavor_world(cq, preload={"spot": "4"})
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="2").priority(10).obj())
    result = world.cycle()
    assert [p.victim for p in result.preemptions] == ["ns/pre-spot"]

    # Default preference (BorrowingOverPreemption) borrows instead.
    cq2 = (FungibleClusterQueueBuilder("cq").cohort("co").flavor("on-demand", cpu="1").flavor("spot", cpu="4")
           .preemption(within_cluster_queue="LowerPriority").fungibility("TryNextFlavor", "TryNextFlavor"))
    world2 = _two_flavor_world(cq2, preload={"spot": "4"})
    world2.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="2").priority(10).obj())
    result2 = world2.cycle()
    assert result2.preemptions == []
    assert _flavors_of(result2, "ns/wl") == {"cpu": "on-demand"}


def _labelled_world() -> World:
    world = World()
    world.engine.upsert_resource_flavor(TaintedFlavorBuilder("zone-a").node_labels(zone="a", arch="amd64").obj())
    world.engine.upsert_resource_flavor(TaintedFlavorBuilder("zone-b").node_labels(zone="b").obj())
    world.engine.upsert_resource_flavor(TaintedFlavorBuilder("gpu").node_labels(zone="b").taint("gpu", "true").obj())
    world.queue(FungibleClusterQueueBuilder("cq").flavor("gpu", cpu="8").flavor("zone-a", cpu="8").flavor("zone-b", cpu="8").obj())
    return world


@pytest.mark.parametrize(
    ("name", "workload", "expected"),
    [
        ("taint skips flavor", PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1"), "zone-a"),
        ("toleration admits tainted flavor",
         PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").toleration("gpu", "true"), "gpu"),
        ("Exists toleration admits tainted flavor",
         PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").toleration("gpu", operator="Exists"), "gpu"),
        ("wrong toleration value", PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").toleration("gpu", "no"),
         "zone-a"),
        ("nodeSelector picks zone", PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").node_selector(zone="b"),
         "zone-b"),
        # A key the flavor does not define is ignored for that flavor.
        ("unknown key ignored", PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").node_selector(arch="amd64"),
         "zone-a"),
        ("affinity NotIn", PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1")
         .required_affinity([{"key": "zone", "operator": "NotIn", "values": ["a"]}]), "zone-b"),
        ("affinity terms are ORed", PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1")
         .required_affinity([{"key": "zone", "operator": "In", "values": ["c"]}],
                            [{"key": "zone", "operator": "In", "values": ["b"]}]), "zone-b"),
        ("allowedResourceFlavors restricts", PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1")
         .allowed_flavors("main", "zone-b"), "zone-b"),
    ],
)
def test_placement_constraints(name, workload, expected) -> None:
    world = _labelled_world()
    world.add(workload.obj())
    assert _flavors_of(world.cycle(), "ns/wl") == {"cpu": expected}, name


def test_no_matching_flavor_reason() -> None:
    world = _labelled_world()
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").node_selector(zone="c").obj())
    result = world.cycle()
    assert result.reservations == []
    (pending,) = result.pending
    assert pending.reason == "NoMatchingFlavor"
    assert "untolerated taint {gpu true NoSchedule <nil>} in flavor gpu" in pending.message
    assert "flavor zone-a doesn't match node affinity" in pending.message


def test_allowed_flavors_never_falls_back() -> None:
    world = _labelled_world()
    world.add(PlacementWorkloadBuilder("big", "ns").queue("lq-cq").podset(cpu="8").allowed_flavors("main", "zone-b").obj())
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").allowed_flavors("main", "zone-b").at(1).obj())
    result = world.cycle()
    assert [r.workload for r in result.reservations] == ["ns/big"]
    assert [p.workload for p in result.pending] == ["ns/wl"]
    assert "flavor zone-a is not allowed for the podSet" in result.pending[0].message


def test_exceeds_max_quota_and_uncovered_resource() -> None:
    world = World().flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="4").obj())
    world.add(PlacementWorkloadBuilder("huge", "ns").queue("lq-cq").podset(cpu="5").obj())
    world.add(PlacementWorkloadBuilder("gpu", "ns").queue("lq-cq").podset(cpu="1", **{"nvidia.com/gpu": "1"}).obj())
    pending = {p.workload: p for p in world.cycle().pending}
    assert pending["ns/huge"].reason == "ExceedsMaxQuota"
    assert "previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)" in pending["ns/huge"].message
    assert pending["ns/gpu"].reason == "NoMatchingFlavor"
    assert "resource nvidia.com/gpu unavailable in ClusterQueue" in pending["ns/gpu"].message


def test_multiple_resources_share_a_flavor_and_podsets_accumulate() -> None:
    world = World().flavors("small", "large")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("small", cpu="4", memory="4Gi").flavor("large", cpu="16", memory="64Gi").obj())
    wl = PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset("driver", count=1, cpu="2", memory="1Gi")
    wl.podset("workers", count=2, cpu="2", memory="1Gi")
    world.add(wl.obj())
    (reservation,) = world.cycle().reservations
    assignments = {a["name"]: a for a in reservation.admission["podSetAssignments"]}
    # driver fits in small; the two workers (4 cpu) no longer fit small on top of it.
    assert assignments["driver"]["flavors"] == {"cpu": "small", "memory": "small"}
    assert assignments["workers"]["flavors"] == {"cpu": "large", "memory": "large"}
    assert assignments["workers"]["resourceUsage"] == {"cpu": "4", "memory": "2Gi"}
    assert assignments["workers"]["count"] == 2
