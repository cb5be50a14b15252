"""A rate-limited, delaying work queue with client-go's semantics (util/workqueue).

* **Fair**: keys come out in the order they were first added.
* **Stingy**: a key added many times before a worker picks it up is processed once; a key is
  never handed to two workers at once. A key re-added *while* it is being processed is queued
  again when the worker calls :meth:`WorkQueue.done`, so the last change is never lost.
* **Delays**: :meth:`WorkQueue.add_after` parks a key until a deadline (requeue-after results,
  backoff); :meth:`WorkQueue.add_rate_limited` asks the rate limiter how long to park it.
* **Shutdown**: :meth:`WorkQueue.shutdown` wakes every waiting worker; ``get`` then returns None.

Waiting keys are kept in a heap and promoted by whichever thread calls ``get``, so the queue needs
no thread of its own.
"""

from __future__ import annotations

import heapq
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar

from prometheus_client import Counter, Gauge, Histogram

from pykueue.kube.backoff import TokenBucket

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)
Clock = Callable[[], float]

# controller-runtime's workqueue metric names, which Kueue exports.
DEPTH = Gauge("workqueue_depth", "Current depth of the work queue.", ["name"])
ADDS = Counter("workqueue_adds_total", "Keys added to the work queue.", ["name"])
QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds",
    "How long a key waits in the queue before a worker takes it.",
    ["name"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60),
)
WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds",
    "How long processing one key takes.",
    ["name"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60),
)
RETRIES = Counter("workqueue_retries_total", "Keys re-queued through the rate limiter.", ["name"])
UNFINISHED = Gauge(
    "workqueue_unfinished_work_seconds", "Seconds of work in progress not yet finished.", ["name"]
)
LONGEST_RUNNING = Gauge(
    "workqueue_longest_running_processor_seconds", "Age of the oldest key being processed.", ["name"]
)


class RateLimiter(Protocol[T_contra]):
    def when(self, item: T_contra) -> float:
        """Seconds to wait before the item may be retried; records one more failure."""

    def forget(self, item: T_contra) -> None:
        """Reset the item's failure history (call after it succeeded)."""

    def num_requeues(self, item: T_contra) -> int: ...


class ItemExponentialFailureRateLimiter(Generic[T]):
    """``base * 2**failures`` per item, capped: 5 ms, 10 ms, ... up to 1000 s (client-go)."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[T, int] = {}
        self._lock = threading.Lock()

    def when(self, item: T) -> float:
        with self._lock:
            failures = self._failures.get(item, 0)
            self._failures[item] = failures + 1
        if failures >= 64:  # 2**64 overflows float precision long before; cap early
            return self.max_delay
        return min(self.max_delay, self.base_delay * (2**failures))

    def forget(self, item: T) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class BucketRateLimiter(Generic[T]):
    """An overall token bucket (10 qps, burst 100) shared by every item: caps retry storms."""

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock = time.monotonic) -> None:
        self._bucket = TokenBucket(qps, burst, clock=clock)

    def when(self, item: T) -> float:
        return self._bucket.reserve()

    def forget(self, item: T) -> None:
        pass

    def num_requeues(self, item: T) -> int:
        return 0


class MaxOfRateLimiter(Generic[T]):
    """The longest delay any of the limiters asks for."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        self._limiters = limiters

    def when(self, item: T) -> float:
        return max(limiter.when(item) for limiter in self._limiters)

    def forget(self, item: T) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)


def default_rate_limiter(clock: Clock = time.monotonic) -> MaxOfRateLimiter[Hashable]:
    """client-go's ``DefaultControllerRateLimiter``: per-item 5 ms..1000 s, overall 10 qps burst 100."""
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(), BucketRateLimiter(clock=clock))


