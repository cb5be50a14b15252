"""The engine micro-benchmark runs at a tiny scale and prints its table and JSON summary."""

from __future__ import annotations

import json

from bench.engine_micro import main


def test_engine_micro_benchmark_smoke(capsys) -> None:
    assert main(["--scale", "0.01", "--pending", "3000,6000"]) == 0
    out = capsys.readouterr().out
    assert "decisions" in out.splitlines()[2]
    summary = json.loads(out.strip().splitlines()[-1])
    assert [row["pending"] for row in summary["rows"]] == [30, 60]
    assert all(row["decisions"] > 0 for row in summary["rows"])
