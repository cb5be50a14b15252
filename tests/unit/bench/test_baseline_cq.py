"""Kueue's ClusterQueue utilisation: status usage integrated over scripted ClusterQueue events."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from bench import baseline_shape as objects
from bench.baseline_cq import (
    ClusterQueueRecorder,
    class_summaries,
    overall_utilisation_pct,
    read_event,
)
from bench.baseline_shape import CLASS_LABEL, Names, load_shape

SHAPE = load_shape("baseline").scaled(0.001)  # nominal 20 cpu per ClusterQueue
NAMES = Names("abc123")


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def cq_event(index: int, usage: str, *, pending: int = 0, reserving: int = 0, active: bool = True,
             class_name: str | None = None) -> dict[str, Any]:
    """The benchmark's own ClusterQueue object with the status fields the controller writes."""
    obj = objects.cluster_queue(SHAPE, NAMES, index)
    if class_name is not None:
        obj["metadata"].setdefault("labels", {})[CLASS_LABEL] = class_name
    obj["status"] = {
        "pendingWorkloads": pending,
        "reservingWorkloads": reserving,
        "admittedWorkloads": reserving,
        "flavorsUsage": [{"name": NAMES.flavor, "resources": [{"name": "cpu", "total": usage, "borrowed": "0"}]}],
        "conditions": [{"type": "Active", "status": "True" if active else "False", "reason": "Ready"}],
    }
    return obj


def play(recorder: ClusterQueueRecorder, clock: FakeClock, script: list[tuple[float, dict[str, Any]]]) -> None:
    for at, obj in script:
        clock.now = at
        recorder.observe(obj)


def test_usage_is_integrated_from_each_event_to_the_next_and_divided_by_nominal_and_window() -> None:
    clock = FakeClock()
    recorder = ClusterQueueRecorder(clock=clock)
    play(recorder, clock, [
        (0.0, cq_event(0, "0", pending=3)),
        (0.5, cq_event(1, "0", pending=1)),
        (1.0, cq_event(0, "20", reserving=1)),  # 20 cpu from t=1 ...
        (1.5, cq_event(1, "6", reserving=1)),  # 6 cpu from t=1.5 ...
        (3.0, cq_event(0, "40", reserving=2)),  # ... then 40 (borrowing counts too) from t=3 ...
        (3.5, cq_event(1, "0")),  # ... queue 1 idle at t=3.5: 6 cpu x 2 s
        (4.0, cq_event(0, "0")),  # ... queue 0 idle at t=4: 20 x 2 + 40 x 1
    ])
    (summary,) = class_summaries(recorder.snapshot()).values()
    assert summary["cpu_used_mcpu_s"] == 20_000 * 2 + 40_000 * 1 + 6_000 * 2
    assert summary["nominal_quota_mcpu"] == 2 * 20_000
    assert summary["window_s"] == 4.0, "earliest first event to latest last event of the class"
    assert summary["average_usage_mcpu"] == 92_000 / 4
    assert summary["max_usage_mcpu"] == 40_000
    assert summary["utilisation_pct"] == 57.5
    assert summary["cluster_queues"] == 2 and summary["status_events"] == 7
    assert overall_utilisation_pct(class_summaries(recorder.snapshot())) == 57.5


def test_usage_above_nominal_is_not_capped() -> None:
    """Borrowing (and quota still held by evicted workloads) shows in the status usage, so one
    queue's utilisation can exceed 100 % of its own nominal quota."""
    clock = FakeClock()
    recorder = ClusterQueueRecorder(clock=clock)
    play(recorder, clock, [(0.0, cq_event(0, "100")), (2.0, cq_event(0, "100")), (2.0, cq_event(0, "0"))])
    (summary,) = class_summaries(recorder.snapshot()).values()
    assert summary["utilisation_pct"] == 500.0


def test_milli_cpu_totals_are_read_exactly() -> None:
    clock = FakeClock()
    recorder = ClusterQueueRecorder(clock=clock)
    play(recorder, clock, [(0.0, cq_event(0, "1500m")), (2.0, cq_event(0, "0"))])
    (summary,) = class_summaries(recorder.snapshot()).values()
    assert summary["cpu_used_mcpu_s"] == 3_000.0
    assert summary["utilisation_pct"] == pytest.approx(100 * 1_500 / 20_000, abs=0.05)


