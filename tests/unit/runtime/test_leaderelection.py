"""Leader election state machine with a fake clock and an in-memory compare-and-swap lock."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pytest

from controller.runtime.leaderelection import (
    Callbacks,
    ElectionConfig,
    LeaderElector,
    LeaderRecord,
    ObservedLease,
    State,
)
from tests.unit.runtime.memory_lock import MemoryLock


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Recorder:
    started: list[threading.Event] = field(default_factory=list)
    stopped: int = 0
    leaders: list[str] = field(default_factory=list)

    def callbacks(self) -> Callbacks:
        return Callbacks(
            on_started_leading=self.started.append,
            on_stopped_leading=self._stopped,
            on_new_leader=self.leaders.append,
        )

    def _stopped(self) -> None:
        self.stopped += 1


def elector(identity: str, lock: MemoryLock, clock: FakeClock, recorder: Recorder | None = None) -> LeaderElector:
    config = ElectionConfig("pykueue", "pykueue-system", identity)
    return LeaderElector(config, lock, (recorder or Recorder()).callbacks(), clock=clock)


def wait_started(recorder: Recorder) -> None:
    for _ in range(500):
        if recorder.started:
            return
        threading.Event().wait(0.002)
    raise AssertionError("on_started_leading was not called")


def test_first_candidate_creates_the_lease_and_leads() -> None:
    clock, lock, rec = FakeClock(), MemoryLock(), Recorder()
    a = elector("a", lock, clock, rec)
    assert a.tick() == 2.0
    assert a.state is State.LEADING
    assert lock.lease.record.holder_identity == "a"
    assert lock.lease.record.lease_duration_seconds == 15
    wait_started(rec)
    assert rec.leaders == ["a"]


def test_standby_waits_the_lease_duration_of_its_own_observation_before_taking_over() -> None:
    clock, lock = FakeClock(), MemoryLock()
    a, b = elector("a", lock, clock), elector("b", lock, clock)
    a.tick()
    b.tick()
    assert b.state is State.FOLLOWING
    assert b.observed_leader == "a"
    # a dies; b only knows the record stopped changing when it first saw it (t=0).
    clock.now = 14.9
    b.tick()
    assert b.state is State.FOLLOWING, "lease not yet expired by b's clock"
    clock.now = 15.1
    b.tick()
    assert b.state is State.LEADING
    assert lock.lease.record.holder_identity == "b"
    assert lock.lease.record.lease_transitions == 1
    assert b.observed_leader == "b"


def test_standby_counts_from_its_previous_read_and_wakes_at_expiry() -> None:
    clock, lock = FakeClock(), MemoryLock()
    a, b = elector("a", lock, clock), elector("b", lock, clock)
    clock.now = 100.0
    a.tick()
    b.tick()  # t=100: sees a's record
    clock.now = 101.0
    a.tick()  # t=101: a's last renewal, then a dies
    clock.now = 102.0
    b.tick()  # t=102: sees the renewal; it happened after t=100
    clock.now = 114.0
    delay = b.tick()
    assert b.state is State.FOLLOWING
    assert delay == pytest.approx(1.0), "b wakes up exactly when the lease expires (100 + 15)"
    clock.now = 115.0
    b.tick()
    assert b.state is State.LEADING, "taken over 14 s after a's last renewal, not 17 s"


def test_after_a_long_read_gap_the_standby_counts_from_now() -> None:
    clock, lock = FakeClock(), MemoryLock()
    a, b = elector("a", lock, clock), elector("b", lock, clock)
    a.tick()
    b.tick()  # t=0
    for t in range(2, 31, 2):  # a renews; b cannot read the lease meanwhile
        clock.now = float(t)
        a.tick()
    clock.now = 30.5
    b.tick()  # sees a fresh renewal after 30 s without reads: must not treat it as 30 s old
    assert b.state is State.FOLLOWING
    clock.now = 31.0
    a.tick()
    clock.now = 40.0
    b.tick()
    assert b.state is State.FOLLOWING
    assert a.state is State.LEADING


def test_leader_wakes_up_at_its_renew_deadline() -> None:
    clock, lock = FakeClock(), MemoryLock()
    a = elector("a", lock, clock)
    a.tick()
    lock.failing = True
    clock.now = 9.5
    assert a.tick() == pytest.approx(0.5)
    clock.now = 10.0
    a.tick()
    assert a.state is State.STOPPED


def test_renewals_keep_the_standby_out() -> None:
    clock, lock = FakeClock(), MemoryLock()
    a, b = elector("a", lock, clock), elector("b", lock, clock)
    a.tick()
    for _ in range(20):
        clock.now += 2
        a.tick()
        b.tick()
    assert a.state is State.LEADING and b.state is State.FOLLOWING
    assert lock.lease.record.holder_identity == "a"
    assert lock.lease.record.lease_transitions == 0


def test_remote_timestamps_are_ignored_only_local_observation_counts() -> None:
    clock, lock = FakeClock(), MemoryLock()
    # A record written by a leader whose clock is far in the past: its renewTime looks ancient.
    lock.lease = ObservedLease(LeaderRecord("a", 15, "1999-01-01T00:00:00.000000Z", "1999-01-01T00:00:00.000000Z"), "7")
    clock.now = 1000.0
    b = elector("b", lock, clock)
    b.tick()
    assert b.state is State.FOLLOWING, "b must wait a full lease duration from its first observation"


def test_leader_that_cannot_renew_within_the_deadline_stops_leading() -> None:
    clock, lock, rec = FakeClock(), MemoryLock(), Recorder()
    a = elector("a", lock, clock, rec)
    a.tick()
    wait_started(rec)
    lock.failing = True
    clock.now = 8
    a.tick()
    assert a.state is State.LEADING, "still within the renew deadline"
    assert not rec.started[0].is_set()
    clock.now = 10.5
    a.tick()
    assert a.state is State.STOPPED
    assert rec.started[0].is_set(), "the leader's work is told to stop at once"
    assert rec.stopped == 1


def test_leader_that_sees_another_holder_stops_immediately() -> None:
    clock, lock, rec = FakeClock(), MemoryLock(), Recorder()
    a = elector("a", lock, clock, rec)
    a.tick()
    wait_started(rec)
    lock.lease = ObservedLease(LeaderRecord("b", 15), "99")  # b took over while a was paused
    clock.now = 2
    a.tick()
    assert a.state is State.STOPPED
    assert rec.stopped == 1 and rec.started[0].is_set()


def test_racing_candidates_cannot_both_win() -> None:
    clock, lock = FakeClock(), MemoryLock()
    lock.lease = ObservedLease(LeaderRecord("", 1), "100")  # released lease
    a, b = elector("a", lock, clock), elector("b", lock, clock)
    stale = lock.lease
    a.tick()
    # b read the same (stale) version before a's write landed:
    lock_get = lock.get
    lock.get = lambda: stale  # type: ignore[method-assign]
    b.tick()
    lock.get = lock_get  # type: ignore[method-assign]
    assert a.state is State.LEADING
    assert b.state is State.FOLLOWING


def test_release_on_stop_lets_a_standby_take_over_at_once() -> None:
    clock, lock, rec = FakeClock(), MemoryLock(), Recorder()
    a, b = elector("a", lock, clock, rec), elector("b", lock, clock)
    a.tick()
    b.tick()
    a.stop()
    a.run()  # returns at once because stop() was called; releases the lease
    assert lock.lease.record.holder_identity == ""
    assert rec.stopped == 1
    clock.now += 2
    b.tick()
    assert b.state is State.LEADING


def test_stopped_callback_runs_even_if_never_leading() -> None:
    clock, lock, rec = FakeClock(), MemoryLock(), Recorder()
    lock.failing = True
    a = elector("a", lock, clock, rec)
    a.tick()
    a.stop()
    a.run()
    assert rec.stopped == 1 and rec.started == []


@pytest.mark.parametrize(
    ("duration", "deadline", "retry", "message"),
    [(10, 10, 2, "leaseDuration"), (15, 2, 2, "renewDeadline"), (15, 10, 0, "renewDeadline|retryPeriod")],
)
def test_inconsistent_timings_are_rejected_with_the_field_name(duration, deadline, retry, message) -> None:
    with pytest.raises(ValueError, match=message):
        ElectionConfig("l", "ns", "me", duration, deadline, retry)
