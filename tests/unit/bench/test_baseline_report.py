"""Figures of a baseline run: Kueue's definitions applied to per-workload records."""

from __future__ import annotations

import math

import pytest

from bench.baseline_driver import WorkloadRecord
from bench.baseline_report import format_run, loop_delays, median_of_runs, percentile, summarise
from bench.baseline_shape import load_shape
from bench.baseline_timeline import HOLD, TURNAROUND, Delay


def _record(klass: str, cpu: int, created: float, admitted: float | None, finished: float | None,
            evictions: int = 0) -> WorkloadRecord:
    record = WorkloadRecord(klass, cpu, 1.0, created_at=created, first_admitted_at=admitted,
                            finished_at=finished, evictions=evictions)
    if admitted is not None and finished is not None:
        record.used_cpu_seconds = cpu * (finished - admitted)
    return record


def test_percentile_is_nearest_rank() -> None:
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert percentile(values, 0.5) == 3.0
    assert percentile(values, 0.9) == 5.0
    assert percentile(values, 0.0) == 1.0
    assert math.isnan(percentile([], 0.5))


def test_summary_uses_kueues_definitions() -> None:
    shape = load_shape("baseline").scaled(0.001)  # 30 queues x 20 cpu nominal = 600 cpu
    records = [
        _record("small", 1, created=0.0, admitted=2.0, finished=3.0),
        _record("small", 1, created=1.0, admitted=5.0, finished=6.0, evictions=2),
        _record("large", 20, created=0.0, admitted=1.0, finished=10.0),
        _record("medium", 5, created=0.0, admitted=None, finished=None),
    ]
    summary = summarise(records, shape)
    assert summary["wall_s"] == 10.0  # first create to last finish
    assert summary["completed"] is False and summary["finished"] == 3
    assert summary["classes"]["small"]["mean_time_to_admission_s"] == 3.0
    assert summary["classes"]["small"]["evictions"] == 2
    assert summary["classes"]["large"]["mean_time_to_admission_s"] == 1.0
    assert summary["classes"]["medium"]["admitted"] == 0
    assert summary["classes"]["medium"]["mean_time_to_admission_s"] is None
    # (1 + 1 + 20*9) cpu-seconds / (600 cpu * 10 s)
    assert summary["cq_utilisation_pct"] == pytest.approx(round(100 * 182 / 6000, 1))


def test_printed_block_puts_kueues_anchor_beside_ours_and_flags_incomplete_runs() -> None:
    shape = load_shape("baseline").scaled(0.001)
    result = {
        "variant": "kueue-qps", "qps": 50.0, "burst": 100, "scale": 0.001,
        **summarise([_record("small", 1, 0.0, 1.0, None)], shape),
        "controller": {"cpu_s": 3.2, "cpu_cores": 0.4, "peak_rss_mib": 80.5},
        "controller_api": {"total": 12, "requests_by_verb": {"PATCH": 10, "GET": 2}, "rate_limiter_wait_s": 0.5,
                           "event_queue": {"taken": 9, "wait_p50_s": 0.05, "wait_p99_s": 31.5, "wait_max_s": 40.25,
                                           "waiting_at_end": 3, "oldest_waiting_at_end_s": 12.5,
                                           "waiting_peak": 812}},
        "driver": {"cpu_s": 1.0, "create_lag": {"p50_ms": 1.0, "p99_ms": 2.0, "max_ms": 3.0},
                   "finish_lag": {}, "errors": 0},
    }
    text = format_run(result, shape)
    assert "apiserver CPU" not in text  # no local control plane measured
    with_control_plane = format_run(
        {**result, "control_plane": {"apiserver": {"cpu_s": 40.0, "cpu_cores": 1.25, "peak_rss_mib": 812.5}}}, shape
    )
    assert "apiserver CPU / peak RSS (since it started)" in with_control_plane
    assert "40.0 s  (1.25 cores on average) / 812.5 MiB" in with_control_plane
    assert "Event queue wait p50 / p99 / max" in text
    assert "0.05 / 31.50 / 40.25 s  (9 taken by a sender; waiting at the end 3, the oldest for 12.50 s; at most 812)" in text
    assert "351.1 s" in text and "55.9 %" in text and "215.5 s" in text
    assert "controller peak RSS" in text and "80.5 MiB" in text
    assert "12  (12.0 per workload: PATCH 10, GET 2" in text
    assert "INCOMPLETE: 0 of 1 finished" in text


