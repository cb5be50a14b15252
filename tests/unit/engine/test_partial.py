"""Partial admission's search, with the cases of Kueue's ``TestSearch``
(kueue/pkg/scheduler/flavorassigner/podset_reducer_test.go, v0.19.2): the counts fit while
their total stays within a limit, and the search must find the largest total that does."""

from __future__ import annotations

import pytest

from controller.engine import partial

CASES = [
    # (Kueue case, [(count, minCount or None)], limit, found total or None)
    ("empty", [], 10, None),
    ("partial not available", [(1, None), (2, 2)], 2, None),
    ("partial available", [(5, 3), (5, 4), (5, 1), (5, 2)], 15, 15),
    ("one partial available", [(5, 3), (5, None), (5, None), (5, None)], 19, 19),
    ("to min", [(5, 3), (5, 4), (5, 1), (5, 2)], 10, 10),
    ("to max", [(5, 3), (5, 4), (5, 1), (5, 2)], 20, 20),
    ("no overflow", [(150_000, 1)] * 8, 150_000, 150_000),
    ("max pods on 1.27", [(150_000, 1), *[(1, None)] * 7], 150_000, 150_000),
    ("podset with replica count 0", [(0, 0)], 0, None),
]


@pytest.mark.parametrize(("source", "podsets", "limit", "want"), CASES, ids=[f"TestSearch/{c[0]}" for c in CASES])
def test_kueue_reducer_case(source: str, podsets: list[tuple[int, int | None]], limit: int, want: int | None) -> None:
    full = [count for count, _ in podsets]
    minimum = [count if low is None else low for count, low in podsets]
    tried: list[int] = []

    def fits(counts: list[int]) -> int | None:
        total = sum(counts)
        tried.append(total)
        return total if total <= limit else None

    assert partial.search(full, minimum, fits) == want, source
    # O(log slack) attempts, never one per possible count.
    assert len(tried) <= max(1, sum(full) - sum(minimum)).bit_length() + 1


def test_every_reducible_podset_gives_up_the_same_share_of_its_slack() -> None:
    assert partial.counts_at([20, 30, 15], [0, 20, 10], 15, 30) == [20, 20, 10]
