"""Pending reasons are written off the admission path, coalesced per workload."""

from __future__ import annotations

import threading
import time

from controller.core.pending_writer import PendingReasonWriter


def test_newer_reason_replaces_one_not_yet_written() -> None:
    gate = threading.Event()
    written: list[tuple[str, str, str]] = []

    def write(key: str, reason: str, message: str) -> None:
        gate.wait(5)
        written.append((key, reason, message))

    writer = PendingReasonWriter(write, threads=1, grace_seconds=0)
    writer.start()
    try:
        writer.submit("ns/a", "Pending", "first")  # taken by the thread, blocked on the gate
        assert not writer.flush(0.1)
        writer.submit("ns/b", "WaitingForQuota", "old")
        writer.submit("ns/b", "NoMatchingFlavor", "new")
        writer.submit("ns/c", "WaitingForQuota", "c")
        gate.set()
        assert writer.flush(5)
    finally:
        writer.stop()
    assert written == [
        ("ns/a", "Pending", "first"),
        ("ns/b", "NoMatchingFlavor", "new"),
        ("ns/c", "WaitingForQuota", "c"),
    ]


def test_a_failing_write_does_not_stop_the_writer() -> None:
    written: list[str] = []

    def write(key: str, reason: str, message: str) -> None:
        if key == "ns/bad":
            raise RuntimeError("boom")
        written.append(key)

    writer = PendingReasonWriter(write, threads=2, grace_seconds=0)
    writer.start()
    try:
        writer.submit("ns/bad", "Pending", "")
        writer.submit("ns/good", "Pending", "")
        assert writer.flush(5)
    finally:
        writer.stop()
    assert written == ["ns/good"]
    assert writer.backlog() == 0


def test_a_discarded_reason_is_not_written_and_a_later_one_is() -> None:
    gate = threading.Event()
    written: list[tuple[str, str]] = []

    def write(key: str, reason: str, message: str) -> None:
        gate.wait(5)
        written.append((key, reason))

    writer = PendingReasonWriter(write, threads=1, grace_seconds=0)
    writer.start()
    try:
        writer.submit("ns/a", "Pending", "first")  # taken by the thread, blocked on the gate
        assert not writer.flush(0.1)
        writer.submit("ns/b", "WaitingForQuota", "b")
        writer.discard("ns/b")  # b was reserved before its reason went out
        writer.submit("ns/c", "WaitingForQuota", "c")
        gate.set()
        assert writer.flush(5)
        writer.submit("ns/b", "WaitingForQuota", "b again")  # evicted and waiting again later
        assert writer.flush(5)
    finally:
        writer.stop()
    assert written == [("ns/a", "Pending"), ("ns/c", "WaitingForQuota"), ("ns/b", "WaitingForQuota")]


def test_while_admission_is_busy_reasons_wait_and_a_superseded_one_is_skipped() -> None:
    from pykueue.kube.backoff import TokenBucket

    written: list[tuple[str, str]] = []
    slept: list[float] = []
    writer_ref: list[PendingReasonWriter] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 1:
            writer_ref[0].submit("ns/b", "NoMatchingFlavor", "newer")  # b changes while waiting

    clock = [0.0]
    writer = PendingReasonWriter(
        lambda key, reason, message: written.append((key, reason)),
        threads=1,
        admission_busy=lambda: True,
        busy_budget=TokenBucket(1.0, 1, clock=lambda: clock[0]),
        sleep=sleep,
        grace_seconds=0,
    )
    writer_ref.append(writer)
    writer.submit("ns/a", "WaitingForQuota", "a")  # the one token: written at once
    writer.submit("ns/b", "WaitingForQuota", "old")  # waits; superseded during the wait
    writer.start()
    try:
        assert writer.flush(5)
    finally:
        writer.stop()
    assert written == [("ns/a", "WaitingForQuota"), ("ns/b", "NoMatchingFlavor")]
    assert slept and slept[0] > 0


def test_a_reason_waits_for_the_grace_and_a_workload_reserved_within_it_gets_none() -> None:
    written: list[tuple[str, str, float]] = []
    started = time.monotonic()

    def write(key: str, reason: str, message: str) -> None:
        written.append((key, reason, time.monotonic() - started))

    writer = PendingReasonWriter(write, threads=2, grace_seconds=0.3)
    writer.start()
    try:
        writer.submit("ns/waits", "WaitingForQuota", "w")
        writer.submit("ns/reserved-soon", "WaitingForQuota", "r")
        time.sleep(0.1)
        assert written == [], "nothing is written within the grace"
        writer.discard("ns/reserved-soon")  # reserved 0.1 s after its first reason
        writer.submit("ns/waits", "NoMatchingFlavor", "newer")  # replaces it, keeps its due time
        assert writer.flush(5)
    finally:
        writer.stop()
    assert [(key, reason) for key, reason, _ in written] == [("ns/waits", "NoMatchingFlavor")]
    assert 0.3 <= written[0][2] < 2.0, "written once the grace since the first reason passed"


def test_a_workload_reserved_then_waiting_again_starts_a_new_grace() -> None:
    written: list[tuple[str, float]] = []
    started = time.monotonic()
    writer = PendingReasonWriter(
        lambda key, reason, message: written.append((message, time.monotonic() - started)),
        threads=1,
        grace_seconds=0.3,
    )
    writer.start()
    try:
        writer.submit("ns/a", "WaitingForQuota", "first wait")
        time.sleep(0.05)
        writer.discard("ns/a")  # reserved, then evicted and waiting again a little later
        time.sleep(0.1)
        requeued_at = time.monotonic() - started
        writer.submit("ns/a", "WaitingForQuota", "second wait")
        assert writer.flush(5)
    finally:
        writer.stop()
    assert [message for message, _ in written] == ["second wait"]
    assert written[0][1] >= requeued_at + 0.3 - 0.01, "the stale entry of the first wait did not cut the grace"


def test_reasons_are_written_in_the_order_they_became_due() -> None:
    written: list[str] = []
    writer = PendingReasonWriter(
        lambda key, reason, message: written.append(key), threads=1, grace_seconds=0.1
    )
    writer.start()
    try:
        for name in ("a", "b", "c"):
            writer.submit(f"ns/{name}", "WaitingForQuota", "")
            time.sleep(0.02)
        writer.submit("ns/a", "NoMatchingFlavor", "")  # an update does not move a to the back
        assert writer.flush(5)
    finally:
        writer.stop()
    assert written == ["ns/a", "ns/b", "ns/c"]
