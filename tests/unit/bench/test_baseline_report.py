"""Figures of a baseline run: Kueue's definitions applied to per-workload records."""

from __future__ import annotations

import math

import pytest

from bench.baseline_driver import WorkloadRecord
from bench.baseline_report import format_run, median_of_runs, percentile, summarise
from bench.baseline_shape import load_shape


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
        "controller_api": {"total": 12, "requests_by_verb": {"PATCH": 10, "GET": 2}, "rate_limiter_wait_s": 0.5},
        "driver": {"cpu_s": 1.0, "create_lag": {"p50_ms": 1.0, "p99_ms": 2.0, "max_ms": 3.0},
                   "finish_lag": {}, "errors": 0},
    }
    text = format_run(result, shape)
    assert "351.1 s" in text and "55.9 %" in text and "215.5 s" in text
    assert "controller peak RSS" in text and "80.5 MiB" in text
    assert "12  (12.0 per workload: PATCH 10, GET 2" in text
    assert "INCOMPLETE: 0 of 1 finished" in text


def test_medians_over_repeated_runs() -> None:
    def run(wall: float, small: float) -> dict:
        return {"wall_s": wall, "cq_utilisation_pct": wall / 10, "classes": {"small": {"mean_time_to_admission_s": small}},
                "controller": {"cpu_s": wall, "peak_rss_mib": 100.0}}

    medians = median_of_runs([run(30.0, 3.0), run(10.0, 9.0), run(20.0, 1.0)])
    assert medians["runs"] == 3
    assert medians["wall_s"] == 20.0
    assert medians["mean_time_to_admission_s"] == {"small": 3.0}
    assert medians["controller_peak_rss_mib"] == 100.0