def test_the_run_carries_and_prints_its_timeline_with_the_budget_used() -> None:
    shape = load_shape("baseline").scaled(0.001)
    small = _record("small", 1, created=100.0, admitted=101.0, finished=102.0)
    small.admitted_at = [101.0, 115.0]  # admitted, evicted at 112 s, admitted again
    small.evicted_at = [112.0]
    large = _record("large", 20, created=100.0, admitted=100.5, finished=116.0)
    large.admitted_at = [100.5]
    summary = summarise([small, large], shape)
    rows = summary["timeline"]["rows"]
    assert rows == [
        {"from_s": 0.0, "created": {"large": 1, "small": 1}, "admitted": {"large": 1, "small": 1}, "evicted": {},
         "hold_s": None, "turnaround_s": None},
        # The large one held its quota 15 s for a 1 s run; nobody was admitted after it finished.
        {"from_s": 10.0, "created": {}, "admitted": {"small": 1}, "evicted": {"small": 1},
         "hold_s": 14.5, "turnaround_s": None},
    ]
    result = {"variant": "kueue-qps", "qps": 50.0, "burst": 100, "scale": 0.001, **summary}
    text = format_run(result, shape)
    assert "budget used = admissions / the client's QPS" in text
    first_window = next(line.split() for line in text.splitlines() if line.strip().startswith("0-10"))
    # small/medium/large; no delay ended in the window; 0.2 admissions/s of 50/s
    assert first_window == ["0-10", "0.2", "1/0/1", "0/0/0", "2", "-", "/", "-", "s", "0%"]
    second_window = next(line.split() for line in text.splitlines() if line.strip().startswith("10-20"))
    assert second_window[5:9] == ["14.50", "/", "-", "s"]
    unthrottled = format_run({**result, "qps": 100_000.0}, shape)
    assert "per window" in unthrottled and "budget used" not in unthrottled


def test_medians_over_repeated_runs() -> None:
    def run(wall: float, small: float) -> dict:
        return {"wall_s": wall, "cq_utilisation_pct": wall / 10, "classes": {"small": {"mean_time_to_admission_s": small}},
                "controller": {"cpu_s": wall, "peak_rss_mib": 100.0}}

    medians = median_of_runs([run(30.0, 3.0), run(10.0, 9.0), run(20.0, 1.0)])
    assert medians["runs"] == 3
    assert medians["wall_s"] == 20.0
    assert medians["mean_time_to_admission_s"] == {"small": 3.0}
    assert medians["controller_peak_rss_mib"] == 100.0


def _cq_states() -> dict:
    """Two ClusterQueues whose status said 30 and 10 cpu for 2 s in a 4 s window."""
    from bench.baseline_cq import ClusterQueueEvent, ClusterQueueState

    def state(name: str, used_cpu_s: float) -> ClusterQueueState:
        last = ClusterQueueEvent(name, "all", usage_mcpu=0, nominal_mcpu=20_000, pending=0, reserving=0, active=True)
        return ClusterQueueState(first_event_at=0.0, last_event_at=4.0, last=last, used_mcpu_s=used_cpu_s * 1000)

    return {"a": state("a", 60.0), "b": state("b", 20.0)}


