"""The client's QPS/burst limiter, handing tokens to waiting callers by rank instead of arrival.

A plain token bucket (:class:`pykueue.kube.backoff.TokenBucket`, client-go's) serves callers in
the order they asked. When the controller is bound by its QPS (Kueue's scheduler benchmark runs
it at 50), that order decides who waits: a high-priority workload's reservation, or the eviction
that frees room for it, queues behind status patches and low-priority reservations that happened
to ask first. :class:`PrioritisedTokenBucket` spends exactly the same tokens at exactly the same
rate; it only chooses *which* waiting caller gets the next one:

* callers name their rank through :func:`request_rank` (a context variable, so a thread pool's
  job sets it around its own requests and nothing else needs a parameter); a higher rank goes
  first, equal ranks in arrival order; an untagged request has :data:`DEFAULT_RANK`;
* a caller that has waited :attr:`PrioritisedTokenBucket.max_wait` seconds is served before any
  rank, in arrival order: low ranks (queue status, pending reasons) are delayed under load, never
  starved, so what they write stays eventually true.

Tokens are granted one at a time: the chosen caller takes the next token (possibly in debt, as
``TokenBucket.reserve``) and sleeps until it is due, and only when that sleep ends is the next
caller chosen. So a higher rank that arrives while others wait overtakes all of them but the one
already sleeping for its token (at most ``1 / qps`` seconds).
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from pykueue.kube.backoff import Clock, Sleep

# (class, order within the class): compared as tuples, higher first.
Rank = tuple[int, int]
DEFAULT_RANK: Rank = (0, 0)
# Past this wait a caller goes first whatever its rank (starvation bound).
DEFAULT_MAX_WAIT_SECONDS = 2.0
# A waiter re-checks at least this often, so a lost wake-up costs latency, never a hang.
_RECHECK_SECONDS = 0.5

_current_rank: contextvars.ContextVar[Rank] = contextvars.ContextVar("pykueue_request_rank", default=DEFAULT_RANK)


def current_rank() -> Rank:
    """The rank requests made by the calling thread (context) are sent with."""
    return _current_rank.get()


@contextlib.contextmanager
def request_rank(rank: Rank) -> Iterator[None]:
    """Send the requests made inside the block with ``rank`` (restored on exit, also nested)."""
    token = _current_rank.set(rank)
    try:
        yield
    finally:
        _current_rank.reset(token)


@dataclass(eq=False, slots=True)
class _Waiter:
    rank: Rank
    serial: int
    since: float
    wake: threading.Condition = field(repr=False)


class PrioritisedTokenBucket:
    """``qps`` tokens per second, bursts up to ``burst``; waiting callers served by rank.

    Drop-in for :class:`TokenBucket` in :class:`pykueue.kube.client.KubeClient` (``qps``,
    ``burst``, ``acquire()``), thread-safe. ``qps <= 0`` disables the limit.
    """

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        max_wait: float = DEFAULT_MAX_WAIT_SECONDS,
        clock: Clock = time.monotonic,
        sleep: Sleep = time.sleep,
    ) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self.max_wait = max_wait
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = threading.Lock()
        self._waiters: list[_Waiter] = []
        self._granting = False  # a chosen caller is sleeping until its token is due
        self._serials = itertools.count()

    def waiting(self) -> int:
        """Callers blocked in :meth:`acquire`: queued, or sleeping until their token is due."""
        with self._lock:
            return len(self._waiters) + (1 if self._granting else 0)

    def acquire(self, rank: Rank | None = None) -> float:
        """Block until the caller may send; returns the time waited. ``rank`` defaults to the
        context's :func:`current_rank`."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            self._refill(now)
            if not self._granting and not self._waiters and self._tokens >= 1.0:
                self._tokens -= 1.0
                return 0.0
            me = _Waiter(current_rank() if rank is None else rank, next(self._serials), now, threading.Condition(self._lock))
            self._waiters.append(me)
            try:
                while self._granting or self._next(self._clock()) is not me:
                    me.wake.wait(_RECHECK_SECONDS)
            except BaseException:
                self._waiters.remove(me)
                self._wake_next()
                raise
            self._waiters.remove(me)
            self._granting = True
            now = self._clock()
            self._refill(now)
            self._tokens -= 1.0
            delay = max(0.0, -self._tokens / self.qps)
            queued = now - me.since
        try:
            if delay > 0:
                self._sleep(delay)
        finally:
            with self._lock:
                self._granting = False
                self._wake_next()
        return queued + delay

    def _refill(self, now: float) -> None:
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now

    def _next(self, now: float) -> _Waiter | None:
        """Lock held. Who gets the next token: the longest-waiting caller past ``max_wait``,
        else the highest rank, first come first served within a rank."""
        if not self._waiters:
            return None
        oldest = min(self._waiters, key=lambda w: w.serial)
        if now - oldest.since >= self.max_wait:
            return oldest
        return max(self._waiters, key=lambda w: (w.rank, -w.serial))

    def _wake_next(self) -> None:
        """Lock held: wake the caller that is next (the others keep sleeping)."""
        chosen = self._next(self._clock())
        if chosen is not None:
            chosen.wake.notify()
