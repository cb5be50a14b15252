"""WorkQueue: dedup, in-flight exclusivity, re-add while processing, delays, backoff, shutdown."""

from __future__ import annotations

import gc
import threading
import time

import pytest
from prometheus_client import REGISTRY

from controller.runtime.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    WorkQueue,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_duplicate_adds_are_processed_once_in_fifo_order(clock: FakeClock) -> None:
    q: WorkQueue[str] = WorkQueue("t", clock=clock)
    for key in ["a", "b", "a", "c", "b"]:
        q.add(key)
    assert len(q) == 3
    assert [q.get(timeout=0) for _ in range(3)] == ["a", "b", "c"]
    assert q.get(timeout=0) is None


def test_item_in_flight_is_not_handed_out_again_until_done(clock: FakeClock) -> None:
    q: WorkQueue[str] = WorkQueue("t", clock=clock)
    q.add("a")
    assert q.get(timeout=0) == "a"
    q.add("a")  # changed while being processed
    assert q.get(timeout=0) is None, "a second worker must not get an item in flight"
    q.done("a")
    assert q.get(timeout=0) == "a", "re-added while processing -> processed again after done"
    q.done("a")
    assert q.get(timeout=0) is None


def test_two_workers_never_process_the_same_key_concurrently() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    active: set[str] = set()
    overlaps: list[str] = []
    processed: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        while (key := q.get()) is not None:
            with lock:
                if key in active:
                    overlaps.append(key)
                active.add(key)
            threading.Event().wait(0.001)
            with lock:
                active.discard(key)
                processed.append(key)
            q.done(key)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for i in range(300):
        q.add(f"k{i % 5}")
        if i % 7 == 0:
            threading.Event().wait(0.001)  # let workers pick keys up so re-adds hit in-flight keys
    idle = threading.Event()
    for _ in range(1000):
        if len(q) == 0 and q.processing() == 0:
            break
        idle.wait(0.01)
    q.shutdown_with_drain(timeout=10)
    for t in threads:
        t.join(timeout=10)
    assert overlaps == []
    assert set(processed) == {f"k{i}" for i in range(5)}


def test_add_after_waits_for_the_deadline_and_earliest_deadline_wins(clock: FakeClock) -> None:
    q: WorkQueue[str] = WorkQueue("t", clock=clock)
    q.add_after("a", 10)
    q.add_after("a", 5)
    q.add_after("a", 20)
    assert q.get(timeout=0) is None
    clock.advance(5)
    assert q.get(timeout=0) == "a"
    q.done("a")
    clock.advance(30)
    assert q.get(timeout=0) is None, "superseded deadlines must not re-add the item"


def test_get_blocks_until_a_delayed_item_is_due() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    q.add_after("late", 0.05)
    assert q.get(timeout=2) == "late"


