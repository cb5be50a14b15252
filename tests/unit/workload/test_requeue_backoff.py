"""Requeue backoff: base·2^(n-1), capped, and the requeuing limit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controller.workload.requeue_backoff import backoff_seconds, next_requeue

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("count", "expected"),
    [(0, 0.0), (1, 60.0), (2, 120.0), (3, 240.0), (6, 1920.0), (7, 3600.0), (10_000, 3600.0)],
)
def test_backoff_doubles_from_base_and_caps_at_max(count: int, expected: float) -> None:
    assert backoff_seconds(count, 60, 3600) == expected


def test_next_requeue_counts_one_more_eviction_and_sets_requeue_at() -> None:
    decision = next_requeue(2, NOW, base_seconds=10, max_seconds=1000)
    assert decision.count == 3
    assert decision.requeue_at == NOW + timedelta(seconds=40)
    assert not decision.limit_exceeded


def test_next_requeue_past_limit_deactivates_without_requeue_time() -> None:
    at_limit = next_requeue(1, NOW, base_seconds=10, limit_count=2)
    assert not at_limit.limit_exceeded and at_limit.count == 2
    beyond = next_requeue(2, NOW, base_seconds=10, limit_count=2)
    assert beyond.limit_exceeded and beyond.requeue_at is None and beyond.count == 3


def test_zero_limit_deactivates_on_first_eviction() -> None:
    assert next_requeue(0, NOW, limit_count=0).limit_exceeded


def test_negative_previous_count_is_treated_as_zero() -> None:
    assert next_requeue(-5, NOW, base_seconds=1).count == 1
