"""run_all: choosing benchmarks and reading each one's figures from its output."""

from __future__ import annotations

import pytest

from bench.run_all import BENCHMARKS, available, figures_of, last_json_object, select, webhook_figures

WEBHOOK_OUTPUT = """pykueue webhook benchmark: gunicorn gthread, 2 workers x 4 threads, TLS, 2 CPUs, body 1500 bytes
validate @200/s        requests=  4000 errors=  0 rate=   199.8/s p50=   2.10ms p99=   8.70ms max=  20.00ms mean=   2.50ms
mutate max             requests=  9000 errors=  1 rate=   900.0/s p50=   8.00ms p99=  30.00ms max=  50.00ms mean=   9.00ms
"""


def test_webhook_result_lines_become_figures() -> None:
    figures = webhook_figures(WEBHOOK_OUTPUT)
    assert figures == {
        "runs": [
            {"name": "validate @200/s", "requests": 4000, "errors": 0, "rate_per_s": 199.8, "p50_ms": 2.1,
             "p99_ms": 8.7},
            {"name": "mutate max", "requests": 9000, "errors": 1, "rate_per_s": 900.0, "p50_ms": 8.0,
             "p99_ms": 30.0},
        ]
    }
    assert webhook_figures("webhook did not start") is None


def test_other_benchmarks_report_their_last_json_line() -> None:
    output = 'table\n{"partial": \n{"rows": [1]}\nnot json\n[1, 2]\n'
    assert last_json_object(output) == {"rows": [1]}
    assert figures_of("engine_micro", output) == {"rows": [1]}
    assert last_json_object("no summary at all") is None


def test_selection_and_unknown_names() -> None:
    assert [b.name for b in select(None, None)] == [b.name for b in BENCHMARKS]
    assert [b.name for b in select("baseline,engine_micro", None)] == ["engine_micro", "baseline"]
    assert [b.name for b in select(None, "baseline")] == ["engine_micro", "webhook_load", "conversion_load", "conversion_micro",
                                                     "event_queue_memory", "informer_sync",
                                                     "controller_cold_start"]
    with pytest.raises(SystemExit, match=r"unknown benchmark\(s\) \['nope'\]"):
        select("nope", None)


def test_every_listed_benchmark_exists_in_this_checkout() -> None:
    assert all(available(b) for b in BENCHMARKS)