def test_summary_carries_kueues_utilisation_and_time_to_admission_from_the_first_watch_event() -> None:
    shape = load_shape("baseline").scaled(0.001)
    small = _record("small", 1, created=0.0, admitted=2.0, finished=3.0)
    small.first_seen_at = 0.5
    small.evicted_transitions = 3
    small.finished_while_evicted = True
    summary = summarise([small, _record("large", 20, created=0.0, admitted=1.0, finished=2.0)], shape, _cq_states())
    # (60 + 20) cpu-s / 4 s = 20 cpu average over 40 cpu nominal
    assert summary["cq_utilisation_kueue_pct"] == 50.0
    assert summary["cq_classes_kueue"]["all"]["cluster_queues"] == 2
    assert summary["classes"]["small"]["mean_time_to_admission_s"] == 2.0
    assert summary["classes"]["small"]["mean_time_to_admission_from_watch_s"] == 1.5
    assert summary["classes"]["small"]["evicted_transitions"] == 3
    assert summary["classes"]["small"]["finished_while_evicted"] == 1
    assert summary["classes"]["large"]["finished_while_evicted"] == 0
    assert summary["classes"]["large"]["mean_time_to_admission_from_watch_s"] is None, "never watched"
    without = summarise([small], shape)
    assert without["cq_utilisation_kueue_pct"] is None and without["cq_classes_kueue"] == {}


def test_summary_says_how_an_eviction_and_a_finish_crossed() -> None:
    """Finished while evicted: how long after the finish was sent the driver saw Evicted, and
    saw the finish itself (medians); nothing to say for a class without such a crossing."""
    shape = load_shape("baseline").scaled(0.001)
    crossed = []
    for sent_at, evicted_seen, finished_seen in ((2.2, 2.5, 3.0), (2.2, 3.1, 3.6), (2.2, 2.9, 4.4)):
        record = _record("small", 1, created=0.0, admitted=2.0, finished=finished_seen)
        record.finished_while_evicted = True
        record.finish_sent_at = sent_at
        record.finish_answered_at = sent_at + 0.5
        record.evicted_at.append(evicted_seen)
        crossed.append(record)
    summary = summarise([*crossed, _record("large", 20, created=0.0, admitted=1.0, finished=2.0)], shape)
    assert summary["classes"]["small"]["crossing_finish_sent_to_evicted_seen_p50_s"] == 0.7
    assert summary["classes"]["small"]["crossing_finish_sent_to_finished_seen_p50_s"] == 1.4
    assert summary["classes"]["small"]["crossing_finish_sent_to_answered_p50_s"] == 0.5
    assert summary["classes"]["large"]["crossing_finish_sent_to_evicted_seen_p50_s"] is None


def test_summary_splits_a_finish_round_trip_into_the_request_and_the_watch() -> None:
    """Sent to answered is the patch's request; answered to seen is the driver's watch lag (the
    object was committed by then). The ``creating_`` figures keep only finishes sent before the
    last create was sent; a finish never answered counts in neither."""
    shape = load_shape("baseline").scaled(0.001)
    records = []
    # (created, finish sent, answered, seen): two while creating, three after the last create.
    for created, sent, answered, seen in (
        (0.0, 1.0, 1.4, 3.4), (5.0, 2.0, 2.2, 5.2), (1.0, 9.0, 9.1, 9.2), (1.0, 10.0, 10.1, 10.2),
        (1.0, 11.0, 11.1, 11.2),
    ):
        record = _record("small", 1, created=created, admitted=sent - 0.2, finished=seen)
        record.finish_sent_at, record.finish_answered_at = sent, answered
        records.append(record)
    never = _record("small", 1, created=0.0, admitted=1.0, finished=2.0)
    never.finish_sent_at = 1.2  # sent, the answer lost (the run was cut off): left out
    trips = summarise([*records, never], shape)["finish_round_trip"]
    assert trips["finish_request_p50_s"] == 0.1 and trips["finish_request_p99_s"] == 0.4
    assert trips["finish_answered_to_seen_p50_s"] == 0.1 and trips["finish_answered_to_seen_p99_s"] == 3.0
    assert trips["creating_finish_request_p50_s"] == 0.2 and trips["creating_finish_request_p99_s"] == 0.4
    assert trips["creating_finish_answered_to_seen_p50_s"] == 2.0
    assert trips["creating_finish_answered_to_seen_p99_s"] == 3.0


