"""CI smoke run of the cluster-free benchmarks through ``bench.run_all`` at a tiny scale.

Only completion and the presence of figures are checked, never timings: the figures of a
shared 2-core machine say nothing about a change. The cluster benchmarks (informer sync, the
controller cold start, the scheduler baseline) have their smoke run in ``tests/e2e/test_bench_smoke.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.run_all import main


def test_engine_and_webhook_benchmarks_complete_and_print_figures(tmp_path: Path, capsys) -> None:
    summary_path = tmp_path / "summary.json"
    code = main(["--only", "engine_micro,webhook_load", "--scale", "0.01", "--timeout", "300",
                 "--json", str(summary_path)])
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    assert "### engine_micro" in out and "### webhook_load" in out
    printed = json.loads(out.strip().splitlines()[-1])
    assert printed == json.loads(summary_path.read_text())
    results = {r["benchmark"]: r for r in printed["results"]}
    assert set(results) == {"engine_micro", "webhook_load"}
    assert all(r["ok"] and r["exit_code"] == 0 for r in results.values())
    engine_rows = results["engine_micro"]["figures"]["rows"]
    assert engine_rows and all(row["decisions"] > 0 for row in engine_rows)
    webhook_runs = results["webhook_load"]["figures"]["runs"]
    assert [run["name"].split()[0] for run in webhook_runs] == ["validate", "mutate", "validate", "mutate"]
    assert all(run["requests"] > 0 for run in webhook_runs)
