"""RFC 3339 timestamps as the API serves them (``2026-11-21T21:09:55Z``), to and from ``datetime``.

The one home of the wire formats: metav1.Time (second precision), metav1.MicroTime (Lease
``acquireTime``/``renewTime``, microseconds), and the engine's float epoch seconds.

Every time the controllers compare (admission time against the PodsReady timeout, ``requeueAt``
against now) comes from an object field, so parsing must accept what the apiserver writes
(second precision, ``Z``) and tolerate fractions and offsets written by other clients.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache


def utcnow() -> datetime:
    """The current time, timezone-aware, truncated to whole seconds like metav1.Time."""
    return datetime.now(UTC).replace(microsecond=0)


def _utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive datetime is taken to be UTC already, as :func:`parse_time` does."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def format_time(moment: datetime) -> str:
    """``2026-11-21T21:09:55Z``: metav1.Time's wire format (second precision, UTC)."""
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_time() -> str:
    """The current time as metav1.Time serialises it (condition ``lastTransitionTime``, events)."""
    return format_time(utcnow())


def format_micro_time(moment: datetime) -> str:
    """``2026-11-21T21:09:55.123456Z``: metav1.MicroTime's wire format (Lease times)."""
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: object) -> datetime | None:
    """Parse an API timestamp; ``None`` for absent or malformed values (never raises)."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def parse_epoch(value: object) -> float | None:
    """An API timestamp as seconds since the epoch (the engine's clock); ``None`` when absent or
    malformed (never raises).

    The engine reads several timestamps from every Workload update, and at second precision
    most of them repeat (a cycle's reservations share their ``lastTransitionTime``), so the
    conversion of a string is remembered: the answer depends on the string alone."""
    return _epoch_of(value) if isinstance(value, str) else None


@lru_cache(maxsize=4096)
def _epoch_of(text: str) -> float | None:
    parsed = parse_time(text)
    return None if parsed is None else parsed.timestamp()
