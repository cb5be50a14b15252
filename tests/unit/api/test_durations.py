"""``parse_duration``: Go's ``time.ParseDuration`` in seconds."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api.durations import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("-0", 0.0),
        ("+0", 0.0),
        ("0s", 0.0),
        ("90s", 90.0),
        ("10m", 600.0),
        ("1h30m", 5400.0),
        ("0.5h", 1800.0),
        ("1.5s", 1.5),
        (".5s", 0.5),
        ("1.s", 1.0),
        ("300ms", 0.3),
        ("2us", 2e-6),
        ("2µs", 2e-6),  # micro sign U+00B5
        ("2μs", 2e-6),  # Greek mu U+03BC
        ("5ns", 5e-9),
        ("1h1m1s1ms", 3661.001),
        ("-1.5s", -1.5),
        ("+2m", 120.0),
        ("1m1m", 120.0),
    ],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text", ["", "-", "+", "1", "15", "s", ".", ".s", "1sec", "1d", "1 s", " 1s", "1s ", "--1s", "1h-30m", "1e3s", "fifteen"]
)
def test_invalid_durations_raise(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize("value", [None, 15, 1.5, True, ["1s"]])
def test_non_strings_raise(value: Any) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)
