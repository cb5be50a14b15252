"""Workload create throughput under pykueue's CRDs against Kueue's, on one cluster, no controller.

In the scheduler baseline the load driver's creates ran later behind their schedule in pykueue's
runs than in Kueue's (docs/performance.md, "Unthrottled, two runs each"). Part of a create's cost
is the apiserver's: decoding, defaulting, structural-schema and CEL validation against the
Workload CRD, which differs between the two projects. This measures that part alone: the same
Workloads (the baseline's, :func:`bench.baseline_shape.workload`) created with ``--concurrency``
in flight, first under the cluster's own CRDs, then under Kueue's published CRDs of
``--kueue-version`` (swapped in and put back by :class:`bench.kueue_process.CrdSwap`), round after
round (``--repeat``) so that drift on the machine hits both. Every round deletes its Workloads,
and waits until they are gone, before the next.

Run it on a cluster where no admission controller and no admission webhook runs (a fresh local
cluster, as the default): a controller would write to the Workloads while they are created, and
a webhook would add its own round trip to every create. The cluster: ``--kubeconfig`` (or
``$PYKUEUE_KUBECONFIG``), else the local cluster ``$PYKUEUE_CLUSTER_NAME`` (default
``pykueue-bench``), brought up if needed and stopped at the end if this program started it.

Usage::

    python -m bench.crd_create_rate                    # 3,000 Workloads, 2 rounds
    python -m bench.crd_create_rate --count 200 --repeat 1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pykueue.kube.client import KubeClient
from pykueue.kube.errors import AlreadyExists, NotFound
from pykueue.kube.resources import NAMESPACES, WORKLOADS

from .baseline import connect
from .baseline_report import percentile
from .baseline_shape import RUN_LABEL, Names, Shape, load_shape, namespace, workload
from .kueue_process import CrdSwap, kueue_artifacts, stored_version

OURS = "pykueue"
DELETE_WAIT_S = 120.0


def workloads_for(shape: Shape, names: Names, count: int) -> list[dict[str, Any]]:
    """``count`` Workloads in the baseline's mix: each round of the shape's classes across every
    ClusterQueue's namespace, in turn, until there are enough."""
    objects: list[dict[str, Any]] = []
    ordinal = 0
    while len(objects) < count:
        for klass in shape.classes:
            for index in range(shape.cluster_queues):
                objects.append(workload(names, index, klass, ordinal))
        ordinal += 1
    return objects[:count]


def _wait_gone(client: KubeClient, selector: str) -> None:
    deadline = time.monotonic() + DELETE_WAIT_S
    while client.list(WORKLOADS, label_selector=selector).get("items"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"Workloads {selector} still exist {DELETE_WAIT_S:.0f} s after their deletion")
        time.sleep(0.5)


def one_round(client: KubeClient, shape: Shape, count: int, concurrency: int, crds: str) -> dict[str, Any]:
    """Create ``count`` Workloads in fresh namespaces, time them, delete them (and wait)."""
    names = Names(uuid.uuid4().hex[:6])
    for index in range(shape.cluster_queues):
        with contextlib.suppress(AlreadyExists):
            client.create(NAMESPACES, namespace(names, index))
    objects = workloads_for(shape, names, count)
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def create(obj: dict[str, Any]) -> None:
        started = time.monotonic()
        try:
            client.create(WORKLOADS, obj)
        except Exception as exc:  # counted and reported: a failed create must not look fast
            with lock:
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
            return
        with lock:
            latencies.append(time.monotonic() - started)

    started = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(create, objects))
    wall = time.monotonic() - started
    selector = f"{RUN_LABEL}={names.run_id}"

    def delete(obj: dict[str, Any]) -> None:
        with contextlib.suppress(NotFound):
            client.delete(WORKLOADS, obj["metadata"]["name"], namespace=obj["metadata"]["namespace"])

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(delete, objects))
    _wait_gone(client, selector)
    for index in range(shape.cluster_queues):
        with contextlib.suppress(NotFound):
            client.delete(NAMESPACES, names.namespace(index))
    created = len(latencies)
    return {
        "crds": crds,
        "created": created,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "wall_s": round(wall, 2),
        "creates_per_s": round(created / wall, 1) if wall > 0 else None,
        "latency_p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "latency_p99_ms": round(percentile(latencies, 0.99) * 1000, 1) if latencies else None,
    }


def format_round(result: dict[str, Any], count: int) -> str:
    line = (
        f"{result['crds']:>16} CRDs: {result['created']}/{count} creates in {result['wall_s']:.1f} s = "
        f"{result['creates_per_s']}/s; latency p50 {result['latency_p50_ms']} ms, p99 {result['latency_p99_ms']} ms"
    )
    if result["errors"]:
        line += f"; {result['errors']} failed, first: {result['first_error']}"
    return line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench.crd_create_rate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=3000, help="Workloads created per round and CRD set")
    parser.add_argument("--concurrency", type=int, default=64, help="creates in flight at once")
    parser.add_argument("--repeat", type=int, default=2, help="rounds, each under both CRD sets")
    parser.add_argument("--kueue-version", default="v0.14.8", help="whose published CRDs to compare with")
    parser.add_argument("--kubeconfig", help="the cluster (default: $PYKUEUE_KUBECONFIG, else a local cluster)")
    parser.add_argument("--json", type=Path, help="also write the JSON summary to this file")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.count < 1 or args.concurrency < 1 or args.repeat < 1:
        print("bench.crd_create_rate: --count, --concurrency and --repeat must be at least 1", file=sys.stderr)
        return 2
    try:
        _, crd_dir = kueue_artifacts(args.kueue_version)
    except RuntimeError as err:
        print(f"bench.crd_create_rate: kueue@{args.kueue_version}: {err}", file=sys.stderr)
        return 2
    kueue = f"kueue@{args.kueue_version}"
    shape = load_shape("baseline").scaled(0.3)  # 30 namespaces, the baseline's classes
    client, _kubeconfig, started_cluster = connect(args.kubeconfig)
    rounds: list[dict[str, Any]] = []
    print(f"Workload creates, {args.count} per round, {args.concurrency} in flight, no controller: "
          f"{OURS} CRDs against {kueue}'s, {args.repeat} round(s)", flush=True)
    try:
        for _ in range(args.repeat):
            result = one_round(client, shape, args.count, args.concurrency, OURS)
            rounds.append(result)
            print(format_round(result, args.count), flush=True)
            speaking = client.speaking(stored_version(crd_dir))
            swap = CrdSwap(speaking, crd_dir)
            swap.install()
            try:
                result = one_round(speaking, shape, args.count, args.concurrency, kueue)
            finally:
                swap.restore()
            rounds.append(result)
            print(format_round(result, args.count), flush=True)
    finally:
        client.close()
        if started_cluster is not None:
            started_cluster.down()
    medians = {
        crds: statistics.median(r["creates_per_s"] or 0.0 for r in rounds if r["crds"] == crds)
        for crds in (OURS, kueue)
    }
    ratio = f" ({medians[OURS] / medians[kueue]:.2f})" if medians[kueue] > 0 else ""
    print(f"median creates/s: {OURS} {medians[OURS]:.0f}, {kueue} {medians[kueue]:.0f}{ratio}", flush=True)
    summary = {
        "benchmark": "crd_create_rate",
        "count": args.count,
        "concurrency": args.concurrency,
        "kueue_version": args.kueue_version,
        "medians_creates_per_s": medians,
        "rounds": rounds,
    }
    text = json.dumps(summary)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0 if all(r["errors"] == 0 for r in rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
