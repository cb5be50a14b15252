"""PendingQueue: heap order, shape classes, parking, sticky heads, removal, strategy switch."""

from __future__ import annotations

import random

import pytest

from controller.engine.queues import PendingQueue
from controller.engine.records import WorkloadInfo


def _wl(name: str, priority: int = 0, ts: float = 0.0, shape: int = 1) -> WorkloadInfo:
    return WorkloadInfo(namespace="ns", name=name, uid=f"uid-{name}", queue_name="lq", priority=priority,
                        creation_ts=ts, queue_ts=ts, podsets=(), shape=shape)


def _drain(queue: PendingQueue) -> list[str]:
    names = []
    while (info := queue.pop()) is not None:
        names.append(info.name)
    return names


def test_priority_then_timestamp_then_uid_across_classes() -> None:
    queue = PendingQueue("cq", strict_fifo=False)
    for wl in [_wl("b", 0, 1.0, shape=1), _wl("a", 0, 1.0, shape=2), _wl("late-high", 5, 9.0, shape=3),
               _wl("early", 0, 0.5, shape=1)]:
        queue.push(wl)
    assert _drain(queue) == ["late-high", "early", "a", "b"]


def test_parking_a_class_hides_all_its_members_until_requeue() -> None:
    queue = PendingQueue("cq", strict_fifo=False)
    for i in range(5):
        queue.push(_wl(f"big{i}", 0, float(i), shape=1))
    queue.push(_wl("small", 0, 10.0, shape=2))
    head = queue.head()
    assert head is not None and head.name == "big0"
    queue.park_shape_of(head)
    assert queue.is_parked(head) and queue.has_parked()
    assert queue.head().name == "small"
    queue.push(_wl("big-new", 0, 0.0, shape=1))  # new arrivals of a parked shape stay parked...
    queue.push(_wl("big-urgent", 9, 20.0, shape=1))  # ...unless they outrank its head
    assert _drain(queue) == ["big-urgent", "small"]
    assert len(queue) == 6
    assert queue.requeue_parked() == 1
    assert _drain(queue) == ["big-new", "big0", "big1", "big2", "big3", "big4"]


def test_strict_fifo_never_parks() -> None:
    queue = PendingQueue("cq", strict_fifo=True)
    queue.push(_wl("big", 0, 0.0, shape=1))
    queue.push(_wl("small", 0, 1.0, shape=2))
    queue.park_shape_of(queue.head())
    assert queue.head().name == "big"


def test_sticky_head_and_removal_and_update() -> None:
    queue = PendingQueue("cq", strict_fifo=False)
    queue.push(_wl("high", 10, 0.0))
    queue.push(_wl("preemptor", 1, 5.0))
    queue.sticky = "ns/preemptor"
    assert queue.head().name == "preemptor"
    queue.remove("ns/preemptor")
    assert queue.sticky is None and queue.head().name == "high"
    queue.push(_wl("high", 0, 0.0))  # an update re-files with the new priority
    queue.push(_wl("other", 5, 3.0))
    assert _drain(queue) == ["other", "high"]


def test_switching_strategy_keeps_every_workload() -> None:
    queue = PendingQueue("cq", strict_fifo=False)
    for i, shape in enumerate([1, 2, 1, 3]):
        queue.push(_wl(f"w{i}", 0, float(i), shape=shape))
    queue.park_shape_of(queue.head())
    queue.set_strict_fifo(True)
    assert _drain(queue) == ["w0", "w1", "w2", "w3"]


def test_an_updated_workload_escapes_its_parked_class_alone() -> None:
    queue = PendingQueue("cq", strict_fifo=False)
    for i in range(3):
        queue.push(_wl(f"big{i}", 0, float(i), shape=1))
    queue.park_shape_of(queue.head())
    assert queue.head() is None
    queue.push(_wl("big2", 7, 2.0, shape=1), escape_parked=True)  # e.g. its priority changed
    info = queue.pop()
    assert info is not None and info.name == "big2"
    assert queue.head() is None  # big0 and big1 stay parked
    queue.push(info)  # failed again: back into its (parked) class
    queue.park_shape_of(info)
    assert queue.head() is None and len(queue) == 3
    queue.push(_wl("big9", 0, 9.0, shape=1), escape_parked=False)  # new arrivals join the parked class
    assert queue.head() is None


