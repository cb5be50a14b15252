"""Admission writes in flight: the loop keeps scheduling while its writes are sent, applies their
outcomes on its own thread, and never double-counts or un-assumes a reservation whose echo arrives
before the outcome. The fake API's :class:`WriteGate` holds writes in flight until released."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pykueue.kube.errors import Conflict, ServerError
from tests.unit.core.test_scheduler_loop import Harness


def reservations(_name: str, patch: dict[str, Any]) -> bool:
    """Hold only reservation writes (pending reasons and evictions pass)."""
    return bool((patch.get("status") or {}).get("admission"))


def _cpu_used(h: Harness) -> int:
    assert h.engine is not None
    return sum(h.engine.forest.cluster_queues["cq"].usage.values())


def _eventually(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return check()


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness(cpu="2")
    yield harness
    harness.close()


def test_a_second_cycle_runs_while_the_first_cycles_write_is_in_flight(h: Harness) -> None:
    h.submit("a")
    h.start()
    h.gate.hold(only=reservations)
    first = h.step_nowait()
    assert first is not None and [r.workload for r in first.reservations] == ["ns/a"]
    assert h.gate.wait_arrived(1)
    assert h.reserved() == set(), "a's write is still held"

    h.submit("b")
    h.submit("c")
    second = h.step_nowait()
    assert second is not None, "the cycle ran without waiting for a's write"
    # a's assumed quota counts: of b and c (1 cpu each, 2 cpu in all) only b fits.
    assert [r.workload for r in second.reservations] == ["ns/b"]
    assert len(h.loop.writes) == 2

    h.gate.release(2)
    assert h.loop.settle(5)
    assert h.reserved() == {"a", "b"}
    assert h.engine is not None
    for key in ("ns/a", "ns/b"):
        info = h.engine.admitted_workload(key)
        assert info is not None and info.admission is not None and info.admission.write_confirmed
    assert len(h.loop.writes) == 0


def test_a_failed_write_in_flight_rolls_back_and_the_workload_is_admitted_later() -> None:
    h = Harness(cpu="1")
    try:
        h.submit("a")
        h.start()
        h.gate.hold(only=reservations)
        h.step_nowait()
        assert h.gate.wait_arrived(1)
        h.submit("b")
        waiting = h.step_nowait()
        assert waiting is not None and waiting.reservations == [], "a's assumed quota fills the queue"
        assert h.loop.pending_reasons.flush(5)

        h.api.failures = [ServerError(500, "InternalError", "etcd is sad")]
        h.gate.release(1)
        assert h.loop.settle(5)
        assert h.engine is not None
        assert h.engine.workloads["ns/a"].admission is None, "the assumption was rolled back"
        assert _cpu_used(h) == 0

        h.gate.open()
        retried = h.step()
        assert retried is not None and [r.workload for r in retried.reservations] == ["ns/a"]
        assert h.reserved() == {"a"}
    finally:
        h.close()


def test_the_echo_arriving_before_the_outcome_is_neither_double_counted_nor_unassumed(h: Harness) -> None:
    h.submit("a")
    h.start()
    # a's write lands and reaches the cache; only its outcome is held back from the loop.
    h.gate.hold(after=True, only=reservations)
    h.step_nowait()
    assert h.gate.wait_arrived(1)
    one_workload = _cpu_used(h)
    assert one_workload > 0

    h.loop.notify("workloads", "ns/a")  # the informer delivers our own write's echo
    h.submit("b")
    h.submit("c")
    cycle = h.step_nowait()
    assert h.engine is not None
    held = h.engine.admitted_workload("ns/a")
    assert held is not None and held.admission is not None and not held.admission.assumed
    # Had the echo added to the assumption, a would count twice and fill the queue: b would wait.
    assert cycle is not None and [r.workload for r in cycle.reservations] == ["ns/b"]
    assert _cpu_used(h) == 2 * one_workload

    h.gate.release(2)
    assert h.loop.settle(5)
    assert h.engine.admitted_workload("ns/a") is not None, "the late confirm kept the reservation"
    assert _cpu_used(h) == 2 * one_workload
    h.loop.notify("workloads", "ns/b")
    after = h.step()
    assert after is not None and after.reservations == [], "c still does not fit"
    assert h.reserved() == {"a", "b"}


def test_at_the_cap_on_writes_in_flight_no_cycle_runs_until_a_write_completes() -> None:
    h = Harness(cpu="10", max_in_flight=2)
    try:
        h.submit("a")
        h.submit("b")
        h.start()
        h.gate.hold(only=reservations)
        first = h.step_nowait()
        assert first is not None and len(first.reservations) == 2
        assert h.gate.wait_arrived(2)
        assert h.loop.writes.full()

        h.submit("c")
        cycles = h.loop.cycles
        assert h.step_nowait() is None
        assert h.loop.cycles == cycles, "no cycle at the cap"
        assert h.engine is not None and h.engine.admitted_workload("ns/c") is None

        h.gate.release(1)
        assert h.loop.writes.apply_completed(timeout=5) == 1
        assert not h.loop.writes.full()
        resumed = h.step_nowait()
        assert resumed is not None and [r.workload for r in resumed.reservations] == ["ns/c"]

        h.gate.open()
        assert h.loop.settle(5)
        assert h.reserved() == {"a", "b", "c"}
    finally:
        h.close()


def test_the_running_loop_waits_for_completions_at_the_cap_instead_of_cycling() -> None:
    h = Harness(cpu="10", max_in_flight=1)
    stop = threading.Event()
    thread = threading.Thread(target=h.loop.run, args=(stop,), daemon=True)
    try:
        h.submit("a")
        h.gate.hold(only=reservations)
        thread.start()
        assert h.gate.wait_arrived(1)
        h.submit("b")
        h.loop.notify("workloads", "ns/b")
        time.sleep(0.3)  # a window in which a loop ignoring the cap would have decided b
        engine = h.loop.engine
        assert engine is not None
        assert h.loop.cycles == 1
        assert engine.admitted_workload("ns/b") is None

        h.gate.open()
        assert _eventually(lambda: h.reserved() == {"a", "b"})
    finally:
        h.gate.open()
        stop.set()
        h.loop.wake()
        thread.join(5)
        h.close()
    assert not thread.is_alive()


def test_on_stop_a_write_in_flight_is_neither_confirmed_nor_retried() -> None:
    h = Harness()
    stop = threading.Event()
    thread = threading.Thread(target=h.loop.run, args=(stop,), daemon=True)
    try:
        h.submit("a")
        h.gate.hold(only=reservations)
        thread.start()
        assert h.gate.wait_arrived(1)
        engine = h.loop.engine
        assert engine is not None
        stop.set()
        h.loop.wake()
        assert _eventually(lambda: h.loop.engine is None), "the loop let go of its engine"
        # The write is answered with a 409 after leadership ended: it must not GET and retry.
        h.api.failures = [Conflict(409, "Conflict", "the object has been modified")]
        h.gate.release(1)
        thread.join(5)
        assert not thread.is_alive()
        assert h.loop.engine is None
        assert h.reserved() == set()
        held = engine.workloads["ns/a"].admission
        assert held is not None and held.assumed and not held.write_confirmed, "no outcome after stop"
    finally:
        h.gate.open()
        stop.set()
        thread.join(5)
        h.close()


def test_preempting_a_victim_whose_reservation_is_still_in_flight_evicts_it() -> None:
    """The preemption waits for the victim's own reservation write and reads the victim fresh:
    the cache (lagging here) does not show the reservation yet, and acting on it would skip the
    eviction and leave the preemptor waiting for a victim that never goes."""
    h = Harness(cpu="1", preemption=("LowerPriority",))
    try:
        h.submit("low", priority=1)
        h.start()
        h.api.lag = True
        h.gate.hold(only=reservations)
        h.step_nowait()
        assert h.gate.wait_arrived(1)

        h.submit("high", priority=100)
        cycle = h.step_nowait()
        assert cycle is not None and [p.victim for p in cycle.preemptions] == ["ns/low"]
        h.gate.open()
        assert h.loop.settle(5)
        victim = h.workload("low")
        evicted = next(c for c in victim["status"]["conditions"] if c["type"] == "Evicted")
        assert (evicted["status"], evicted["reason"]) == ("True", "Preempted")
    finally:
        h.close()


def test_preempting_a_victim_whose_confirmed_reservation_the_cache_has_not_seen_evicts_it() -> None:
    """The victim's write is done and confirmed but its echo is late: the eviction is built on
    our own write (no conflict, no extra read)."""
    h = Harness(cpu="1", preemption=("LowerPriority",))
    try:
        h.submit("low", priority=1)
        h.start()
        h.api.lag = True
        h.step()
        assert not (h.informers["workloads"].store.get("ns/low").get("status") or {}).get("admission")

        h.submit("high", priority=100)
        gets, conflicts = h.api.gets, h.api.conflicts
        cycle = h.step()
        assert cycle is not None and [p.victim for p in cycle.preemptions] == ["ns/low"]
        victim = h.workload("low")
        evicted = next(c for c in victim["status"]["conditions"] if c["type"] == "Evicted")
        assert (evicted["status"], evicted["reason"]) == ("True", "Preempted")
        assert (h.api.gets - gets, h.api.conflicts - conflicts) == (0, 0)
    finally:
        h.close()


def test_an_eviction_checks_the_api_when_the_cache_shows_no_reservation_we_know_of() -> None:
    """The last line of defence: no record of our own write either (dropped here by hand), so a
    cache without the reservation is checked against a GET before the eviction is given up."""
    h = Harness(cpu="1", preemption=("LowerPriority",))
    try:
        h.submit("low", priority=1)
        h.start()
        h.api.lag = True
        h.step()
        h.loop.own_writes.clear()
        h.submit("high", priority=100)
        cycle = h.step()
        assert cycle is not None and [p.victim for p in cycle.preemptions] == ["ns/low"]
        evicted = next(c for c in h.workload("low")["status"]["conditions"] if c["type"] == "Evicted")
        assert (evicted["status"], evicted["reason"]) == ("True", "Preempted")
    finally:
        h.close()


def test_a_reservation_after_our_own_pending_reason_is_built_on_that_write() -> None:
    """The pending reason we just wrote has not reached the cache: the reservation is built on
    our write instead of the stale cached version, so it costs one request, not three."""
    h = Harness(cpu="1")
    try:
        h.submit("a")
        h.submit("b")
        h.start()
        h.api.lag = True
        h.step()  # a reserved; b gets its pending reason, written but not echoed
        assert h.workload("b")["status"]["conditions"][0]["reason"] == "WaitingForQuota"
        finished = copy.deepcopy(h.workload("a"))
        finished["status"]["conditions"].append(
            {
                "type": "Finished",
                "status": "True",
                "reason": "Succeeded",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        )
        h.api.put("workloads", finished)  # a finishes (another writer; the cache sees it)
        h.loop.notify("workloads", "ns/a")
        gets, conflicts = h.api.gets, h.api.conflicts
        assert h.engine is not None
        h.engine.requeue_batch_seconds = 0.0  # freed quota requeues b at once (fixed test clock)
        cycle = h.step()
        assert cycle is not None and [r.workload for r in cycle.reservations] == ["ns/b"]
        assert h.reserved() >= {"b"}
        assert (h.api.conflicts - conflicts, h.api.gets - gets) == (0, 0)
    finally:
        h.close()


def test_admission_is_busy_while_half_the_write_threads_have_a_write() -> None:
    h = Harness(cpu="10", write_threads=4)
    try:
        h.submit("a")
        h.start()
        assert not h.loop.admission_busy()
        h.gate.hold(only=reservations)
        h.step_nowait()
        assert h.gate.wait_arrived(1)
        assert not h.loop.admission_busy(), "three of four write threads are free"
        h.submit("b")
        h.step_nowait()
        assert h.gate.wait_arrived(2)
        assert h.loop.admission_busy()
        h.gate.open()
        assert h.loop.settle(5)
        assert not h.loop.admission_busy()
    finally:
        h.close()
