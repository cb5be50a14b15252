"""The periodic runnable's lifecycle: a failed round does not end it, a quiet one is not logged,
a period of 0 never starts it."""

from __future__ import annotations

import logging
import threading

import pytest

from controller.runtime.periodic import PeriodicRunnable


class Rounds(PeriodicRunnable):
    name = "rounds"
    quiet = (TimeoutError,)

    def __init__(self, period: float, outcomes: list[BaseException | None]) -> None:
        super().__init__(period)
        self.outcomes = outcomes
        self.calls = 0
        self.done = threading.Event()

    def tick(self) -> int:
        self.calls += 1
        if self.calls >= len(self.outcomes):
            self.done.set()
        outcome = self.outcomes[min(self.calls, len(self.outcomes)) - 1]
        if outcome is not None:
            raise outcome
        return 1


def test_a_failed_round_is_logged_and_the_next_round_still_runs(caplog: pytest.LogCaptureFixture) -> None:
    runnable = Rounds(0.01, [ValueError("strange object"), TimeoutError(), None])
    with caplog.at_level(logging.ERROR, logger="controller.runtime.periodic"):
        runnable.start()
        assert runnable.done.wait(5)
        runnable.stop()
    assert runnable.calls >= 3
    failures = [r for r in caplog.records if r.getMessage() == "periodic round failed"]
    assert len(failures) == 1 and failures[0].exc_info is not None  # the TimeoutError was quiet


def test_a_period_of_zero_never_starts_the_thread() -> None:
    runnable = Rounds(0, [None])
    runnable.start()
    runnable.stop()
    assert runnable.calls == 0 and runnable._thread is None
