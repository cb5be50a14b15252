"""The e2e poll helper: returns the first truthy value, or fails saying what it last saw."""

from __future__ import annotations

import itertools

import pytest

from tests.e2e.helpers.wait import wait_for


def test_returns_the_first_truthy_value() -> None:
    values = iter([None, [], {"ready": True}])
    assert wait_for(lambda: next(values), timeout=5, interval=0) == {"ready": True}


def test_exceptions_count_as_not_yet() -> None:
    calls = itertools.count()

    def flaky() -> str:
        if next(calls) < 2:
            raise LookupError("not created yet")
        return "there"

    assert wait_for(flaky, timeout=5, interval=0) == "there"


def test_timeout_reports_the_message_and_last_value() -> None:
    with pytest.raises(AssertionError, match=r"^3 pods scheduled \(waited 0.05s; last value: \[\]\)$"):
        wait_for(lambda: [], timeout=0.05, interval=0.01, message="3 pods scheduled")


def test_timeout_reports_the_last_exception() -> None:
    def missing() -> None:
        raise KeyError("pod-1")

    with pytest.raises(AssertionError, match=r"pod exists .*KeyError\('pod-1'\)"):
        wait_for(missing, timeout=0.05, interval=0.01, message="pod exists")


def test_a_callable_message_describes_the_state_at_the_deadline() -> None:
    state = {"phase": "Pending"}

    def running() -> bool:
        state["phase"] = "Terminating"  # what the cluster shows by the time the wait gives up
        return False

    with pytest.raises(AssertionError, match=r"^pod runs \(now Terminating\) \(waited"):
        wait_for(running, timeout=0.05, interval=0.01, message=lambda: f"pod runs (now {state['phase']})")
