"""Client-side pacing: a token bucket (QPS/burst) and jittered exponential backoff.

Both take an injectable clock and sleep so tests can drive them without waiting, and both are
thread-safe because one client is shared by every worker and reflector thread.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

Clock = Callable[[], float]
Sleep = Callable[[float], None]

# The longest a low-priority caller sleeps before it looks at a busy bucket again.
SPARE_POLL_SECONDS = 1.0


class TokenBucket:
    """Allow ``qps`` requests per second on average with bursts of up to ``burst``.

    This is client-go's ``flowcontrol.NewTokenBucketRateLimiter``: it protects the apiserver from
    a controller that wakes up with thousands of keys to sync (after a relist, say). ``qps <= 0``
    disables the limit.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock = time.monotonic, sleep: Sleep = time.sleep) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        """Add the tokens earned since the last call, up to the burst (caller holds the lock)."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now

    def reserve(self) -> float:
        """Take one token now and return how long the caller must wait before using it."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            self._refill()
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.qps

    def acquire(self) -> float:
        """Block until a token is available; returns the time waited (for metrics and tests)."""
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
        return delay

    @property
    def headroom(self) -> float:
        """What :meth:`acquire_spare` leaves in the bucket for :meth:`acquire`: half the burst
        (none with a burst of 1, whose single token is all there is)."""
        return float(self.burst // 2)

    def try_spare(self) -> float:
        """Take a token only if the bucket keeps :attr:`headroom` tokens after it; 0.0 when
        taken, else how long until it might (no caller of :meth:`acquire` is waiting then).

        A caller in debt (:meth:`reserve` went below zero) makes the bucket hold less than the
        headroom until its wait is over, so nothing spare is taken while anyone waits.
        """
        if self.qps <= 0:
            return 0.0
        with self._lock:
            self._refill()
            missing = self.headroom + 1.0 - self._tokens
            if missing <= 0:
                self._tokens -= 1.0
                return 0.0
            return missing / self.qps

    def acquire_spare(self, max_poll: float = SPARE_POLL_SECONDS) -> float:
        """Block until a *spare* token is available (:meth:`try_spare`); returns the time waited.

        The low-priority lane of one shared budget: requests that may wait (Events) go through
        here and take only what the requests that should not wait (admissions, status writes,
        through :meth:`acquire`) leave over, so the sum of both stays within ``qps``/``burst``
        as with one client-go rate limiter, and a burst of low-priority work cannot empty the
        bucket before an admission needs it. While the bucket is busy the caller re-checks
        at least every ``max_poll`` seconds (it cannot know when the others stop).
        """
        waited = 0.0
        while True:
            delay = self.try_spare()
            if delay <= 0:
                return waited
            delay = min(delay, max_poll)
            self._sleep(delay)
            waited += delay


class Backoff:
    """Exponential backoff with full jitter and a reset after a healthy period.

    client-go's reflector uses 800 ms doubling to 30 s with jitter, reset after 2 minutes without
    failures: enough to keep a broken apiserver from being hammered (about 0.2 QPS per reflector)
    while recovering quickly from a single blip.
    """

    def __init__(
        self,
        initial: float = 0.8,
        maximum: float = 30.0,
        factor: float = 2.0,
        reset_after: float = 120.0,
        *,
        clock: Clock = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.reset_after = reset_after
        self._clock = clock
        self._rng = rng or random.Random()
        self._current = 0.0
        self._last_failure: float | None = None
        self._lock = threading.Lock()

    def next_delay(self) -> float:
        """Record a failure and return how long to wait before the next attempt."""
        with self._lock:
            now = self._clock()
            if self._last_failure is not None and now - self._last_failure > self.reset_after:
                self._current = 0.0
            self._last_failure = now
            self._current = self.initial if self._current == 0 else min(self.maximum, self._current * self.factor)
            # Jitter between half and the full step: spreads reconnect storms without ever
            # collapsing to zero (a zero wait would turn a hard failure into a hot loop).
            return self._current * (0.5 + 0.5 * self._rng.random())

    def reset(self) -> None:
        """Forget past failures (call after a success that proves the peer is healthy)."""
        with self._lock:
            self._current = 0.0
            self._last_failure = None