class WorkQueue(Generic[T]):
    """See the module docstring. ``name`` labels the metrics."""

    def __init__(
        self,
        name: str,
        rate_limiter: RateLimiter[T] | None = None,
        *,
        clock: Clock = time.monotonic,
    ) -> None:
        self.name = name
        # The labelled metric children, resolved once: prometheus_client's labels() takes a lock and
        # a dict lookup, and add/get/done run for every informer event (8 % of the controller's CPU
        # in the baseline benchmark when looked up per call).
        self._adds = ADDS.labels(name)
        self._depth = DEPTH.labels(name)
        self._retries = RETRIES.labels(name)
        self._queue_duration = QUEUE_DURATION.labels(name)
        self._work_duration = WORK_DURATION.labels(name)
        self._clock = clock
        self._rate_limiter: RateLimiter[T] = rate_limiter or default_rate_limiter(clock)
        self._cond = threading.Condition()
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: dict[T, float] = {}  # item -> start time
        self._added_at: dict[T, float] = {}
        self._waiting: list[tuple[float, int, T]] = []  # heap of (ready time, serial, item)
        self._ready_at: dict[T, float] = {}  # earliest ready time per waiting item
        self._serial = 0
        self._shutting_down = False
        self._drain = False
        # The two gauges of work in progress are computed when scraped (client-go refreshes them
        # every 500 ms from a goroutine): fresh while a worker hangs, and nothing per done().
        # A weak reference, so the registry does not keep a discarded queue alive.
        this = weakref.ref(self)
        UNFINISHED.labels(name).set_function(lambda: _ages(this)[0])
        LONGEST_RUNNING.labels(name).set_function(lambda: _ages(this)[1])

    # --- adding --------------------------------------------------------------------------------

    def add(self, item: T) -> None:
        """Queue ``item`` unless it is already queued; if it is being processed, queue it after."""
        with self._cond:
            self._add_locked(item)

    def _add_locked(self, item: T) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self._adds.inc()
        self._dirty.add(item)
        self._added_at.setdefault(item, self._clock())
        if item in self._processing:
            return
        self._queue.append(item)
        self._depth.set(len(self._queue))
        self._cond.notify()

    def add_after(self, item: T, delay: float) -> None:
        """Queue ``item`` after ``delay`` seconds; an earlier pending deadline for it wins."""
        if delay <= 0:
            self.add(item)
            return
        with self._cond:
            if self._shutting_down:
                return
            ready = self._clock() + delay
            current = self._ready_at.get(item)
            if current is not None and current <= ready:
                return
            self._ready_at[item] = ready
            self._serial += 1
            heapq.heappush(self._waiting, (ready, self._serial, item))
            self._cond.notify()

    def add_rate_limited(self, item: T) -> None:
        """Queue ``item`` after the rate limiter's delay (its per-item backoff grows each time)."""
        self._retries.inc()
        self.add_after(item, self._rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset ``item``'s backoff: call when it was processed successfully."""
        self._rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self._rate_limiter.num_requeues(item)

    # --- processing ------------------------------------------------------------------------------

    def get(self, timeout: float | None = None) -> T | None:
        """Block for the next item and mark it processing; None on shutdown (or on timeout).

        The caller must call :meth:`done` for every item it got, even when processing failed.
        """
        # The timeout is real time even when tests inject a clock for the delays.
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                self._promote_ready_locked()
                if self._queue:
                    break
                if self._shutting_down:
                    return None
                wait = self._next_wait_locked()
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    wait = remaining if wait is None else min(wait, remaining)
                self._cond.wait(wait)
            item = self._queue.popleft()
            now = self._clock()
            self._processing[item] = now
            self._dirty.discard(item)
            added = self._added_at.pop(item, now)
            self._queue_duration.observe(max(0.0, now - added))
            self._depth.set(len(self._queue))
            return item

    def done(self, item: T) -> None:
        """Finish processing ``item``; re-queue it if it was added meanwhile."""
        with self._cond:
            started = self._processing.pop(item, None)
            if started is not None:
                self._work_duration.observe(max(0.0, self._clock() - started))
            if item in self._dirty:
                self._queue.append(item)
                self._depth.set(len(self._queue))
                self._cond.notify()
            if not self._processing:
                self._cond.notify_all()

    # --- lifecycle ---------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Refuse new items and release every waiting ``get`` (which then returns None).

        Items still queued are dropped: the next leader or process re-lists and re-enqueues.
        """
        with self._cond:
            self._shutting_down = True
            self._queue.clear()
            self._dirty.clear()
            self._waiting.clear()
            self._ready_at.clear()
            self._depth.set(0)
            self._cond.notify_all()

    def shutdown_with_drain(self, timeout: float | None = None) -> bool:
        """Shut down, then wait until in-flight items are done; False if ``timeout`` expired.

        The timeout is real time, as in :meth:`get`: an injected clock drives delays only, and a
        frozen test clock must not turn a bounded drain into an endless one.
        """
        self.shutdown()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._processing:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining if remaining is not None else 1.0)
        return True

    @property
    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    def __len__(self) -> int:
        """Items ready to be processed (not counting delayed or in-flight ones)."""
        with self._cond:
            self._promote_ready_locked()
            return len(self._queue)

    def waiting(self) -> int:
        """Items parked by ``add_after`` that are not yet due."""
        with self._cond:
            return len(self._ready_at)

    def processing(self) -> int:
        with self._cond:
            return len(self._processing)

    # --- internals ---------------------------------------------------------------------------------

    def _promote_ready_locked(self) -> None:
        now = self._clock()
        while self._waiting and self._waiting[0][0] <= now:
            ready, _, item = heapq.heappop(self._waiting)
            if self._ready_at.get(item) != ready:
                continue  # superseded by an earlier deadline for the same item
            del self._ready_at[item]
            self._add_locked(item)

    def _next_wait_locked(self) -> float | None:
        if not self._waiting:
            return None
        return max(0.0, self._waiting[0][0] - self._clock())

    def processing_ages(self) -> tuple[float, float]:
        """Seconds of work in progress, summed over the keys being processed, and the oldest's."""
        with self._cond:
            now = self._clock()
            ages = [now - started for started in self._processing.values()]
        return sum(ages), max(ages, default=0.0)


def _ages(queue: weakref.ref[WorkQueue[Any]]) -> tuple[float, float]:
    """:meth:`WorkQueue.processing_ages` of a queue still alive, else zeros."""
    alive = queue()
    return alive.processing_ages() if alive is not None else (0.0, 0.0)