@pytest.mark.parametrize("seed", range(10))
def test_parked_count_matches_a_full_scan(seed: int) -> None:
    """The metric's parked count is kept per class; it must equal counting workload by workload."""
    rng = random.Random(seed)
    queue = PendingQueue("cq", strict_fifo=False)
    for step in range(300):
        op = rng.random()
        name = f"w{rng.randrange(40)}"
        if op < 0.45:
            queue.push(_wl(name, rng.randrange(3), float(step), shape=rng.randrange(4)), escape_parked=rng.random() < 0.2)
        elif op < 0.6:
            queue.remove(f"ns/{name}")
        elif op < 0.75:
            queue.pop()
        elif op < 0.92:
            if (head := queue.head()) is not None:
                queue.park_shape_of(head)
        else:
            queue.requeue_parked()
        assert queue.parked_count() == sum(1 for info in queue.workloads() if queue.is_parked(info))


class _ReferenceQueue:
    """The queue's contract as a full scan: the head is the sticky workload if queued, else the
    smallest order key among workloads whose class is not parked."""

    def __init__(self, strict_fifo: bool) -> None:
        self.strict_fifo = strict_fifo
        self.entries: dict[str, tuple[WorkloadInfo, int]] = {}  # key -> (info, class)
        self.parked: set[int] = set()
        self.sticky: str | None = None

    def push(self, info: WorkloadInfo, escape_parked: bool) -> None:
        shape = 0 if self.strict_fifo else info.shape
        members = [other.priority for other, other_shape in self.entries.values() if other_shape == shape]
        outranks = info.key not in self.entries and bool(members) and info.priority > max(members)
        if shape in self.parked and (escape_parked or outranks):
            shape = hash((shape, info.key))
        self.entries[info.key] = (info, shape)

    def head(self) -> WorkloadInfo | None:
        if self.sticky in self.entries:
            return self.entries[self.sticky][0]
        live = [info for info, shape in self.entries.values() if shape not in self.parked]
        return min(live, key=lambda info: info.order_key, default=None)

    def pop(self) -> WorkloadInfo | None:
        info = self.head()
        if info is not None:
            del self.entries[info.key]
            if self.sticky == info.key:
                self.sticky = None
        return info


@pytest.mark.parametrize("strict_fifo", [False, True])
@pytest.mark.parametrize("seed", range(12))
def test_random_operations_match_a_full_scan(seed: int, strict_fifo: bool) -> None:
    """Heads and sizes equal a naive scan under random pushes, updates, removals, pops put back
    unchanged (the cycle's no-fit path, which revives the popped record), parking, requeues and
    sticky heads."""
    rng = random.Random(seed)
    queue = PendingQueue("cq", strict_fifo=strict_fifo)
    reference = _ReferenceQueue(strict_fifo)
    arrival = 0
    for _ in range(600):
        op = rng.random()
        name = f"w{rng.randrange(30)}"
        if op < 0.3:
            arrival += 1
            info = _wl(name, rng.randrange(3), float(rng.randrange(5)), shape=rng.randrange(3))
            info.arrival = arrival
            escape = rng.random() < 0.2
            queue.push(info, escape_parked=escape)
            reference.push(info, escape)
        elif op < 0.4:
            queue.remove(f"ns/{name}")
            reference.entries.pop(f"ns/{name}", None)
            if reference.sticky == f"ns/{name}":
                reference.sticky = None
        elif op < 0.75:
            popped = queue.pop()
            assert popped is reference.pop()
            if popped is not None and rng.random() < 0.8:
                # What the cycle does with a head that does not fit or preempts: back at once
                # (sometimes after a look at the next head, which drops the popped record).
                if rng.random() < 0.3:
                    assert queue.head() is reference.head()
                queue.push(popped)
                reference.push(popped, False)
                choice = rng.random()
                if choice < 0.5:
                    queue.park_shape_of(popped)
                    if not strict_fifo:
                        reference.parked.add(reference.entries[popped.key][1])
                elif choice < 0.6:
                    queue.sticky = reference.sticky = popped.key
        elif op < 0.85:
            if (head := queue.head()) is not None:
                queue.park_shape_of(head)
                if not strict_fifo:
                    reference.parked.add(reference.entries[head.key][1])
        else:
            queue.requeue_parked()
            reference.parked.clear()
        assert queue.head() is reference.head()
        assert len(queue) == len(reference.entries)
    assert [info.key for info in iter(queue.pop, None)] == [info.key for info in iter(reference.pop, None)]
