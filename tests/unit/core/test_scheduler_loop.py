"""The scheduler loop around the real engine, against an in-memory API: assume-then-write with
confirm/rollback, conflict retry with fresh state, preemption writes, pending reasons."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from controller.core.scheduler import KINDS, SchedulerLoop
from controller.runtime.events import RecordingEvents
from pykueue.kube.errors import Conflict, ServerError
from tests.builders import ClusterQueueBuilder, LocalQueueBuilder, ResourceFlavorBuilder, WorkloadBuilder
from tests.unit.core.fakes import FakeApi, FakeInformer, WriteGate


class Harness:
    def __init__(
        self,
        cpu: str = "2",
        block_admission: bool = False,
        max_in_flight: int = 64,
        write_threads: int = 16,
        **cq_calls: tuple,
    ) -> None:
        self.informers = {kind: FakeInformer() for kind in KINDS}
        self.api = FakeApi(self.informers)
        self.events = RecordingEvents()
        self.api.put("namespaces", {"metadata": {"name": "ns", "labels": {}}})
        self.api.put("resourceflavors", ResourceFlavorBuilder("default").obj())
        cq = ClusterQueueBuilder("cq").flavor("default", cpu=cpu)
        for call, args in cq_calls.items():
            getattr(cq, call)(*args)
        self.api.put("clusterqueues", cq.obj())
        self.api.put("localqueues", LocalQueueBuilder("lq", "ns", "cq").obj())
        self.gate = WriteGate(self.api)  # passes writes straight through unless told to hold them
        self.loop = SchedulerLoop(
            self.gate,
            self.informers,
            self.events,
            clock=lambda: 1_800_000_000.0,
            block_admission=block_admission,
            max_in_flight=max_in_flight,
            write_threads=write_threads,
            pending_reason_grace=0,  # reasons at once; the grace has its own tests
        )
        self.pool = ThreadPoolExecutor(max_workers=2)
        self.engine = None

    def submit(self, name: str, cpu: str = "1", priority: int = 0) -> None:
        self.api.put(
            "workloads", WorkloadBuilder(name, "ns").queue("lq").podset(cpu=cpu).priority(priority).obj()
        )
        if self.engine is not None:
            self.loop.notify("workloads", f"ns/{name}")

    def start(self) -> None:
        self.engine = self.loop.start_engine()
        self.loop.pending_reasons.start()

    def step_nowait(self):
        """One step; its admission writes may still be in flight on return."""
        assert self.engine is not None
        return self.loop.step(self.engine, self.pool)

    def step(self):
        assert self.engine is not None
        result = self.loop.step(self.engine, self.pool)
        assert self.loop.settle(5), "admission writes finished and applied"
        assert self.loop.pending_reasons.flush(5), "pending reasons written"
        return result

    def close(self) -> None:
        self.gate.open()
        self.loop.pending_reasons.stop()
        self.pool.shutdown()

    def workload(self, name: str) -> dict:
        return self.api.objects[("workloads", f"ns/{name}")]

    def reserved(self) -> set[str]:
        return {
            k.split("/")[1]
            for (plural, k), o in self.api.objects.items()
            if plural == "workloads" and (o.get("status") or {}).get("admission")
        }


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = Harness()
    yield h
    h.close()


def _cond(obj: dict, type_: str) -> dict:
    return next(c for c in obj["status"]["conditions"] if c["type"] == type_)


def test_reservations_are_written_and_confirmed(harness: Harness) -> None:
    harness.submit("a")
    harness.submit("b")
    harness.submit("c")
    harness.start()
    result = harness.step()
    assert {r.workload for r in result.reservations} == {"ns/a", "ns/b"}
    assert harness.reserved() == {"a", "b"}
    assert _cond(harness.workload("a"), "Admitted")["status"] == "True"
    assert _cond(harness.workload("c"), "QuotaReserved")["reason"] == "WaitingForQuota"
    assert ("ns/a", "Normal", "QuotaReserved") in [(k, t, r) for k, t, r, _ in harness.events.events]
    # Nothing new: the next cycles write nothing more.
    writes = len(harness.api.patches)
    harness.step()
    assert len(harness.api.patches) == writes


def test_failed_write_rolls_back_and_the_workload_is_admitted_later(harness: Harness) -> None:
    harness.submit("a")
    harness.start()
    harness.api.failures = [ServerError(500, "InternalError", "etcd is sad")]
    result = harness.step()
    assert [r.workload for r in result.reservations] == ["ns/a"]
    assert harness.reserved() == set()
    assert harness.engine.workloads["ns/a"].admission is None, "the assumption was rolled back"
    harness.step()
    assert harness.reserved() == {"a"}


def test_conflict_is_retried_against_fresh_state(harness: Harness) -> None:
    harness.submit("a")
    harness.start()
    # Someone else (e.g. the job integration) writes after our cache saw the object.
    harness.api.lag = True
    fresh = harness.api.get(type("R", (), {"plural": "workloads"}), "a", "ns")
    fresh["metadata"]["labels"] = {"touched": "yes"}
    harness.api.objects[("workloads", "ns/a")] = fresh
    harness.api._stamp(fresh)
    harness.step()
    written = harness.workload("a")
    assert written["status"]["admission"]["clusterQueue"] == "cq"
    assert written["metadata"]["labels"] == {"touched": "yes"}, "the retry patched the fresh object"


def test_reservation_for_a_workload_that_moved_on_is_rolled_back(harness: Harness) -> None:
    harness.submit("a")
    harness.start()
    # After the engine saw it, and before our cache does, the workload is deactivated.
    harness.api.lag = True
    moved_on = harness.api.objects[("workloads", "ns/a")]
    moved_on["spec"]["active"] = False
    harness.api._stamp(moved_on)
    result = harness.step()
    assert [r.workload for r in result.reservations] == ["ns/a"], "the engine decided on the stale version"
    assert harness.reserved() == set(), "the conflict re-read showed it must not be admitted"
    assert harness.engine.workloads["ns/a"].admission is None, "the assumption was rolled back"


def test_preemption_writes_eviction_on_the_victim() -> None:
    h = Harness(cpu="1", preemption=("LowerPriority",))
    try:
        h.submit("low", priority=1)
        h.start()
        h.step()
        assert h.reserved() == {"low"}
        h.submit("high", priority=100)
        result = h.step()
        assert [p.victim for p in result.preemptions] == ["ns/low"]
        victim = h.workload("low")
        assert _cond(victim, "Evicted")["reason"] == "Preempted"
        assert _cond(victim, "Preempted")["reason"] == "InClusterQueue"
        assert "Preempted" in h.events.reasons("ns/low")
        assert "PreemptedWorkload" in h.events.reasons("ns/high")
        # The victim still holds its quota until its reservation is cleared.
        assert h.reserved() == {"low"}
    finally:
        h.close()


def test_events_are_level_triggered_from_the_cache(harness: Harness) -> None:
    harness.submit("a")
    harness.start()
    assert "ns/a" in harness.engine.workloads
    # A notification is only a hint: the engine follows what the cache holds now.
    harness.informers["workloads"].store.delete("ns/a")
    harness.loop.notify("workloads", "ns/a")
    result = harness.step()
    assert "ns/a" not in harness.engine.workloads
    assert result.reservations == []
    # A repeated notification for an unchanged object is not fed to the engine again.
    fed: list[str] = []
    upsert = harness.engine.upsert_workload
    harness.engine.upsert_workload = lambda obj: (fed.append(obj["metadata"]["name"]), upsert(obj))  # type: ignore[method-assign]
    harness.submit("b")
    harness.loop.notify("workloads", "ns/b")
    harness.step()
    assert fed == ["b"]


def _pods_ready(h: Harness, name: str) -> None:
    ready = h.api.objects[("workloads", f"ns/{name}")]
    ready["status"]["conditions"].append(
        {"type": "PodsReady", "status": "True", "reason": "Started", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}
    )
    h.api.put("workloads", ready)
    h.loop.notify("workloads", f"ns/{name}")


def test_block_admission_admits_one_at_a_time_until_pods_are_ready() -> None:
    h = Harness(cpu="4", block_admission=True)
    try:
        for name in ("a", "b", "c"):
            h.submit(name)
        h.start()
        h.step()
        assert len(h.reserved()) == 1, "sequential admission: one per cycle"
        (first,) = h.reserved()
        h.step()
        h.step()
        assert h.reserved() == {first}, "nothing more while its pods are not ready"

        _pods_ready(h, first)
        h.step()
        assert len(h.reserved()) == 2
    finally:
        h.close()


def test_block_admission_explain_says_the_next_one_waits_for_the_admitted_ones_pods() -> None:
    """While blockAdmission holds admission back, the workload that is first and fits is next
    only once the admitted workload's pods are ready; the loop names that workload to explain, and
    making its pods ready admits the one explain called next (and only it)."""
    h = Harness(cpu="4", block_admission=True)
    try:
        for name in ("a", "b", "c"):
            h.submit(name)
        h.start()
        h.step()
        assert h.reserved() == {"a"} and h.loop.admission_blocked_by() == ["ns/a"]
        h.step()
        assert h.reserved() == {"a"}, "no cycle while a's pods are not ready"
        nxt = h.engine.explain("ns/b", h.loop.admission_blocked_by())
        assert (nxt.outcome, nxt.position, nxt.blocked_by) == ("Fits", 0, ["ns/a"])
        assert nxt.suggestion == (
            "it is next: it fits now and will be admitted once the pods of ns/a are ready "
            "(waitForPodsReady.blockAdmission: nothing is admitted while an admitted workload's pods are not ready)")
        behind = h.engine.explain("ns/c", h.loop.admission_blocked_by())
        assert behind.suggestion.startswith("it fits now, after the 1 workload(s) ahead of it, once the pods of ns/a")

        _pods_ready(h, "a")
        h.step()
        assert h.reserved() == {"a", "b"}, "the suggested change admits the workload explain called next"
        assert h.loop.admission_blocked_by() == ["ns/b"]
        assert h.engine.explain("ns/c", h.loop.admission_blocked_by()).suggestion.startswith(
            "it is next: it fits now and will be admitted once the pods of ns/b are ready")
    finally:
        h.close()


def test_without_block_admission_the_loop_names_nothing_to_wait_for(harness: Harness) -> None:
    harness.submit("a")
    harness.start()
    harness.step()
    assert harness.reserved() == {"a"} and harness.loop.admission_blocked_by() == []


def test_workloads_cached_at_start_tie_break_by_uid_and_later_arrivals_queue_behind() -> None:
    """The caches' order is not arrival order: what the engine is filled with at start ties by
    UID; workloads observed afterwards follow in arrival order, even with smaller UIDs."""
    h = Harness(cpu="1")
    try:
        h.submit("b")  # in the cache first, but its UID sorts after a's
        h.submit("a")
        h.start()
        h.submit("0late")  # arrives after the start; its UID sorts before every other
        h.step()
        assert h.reserved() == {"a"}
    finally:
        h.close()


def test_a_failed_drain_eviction_does_not_strand_the_cycles_reservations() -> None:
    """HoldAndDrain evictions are written before the cycle's reservations; when one fails, the
    reservations (already assumed in the engine) are still written and confirmed, and the
    eviction is tried again with the next cycle."""
    h = Harness(cpu="1")
    try:
        h.submit("held")
        h.start()
        h.step()
        assert h.reserved() == {"held"}
        # A second queue with a workload to admit, and the first LocalQueue starts draining.
        h.api.put("clusterqueues", ClusterQueueBuilder("cq2").flavor("default", cpu="1").obj())
        h.api.put("localqueues", LocalQueueBuilder("lq2", "ns", "cq2").obj())
        h.api.put("workloads", WorkloadBuilder("other", "ns").queue("lq2").podset(cpu="1").obj())
        h.api.put("localqueues", LocalQueueBuilder("lq", "ns", "cq").stop_policy("HoldAndDrain").obj())
        for kind, key in (
            ("clusterqueues", "cq2"),
            ("localqueues", "ns/lq2"),
            ("workloads", "ns/other"),
            ("localqueues", "ns/lq"),
        ):
            h.loop.notify(kind, key)
        h.api.failures = [ServerError(500, "InternalError", "etcd is sad")]  # the eviction's write
        result = h.step()
        assert [e.workload for e in result.evictions] == ["ns/held"]
        assert "other" in h.reserved()
        other = h.engine.workloads["ns/other"]
        assert other.admission is not None and other.admission.write_confirmed
        assert (h.workload("held").get("status") or {}).get("admission"), "the failed eviction wrote nothing"
        retried = h.step()
        assert [e.workload for e in retried.evictions] == ["ns/held"]
        assert _cond(h.workload("held"), "Evicted")["reason"] == "LocalQueueStopped"
    finally:
        h.close()


def _conflicts(count: int) -> list[Conflict]:
    return [Conflict(409, "Conflict", "the object has been modified") for _ in range(count)]


def test_a_preemption_that_conflicts_twice_is_decided_again_not_taken_as_done() -> None:
    """The victim changed under both write attempts (the cached copy, then a fresh GET): nothing
    was written, so the victim must stay a candidate. Taken as done, it would stay marked as
    "being evicted" and the preemptor would wait for an eviction that never comes."""
    h = Harness(cpu="1", preemption=("LowerPriority",))
    try:
        h.submit("low", priority=1)
        h.start()
        h.step()
        h.submit("high", priority=100)
        h.api.failures_for["ns/low"] = _conflicts(2)
        first = h.step()
        assert [p.victim for p in first.preemptions] == ["ns/low"]
        assert "Evicted" not in {c["type"] for c in h.workload("low")["status"]["conditions"]}
        again = h.step()
        assert [p.victim for p in again.preemptions] == ["ns/low"], "the preemption is decided again"
        assert _cond(h.workload("low"), "Evicted")["reason"] == "Preempted"
    finally:
        h.close()


def test_a_drain_eviction_that_conflicts_twice_is_emitted_again() -> None:
    h = Harness(cpu="1")
    try:
        h.submit("held")
        h.start()
        h.step()
        assert h.reserved() == {"held"}
        h.api.put("localqueues", LocalQueueBuilder("lq", "ns", "cq").stop_policy("HoldAndDrain").obj())
        h.loop.notify("localqueues", "ns/lq")
        h.api.failures_for["ns/held"] = _conflicts(2)
        first = h.step()
        assert [e.workload for e in first.evictions] == ["ns/held"]
        assert "Evicted" not in {c["type"] for c in h.workload("held")["status"]["conditions"]}
        again = h.step()
        assert [e.workload for e in again.evictions] == ["ns/held"], "the eviction is emitted again"
        assert _cond(h.workload("held"), "Evicted")["reason"] == "LocalQueueStopped"
    finally:
        h.close()
