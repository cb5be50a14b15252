"""PrioritisedTokenBucket: same tokens at the same rate as a plain bucket, handed out by rank.

The ordering tests use real threads and a real clock at a rate high enough to keep them short:
every waiter is queued (``waiting()``) before the first token is due, so the grant order is
decided by the bucket alone.
"""

from __future__ import annotations

import threading
import time

import pytest

from pykueue.kube.backoff import TokenBucket
from pykueue.kube.ratelimit import (
    DEFAULT_RANK,
    PrioritisedTokenBucket,
    Rank,
    current_rank,
    request_rank,
)

LOW: Rank = (-1, 0)
HIGH: Rank = (1, 0)


def _drain(bucket: PrioritisedTokenBucket) -> None:
    while bucket.acquire() == 0.0:
        pass  # the burst is spent; the last call already waited for one token


def _queue_waiters(
    bucket: PrioritisedTokenBucket, ranks: list[tuple[str, Rank]], granted: list[str] | None = None
) -> tuple[list[str], list[threading.Thread]]:
    """Start one thread per (label, rank), in list order, each queued before the next starts;
    each appends its label to ``granted`` when it gets its token."""
    granted = [] if granted is None else granted
    threads: list[threading.Thread] = []

    def take(label: str, rank: Rank) -> None:
        bucket.acquire(rank)
        granted.append(label)  # list.append is atomic

    for label, rank in ranks:
        before = bucket.waiting()
        thread = threading.Thread(target=take, args=(label, rank), daemon=True)
        thread.start()
        deadline = time.monotonic() + 2.0
        while bucket.waiting() == before and time.monotonic() < deadline:
            time.sleep(0.001)
        assert bucket.waiting() == before + 1, f"{label} did not queue"
        threads.append(thread)
    return granted, threads


def _join(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive()


def test_an_idle_bucket_answers_at_once_up_to_its_burst() -> None:
    bucket = PrioritisedTokenBucket(qps=1.0, burst=3)
    assert [bucket.acquire() for _ in range(3)] == [0.0, 0.0, 0.0]


def test_a_lone_caller_waits_as_long_as_with_a_plain_bucket() -> None:
    waits: list[float] = []
    bucket = PrioritisedTokenBucket(qps=2.0, burst=1, sleep=waits.append)
    plain_waits: list[float] = []
    plain = TokenBucket(qps=2.0, burst=1, sleep=plain_waits.append)
    for _ in range(3):
        bucket.acquire()
        plain.acquire()
    # Debt as in TokenBucket.reserve: the n-th caller past the burst waits n / qps.
    assert len(waits) == len(plain_waits) == 2
    assert waits == pytest.approx(plain_waits, abs=0.01)
    assert waits[1] == pytest.approx(1.0, abs=0.02)


def test_waiting_callers_are_served_highest_rank_first_then_in_arrival_order() -> None:
    bucket = PrioritisedTokenBucket(qps=20.0, burst=1, max_wait=30.0)
    _drain(bucket)
    # The first waiter is the one sleeping for the next token; the rest are chosen by rank.
    granted, threads = _queue_waiters(
        bucket,
        [
            ("first", DEFAULT_RANK),
            ("status-a", LOW),
            ("default", DEFAULT_RANK),
            ("status-b", LOW),
            ("reservation-prio-50", (1, 50)),
            ("eviction", (2, 0)),
            ("reservation-prio-200", (1, 200)),
            ("reservation-prio-50-later", (1, 50)),
        ],
    )
    _join(threads)
    assert granted == [
        "first",
        "eviction",
        "reservation-prio-200",
        "reservation-prio-50",
        "reservation-prio-50-later",
        "default",
        "status-a",
        "status-b",
    ]


def test_a_low_rank_that_waited_past_max_wait_goes_before_higher_ranks() -> None:
    # Starvation bound: a queue of high-rank callers cannot hold a status write back for long.
    bucket = PrioritisedTokenBucket(qps=10.0, burst=1, max_wait=0.25)
    _drain(bucket)
    granted, threads = _queue_waiters(
        bucket, [("first", HIGH), ("status", LOW)] + [(f"high-{i}", HIGH) for i in range(8)]
    )
    _join(threads)
    # By rank alone it would be last of ten; at 10 tokens/s it has waited 0.25 s after about
    # three grants and then goes next.
    assert granted.index("status") <= 4, granted
    assert granted[0] == "first"
    assert granted.count("status") == 1 and len(granted) == 10


def test_ranks_change_the_order_not_the_rate() -> None:
    qps = 40.0
    bucket = PrioritisedTokenBucket(qps=qps, burst=1, max_wait=30.0)
    _drain(bucket)
    started = time.monotonic()
    granted, threads = _queue_waiters(bucket, [(str(i), (i % 3, 0)) for i in range(12)])
    _join(threads)
    elapsed = time.monotonic() - started
    # Twelve tokens at 40/s take 0.3 s: never faster (the rate holds), and not much slower.
    assert 12 / qps * 0.9 <= elapsed < 12 / qps + 1.0
    assert len(granted) == 12


def test_a_caller_that_gives_up_does_not_block_the_others() -> None:
    class Interrupted(Exception):
        pass

    calls = 0

    def interrupting_sleep(delay: float) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise Interrupted  # e.g. the thread is told to stop while it sleeps for its token
        time.sleep(delay)

    bucket_with_failure = PrioritisedTokenBucket(qps=20.0, burst=1, max_wait=30.0, sleep=interrupting_sleep)
    bucket_with_failure.acquire()
    with pytest.raises(Interrupted):
        bucket_with_failure.acquire()
    # The interrupted caller's turn ended: the next one is served normally.
    assert bucket_with_failure.acquire() > 0
    assert bucket_with_failure.waiting() == 0


def test_request_rank_sets_the_context_and_restores_it() -> None:
    assert current_rank() == DEFAULT_RANK
    with request_rank(HIGH):
        assert current_rank() == HIGH
        with request_rank(LOW):
            assert current_rank() == LOW
        assert current_rank() == HIGH
    assert current_rank() == DEFAULT_RANK


def test_acquire_without_a_rank_uses_the_context_rank() -> None:
    bucket = PrioritisedTokenBucket(qps=20.0, burst=1, max_wait=30.0)
    _drain(bucket)
    granted: list[str] = []
    threads: list[threading.Thread] = []

    def take(label: str, rank: Rank) -> None:
        with request_rank(rank):
            bucket.acquire()
        granted.append(label)

    for label, rank in [("first", DEFAULT_RANK), ("low", LOW), ("high", HIGH)]:
        before = bucket.waiting()
        thread = threading.Thread(target=take, args=(label, rank), daemon=True)
        thread.start()
        deadline = time.monotonic() + 2.0
        while bucket.waiting() == before and time.monotonic() < deadline:
            time.sleep(0.001)
        threads.append(thread)
    _join(threads)
    assert granted == ["first", "high", "low"]


def test_no_limit_when_qps_is_not_positive() -> None:
    bucket = PrioritisedTokenBucket(qps=0, burst=1)
    assert all(bucket.acquire() == 0.0 for _ in range(100))
