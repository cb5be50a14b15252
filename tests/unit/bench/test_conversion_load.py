"""The conversion benchmark's reviews and arithmetic (its figures go into docs/performance.md).

The reviews it sends must be ones the webhook converts successfully and without loss, or the
figures would measure the failure path; the smoke run of the whole program is in
tests/unit/test_bench_smoke.py.
"""

from __future__ import annotations

import json
import math

from bench.conversion_load import OTHER_VERSION, Run, review_body, stored_workload, summarise
from pykueue.api.constants import GROUP, STORAGE_VERSION
from pykueue.api.conversion import convert
from webhook.conversion import review_response


def test_a_review_of_n_stored_workloads_converts_to_the_other_version_without_loss() -> None:
    answer, outcome = review_response(review_body(25))
    assert outcome == "converted" and answer["response"]["result"] == {"status": "Success"}
    converted = answer["response"]["convertedObjects"]
    assert len(converted) == 25
    assert {o["apiVersion"] for o in converted} == {f"{GROUP}/{OTHER_VERSION}"}
    assert [convert(o, STORAGE_VERSION) for o in converted] == [stored_workload(i) for i in range(25)]


def test_the_stored_workload_has_what_the_conversion_rewrites() -> None:
    stored = json.dumps(stored_workload(0))
    # v1beta2 spells these differently from v1beta1, so each review does real work.
    for field in ("priorityClassRef", "slices", "accumulatedPastExecutionTimeSeconds"):
        assert (field in stored) == (STORAGE_VERSION == "v1beta2")


def test_summary_medians_per_review_size() -> None:
    runs = [Run(10, 100, 0, 2.0, [0.01] * 100, cpu_seconds=0.5), Run(10, 300, 1, 2.0, [0.02] * 300, cpu_seconds=0.9),
            Run(1, 50, 0, 1.0, [0.001] * 50, cpu_seconds=0.05)]
    rows = {r["objects_per_review"]: r for r in summarise(runs)}
    assert rows[10]["median_reviews_per_s"] == 100.0 and rows[10]["median_objects_per_s"] == 1000.0
    assert rows[10]["median_cpu_ms_per_review"] == 4.0  # medians of 5 and 3 ms/review
    assert rows[10]["median_cpu_ms_per_object"] == 0.4
    assert rows[10]["errors"] == 1 and rows[1]["median_cpu_ms_per_object"] == 1.0
    assert math.isnan(Run(1, 0, 0, 1.0, []).cpu_ms_per_review)
