"""RankedThreadPool: queued jobs start highest rank first; InFlightWrites keeps chained writes in
order on it (a later write on the same workload never outranks the earlier one it waits for)."""

from __future__ import annotations

import threading
import time

import pytest

from controller.core import request_ranks as ranks
from controller.core.inflight import InFlightWrites
from controller.core.ranked_pool import RankedThreadPool


def _block_the_only_thread(pool: RankedThreadPool) -> threading.Event:
    release = threading.Event()
    started = threading.Event()

    def blocker() -> None:
        started.set()
        release.wait(5)

    pool.submit(blocker)
    assert started.wait(5)
    return release


def test_queued_jobs_start_by_rank_then_in_submission_order() -> None:
    pool = RankedThreadPool(1)
    release = _block_the_only_thread(pool)
    ran: list[str] = []
    futures = [
        pool.submit_ranked(rank, lambda label=label: ran.append(label))
        for label, rank in [
            ("status", ranks.STATUS),
            ("small-a", ranks.reservation(50)),
            ("plain", ranks.DEFAULT),
            ("large", ranks.reservation(200)),
            ("eviction", ranks.FREEING),
            ("small-b", ranks.reservation(50)),
        ]
    ]
    assert pool.queued() == 6
    release.set()
    for future in futures:
        future.result(timeout=5)
    pool.shutdown()
    assert ran == ["eviction", "large", "small-a", "small-b", "plain", "status"]


def test_results_exceptions_and_cancellation_go_through_the_futures() -> None:
    pool = RankedThreadPool(1)
    assert pool.submit(lambda x: x * 2, 21).result(timeout=5) == 42

    def boom() -> None:
        raise ValueError("write failed")

    with pytest.raises(ValueError, match="write failed"):
        pool.submit(boom).result(timeout=5)
    release = _block_the_only_thread(pool)
    never = pool.submit(lambda: None)
    pool.shutdown(wait=False, cancel_futures=True)
    release.set()
    assert never.cancelled()
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)


def test_shutdown_without_cancelling_runs_what_was_queued() -> None:
    pool = RankedThreadPool(2)
    done: list[int] = []
    for i in range(10):
        pool.submit(lambda i=i: (time.sleep(0.005), done.append(i)))
    pool.shutdown(wait=True)
    assert sorted(done) == list(range(10))


def test_threads_start_on_demand_up_to_the_limit() -> None:
    pool = RankedThreadPool(3)
    gate = threading.Event()
    running = threading.Semaphore(0)

    def job() -> None:
        running.release()
        gate.wait(5)

    for _ in range(5):
        pool.submit(job)
    for _ in range(3):
        assert running.acquire(timeout=5)
    assert not running.acquire(timeout=0.1), "only three run at once"
    assert pool.queued() == 2
    gate.set()
    pool.shutdown()


def test_a_write_chained_after_a_lower_ranked_one_on_the_same_workload_does_not_overtake_it() -> None:
    # One thread: were the later, higher-ranked write started first, it would wait for the earlier
    # one forever on the only thread (a deadlock); chained, it runs second.
    pool = RankedThreadPool(1)
    release = _block_the_only_thread(pool)
    writes = InFlightWrites(cap=10, wake=lambda: None)
    order: list[str] = []

    def write(label: str) -> bool:
        order.append(label)
        return True

    writes.submit(pool, ("ns/w",), lambda: write("reservation of w"), lambda ok: None, ranks.reservation(50))
    writes.submit(pool, ("ns/other",), lambda: write("other status"), lambda ok: None, ranks.STATUS)
    writes.submit(pool, ("ns/w",), lambda: write("preemption of w"), lambda ok: None, ranks.FREEING)
    writes.submit(pool, ("ns/big",), lambda: write("large"), lambda ok: None, ranks.reservation(200))
    release.set()
    assert writes.settle(5)
    pool.shutdown()
    # The preemption of w keeps w's reservation rank (50) and its place after it; the unrelated
    # large reservation still goes first.
    assert order == ["large", "reservation of w", "preemption of w", "other status"]
