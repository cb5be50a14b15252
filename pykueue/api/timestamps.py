"""RFC 3339 timestamps as the API serves them (``2026-11-21T21:09:55Z``), to and from ``datetime``.

Every time the controllers compare (admission time against the PodsReady timeout, ``requeueAt``
against now) comes from an object field, so parsing must accept what the apiserver writes
(second precision, ``Z``) and tolerate fractions and offsets written by other clients.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current time, timezone-aware, truncated to whole seconds like metav1.Time."""
    return datetime.now(UTC).replace(microsecond=0)


def format_time(moment: datetime) -> str:
    """``2026-11-21T21:09:55Z``: metav1.Time's wire format (second precision, UTC)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
