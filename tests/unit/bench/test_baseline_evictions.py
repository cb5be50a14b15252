"""The driver completes an eviction for Kueue's manager as Kueue's own runner does: the evicted
workload's reservation is cleared, guarded by its resourceVersion (fake API, no cluster)."""

from __future__ import annotations

import copy
import threading
import time
from datetime import UTC, datetime
from typing import Any

from bench.baseline_evictions import EvictionCompleter, needs_release, release_patch
from pykueue.kube.errors import Conflict
from tests.builders import WorkloadBuilder

NOW = datetime(2026, 11, 26, 1, 0, 0, tzinfo=UTC)


def _evicted_holding(name: str = "wl", rv: str = "7") -> dict[str, Any]:
    obj = (
        WorkloadBuilder(name, "ns")
        .condition("QuotaReserved", True, "QuotaReserved")
        .condition("Admitted", True, "Admitted")
        .condition("Evicted", True, "Preempted")
        .condition("Preempted", True, "InClusterQueue")
        .obj()
    )
    obj["metadata"]["resourceVersion"] = rv
    obj["metadata"]["generation"] = 1
    obj.setdefault("status", {})["admission"] = {"clusterQueue": "cq"}
    return obj


def _by_type(conditions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in conditions}


def test_only_an_evicted_workload_that_still_holds_its_reservation_needs_release() -> None:
    assert needs_release(_evicted_holding())
    admitted = WorkloadBuilder("a", "ns").condition("QuotaReserved", True, "QuotaReserved").obj()
    assert not needs_release(admitted)
    released = WorkloadBuilder("r", "ns").condition("Evicted", True, "Preempted").condition(
        "QuotaReserved", False, "Pending"
    ).obj()
    assert not needs_release(released)
    finished = copy.deepcopy(_evicted_holding())
    finished["status"]["conditions"].append({"type": "Finished", "status": "True", "reason": "Succeeded"})
    assert not needs_release(finished)


def test_the_release_clears_reservation_and_admission_and_keeps_the_eviction() -> None:
    patch = release_patch(_evicted_holding(rv="42"), NOW)
    assert patch["metadata"] == {"resourceVersion": "42"}
    assert patch["status"]["admission"] is None  # a merge patch's null removes the field
    conditions = _by_type(patch["status"]["conditions"])
    assert set(conditions) == {"QuotaReserved", "Admitted", "Evicted", "Preempted"}
    assert conditions["QuotaReserved"]["status"] == "False" and conditions["QuotaReserved"]["reason"] == "Pending"
    assert conditions["Admitted"]["status"] == "False" and conditions["Admitted"]["reason"] == "NoReservation"
    assert conditions["QuotaReserved"]["lastTransitionTime"] == "2026-11-26T01:00:00Z"
    assert conditions["QuotaReserved"]["observedGeneration"] == 1
    assert conditions["Evicted"]["status"] == "True" and conditions["Preempted"]["status"] == "True"


class FakeClient:
    """Answers Conflict while the stored resourceVersion differs from the patch's."""

    def __init__(self, stored: dict[str, Any]) -> None:
        self.stored = stored
        self.patches: list[dict[str, Any]] = []
        self.gets = 0
        self.lock = threading.Lock()

    def patch_status(self, res: Any, name: str, patch: dict[str, Any], namespace: str, **kw: Any) -> dict[str, Any]:
        with self.lock:
            assert kw == {"patch_type": "merge"}
            self.patches.append(patch)
            if patch["metadata"]["resourceVersion"] != self.stored["metadata"]["resourceVersion"]:
                raise Conflict(409, "Conflict", "the object has been modified")
            self.stored = copy.deepcopy(self.stored)
            self.stored["status"]["conditions"] = patch["status"]["conditions"]
            self.stored["status"].pop("admission", None)
            self.stored["metadata"]["resourceVersion"] = str(int(self.stored["metadata"]["resourceVersion"]) + 1)
            return self.stored

    def get(self, res: Any, name: str, namespace: str) -> dict[str, Any]:
        with self.lock:
            self.gets += 1
            return copy.deepcopy(self.stored)


