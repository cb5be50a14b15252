"""Exact quantity parsing and formatting (pykueue.api.quantity)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykueue.api.quantity import QuantityError, format_quantity, parse_quantity, parse_quantity_exact


@pytest.mark.parametrize(
    ("text", "resource", "expected"),
    [
        ("1", "cpu", 1000),
        ("500m", "cpu", 500),
        ("0.5", "cpu", 500),
        ("1.5", "cpu", 1500),
        (".25", "cpu", 250),
        ("2.", "cpu", 2000),
        ("+3", "cpu", 3000),
        ("-2", "cpu", -2000),
        ("1k", "cpu", 1_000_000),
        ("100u", "cpu", 1),  # 0.1 milli rounds up, never under-counts
        ("1n", "cpu", 1),
        ("0", "cpu", 0),
        ("1Gi", "memory", 1024**3),
        ("1Ki", "memory", 1024),
        ("1.5Gi", "memory", 3 * 1024**3 // 2),
        ("128M", "memory", 128_000_000),
        ("1e3", "memory", 1000),
        ("1E-3", "cpu", 1),
        ("1.5", "memory", 2),  # whole units, rounded up
        ("20", "pods", 20),
        ("4", "nvidia.com/gpu", 4),
        (20, "cpu", 20_000),
        (0.5, "cpu", 500),
        ("  3  ", "pods", 3),
    ],
)
def test_parse_quantity(text: str | int | float, resource: str, expected: int) -> None:
    assert parse_quantity(text, resource=resource) == expected


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "1Kb", "1K", "--1", "1e", "e3", "1ee3", "1e99999", "m", True, None, [1]])
def test_parse_quantity_rejects_garbage(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text, resource="cpu")  # type: ignore[arg-type]


def test_exact_arithmetic_has_no_float_error() -> None:
    total = parse_quantity("0.1", "cpu") + parse_quantity("0.2", "cpu")
    assert total == parse_quantity("300m", "cpu")
    assert parse_quantity_exact("0.1") + parse_quantity_exact("0.2") == Fraction(3, 10)


@pytest.mark.parametrize(
    ("amount", "resource", "expected"),
    [
        (1500, "cpu", "1500m"),
        (2000, "cpu", "2"),
        (0, "cpu", "0"),
        (1024**3, "memory", "1Gi"),
        (3 * 1024**2, "memory", "3Mi"),
        (5000, "memory", "5k"),
        (7, "pods", "7"),
        (-2048, "memory", "-2Ki"),
    ],
)
def test_format_quantity(amount: int, resource: str, expected: str) -> None:
    assert format_quantity(amount, resource) == expected


@given(st.integers(min_value=-(10**20), max_value=10**20), st.sampled_from(["cpu", "memory", "pods"]))
def test_format_then_parse_round_trips(amount: int, resource: str) -> None:
    assert parse_quantity(format_quantity(amount, resource), resource) == amount


@given(
    st.integers(min_value=0, max_value=10**15),
    st.sampled_from(["", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"]),
    st.sampled_from(["cpu", "memory"]),
)
def test_fast_path_agrees_with_exact_parsing(number: int, suffix: str, resource: str) -> None:
    import math

    exact = parse_quantity_exact(f"{number}{suffix}") * (1000 if resource == "cpu" else 1)
    assert parse_quantity(f"{number}{suffix}", resource) == math.ceil(exact)


def test_a_remembered_string_answers_the_same_and_a_refused_one_is_refused_again() -> None:
    """String conversions are remembered per (string, resource): the same string parses the same
    whatever resource asked first, and a refusal is never remembered as an answer."""
    assert parse_quantity("1500m", resource="cpu") == 1500
    assert parse_quantity("1500m", resource="memory") == 2
    assert parse_quantity("1500m", resource="cpu") == 1500
    for _ in range(2):
        with pytest.raises(QuantityError):
            parse_quantity("12 apples", resource="cpu")
