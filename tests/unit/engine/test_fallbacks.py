"""Flavor assignment with ResourceFlavor fallbacks: excluded flavors are skipped, the rest keep order."""

from __future__ import annotations

from controller.engine.parse import parse_cluster_queue, parse_workload
from tests.builders import PlacementWorkloadBuilder, SeedClusterQueueBuilder
from tests.unit.engine.harness import World


def _flavors_of(result, key: str) -> list[dict[str, str]]:
    (reservation,) = [r for r in result.reservations if r.workload == key]
    return [ps["flavors"] for ps in reservation.admission["podSetAssignments"]]


def _story(*, fallback: bool = True, preload_reservation: bool = False) -> World:
    """Reservation (fixed quota), Spot and On-demand, in that order."""
    world = World().flavors("reservation", "spot", "on-demand", "gpu-a", "gpu-b")
    cq = (
        SeedClusterQueueBuilder("cq").flavor("reservation", cpu="2").flavor("spot", cpu="100")
        .flavor("on-demand", cpu="100").flavor("gpu-a", gpu="8").flavor("gpu-b", gpu="8")
    )
    if fallback:
        cq = cq.fallback().fallback_rule("*", timeout="10m")
    world.queue(cq.obj())
    if preload_reservation:
        world.add(PlacementWorkloadBuilder("full", "ns").queue("lq-cq").podset(cpu="2")
                  .reserved("cq", {"cpu": "reservation"}, {"cpu": "2"}).admitted().obj())
    return world


def test_the_excluded_flavor_is_skipped_and_the_others_keep_their_order() -> None:
    world = _story(preload_reservation=True)
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").flavor_assigned("spot").obj())
    result = world.cycle()
    assert _flavors_of(result, "ns/wl") == [{"cpu": "on-demand"}]
    (reservation,) = result.reservations
    assert reservation.record_flavor_history


def test_a_freed_earlier_flavor_is_tried_again_before_the_later_ones() -> None:
    """Reservation was full, Spot failed; Reservation freed meanwhile: it is next, then On-demand."""
    world = _story()
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").flavor_assigned("spot").obj())
    assert _flavors_of(world.cycle(), "ns/wl") == [{"cpu": "reservation"}]


def test_every_flavor_excluded_leaves_the_workload_pending_with_a_reason() -> None:
    world = _story()
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").flavor_assigned("reservation")
              .flavor_assigned("spot").flavor_assigned("on-demand").obj())
    result = world.cycle()
    assert result.reservations == []
    (pending,) = result.pending
    assert "flavor spot was excluded by the ClusterQueue's fallback strategy" in pending.message


def test_only_the_failed_flavor_of_one_resource_group_is_excluded() -> None:
    world = _story()
    wl = PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1", gpu="1").flavor_assigned("reservation")
    world.add(wl.obj())
    assert _flavors_of(world.cycle(), "ns/wl") == [{"cpu": "spot", "gpu": "gpu-a"}]


def test_without_a_strategy_the_history_is_ignored() -> None:
    world = _story(fallback=False)
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").flavor_assigned("reservation").obj())
    result = world.cycle()
    assert _flavors_of(result, "ns/wl") == [{"cpu": "reservation"}]
    assert not result.reservations[0].record_flavor_history


def test_the_held_flavor_is_not_excluded_and_excluded_sets_change_the_shape() -> None:
    base = PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1")
    plain = parse_workload(base.obj())
    excluding = parse_workload(base.flavor_assigned("spot").obj())
    assert excluding.excluded_flavors == frozenset({"spot"})
    assert excluding.shape != plain.shape
    holding = parse_workload(base.reserved("cq", {"cpu": "spot"}, {"cpu": "1"}).obj())
    assert holding.excluded_flavors == frozenset()
    # Reusing the previous record (status-only update) does not salt the shape twice.
    again = parse_workload(base.obj(), excluding)
    assert again.shape == plain.shape


def test_a_queue_with_concurrent_admission_ignores_the_strategy() -> None:
    cq = SeedClusterQueueBuilder("cq").flavor("spot", cpu="1").concurrent("RemoveOther").fallback_rule("spot", timeout="1m")
    assert not parse_cluster_queue(cq.obj()).fallbacks
    assert parse_cluster_queue(SeedClusterQueueBuilder("cq").flavor("spot", cpu="1").fallback().obj()).fallbacks
