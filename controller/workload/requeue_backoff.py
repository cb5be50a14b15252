"""Requeue backoff after evictions that must not retry at once (PodsReady timeout).

Kueue's workload controller counts evictions in ``status.requeueState.count`` and waits
``base * 2^(count-1)`` seconds (capped) before the workload may be scheduled again, so a job whose
pods never become ready does not hog the head of its queue. Past ``backoffLimitCount`` the workload
is deactivated instead of requeued. Kueue adds a tiny random jitter; we keep the delay exact so
that the same inputs always give the same ``requeueAt`` (tests and restarts agree).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

DEFAULT_BACKOFF_BASE_SECONDS = 60
DEFAULT_BACKOFF_MAX_SECONDS = 3600


def backoff_seconds(count: int, base_seconds: float, max_seconds: float) -> float:
    """Delay before the ``count``-th requeue: ``base * 2^(count-1)``, never above ``max_seconds``.

    ``count`` is 1 for the first eviction. Large counts must not overflow a float exponent, so
    the doubling stops as soon as the cap is reached.
    """
    if count <= 0 or base_seconds <= 0:
        return 0.0
    delay = float(base_seconds)
    for _ in range(count - 1):
        delay *= 2
        if delay >= max_seconds:
            return float(max_seconds)
    return min(delay, float(max_seconds))


@dataclass(frozen=True, slots=True)
class RequeueDecision:
    """Outcome of one more eviction: the new count, when the workload may return, or deactivation."""

    count: int
    requeue_at: datetime | None
    limit_exceeded: bool


def next_requeue(
    previous_count: int,
    now: datetime,
    *,
    base_seconds: float = DEFAULT_BACKOFF_BASE_SECONDS,
    max_seconds: float = DEFAULT_BACKOFF_MAX_SECONDS,
    limit_count: int | None = None,
) -> RequeueDecision:
    """Count one more eviction and say when the workload may be requeued.

    ``limit_count`` of ``None`` means unlimited retries (Kueue's default). When the new count
    exceeds the limit, the workload is to be deactivated with ``RequeuingLimitExceeded`` and gets
    no ``requeueAt``.
    """
    count = max(0, previous_count) + 1
    if limit_count is not None and count > limit_count:
        return RequeueDecision(count=count, requeue_at=None, limit_exceeded=True)
    delay = backoff_seconds(count, base_seconds, max_seconds)
    return RequeueDecision(count=count, requeue_at=now + timedelta(seconds=delay), limit_exceeded=False)
