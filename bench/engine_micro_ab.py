"""A/B runs of the engine micro-benchmark: this checkout's engine against other source trees.

``python -m bench.engine_micro --engine-src before=/tmp/engine-old`` runs *this* checkout's
benchmark program against each engine (``controller/`` and ``pykueue/`` of that tree, typically
``git worktree add --detach DIR <commit>``), one child process per run, interleaved — this,
before, this, before, ... — so that a drift in the shared machine's load hits every engine, and
prints the figures side by side. The same program on both sides means the same decision stream
and the same measurement; only the engine differs.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

THIS_CHECKOUT = Path(__file__).resolve().parent.parent
BENCH_FILE = Path(__file__).resolve().parent / "engine_micro.py"

# Runs a benchmark program of this checkout (its path: argv[2]) with another tree (argv[1]) first on
# sys.path, and refuses to measure if the engine was not imported from that tree. Shared with
# bench/baseline_replay.py's --engine-src.
CHILD_UNDER_TREE = """
import importlib.util, sys
tree, program = sys.argv[1], sys.argv[2]
sys.path.insert(0, tree)
spec = importlib.util.spec_from_file_location("bench.program_under_test", program)
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
import controller.engine
if not controller.engine.__file__.startswith(tree):
    raise SystemExit(f"controller.engine was imported from {controller.engine.__file__}, not from {tree}")
sys.exit(module.main(sys.argv[3:]))
"""


@dataclass
class EngineTree:
    label: str
    path: Path
    runs: list[list[dict[str, Any]]] = field(default_factory=list)  # per repeat: one row per size


def parse_engine_src(value: str) -> EngineTree:
    """``[LABEL=]DIR``; the label defaults to the tree's short commit, else its directory name."""
    label, _, path = value.rpartition("=")
    tree = Path(path).expanduser().resolve()
    if not (tree / "controller" / "engine" / "__init__.py").is_file():
        raise ValueError(f"--engine-src: {tree} has no controller/engine package")
    return EngineTree(label or _short_commit(tree) or tree.name, tree)


def _short_commit(path: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _run_child(tree: EngineTree, bench_args: Sequence[str]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="engine-micro-") as tmp:
        summary_path = Path(tmp) / "summary.json"
        done = subprocess.run(
            [sys.executable, "-c", CHILD_UNDER_TREE, str(tree.path), str(BENCH_FILE), *bench_args, "--repeat", "1",
             "--json", str(summary_path)],
            capture_output=True,
            text=True,
            cwd=tmp,
        )
        if done.returncode != 0:
            raise RuntimeError(f"engine {tree.label} ({tree.path}) failed:\n{done.stderr[-3000:]}")
        rows: list[dict[str, Any]] = json.loads(summary_path.read_text())["rows"]
        return rows


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 1) if present else None


def compare(trees: Sequence[EngineTree], bench_args: Sequence[str], repeat: int) -> dict[str, Any]:
    """Run every tree ``repeat`` times, interleaved; print per-run lines and a side-by-side table;
    return the JSON summary."""
    for round_number in range(repeat):
        for tree in trees:
            rows = _run_child(tree, bench_args)
            tree.runs.append(rows)
            figures = ", ".join(
                f"{row['pending']}: {row['us_per_decision']} us, {row['kinstructions_per_decision']}k instr"
                for row in rows
            )
            print(f"run {round_number + 1}/{repeat} {tree.label}: {figures}", flush=True)
    sizes = [row["pending"] for row in trees[0].runs[0]]
    summary_trees = []
    header = f"{'pending':>8} {'engine':>16} {'decisions':>9} {'us/dec':>7} {'kinstr/dec':>10} {'gc us/dec':>9}"
    print(f"median of {repeat} run(s) per engine, interleaved:")
    print(header)
    print("-" * len(header))
    for index, size in enumerate(sizes):
        for tree in trees:
            rows = [run[index] for run in tree.runs]
            us = _median([r["us_per_decision"] for r in rows])
            kinstr = _median([r["kinstructions_per_decision"] for r in rows])
            gc_us = _median([r["gc_us_per_decision"] for r in rows])
            print(f"{size:>8} {tree.label:>16} {rows[0]['decisions']:>9} {us:>7} {kinstr!s:>10} {gc_us:>9}")
    for tree in trees:
        first = _median([run[0]["us_per_decision"] for run in tree.runs])
        last = _median([run[-1]["us_per_decision"] for run in tree.runs])
        per_repeat = [round(run[-1]["us_per_decision"] / run[0]["us_per_decision"], 2) for run in tree.runs]
        ratio = round(last / first, 2) if first and last else None
        print(
            f"{tree.label}: CPU time per decision, {sizes[-1]} / {sizes[0]} pending: {ratio} "
            f"(per repeat: {', '.join(map(str, per_repeat))})"
        )
        summary_trees.append(
            {
                "label": tree.label,
                "path": str(tree.path),
                "runs": tree.runs,
                "cost_ratio_largest_to_smallest": ratio,
                "cost_ratio_per_repeat": per_repeat,
            }
        )
    return {"benchmark": "engine_micro", "comparison": summary_trees}
