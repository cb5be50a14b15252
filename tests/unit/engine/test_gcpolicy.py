"""The engine settles CPython's cyclic GC once it holds a large state (controller.engine.gcpolicy).

The settling is process-wide, so every test here restores the collector's state afterwards.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

import pytest

from controller.engine import Engine, gcpolicy
from tests.builders import ClusterQueueBuilder, LocalQueueBuilder, ResourceFlavorBuilder, WorkloadBuilder


@pytest.fixture
def collector() -> Iterator[None]:
    threshold = gc.get_threshold()
    gc.set_threshold(700, *threshold[1:])
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_a_small_load_leaves_the_collector_alone(collector: None) -> None:
    assert gcpolicy.settle(gcpolicy.MIN_WORKLOADS - 1) is False
    assert gc.get_threshold()[0] == 700
    assert gc.get_freeze_count() == 0


def test_a_large_load_freezes_the_heap_and_raises_the_young_threshold(collector: None) -> None:
    middle_and_old = gc.get_threshold()[1:]
    assert gcpolicy.settle(gcpolicy.MIN_WORKLOADS) is True
    assert gc.get_threshold() == (gcpolicy.YOUNG_THRESHOLD, *middle_and_old)
    assert gc.get_freeze_count() > 0


def test_a_disabled_or_higher_threshold_is_kept(collector: None) -> None:
    gc.set_threshold(50_000)
    gcpolicy.settle(gcpolicy.MIN_WORKLOADS)
    assert gc.get_threshold()[0] == 50_000
    gc.set_threshold(0)
    gcpolicy.settle(gcpolicy.MIN_WORKLOADS)
    assert gc.get_threshold()[0] == 0


def _engine_with(workloads: int, *, initial_load: bool, **options: object) -> Engine:
    engine = Engine(**options)
    engine.upsert_resource_flavor(ResourceFlavorBuilder("default").obj())
    engine.upsert_cluster_queue(ClusterQueueBuilder("cq").flavor("default", cpu="1").obj())
    engine.upsert_local_queue(LocalQueueBuilder("lq", "ns", "cq").obj())
    engine.set_namespace("ns", {})
    with engine.initial_load() if initial_load else contextlib.nullcontext():
        for index in range(workloads):
            engine.upsert_workload(WorkloadBuilder(f"wl-{index}", "ns").queue("lq").podset(cpu="1").obj())
    assert len(engine.workloads) == workloads
    return engine


@pytest.mark.parametrize("initial_load", [True, False], ids=["after-initial-load", "after-growth"])
def test_the_first_cycle_with_enough_workloads_settles_once(
    collector: None, monkeypatch: pytest.MonkeyPatch, initial_load: bool
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(gcpolicy, "MIN_WORKLOADS", 3)
    monkeypatch.setattr(gcpolicy, "settle", lambda workloads: calls.append(workloads) or True)
    engine = _engine_with(2, initial_load=initial_load)
    engine.schedule(now=1.0)
    assert calls == []  # below the floor
    engine.upsert_workload(WorkloadBuilder("one-more", "ns").queue("lq").podset(cpu="1").obj())
    engine.schedule(now=2.0)
    engine.schedule(now=3.0)
    assert calls == [3]  # once per engine


def test_an_engine_told_not_to_settle_never_does(collector: None, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(gcpolicy, "MIN_WORKLOADS", 3)
    monkeypatch.setattr(gcpolicy, "settle", calls.append)
    _engine_with(3, initial_load=True, settle_gc=False).schedule(now=1.0)
    assert calls == []


def test_a_large_backlog_settles_the_real_collector(collector: None) -> None:
    engine = _engine_with(gcpolicy.MIN_WORKLOADS, initial_load=True)
    assert gc.get_threshold()[0] == 700  # loading alone does not touch it
    engine.schedule(now=1.0)
    assert gc.get_threshold()[0] == gcpolicy.YOUNG_THRESHOLD
    assert gc.get_freeze_count() > 0


def test_a_forest_rebuild_leaves_no_cyclic_garbage(collector: None) -> None:
    """Frozen cyclic garbage is never collected, so replaced quota nodes must be freed by
    reference counting alone."""
    engine = Engine()
    engine.upsert_resource_flavor(ResourceFlavorBuilder("default").obj())
    for name in ("a", "b"):
        engine.upsert_cluster_queue(ClusterQueueBuilder(name).cohort("co").flavor("default", cpu="1").obj())
    old_node = engine.forest.cluster_queues["a"]
    assert old_node.parent is not None and old_node.tree_borrowers is engine.forest.cluster_queues["b"].tree_borrowers
    old_id = id(old_node)
    del old_node  # only the engine may keep the old tree alive
    gc.collect()
    flags = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        engine.upsert_cluster_queue(ClusterQueueBuilder("c").cohort("co").flavor("default", cpu="1").obj())
        assert id(engine.forest.cluster_queues["a"]) != old_id  # rebuilt
        gc.collect()
        leftovers = [obj for obj in gc.garbage if type(obj).__name__ == "QuotaNode"]
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
    assert leftovers == []
