"""The scheduler loop reads the *latest* cached version of a changed workload, so it can miss
intermediate versions. When it misses the echo of its own reservation *and* the eviction that
followed (the latest version shows the reservation gone again), the workload must still be
queued again rather than kept as an assumed reservation forever (the scheduler baseline found
preempted workloads that were never admitted again)."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import pytest

from tests.unit.core.test_scheduler_loop import Harness


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = Harness(cpu="2")
    yield h
    h.close()


def _evicted_and_released(obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    status = obj["status"]
    status.pop("admission", None)
    at = "2026-01-01T00:00:05Z"
    status["conditions"] = [c for c in status.get("conditions", []) if c["type"] not in
                            ("QuotaReserved", "Admitted", "Evicted", "Requeued")]
    status["conditions"] += [
        {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "evicted", "lastTransitionTime": at},
        {"type": "Admitted", "status": "False", "reason": "NoReservation", "message": "", "lastTransitionTime": at},
        {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "", "lastTransitionTime": at},
        {"type": "Requeued", "status": "True", "reason": "Preempted", "message": "", "lastTransitionTime": at},
    ]
    return obj


def test_a_reservation_evicted_before_its_echo_was_read_is_queued_again(harness: Harness) -> None:
    harness.start()
    harness.submit("w", cpu="2")
    harness.api.lag = True  # the cache does not see our reservation write yet
    harness.step()
    assert harness.reserved() == {"w"}

    # The informer delivers the echo of the reservation and then the eviction that cleared it,
    # both before the loop reads the cache again: the cache already shows the last version.
    handler = harness.loop.handler_for("workloads")
    pending = harness.informers["workloads"].store.get("ns/w")
    echo = harness.workload("w")
    harness.api.lag = False
    harness.api.sync_informers()
    handler.on_update(pending, echo)
    released = harness.api.put("workloads", _evicted_and_released(echo))
    handler.on_update(echo, released)
    assert harness.reserved() == set()

    harness.step()
    harness.step()
    assert harness.reserved() == {"w"}, "the workload is admitted again: its quota was given back"
