"""KubeEvents sends Events from a background thread, in order, never blocking the emitter."""

from __future__ import annotations

import threading
from typing import Any

from controller.core.events import MAX_MESSAGE, KubeEvents
from controller.workload.status_plan import EventSpec
from tests.builders import WorkloadBuilder


class GatedClient:
    """Records emit_event calls; blocks each one until ``gate`` is set."""

    def __init__(self, fail_reason: str | None = None) -> None:
        self.sent: list[tuple[str, str, str, str]] = []
        self.gate = threading.Event()
        self.fail_reason = fail_reason
        self.in_flight = 0
        self.most_in_flight = 0
        self.lock = threading.Lock()

    def emit_event(
        self, involved: dict[str, Any], type_: str, reason: str, message: str, component: str
    ) -> None:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.gate.wait(5)
        with self.lock:
            self.in_flight -= 1
        if reason == self.fail_reason:
            raise RuntimeError("bug")
        self.sent.append((involved["metadata"]["name"], type_, reason, message))


def test_emit_returns_at_once_and_the_sender_keeps_the_order() -> None:
    client = GatedClient()
    events = KubeEvents(client)
    wl = WorkloadBuilder("wl", "ns").obj()
    for reason in ("QuotaReserved", "Admitted", "Preempted"):
        events.emit(wl, EventSpec("Normal", reason, "x" * (MAX_MESSAGE + 10)))
    assert client.sent == [], "nothing is sent on the emitting thread"
    client.gate.set()
    assert events.flush(5)
    assert [reason for _, _, reason, _ in client.sent] == ["QuotaReserved", "Admitted", "Preempted"]
    assert all(len(message) == MAX_MESSAGE for *_, message in client.sent)


def test_a_full_queue_drops_and_counts_instead_of_blocking() -> None:
    client = GatedClient()
    events = KubeEvents(client, max_queued=2, senders=1)
    wl = WorkloadBuilder("wl", "ns").obj()
    for i in range(6):
        events.emit(wl, EventSpec("Normal", f"R{i}", "m"))
    # one may be in the sender's hands already; the queue holds two more; the rest are dropped
    assert events.dropped in (3, 4)
    client.gate.set()
    assert events.flush(5)
    assert len(client.sent) + events.dropped == 6


def test_a_failing_send_does_not_stop_the_sender() -> None:
    client = GatedClient(fail_reason="Broken")
    client.gate.set()
    events = KubeEvents(client)
    wl = WorkloadBuilder("wl", "ns").obj()
    events.emit(wl, EventSpec("Warning", "Broken", "m"))
    events.emit(wl, EventSpec("Normal", "Admitted", "m"))
    assert events.flush(5)
    assert [reason for _, _, reason, _ in client.sent] == ["Admitted"]


def test_senders_work_in_parallel_and_keep_each_objects_order() -> None:
    client = GatedClient()
    events = KubeEvents(client, senders=4)
    names = [f"wl-{i}" for i in range(20)]
    for name in names:
        for reason in ("QuotaReserved", "Admitted"):
            events.emit(WorkloadBuilder(name, "ns").obj(), EventSpec("Normal", reason, "m"))

    def several_waiting() -> bool:
        with client.lock:
            return client.most_in_flight > 1

    deadline = threading.Event()
    for _ in range(100):
        if several_waiting():
            break
        deadline.wait(0.02)
    assert several_waiting(), "more than one event is in flight at once"
    client.gate.set()
    assert events.flush(5)
    for name in names:
        assert [reason for sent_name, _, reason, _ in client.sent if sent_name == name] == [
            "QuotaReserved",
            "Admitted",
        ]