def _wait(predicate: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_stale_version_is_read_again_and_released_once() -> None:
    client = FakeClient(_evicted_holding(rv="9"))
    completer = EvictionCompleter(client, concurrency=2)
    try:
        completer.offer(_evicted_holding(rv="8"))  # the watch is one write behind
        _wait(lambda: completer.completed == 1 and completer.in_flight() == 0)
        # A late watch event of the old version: its patch conflicts, the fresh read shows the
        # reservation gone, and nothing more is written.
        completer.offer(_evicted_holding(rv="9"))
        _wait(lambda: client.gets == 2)
    finally:
        completer.stop()
    assert [p["metadata"]["resourceVersion"] for p in client.patches] == ["8", "9", "9"]
    assert completer.completed == 1 and completer.errors == 0
    assert not needs_release(client.stored)


def test_a_workload_that_needs_no_release_is_never_written() -> None:
    client = FakeClient(_evicted_holding())
    completer = EvictionCompleter(client, concurrency=1)
    completer.offer(WorkloadBuilder("a", "ns").condition("QuotaReserved", True, "QuotaReserved").obj())
    completer.stop()
    assert client.patches == [] and completer.completed == 0


class SlowAnswerClient(FakeClient):
    """Writes at once but answers the first patch only when ``answer`` is set: the watch event of
    what happens next can reach the driver before the answer does."""

    def __init__(self, stored: dict[str, Any]) -> None:
        super().__init__(stored)
        self.answer = threading.Event()
        self.written = threading.Event()

    def patch_status(self, res: Any, name: str, patch: dict[str, Any], namespace: str, **kw: Any) -> dict[str, Any]:
        written = super().patch_status(res, name, patch, namespace, **kw)
        if not self.written.is_set():
            self.written.set()
            assert self.answer.wait(5)
        return written


def _release_in_flight(client: SlowAnswerClient) -> EvictionCompleter:
    """A completer whose release of the stored workload is written and not yet answered."""
    completer = EvictionCompleter(client, concurrency=2)
    completer.offer(copy.deepcopy(client.stored))
    assert client.written.wait(5)
    return completer


def test_an_eviction_offered_while_the_last_release_is_in_flight_is_released_after_it() -> None:
    client = SlowAnswerClient(_evicted_holding(rv="7"))
    completer = _release_in_flight(client)
    try:
        # Meanwhile the controller admits the workload again and preempts it again; the watch
        # event of that arrives before the first release's answer.
        again = _evicted_holding(rv="20")
        client.stored = copy.deepcopy(again)
        completer.offer(again)
        assert completer.in_flight() == 1
        client.answer.set()
        _wait(lambda: completer.completed == 2 and completer.in_flight() == 0)
    finally:
        completer.stop()
    assert [p["metadata"]["resourceVersion"] for p in client.patches] == ["7", "20"]
    assert not needs_release(client.stored) and completer.resynced == 0


def test_a_version_offered_in_flight_that_needs_nothing_writes_nothing_more() -> None:
    client = SlowAnswerClient(_evicted_holding(rv="7"))
    completer = _release_in_flight(client)
    try:
        completer.offer(copy.deepcopy(client.stored))  # the echo of the release itself
        client.answer.set()
        _wait(lambda: completer.in_flight() == 0)
    finally:
        completer.stop()
    assert len(client.patches) == 1 and completer.completed == 1


def test_the_resync_releases_what_no_event_offered_and_counts_it() -> None:
    client = FakeClient(_evicted_holding(rv="7"))
    completer = EvictionCompleter(client, concurrency=2)
    try:
        running = WorkloadBuilder("other", "ns").condition("QuotaReserved", True, "QuotaReserved").obj()
        assert completer.resync([running, _evicted_holding(rv="7")]) == 1
        _wait(lambda: completer.completed == 1 and completer.in_flight() == 0)
        assert completer.resync([copy.deepcopy(client.stored), running]) == 0
    finally:
        completer.stop()
    assert completer.resynced == 1 and len(client.patches) == 1
