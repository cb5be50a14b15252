"""FIFO among workloads of equal priority and timestamp follows arrival, not UID.

``creationTimestamp`` has whole seconds, so jobs submitted in the same second share it. Ordering
them by UID (random) let later jobs overtake earlier ones; the engine numbers workloads in the
order it first observes them and keeps that number across updates. Only workloads loaded from
the caches at start-up (``Engine.initial_load``) fall back to UID among themselves.
"""

from __future__ import annotations

from typing import Any

from tests.builders import FungibleClusterQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World

# UIDs that sort in the *opposite* order of the names' arrival, so UID order would fail.
UIDS = {"job-3": "ffff-3", "job-4": "bbbb-4", "job-5": "0000-5"}


def _one_at_a_time() -> World:
    """A queue with room for exactly one 1-cpu workload, one head per cycle."""
    world = World(heads=1).flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="1").obj())
    return world


class _Job(PlacementWorkloadBuilder):
    def uid(self, uid: str) -> _Job:
        self._obj["metadata"]["uid"] = uid
        return self


def _job(name: str, *, uid: str | None = None, second: int = 7) -> _Job:
    """A 1-cpu workload created at ``second`` (all at the same second unless told)."""
    return _Job(name, "ns").queue("lq-cq").podset(cpu="1").priority(0).at(second).uid(uid or UIDS[name])


def _admission_order(world: World, count: int) -> list[str]:
    order = []
    for _ in range(count):
        (key,) = world.admit()
        order.append(key)
        world.finish(key)
    return order


def _submit(world: World, *wls: _Job) -> list[dict[str, Any]]:
    return [world.add(wl.obj()) for wl in wls]


def test_same_second_workloads_are_admitted_in_arrival_order() -> None:
    world = _one_at_a_time()
    _submit(world, _job("job-3"), _job("job-4"), _job("job-5"))
    assert _admission_order(world, 3) == ["ns/job-3", "ns/job-4", "ns/job-5"]


def test_arrival_is_kept_across_updates() -> None:
    world = _one_at_a_time()
    world.add(PlacementWorkloadBuilder("running", "ns").queue("lq-cq").podset(cpu="1")
              .reserved("cq", {"cpu": "default"}, {"cpu": "1"}).admitted().obj())
    job3, job4, job5 = _job("job-3"), _job("job-4"), _job("job-5")
    _submit(world, job3, job4, job5)
    assert world.admit() == []  # all three wait behind "running"
    # Later updates of the first arrival (a pending reason written, a spec change) keep its place.
    world.add(job3.condition("QuotaReserved", False, "Pending", "waiting").obj())
    world.add(job3.generation(2).obj())
    world.finish("ns/running")
    assert _admission_order(world, 3) == ["ns/job-3", "ns/job-4", "ns/job-5"]


def test_a_recreated_workload_is_a_new_arrival() -> None:
    world = _one_at_a_time()
    _submit(world, _job("job-3"), _job("job-4"))
    # job-3 is deleted and created again under the same name (a new UID) before the engine saw
    # the deletion: it now arrived after job-4 (though its new UID sorts first).
    world.add(_job("job-3", uid="0000-3-again").obj())
    assert _admission_order(world, 2) == ["ns/job-4", "ns/job-3"]


def test_priority_and_timestamp_still_come_first() -> None:
    world = _one_at_a_time()
    _submit(world, _job("job-3", second=8), _job("job-4"), _job("job-5").priority(1))
    assert _admission_order(world, 3) == ["ns/job-5", "ns/job-4", "ns/job-3"]


def test_workloads_loaded_at_start_up_tie_break_by_uid_and_precede_later_arrivals() -> None:
    world = _one_at_a_time()
    with world.engine.initial_load():  # the caches' order says nothing about arrival
        _submit(world, _job("job-3"), _job("job-4"))
    _submit(world, _job("job-5"))  # observed afterwards; its UID sorts first of all
    assert _admission_order(world, 3) == ["ns/job-4", "ns/job-3", "ns/job-5"]


def test_visibility_lists_the_same_order() -> None:
    world = _one_at_a_time()
    world.add(PlacementWorkloadBuilder("running", "ns").queue("lq-cq").podset(cpu="1")
              .reserved("cq", {"cpu": "default"}, {"cpu": "1"}).admitted().obj())
    _submit(world, _job("job-3"), _job("job-4"), _job("job-5"))
    listed = world.engine.pending_workloads("cq")
    assert [p.workload for p in listed] == ["ns/job-3", "ns/job-4", "ns/job-5"]
