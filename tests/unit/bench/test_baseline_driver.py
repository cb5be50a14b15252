"""The baseline's load driver: the recorder's timeline, the finish runner and the generator."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from bench.baseline_driver import FinishRunner, Generator, Recorder, WorkloadRecord, creation_timeline
from bench.baseline_shape import Names, load_shape
from pykueue.kube.errors import NotFound
from tests.builders import WorkloadBuilder


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _admitted(name: str) -> dict[str, Any]:
    return WorkloadBuilder(name, "ns").condition("QuotaReserved", True, "QuotaReserved").condition(
        "Admitted", True, "Admitted"
    ).obj()


def _evicted(name: str) -> dict[str, Any]:
    return WorkloadBuilder(name, "ns").condition("Evicted", True, "Preempted").condition(
        "Admitted", False, "NoReservation"
    ).obj()


def _finished(name: str) -> dict[str, Any]:
    return WorkloadBuilder(name, "ns").condition("Admitted", True, "Admitted").finished().obj()


def test_recorder_follows_admission_eviction_and_finish() -> None:
    clock = FakeClock()
    scheduled: list[tuple[tuple[str, str], float, int]] = []
    recorder = Recorder(lambda key, due, token: scheduled.append((key, due, token)), clock=clock)
    recorder.expect(("ns", "wl"), WorkloadRecord("large", cpu=20, runtime_s=1.0))
    recorder.created(("ns", "wl"), scheduled_at=99.5, sent_at=100.0)

    recorder.observe(WorkloadBuilder("wl", "ns").obj())  # pending: nothing happens
    assert scheduled == []
    clock.now = 103.0
    recorder.observe(_admitted("wl"))
    assert scheduled == [(("ns", "wl"), 104.0, 1)]
    recorder.observe(_admitted("wl"))  # a status update while admitted schedules nothing new
    assert len(scheduled) == 1

    clock.now = 103.5
    recorder.observe(_evicted("wl"))
    assert recorder.token(("ns", "wl")) == 2, "the pending finish timer is now stale"
    clock.now = 110.0
    recorder.observe(_admitted("wl"))
    assert scheduled[-1] == (("ns", "wl"), 111.0, 3)
    clock.now = 111.0
    recorder.observe(_finished("wl"))

    (record,) = recorder.snapshot()
    assert record.first_admitted_at == 103.0, "time to admission counts the first admission"
    assert record.evictions == 1
    assert record.finished_at == 111.0
    assert record.used_cpu_seconds == 20 * (0.5 + 1.0)
    assert recorder.all_settled.is_set()
    clock.now = 200.0
    recorder.observe(_admitted("wl"))  # nothing changes once finished
    assert recorder.snapshot()[0].finished_at == 111.0


def test_recorder_ignores_workloads_of_other_runs_and_settles_on_create_failures() -> None:
    recorder = Recorder(lambda *_: None, clock=FakeClock())
    recorder.expect(("ns", "a"), WorkloadRecord("small", 1, 0.2))
    recorder.expect(("ns", "b"), WorkloadRecord("small", 1, 0.2))
    recorder.observe(_finished("stranger"))
    recorder.observe(_finished("a"))
    assert not recorder.all_settled.is_set()
    recorder.create_failed(("ns", "b"))
    assert recorder.all_settled.is_set()
    assert recorder.progress() == {"created": 0, "admitted_now": 0, "finished": 1, "failed": 1, "total": 2}


class FakeClient:
    def __init__(self) -> None:
        self.patches: list[tuple[str, Any, str | None, dict[str, Any]]] = []
        self.created: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def patch_status(self, res: Any, name: str, patch: Any, namespace: str | None = None, **kw: Any) -> dict:
        with self.lock:
            self.patches.append((name, patch, namespace, kw))
        return {}

    def create(self, res: Any, obj: dict[str, Any], namespace: str | None = None) -> dict:
        with self.lock:
            self.created.append(obj)
        return obj


def _wait(predicate: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_finish_runner_appends_finished_when_due_and_skips_stale_timers() -> None:
    client = FakeClient()
    tokens = {("ns", "current"): 1, ("ns", "stale"): 5}
    sent: list[tuple[str, str]] = []
    runner = FinishRunner(client, tokens.__getitem__, concurrency=2, on_sent=sent.append)
    runner.start()
    try:
        now = time.monotonic()
        runner.schedule(("ns", "stale"), now, 4)
        runner.schedule(("ns", "current"), now + 0.05, 1)
        _wait(lambda: len(client.patches) == 1)
        time.sleep(0.1)
    finally:
        runner.stop()
    ((name, patch, namespace, kw),) = client.patches
    assert (name, namespace, kw) == ("current", "ns", {"patch_type": "json"})
    assert patch[0]["op"] == "add" and patch[0]["path"] == "/status/conditions/-"
    assert patch[0]["value"]["type"] == "Finished" and patch[0]["value"]["status"] == "True"
    assert len(runner.lag.samples) == 1 and runner.lag.samples[0] >= 0
    assert sent == [("ns", "current")]  # the recorder notes when each finish left, stale ones never


class _GoneClient(FakeClient):
    """Answers every status patch with 404, as for a workload deleted meanwhile."""

    def patch_status(self, res: Any, name: str, patch: Any, namespace: str | None = None, **kw: Any) -> dict:
        raise NotFound(404, "NotFound", "workloads \"wl\" not found")


def test_finish_runner_says_when_the_apiserver_answered_a_finish_and_not_when_it_refused() -> None:
    for client, expected in ((FakeClient(), [("ns", "wl")]), (_GoneClient(), [])):
        sent: list[tuple[str, str]] = []
        answered: list[tuple[str, str]] = []
        runner = FinishRunner(client, lambda key: 1, concurrency=1, on_sent=sent.append, on_answered=answered.append)
        runner.start()
        try:
            runner.schedule(("ns", "wl"), time.monotonic(), 1)
            _wait(lambda sent=sent: len(sent) == 1)
            time.sleep(0.05)
        finally:
            runner.stop()
        assert answered == expected


def test_timeline_creates_each_class_every_interval_per_queue() -> None:
    shape = load_shape("baseline").scaled(0.01)  # 4 small, 1 medium, 1 large per queue
    plan = creation_timeline(shape)
    assert len(plan) == shape.total_workloads == 30 * 6
    assert [p.due for p in plan] == sorted(p.due for p in plan)
    small_of_queue_3 = [p.due for p in plan if p.queue_index == 3 and p.class_index == 0]
    assert small_of_queue_3 == [0.0, 0.1, 0.2, 0.3]


def test_generator_creates_every_planned_workload_once() -> None:
    shape = load_shape("baseline").scaled(0.005)  # 2 small, 1 medium, 1 large per queue
    client = FakeClient()
    recorder = Recorder(lambda *_: None)
    generator = Generator(client, shape, Names("t1"), recorder, concurrency=4)
    generator.start()
    assert generator.wait(10)
    keys = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in client.created}
    assert len(client.created) == len(keys) == shape.total_workloads
    assert ("bench-t1-ns-029", "small-1") in keys
    assert recorder.progress()["created"] == shape.total_workloads
    assert len(generator.lag.samples) == shape.total_workloads


def test_recorder_notes_the_first_watch_event_and_counts_evicted_condition_rises() -> None:
    """Kueue's recorder measures time to admission from the workload's first watch event and
    counts an eviction each time ``Evicted`` turns True; both are recorded beside ours."""
    clock = FakeClock()
    recorder = Recorder(lambda *_: None, clock=clock)
    recorder.expect(("ns", "wl"), WorkloadRecord("small", cpu=1, runtime_s=1.0))
    recorder.created(("ns", "wl"), scheduled_at=99.0, sent_at=99.5)
    clock.now = 100.25
    recorder.observe(WorkloadBuilder("wl", "ns").obj())
    clock.now = 101.0
    recorder.observe(WorkloadBuilder("wl", "ns").obj())
    clock.now = 102.0
    recorder.observe(_admitted("wl"))
    clock.now = 103.0
    recorder.observe(_evicted("wl"))
    recorder.observe(_evicted("wl"))  # still evicted: the same eviction
    recorder.observe(WorkloadBuilder("wl", "ns").condition("Evicted", False, "Requeued").obj())
    recorder.observe(_evicted("wl"))  # evicted again while pending (e.g. a second preemption)
    (record,) = recorder.snapshot()
    assert record.first_seen_at == 100.25
    assert record.first_admitted_at == 102.0
    assert record.evicted_transitions == 2
    assert record.evictions == 1, "only one admission was lost"
    # The run's timeline (bench.baseline_timeline) places every admission and Evicted rise.
    assert record.admitted_at == [102.0]
    assert record.evicted_at == [103.0, 103.0]


def _being_evicted(name: str) -> dict[str, Any]:
    """Evicted, but the reservation not yet cleared: still ``Admitted=True``."""
    return WorkloadBuilder(name, "ns").condition("QuotaReserved", True, "QuotaReserved").condition(
        "Admitted", True, "Admitted"
    ).condition("Evicted", True, "Preempted").obj()


def test_an_evicted_workload_is_never_finished_while_it_still_holds_its_reservation() -> None:
    """As Kueue's runner: Evicted=True cancels the finish timer even before the reservation is
    cleared, so a preempted workload goes back to its queue instead of ending as a success."""
    clock = FakeClock()
    scheduled: list[tuple[tuple[str, str], float, int]] = []
    recorder = Recorder(lambda key, due, token: scheduled.append((key, due, token)), clock=clock)
    recorder.expect(("ns", "wl"), WorkloadRecord("small", cpu=1, runtime_s=0.2))
    clock.now = 100.0
    recorder.observe(_admitted("wl"))
    assert scheduled == [(("ns", "wl"), 100.2, 1)]
    clock.now = 100.1
    recorder.observe(_being_evicted("wl"))
    assert recorder.token(("ns", "wl")) == 2, "the finish timer due at 100.2 is stale now"
    recorder.observe(_being_evicted("wl"))
    assert recorder.token(("ns", "wl")) == 2 and len(scheduled) == 1
    clock.now = 100.5
    recorder.observe(_evicted("wl"))  # reservation cleared
    clock.now = 101.0
    recorder.observe(_admitted("wl"))  # readmitted: Evicted flipped back to False
    assert scheduled[-1] == (("ns", "wl"), 101.2, 4)
    (record,) = recorder.snapshot()
    assert (record.evictions, record.evicted_transitions) == (1, 1)
    assert record.used_cpu_seconds == pytest.approx(0.5)


def test_a_withdrawn_eviction_resumes_the_run_where_it_was() -> None:
    clock = FakeClock()
    scheduled: list[tuple[tuple[str, str], float, int]] = []
    recorder = Recorder(lambda key, due, token: scheduled.append((key, due, token)), clock=clock)
    recorder.expect(("ns", "wl"), WorkloadRecord("large", cpu=20, runtime_s=1.0))
    clock.now = 10.0
    recorder.observe(_admitted("wl"))
    clock.now = 10.4
    recorder.observe(_being_evicted("wl"))
    clock.now = 10.6
    recorder.observe(_admitted("wl"))
    assert scheduled == [(("ns", "wl"), 11.0, 1), (("ns", "wl"), 11.0, 3)], "due at admission + runtime"


def test_a_workload_first_seen_admitted_and_evicted_waits_for_its_readmission() -> None:
    scheduled: list[Any] = []
    recorder = Recorder(lambda *args: scheduled.append(args), clock=FakeClock())
    recorder.expect(("ns", "wl"), WorkloadRecord("small", cpu=1, runtime_s=0.2))
    recorder.observe(_being_evicted("wl"))
    assert scheduled == []
    assert recorder.snapshot()[0].first_admitted_at == 100.0


def test_a_finish_already_sent_when_the_eviction_comes_is_counted() -> None:
    recorder = Recorder(lambda *_: None, clock=FakeClock())
    recorder.expect(("ns", "a"), WorkloadRecord("small", cpu=1, runtime_s=0.2))
    recorder.expect(("ns", "b"), WorkloadRecord("small", cpu=1, runtime_s=0.2))
    recorder.observe(_admitted("a"))
    recorder.observe(_being_evicted("a"))
    recorder.observe(WorkloadBuilder("a", "ns").condition("Admitted", True, "Admitted").condition(
        "Evicted", True, "Preempted").finished().obj())
    recorder.observe(_admitted("b"))
    recorder.observe(_finished("b"))
    (a, b) = recorder.snapshot()
    assert (a.finished_while_evicted, a.evicted_transitions, a.evictions) == (True, 1, 0)
    assert (b.finished_while_evicted, b.evicted_transitions) == (False, 0)


def test_recorder_notes_when_a_finish_was_sent() -> None:
    clock = FakeClock()
    clock.now = 7.5
    recorder = Recorder(lambda key, due, token: None, clock=clock)
    recorder.expect(("ns", "wl"), WorkloadRecord("small", cpu=1, runtime_s=0.2))
    recorder.finish_sent(("ns", "wl"))
    recorder.finish_sent(("ns", "unknown"))  # not one of the run's: ignored
    assert recorder.snapshot()[0].finish_sent_at == 7.5
    clock.now = 8.25
    recorder.finish_answered(("ns", "wl"))
    recorder.finish_answered(("ns", "unknown"))
    assert recorder.snapshot()[0].finish_answered_at == 8.25