def test_printed_block_names_both_utilisations_and_puts_the_anchor_beside_kueues() -> None:
    shape = load_shape("baseline").scaled(0.001)
    record = _record("small", 1, created=0.0, admitted=2.0, finished=4.0)
    record.first_seen_at = 1.0
    result = {
        "variant": "kueue-qps@old", "qps": 50.0, "burst": 100, "scale": 0.001,
        **summarise([record], shape, _cq_states()), "cq_recording_complete": False,
    }
    lines = format_run(result, shape).splitlines()
    kueue_row = next(line for line in lines if line.startswith("ClusterQueue utilisation, Kueue's definition"))
    ours_row = next(line for line in lines if line.startswith("ClusterQueue utilisation, workload time"))
    assert kueue_row.split()[-4:] == ["50.0", "%", "55.9", "%"]
    assert "not published" in ours_row
    footnote = next(line for line in lines if line.startswith("[1] ClusterQueue status usage"))
    assert footnote.endswith("2 status events of 2 ClusterQueues, recording cut off before every ClusterQueue was idle")
    assert any(line.startswith("[2]") and "600 cpu nominal x wall" in line for line in lines)
    small_row = next(line for line in lines if line.startswith("mean time to admission small [3]"))
    assert small_row.split()[-4:] == ["1.00", "s", "215.5", "s"]
    assert "kueue-qps@old" in lines[0]
    evictions_row = next(line for line in lines if line.startswith("  evictions: admissions lost / Evicted=True"))
    assert evictions_row.endswith(" 0  / 0 (0 finished while evicted)")


def test_medians_include_kueues_utilisation_and_watch_based_waits() -> None:
    def run(util: float | None, wait: float) -> dict:
        return {"wall_s": 1.0, "cq_utilisation_pct": 1.0, "cq_utilisation_kueue_pct": util,
                "classes": {"small": {"mean_time_to_admission_s": wait, "mean_time_to_admission_from_watch_s": wait,
                                      "evicted_transitions": 2}}}

    medians = median_of_runs([run(40.0, 1.0), run(None, 3.0), run(44.0, 2.0)])
    assert medians["cq_utilisation_kueue_pct"] == 42.0, "missing figures are left out, not counted as zero"
    assert medians["mean_time_to_admission_from_watch_s"] == {"small": 2.0}
    assert medians["evicted_transitions"] == {"small": 2}


def _run(queue: str, seen: float, admitted: list[float], finished: float | None, klass: str = "large") -> WorkloadRecord:
    return WorkloadRecord(klass, 20, 1.0, queue=queue, first_seen_at=seen, admitted_at=admitted, finished_at=finished)


def test_loop_delays_hold_beyond_the_runtime_and_the_turnaround_to_the_next_waiting_workload() -> None:
    start = 100.0
    records = [
        _run("q1", seen=100.0, admitted=[100.0], finished=103.5),  # 1 s run, held 2.5 s longer
        _run("q1", seen=100.5, admitted=[104.0], finished=None, klass="small"),  # another class: not counted
        _run("q1", seen=101.0, admitted=[104.25], finished=None),  # waiting at 103.5: turnaround 0.75
        _run("q1", seen=104.0, admitted=[104.5], finished=None),  # second admission after the finish: not counted
        _run("q2", seen=100.0, admitted=[101.0, 107.0], finished=109.0),  # evicted and admitted again
        _run("q2", seen=110.0, admitted=[111.0], finished=None),  # created after q2's finish: not waiting then
        _run("q3", seen=100.0, admitted=[], finished=None),  # never admitted: no delay
    ]
    assert sorted(loop_delays(records, start), key=lambda d: (d.kind, d.at)) == [
        Delay(3.5, HOLD, 2.5),
        Delay(9.0, HOLD, 1.0),  # from the last admission
        Delay(4.25, TURNAROUND, 0.75),
    ]


def test_a_finish_before_its_last_admission_gives_no_hold() -> None:
    # Finished arrived while evicted, then a stale admission was seen: not a run of negative length.
    assert loop_delays([_run("q", seen=0.0, admitted=[1.0, 5.0], finished=3.0)], 0.0) == []