def test_per_item_exponential_backoff_and_forget(clock: FakeClock) -> None:
    limiter = ItemExponentialFailureRateLimiter(base_delay=0.005, max_delay=1000)
    delays = [limiter.when("a") for _ in range(20)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[-1] == 1000
    assert limiter.num_requeues("a") == 20
    assert limiter.when("b") == 0.005, "backoff is per item"
    limiter.forget("a")
    assert limiter.when("a") == 0.005


def test_overall_bucket_limits_retry_storms(clock: FakeClock) -> None:
    limiter = MaxOfRateLimiter(ItemExponentialFailureRateLimiter(), BucketRateLimiter(qps=10, burst=2, clock=clock))
    assert limiter.when("a") == 0.005
    assert limiter.when("b") == 0.005
    assert limiter.when("c") == pytest.approx(0.1), "burst exhausted: the bucket sets the pace"


def test_add_rate_limited_requeues_with_growing_delay(clock: FakeClock) -> None:
    q: WorkQueue[str] = WorkQueue("t", ItemExponentialFailureRateLimiter(1.0, 100.0), clock=clock)
    q.add_rate_limited("a")
    assert q.get(timeout=0) is None
    clock.advance(1)
    assert q.get(timeout=0) == "a"
    q.done("a")
    q.add_rate_limited("a")
    clock.advance(1)
    assert q.get(timeout=0) is None, "second failure waits 2 s"
    clock.advance(1)
    assert q.get(timeout=0) == "a"
    assert q.num_requeues("a") == 2
    q.forget("a")
    assert q.num_requeues("a") == 0


def test_shutdown_releases_blocked_workers_and_refuses_adds() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    results: list[str | None] = []
    t = threading.Thread(target=lambda: results.append(q.get()))
    t.start()
    assert not q.shutting_down
    q.shutdown()
    assert q.shutting_down
    t.join(timeout=5)
    assert results == [None]
    q.add("x")
    assert q.get(timeout=0) is None


def test_shutdown_with_drain_waits_for_in_flight_items() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    q.add("a")
    assert q.get() == "a"
    assert q.shutdown_with_drain(timeout=0.05) is False, "still processing"
    q.done("a")
    assert q.shutdown_with_drain(timeout=1) is True


def test_get_timeout_is_real_time_even_with_an_injected_clock(clock: FakeClock) -> None:
    q: WorkQueue[str] = WorkQueue("t", clock=clock)
    q.add_after("later", 60)
    started = time.monotonic()
    assert q.get(timeout=0.05) is None
    assert time.monotonic() - started < 2


def test_drain_timeout_is_real_time_even_with_an_injected_clock(clock: FakeClock) -> None:
    q: WorkQueue[str] = WorkQueue("t", clock=clock)
    q.add("stuck")
    assert q.get() == "stuck"
    answer: list[bool] = []
    waiter = threading.Thread(target=lambda: answer.append(q.shutdown_with_drain(timeout=0.05)), daemon=True)
    waiter.start()
    waiter.join(2)
    assert answer == [False], "a frozen clock must not make a bounded drain wait forever"
    q.done("stuck")


def _sample(name: str, queue: str) -> float:
    return REGISTRY.get_sample_value(name, {"name": queue}) or 0.0


def test_metrics_report_depth_adds_retries_and_durations(clock: FakeClock) -> None:
    """The controller-runtime ``workqueue_*`` series follow what the queue does, per queue name."""
    q: WorkQueue[str] = WorkQueue("metrics-test", ItemExponentialFailureRateLimiter(1.0, 100.0), clock=clock)
    q.add("a")
    q.add("a")  # already queued: not an add (client-go counts only keys that enter the queue)
    q.add("b")
    assert _sample("workqueue_depth", "metrics-test") == 2
    assert _sample("workqueue_adds_total", "metrics-test") == 2
    clock.advance(2)
    assert q.get(timeout=0) == "a"
    assert _sample("workqueue_depth", "metrics-test") == 1
    assert _sample("workqueue_queue_duration_seconds_sum", "metrics-test") == pytest.approx(2)
    clock.advance(3)
    q.done("a")
    assert _sample("workqueue_work_duration_seconds_count", "metrics-test") == 1
    assert _sample("workqueue_work_duration_seconds_sum", "metrics-test") == pytest.approx(3)
    q.add_rate_limited("a")
    q.add_rate_limited("c")
    assert _sample("workqueue_retries_total", "metrics-test") == 2


def test_work_in_progress_gauges_are_read_when_scraped_even_while_a_worker_hangs(clock: FakeClock) -> None:
    """``workqueue_unfinished_work_seconds`` and ``..._longest_running_processor_seconds`` say
    how long the keys being processed have run at the moment of the scrape, with no done() in
    between (a hung worker is what they are for); a discarded queue reads as zero."""
    q: WorkQueue[str] = WorkQueue("in-progress-test", clock=clock)
    q.add("a")
    q.add("b")
    assert q.get(timeout=0) == "a"
    clock.advance(4)
    assert q.get(timeout=0) == "b"
    clock.advance(1)
    assert _sample("workqueue_unfinished_work_seconds", "in-progress-test") == pytest.approx(6)
    assert _sample("workqueue_longest_running_processor_seconds", "in-progress-test") == pytest.approx(5)
    q.done("a")
    clock.advance(10)
    assert _sample("workqueue_unfinished_work_seconds", "in-progress-test") == pytest.approx(11)
    assert _sample("workqueue_longest_running_processor_seconds", "in-progress-test") == pytest.approx(11)
    q.done("b")
    assert _sample("workqueue_longest_running_processor_seconds", "in-progress-test") == 0
    q.add("c")
    assert q.get(timeout=0) == "c"
    clock.advance(2)
    assert _sample("workqueue_unfinished_work_seconds", "in-progress-test") == pytest.approx(2)
    del q
    gc.collect()
    assert _sample("workqueue_unfinished_work_seconds", "in-progress-test") == 0
