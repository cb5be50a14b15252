"""The runtime's reconcile loop: requeue-after, backoff and forget, drain and join on stop."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from prometheus_client import REGISTRY

from controller.runtime.workers import Workers
from controller.runtime.workqueue import WorkQueue
from pykueue.kube.errors import Conflict, Invalid


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


def test_requeue_after_parks_the_key_for_that_long() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue("t-requeue", clock=clock)
    workers = Workers(queue, lambda _key: 30.0, name="t-requeue")
    workers.process_one("ns/a")
    assert len(queue) == 0 and queue.waiting() == 1
    clock.now += 29.9
    assert len(queue) == 0
    clock.now += 0.2
    assert queue.get(timeout=0) == "ns/a"


def test_done_without_requeue_leaves_nothing_behind() -> None:
    queue: WorkQueue[str] = WorkQueue("t-done")
    Workers(queue, lambda _key: None, name="t-done").process_one("ns/a")
    assert len(queue) == 0 and queue.waiting() == 0


@pytest.mark.parametrize(
    "error", [Conflict(409, "Conflict", "stale"), Invalid(422, "Invalid", "bad"), RuntimeError("bug")]
)
def test_an_exception_is_retried_with_growing_backoff_and_success_forgets_it(error: Exception) -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue("t-backoff", clock=clock)
    outcome: list[Exception | None] = [error]

    def reconcile(_key: str) -> float | None:
        if outcome[0] is not None:
            raise outcome[0]
        return None

    workers = Workers(queue, reconcile, name="t-backoff")
    workers.process_one("ns/a")  # never raises
    workers.process_one("ns/a")
    assert queue.num_requeues("ns/a") == 2
    assert queue.waiting() == 1, "retried after the rate limiter's delay, not at once"
    outcome[0] = None
    workers.process_one("ns/a")
    assert queue.num_requeues("ns/a") == 0, "success resets the key's backoff"


def test_a_failing_key_does_not_stop_the_loop() -> None:
    queue: WorkQueue[str] = WorkQueue("t-strange")
    seen: list[str] = []

    def reconcile(key: str) -> float | None:
        seen.append(key)
        if key == "strange":
            raise RuntimeError("bug")
        return None

    workers = Workers(queue, reconcile, name="t-strange")
    workers.start()
    queue.add("strange")
    queue.add("fine")
    assert _wait_until(lambda: "fine" in seen)
    assert workers.stop(5)


def test_reconciles_are_counted_by_result() -> None:
    def sample(result: str) -> float:
        labels = {"controller": "t-metrics", "result": result}
        return REGISTRY.get_sample_value("controller_runtime_reconcile_total", labels) or 0.0

    outcomes: list[float | None] = [None, 5.0]

    def reconcile(_key: str) -> float | None:
        if not outcomes:
            raise RuntimeError("bug")
        return outcomes.pop(0)

    workers = Workers(WorkQueue("t-metrics"), reconcile, name="t-metrics")
    for _ in range(3):
        workers.process_one("k")
    assert (sample("success"), sample("requeue_after"), sample("error")) == (1.0, 1.0, 1.0)


def test_stop_drains_the_reconcile_in_flight_and_starts_no_new_one() -> None:
    queue: WorkQueue[str] = WorkQueue("t-drain")
    entered = threading.Event()
    release = threading.Event()
    started: list[str] = []
    finished: list[str] = []

    def reconcile(key: str) -> float | None:
        started.append(key)
        entered.set()
        release.wait(5)
        finished.append(key)
        return None

    workers = Workers(queue, reconcile, name="t-drain", count=1)
    workers.start()
    queue.add("first")
    assert entered.wait(5)
    queue.add("second")  # queued behind the one in flight
    stopped: list[bool] = []
    stopper = threading.Thread(target=lambda: stopped.append(workers.stop(5)))
    stopper.start()
    assert _wait_until(lambda: queue.shutting_down)
    assert stopped == [], "stop waits for the reconcile in flight"
    release.set()
    stopper.join(5)
    assert stopped == [True]
    assert finished == ["first"] and started == ["first"], "the queued key is dropped, not started"


def test_stop_joins_every_worker_thread_before_returning() -> None:
    queue: WorkQueue[str] = WorkQueue("t-join")
    workers = Workers(queue, lambda _key: None, name="t-join", count=3)
    workers.start()
    threads = workers.threads
    assert len(threads) == 3 and all(t.is_alive() for t in threads)
    assert workers.stop(5) is True
    assert not any(t.is_alive() for t in threads)
    assert workers.threads == []


def test_stop_gives_up_after_the_timeout_on_a_stuck_reconcile() -> None:
    queue: WorkQueue[str] = WorkQueue("t-stuck")
    entered = threading.Event()
    release = threading.Event()

    def reconcile(_key: str) -> float | None:
        entered.set()
        release.wait(5)
        return None

    workers = Workers(queue, reconcile, name="t-stuck")
    workers.start()
    queue.add("k")
    assert entered.wait(5)
    begun = time.monotonic()
    assert workers.stop(0.1) is False
    assert time.monotonic() - begun < 2
    release.set()
