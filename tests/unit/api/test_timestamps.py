"""``pykueue.api.timestamps``: metav1.Time and MicroTime on the wire, and the engine's epoch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from pykueue.api.timestamps import (
    format_micro_time,
    format_time,
    now_time,
    parse_epoch,
    parse_time,
    utcnow,
)

MOMENT = datetime(2026, 11, 21, 21, 9, 55, 123456, tzinfo=UTC)


def test_time_has_second_precision_and_micro_time_microseconds() -> None:
    assert format_time(MOMENT) == "2026-11-21T21:09:55Z"
    assert format_micro_time(MOMENT) == "2026-11-21T21:09:55.123456Z"


def test_formats_convert_to_utc_and_take_naive_values_as_utc() -> None:
    plus_two = MOMENT.astimezone(timezone(timedelta(hours=2)))
    assert format_time(plus_two) == "2026-11-21T21:09:55Z"
    assert format_micro_time(plus_two) == "2026-11-21T21:09:55.123456Z"
    naive = MOMENT.replace(tzinfo=None)
    assert format_time(naive) == "2026-11-21T21:09:55Z"
    assert format_micro_time(naive) == "2026-11-21T21:09:55.123456Z"


def test_now_is_whole_seconds() -> None:
    assert utcnow().microsecond == 0
    assert parse_time(now_time()) is not None
    assert now_time().endswith("Z") and "." not in now_time()


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-21T21:09:55Z",
        "2026-11-21T21:09:55z",
        "2026-11-21T23:09:55+02:00",
        "2026-11-21T21:09:55.000000Z",
        "2026-11-21T21:09:55",  # no offset: UTC
    ],
)
def test_parse_accepts_what_clients_write(text: str) -> None:
    assert parse_time(text) == MOMENT.replace(microsecond=0)
    assert parse_epoch(text) == MOMENT.replace(microsecond=0).timestamp()


@pytest.mark.parametrize("value", [None, "", "yesterday", 1700000000, "2026-13-01T00:00:00Z", {"a": 1}, ["x"]])
def test_parse_never_raises(value: object) -> None:
    assert parse_time(value) is None
    assert parse_epoch(value) is None


def test_micro_time_round_trips() -> None:
    assert parse_time(format_micro_time(MOMENT)) == MOMENT
