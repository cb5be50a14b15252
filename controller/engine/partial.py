"""Partial admission: the largest reduction of a workload's pod counts that can be admitted.

A podSet with ``minCount`` (at most one per workload, the webhook checks) may run with fewer pods
than ``count`` when the whole workload does not fit. Like Kueue's ``PodSetReducer``
(kueue/pkg/scheduler/flavorassigner/podset_reducer.go), every reducible podSet gives up the same
fraction of its slack (``count - minCount``) at each step, and a binary search over the total
slack finds the smallest reduction that fits: O(log slack) flavor assignments, never a scan of
every count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

R = TypeVar("R")


def counts_at(full: Sequence[int], slack: Sequence[int], step: int, total: int) -> list[int]:
    """The pod counts after ``step`` of ``total`` reduction steps (0: full counts)."""
    return [count - (delta * step) // total for count, delta in zip(full, slack, strict=True)]


def search(full: Sequence[int], minimum: Sequence[int], fits: Callable[[list[int]], R | None]) -> R | None:
    """The result of ``fits`` for the least reduced counts it accepts, or None.

    ``fits`` returns None when the counts do not fit. It is assumed monotone (fewer pods never
    fit worse), which is what makes the binary search exact. The full counts are not tried: the
    caller already knows they do not fit.
    """
    slack = [count - low for count, low in zip(full, minimum, strict=True)]
    total = sum(slack)
    if total <= 0:
        return None
    best: R | None = None
    low, high = 1, total  # the smallest step in [low, high] that fits
    while low <= high:
        step = (low + high) // 2
        result = fits(counts_at(full, slack, step, total))
        if result is not None:
            best = result
            high = step - 1
        else:
            low = step + 1
    return best
