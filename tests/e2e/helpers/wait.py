"""Polling with a deadline: the one way e2e tests wait for the cluster to converge.

Tests never sleep for a fixed time; they state what they expect and how long it may take, so a
slow machine only makes them slower and a real failure says what was last observed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_UNSET = object()


def wait_for(
    predicate: Callable[[], T],
    timeout: float = 30,
    interval: float = 0.2,
    message: str | Callable[[], str] = "condition was not met",
) -> T:
    """Call `predicate` until it returns a truthy value and return that value.

    Exceptions from `predicate` count as "not yet" (the object may not exist yet) and are shown
    if the deadline passes. Raises AssertionError naming `message`, the timeout and the last
    value or exception seen. A callable `message` is called only then, so it can describe the
    state at the deadline rather than the state when the wait began.
    """
    deadline = time.monotonic() + timeout
    last: object = _UNSET
    while True:
        try:
            value = predicate()
        except Exception as err:  # the cluster may not have caught up yet; retry until the deadline
            last = err
        else:
            if value:
                return value
            last = value
        if time.monotonic() >= deadline:
            seen = "nothing (predicate never returned)" if last is _UNSET else repr(last)
            raise AssertionError(f"{_describe(message)} (waited {timeout:g}s; last value: {seen})")
        time.sleep(interval)


def _describe(message: str | Callable[[], str]) -> str:
    if isinstance(message, str):
        return message
    try:
        return message()
    except Exception as err:  # the description must not hide the timeout it reports
        return f"(describing the state failed: {err!r})"
