"""The engine micro-benchmark runs at a tiny scale and prints its tables and JSON summary.

Timings are never asserted (a shared machine's figures say nothing about a change); what is
asserted is what makes the flatness figure meaningful: every size runs the same stream of
decisions, so cost per decision is compared on equal work.
"""

from __future__ import annotations

import json

import pytest

from bench.engine_micro import main


def _summary(capsys) -> tuple[list[str], dict]:
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    return lines, json.loads(lines[-1])


def test_engine_micro_benchmark_smoke(capsys) -> None:
    assert main(["--scale", "0.01", "--pending", "3000,6000", "--repeat", "2"]) == 0
    lines, summary = _summary(capsys)
    assert any(line.startswith(" pending decisions") for line in lines)
    assert [row["pending"] for row in summary["rows"]] == [30, 60]
    assert [run["pending"] for run in summary["runs"]] == [30, 30, 60, 60]
    assert all(row["decisions"] > 0 for row in summary["rows"])
    assert len(summary["cost_ratio_per_repeat"]) == 2
    assert any(line.startswith("CPU time per decision, 60 / 30 pending:") for line in lines)


def test_every_backlog_size_runs_the_same_stream_of_decisions(capsys) -> None:
    # 20 and 40 workloads per ClusterQueue: deep enough that no queue runs dry while measured.
    assert main(["--scale", "0.01", "--pending", "60000,120000", "--repeat", "1"]) == 0
    _, summary = _summary(capsys)
    small, large = summary["rows"]
    assert (small["pending"], large["pending"]) == (600, 1200)
    stream = ("decisions", "admissions", "preemptions", "cycles", "heads_tried")
    assert small["preemptions"] > 0 and small["admissions"] > 0
    assert [small[k] for k in stream] == [large[k] for k in stream]
    # The backlog keeps its size: every admitted workload was replaced in its own queue.
    assert abs(small["final_pending"] - 600) <= 30 and abs(large["final_pending"] - 1200) <= 30


def test_ab_run_against_another_engine_tree(capsys, tmp_path) -> None:
    """--engine-src runs this benchmark against another tree's engine (here: this checkout under
    a second label), interleaved, and prints both side by side with the same decisions."""
    from bench.engine_micro_ab import THIS_CHECKOUT

    assert main(["--scale", "0.01", "--pending", "60000", "--repeat", "2", "--engine-src", f"same={THIS_CHECKOUT}"]) == 0
    lines, summary = _summary(capsys)
    assert [line.split(":")[0] for line in lines if line.startswith("run ")] == [
        "run 1/2 this", "run 1/2 same", "run 2/2 this", "run 2/2 same"
    ]
    this, same = summary["comparison"]
    assert (this["label"], same["label"]) == ("this", "same")
    assert len(this["runs"]) == len(same["runs"]) == 2
    assert this["runs"][0][0]["decisions"] == same["runs"][1][0]["decisions"] > 0


def test_ab_run_refuses_a_tree_without_an_engine(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--engine-src", f"empty={tmp_path}"])
    assert "has no controller/engine package" in capsys.readouterr().err