def test_recording_ends_once_generation_is_done_and_no_active_queue_expects_events() -> None:
    clock = FakeClock()
    generation_done = threading.Event()
    recorder = ClusterQueueRecorder(generation_done=generation_done, clock=clock)
    play(recorder, clock, [(0.0, cq_event(0, "20", reserving=1)), (1.0, cq_event(0, "0"))])
    assert not recorder.done.is_set(), "idle queues before generation is done do not end the run"
    generation_done.set()
    play(recorder, clock, [
        (2.0, cq_event(0, "20", reserving=1, pending=2)),
        (3.0, cq_event(1, "0", pending=4, active=False)),  # an inactive queue expects nothing
        (4.0, cq_event(0, "0")),
    ])
    assert recorder.done.is_set()
    play(recorder, clock, [(9.0, cq_event(0, "20")), (10.0, cq_event(1, "0"))])  # e.g. deletion churn
    snapshot = recorder.snapshot()
    assert snapshot[NAMES.cluster_queue(0)].last_event_at == 4.0
    (summary,) = class_summaries(snapshot).values()
    assert summary["window_s"] == 4.0
    assert summary["cpu_used_mcpu_s"] == 20_000 * 1 + 20_000 * 2


def test_queues_are_grouped_by_their_class_label() -> None:
    clock = FakeClock()
    recorder = ClusterQueueRecorder(clock=clock)
    play(recorder, clock, [
        (0.0, cq_event(0, "20", class_name="busy")),
        (0.0, cq_event(1, "0", class_name="idle")),
        (2.0, cq_event(0, "0", class_name="busy")),
        (4.0, cq_event(1, "0", class_name="idle")),
    ])
    summaries = class_summaries(recorder.snapshot())
    assert summaries["busy"]["utilisation_pct"] == 100.0 and summaries["busy"]["window_s"] == 2.0
    assert summaries["idle"]["utilisation_pct"] == 0.0
    # Several classes: average usages summed over summed nominal.
    assert overall_utilisation_pct(summaries) == 50.0


def test_a_single_event_has_no_window_and_no_utilisation() -> None:
    clock = FakeClock()
    recorder = ClusterQueueRecorder(clock=clock)
    play(recorder, clock, [(5.0, cq_event(0, "20"))])
    (summary,) = class_summaries(recorder.snapshot()).values()
    assert summary["window_s"] == 0.0
    assert summary["utilisation_pct"] is None
    assert overall_utilisation_pct(class_summaries(recorder.snapshot())) is None
    assert class_summaries({}) == {}


@pytest.mark.parametrize(
    ("mangle", "usage", "pending", "reserving", "active"),
    [
        (lambda o: o["status"].update(flavorsUsage="not a list"), 0, 1, 1, True),
        (lambda o: o["status"]["flavorsUsage"][0]["resources"][0].update(total="lots"), 0, 1, 1, True),
        (lambda o: o["status"]["flavorsUsage"][0].update(resources=[]), 0, 1, 1, True),
        (lambda o: o["status"].update(pendingWorkloads="3", reservingWorkloads=True, conditions={}), 20_000, 0, 0,
         False),
        (lambda o: o.update(spec=None, metadata="x"), 20_000, 1, 1, True),
        (lambda o: o.pop("status"), 0, 0, 0, False),
    ],
)
def test_malformed_queues_count_as_zero_instead_of_crashing(
    mangle: Any, usage: int, pending: int, reserving: int, active: bool
) -> None:
    obj = copy.deepcopy(cq_event(0, "20", pending=1, reserving=1))
    mangle(obj)
    event = read_event(obj)
    assert (event.usage_mcpu, event.pending, event.reserving, event.active) == (usage, pending, reserving, active)
    clock = FakeClock()
    recorder = ClusterQueueRecorder(clock=clock)
    play(recorder, clock, [(0.0, obj), (1.0, obj)])
    assert class_summaries(recorder.snapshot())["all"]["cpu_used_mcpu_s"] == usage


def test_the_nominal_quota_is_read_from_the_first_flavor_of_the_first_group() -> None:
    assert read_event(cq_event(0, "0")).nominal_mcpu == SHAPE.nominal_cpu * 1000
