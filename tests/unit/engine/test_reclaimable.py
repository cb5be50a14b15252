"""Reclaimable pods (``status.reclaimablePods``): their quota goes back while the workload runs,
and a pending workload asks only for the pods still to run — as Kueue's
``pkg/workload/workload.go`` (``totalRequestsFromAdmission``, ``totalRequestsFromPodSets``)."""

from __future__ import annotations

from controller.engine.parse import parse_workload
from tests.builders import FungibleClusterQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World


def _running(count: int, admitted: int | None = None) -> PlacementWorkloadBuilder:
    builder = PlacementWorkloadBuilder("run", "ns").queue("lq-cq").podset(count=count, cpu="1")
    admitted = count if admitted is None else admitted
    return builder.reserved("cq", {"cpu": "default"}, {"cpu": str(admitted)}, counts={"main": admitted}).admitted()


def test_an_admitted_workload_holds_its_usage_less_the_reclaimable_pods() -> None:
    info = parse_workload(_running(4).reclaimable(1).obj())
    assert info.admission is not None and info.admission.usage == {("default", "cpu"): 3000}
    assert info.reclaimed == (("main", 1),)


def test_a_partially_admitted_podset_keeps_its_usage_until_reclaim_eats_into_the_admitted_pods() -> None:
    # Spec 5 pods, admitted 3: one reclaimable pod still leaves 4 >= 3 to run.
    kept = parse_workload(_running(5, admitted=3).reclaimable(1).obj())
    assert kept.admission is not None and kept.admission.usage == {("default", "cpu"): 3000}
    # Three reclaimable leave 2 < 3: two pods' share of the recorded usage.
    shrunk = parse_workload(_running(5, admitted=3).reclaimable(3).obj())
    assert shrunk.admission is not None and shrunk.admission.usage == {("default", "cpu"): 2000}


def test_a_stale_count_above_the_podset_never_makes_usage_negative() -> None:
    info = parse_workload(_running(2).reclaimable(7).obj())
    assert info.admission is not None and info.admission.usage == {("default", "cpu"): 0}
    assert info.reclaimed == (("main", 2),)


def test_reclaimable_pods_of_an_unknown_podset_are_ignored() -> None:
    info = parse_workload(_running(2).reclaimable(1, podset="other").obj())
    assert info.admission is not None and info.admission.usage == {("default", "cpu"): 2000}
    assert info.reclaimed == ()


def test_a_pending_workload_asks_only_for_the_pods_still_to_run() -> None:
    builder = PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(count=4, cpu="1")
    plain = parse_workload(builder.obj())
    reclaimed = parse_workload(builder.reclaimable(3).obj(), plain)  # a status write: same generation
    (podset,) = reclaimed.podsets
    assert podset.count == 1 and podset.requests == {"cpu": 1000}
    assert reclaimed.shape != plain.shape  # no longer fits or fails with 4-pod workloads
    # And back: the parsed podSets are not reused from the reduced record.
    back = builder.obj()
    back["status"].pop("reclaimablePods")
    again = parse_workload(back, reclaimed)
    assert again.podsets[0].count == 4 and again.shape == plain.shape


def test_reclaimed_quota_admits_the_next_workload_in_the_next_cycle() -> None:
    world = World(batch=0.0).flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="4").obj())
    running = _running(4)
    world.add(running.obj())
    world.add(PlacementWorkloadBuilder("next", "ns").queue("lq-cq").podset(cpu="1").obj())
    assert world.admit() == []
    assert world.usage("cq") == 4000
    world.add(running.reclaimable(1).obj())
    assert world.usage("cq") == 3000
    assert world.admit() == ["ns/next"]
    assert world.usage("cq") == 4000
