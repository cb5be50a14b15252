"""Run every benchmark at one scale, print each one's figures, then one JSON summary.

    python -m bench.run_all --scale 0.05          # what `make bench` runs
    python -m bench.run_all --scale 0.01 --only engine_micro,webhook_load

Each benchmark runs as its own process (``python -m bench.<name> --scale S``) so one that fails
or leaks threads cannot disturb the next, and its output is shown as it comes. The figures
collected from each are its JSON summary line (the last line that parses as a JSON object) or,
for the webhook load, its result lines. The benchmarks that need a cluster (informer sync, the
controller cold start, the scheduler baseline) share one: ``--kubeconfig`` (or ``$PYKUEUE_KUBECONFIG``), else the local
cluster ``$PYKUEUE_CLUSTER_NAME`` (default ``pykueue-bench``), brought up once here and torn
down at the end if this program started it.

Exit status: 0 when every benchmark completed, 1 otherwise (figures are never judged here).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Benchmark:
    name: str  # module under bench/
    needs_cluster: bool
    extra_args: tuple[str, ...] = ()


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("engine_micro", needs_cluster=False),
    Benchmark("webhook_load", needs_cluster=False),
    Benchmark("conversion_load", needs_cluster=False),
    Benchmark("conversion_micro", needs_cluster=False),
    Benchmark("event_queue_memory", needs_cluster=False),
    Benchmark("informer_sync", needs_cluster=True),
    Benchmark("controller_cold_start", needs_cluster=True),
    Benchmark("baseline", needs_cluster=True),
)

_WEBHOOK_LINE = re.compile(
    r"^(?P<name>\S.*?)\s+requests=\s*(?P<requests>\d+)\s+errors=\s*(?P<errors>\d+)\s+"
    r"rate=\s*(?P<rate>[\d.]+)/s\s+p50=\s*(?P<p50>[\d.na]+)ms\s+p99=\s*(?P<p99>[\d.na]+)ms"
)


def last_json_object(output: str) -> dict[str, Any] | None:
    """The last line of ``output`` that is a JSON object (a benchmark's summary), else None."""
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


def webhook_figures(output: str) -> dict[str, Any] | None:
    """The webhook load's result lines (``validate @200/s requests=... p99=...ms``) as data."""
    runs = []
    for line in output.splitlines():
        match = _WEBHOOK_LINE.match(line.strip())
        if match:
            runs.append(
                {
                    "name": match["name"],
                    "requests": int(match["requests"]),
                    "errors": int(match["errors"]),
                    "rate_per_s": float(match["rate"]),
                    "p50_ms": float(match["p50"]),
                    "p99_ms": float(match["p99"]),
                }
            )
    return {"runs": runs} if runs else None


def figures_of(name: str, output: str) -> dict[str, Any] | None:
    return webhook_figures(output) if name == "webhook_load" else last_json_object(output)


def available(benchmark: Benchmark) -> bool:
    return importlib.util.find_spec(f"bench.{benchmark.name}") is not None


def run_one(benchmark: Benchmark, scale: float, extra: Sequence[str], timeout_s: float) -> dict[str, Any]:
    """Run one benchmark, echoing its output; its figures, exit code and duration."""
    command = [sys.executable, "-m", f"bench.{benchmark.name}", "--scale", str(scale), *benchmark.extra_args, *extra]
    print(f"\n### {benchmark.name}: {' '.join(command[1:])}", flush=True)
    started = time.monotonic()
    lines: list[str] = []
    with subprocess.Popen(
        command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            print(line, end="", flush=True)
            lines.append(line)
            if time.monotonic() - started > timeout_s:
                process.kill()
                lines.append(f"run_all: {benchmark.name} cut off after {timeout_s:.0f}s\n")
                break
        code = process.wait()
    output = "".join(lines)
    figures = figures_of(benchmark.name, output)
    return {
        "benchmark": benchmark.name,
        "exit_code": code,
        "ok": code == 0 and figures is not None,
        "seconds": round(time.monotonic() - started, 1),
        "figures": figures,
    }


def select(only: str | None, skip: str | None) -> list[Benchmark]:
    names = {b.name for b in BENCHMARKS}
    wanted = {n.strip() for n in only.split(",") if n.strip()} if only else set(names)
    skipped = {n.strip() for n in skip.split(",") if n.strip()} if skip else set()
    unknown = (wanted | skipped) - names
    if unknown:
        raise SystemExit(f"run_all: unknown benchmark(s) {sorted(unknown)}; known: {', '.join(sorted(names))}")
    return [b for b in BENCHMARKS if b.name in wanted and b.name not in skipped]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.run_all", description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.05, help="scale passed to every benchmark")
    parser.add_argument("--only", help="comma-separated benchmarks to run (default: all)")
    parser.add_argument("--skip", help="comma-separated benchmarks to leave out")
    parser.add_argument("--kubeconfig", help="cluster for the cluster benchmarks (default: a local one)")
    parser.add_argument("--controller-pid", type=int, help="passed to the baseline: use this running controller")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds each benchmark may run")
    parser.add_argument("--json", type=Path, help="also write the JSON summary to this file")
    args = parser.parse_args(argv)
    chosen = select(args.only, args.skip)

    kubeconfig = args.kubeconfig or os.environ.get("PYKUEUE_KUBECONFIG")
    started_cluster = None
    results: list[dict[str, Any]] = []
    try:
        for benchmark in chosen:
            if not available(benchmark):
                print(f"\n### {benchmark.name}: not present in this checkout; skipped", flush=True)
                results.append({"benchmark": benchmark.name, "ok": False, "skipped": "module not present"})
                continue
            extra: list[str] = []
            if benchmark.needs_cluster:
                if kubeconfig is None:
                    from hack.localcluster import LocalCluster

                    cluster = LocalCluster(os.environ.get("PYKUEUE_CLUSTER_NAME") or "pykueue-bench")
                    if not cluster.is_healthy():
                        started_cluster = cluster
                    cluster.up()
                    kubeconfig = cluster.kubeconfig
                extra += ["--kubeconfig", kubeconfig]
                if benchmark.name == "baseline" and args.controller_pid is not None:
                    extra += ["--controller-pid", str(args.controller_pid)]
            results.append(run_one(benchmark, args.scale, extra, args.timeout))
    finally:
        if started_cluster is not None:
            started_cluster.down()

    print("\n### summary")
    for result in results:
        state = "ok" if result["ok"] else f"FAILED ({result.get('skipped') or 'exit ' + str(result.get('exit_code'))})"
        print(f"{result['benchmark']:<16}{state:<24}{result.get('seconds', 0):>8} s")
    summary = {"scale": args.scale, "results": results}
    text = json.dumps(summary)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
