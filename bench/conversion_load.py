"""The conversion webhook's load: ConversionReviews per second and CPU per converted object.

    python -m bench.conversion_load [--objects 1,10,100] [--seconds 10] [--connections 4] [--repeat 3]

Who calls ``/convert`` (docs/design/api-versions.md): every read or write of a Kueue kind in the
version etcd does not store. The programs never do (their client converts in-process), so the
callers are other clients: ``kubectl`` with an explicit ``v1beta1``, tools written against
Kueue's deprecated version, and the watches behind them. A watch event or a get converts one
object per review; a list converts a page of objects in one review. So for each ``--objects``
N the benchmark sends reviews of N stored Workloads (admitted, with a topology assignment, as a
busy queue holds them) asking for the other version, from ``--connections`` closed-loop clients
over warm TLS keep-alive connections, and prints reviews/s, objects/s, latency and the webhook's
CPU (gunicorn master and workers, user + system) per review and per object.

It starts ``pykueue-webhook`` on loopback with a throw-away certificate exactly as
``bench.webhook_load`` does (no cluster needed); every loop is bounded in time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.webhook_load import REPO, Server, percentile, start_server, stop_server
from pykueue.api.constants import GROUP, STORAGE_VERSION, V1BETA2_VERSION, VERSION
from pykueue.api.conversion import convert

CONVERT_PATH = "/convert"
OTHER_VERSION = VERSION if STORAGE_VERSION == V1BETA2_VERSION else V1BETA2_VERSION


def stored_workload(index: int) -> dict[str, Any]:
    """An admitted Workload as etcd holds it (the storage version), with a two-host topology assignment."""
    name = f"bench-{index}"
    v1beta1 = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "team-a", "uid": str(uuid.UUID(int=index)), "resourceVersion": str(1000 + index),
                     "labels": {"kueue.x-k8s.io/job-uid": str(uuid.UUID(int=index + 1))},
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name,
                                          "uid": str(uuid.UUID(int=index + 1)), "controller": True}]},
        "spec": {
            "queueName": "lq", "priority": 100, "priorityClassName": "high",
            "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass", "active": True,
            "podSets": [{"name": "main", "count": 2, "template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.9",
                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}],
        },
        "status": {
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{
                "name": "main", "count": 2, "flavors": {"cpu": "on-demand", "memory": "on-demand"},
                "resourceUsage": {"cpu": "2", "memory": "2Gi"},
                "topologyAssignment": {"levels": ["zone", "kubernetes.io/hostname"],
                                       "domains": [{"values": ["z1", "h1"], "count": 1}, {"values": ["z1", "h2"], "count": 1}]},
            }]},
            "conditions": [
                {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z",
                 "observedGeneration": 1} for t in ("QuotaReserved", "Admitted")
            ],
            "accumulatedPastExexcutionTimeSeconds": 30,
        },
    }
    return convert(v1beta1, STORAGE_VERSION)


def review_body(objects: int, desired: str = OTHER_VERSION) -> bytes:
    """A ConversionReview of ``objects`` stored Workloads asking for ``desired``."""
    return json.dumps({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": str(uuid.uuid4()), "desiredAPIVersion": f"{GROUP}/{desired}",
                    "objects": [stored_workload(i) for i in range(objects)]},
    }).encode()


@dataclass
class Run:
    objects: int
    reviews: int
    errors: int
    seconds: float
    latencies: list[float]
    cpu_seconds: float = 0.0
    load_average: float = 0.0

    @property
    def reviews_per_s(self) -> float:
        return self.reviews / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_ms_per_review(self) -> float:
        return self.cpu_seconds / self.reviews * 1000 if self.reviews else float("nan")

    @property
    def cpu_ms_per_object(self) -> float:
        return self.cpu_ms_per_review / self.objects

    def line(self) -> str:
        ordered = sorted(self.latencies)
        return (f"objects/review={self.objects:<4} reviews={self.reviews:>6} errors={self.errors:>3} "
                f"reviews/s={self.reviews_per_s:8.1f} objects/s={self.reviews_per_s * self.objects:9.1f} "
                f"p50={percentile(ordered, 0.5) * 1000:7.2f}ms p99={percentile(ordered, 0.99) * 1000:7.2f}ms "
                f"cpu={self.cpu_ms_per_review:7.3f}ms/review {self.cpu_ms_per_object:6.3f}ms/object "
                f"load={self.load_average:.1f}")


def closed_loop(server: Server, body: bytes, objects: int, connections: int, seconds: float) -> Run:
    """``connections`` clients posting ``body`` back to back for ``seconds``; a 200 whose review
    says Failure counts as an error."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    cpu_before = server.cpu_seconds()
    started = time.perf_counter()
    deadline = started + seconds

    def loop() -> None:
        while time.perf_counter() < deadline:
            began = time.perf_counter()
            try:
                status, payload = server.pool.request("POST", CONVERT_PATH, body)
                failed = status != 200 or json.loads(payload)["response"]["result"]["status"] != "Success"
            except (OSError, ValueError, KeyError):
                failed = True
            with lock:
                latencies.append(time.perf_counter() - began)
                errors[0] += failed

    threads = [threading.Thread(target=loop) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return Run(objects, len(latencies), errors[0], elapsed, latencies, server.cpu_seconds() - cpu_before,
               os.getloadavg()[0])


def summarise(runs: list[Run]) -> list[dict[str, Any]]:
    """Per review size: medians over the repeats."""
    rows = []
    for size in sorted({r.objects for r in runs}):
        mine = [r for r in runs if r.objects == size]
        rows.append({
            "objects_per_review": size,
            "runs": len(mine),
            "median_reviews_per_s": round(statistics.median(r.reviews_per_s for r in mine), 1),
            "median_objects_per_s": round(statistics.median(r.reviews_per_s * size for r in mine), 1),
            "median_p50_ms": round(statistics.median(percentile(sorted(r.latencies), 0.5) * 1000 for r in mine), 2),
            "median_p99_ms": round(statistics.median(percentile(sorted(r.latencies), 0.99) * 1000 for r in mine), 2),
            "median_cpu_ms_per_review": round(statistics.median(r.cpu_ms_per_review for r in mine), 3),
            "median_cpu_ms_per_object": round(statistics.median(r.cpu_ms_per_object for r in mine), 3),
            "errors": sum(r.errors for r in mine),
            "load_average": [round(r.load_average, 1) for r in mine],
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--objects", default="1,10,100", help="objects per ConversionReview, comma separated")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each run")
    parser.add_argument("--connections", type=int, default=4, help="closed-loop clients")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--repeat", type=int, default=1, help="runs of every size; medians are printed")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply run lengths (a smoke run uses 0.05)")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.objects.split(",") if n.strip()]
    seconds = max(1.0, args.seconds * args.scale)
    bodies = {n: review_body(n) for n in sizes}
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="pykueue-conversion-bench-") as tmp:
        server = start_server(Path(tmp), REPO, "new", args.workers, args.threads, [])
        try:
            server.pool.warm(args.connections)
            closed_loop(server, bodies[sizes[0]], sizes[0], args.connections, 1.0)  # warm-up, not counted
            print(f"pykueue conversion webhook benchmark: stored {STORAGE_VERSION} -> {OTHER_VERSION} Workloads, "
                  f"gunicorn gthread {args.workers}x{args.threads}, TLS keep-alive, {args.connections} clients, "
                  f"{os.cpu_count()} CPUs, one object {len(json.dumps(stored_workload(0)))} bytes", flush=True)
            for _ in range(args.repeat):
                for size in sizes:
                    run = closed_loop(server, bodies[size], size, args.connections, seconds)
                    runs.append(run)
                    print(run.line(), flush=True)
        finally:
            server.pool.close()
            stop_server(server.process)
    rows = summarise(runs)
    print(json.dumps({"benchmark": "conversion_load", "seconds": seconds, "connections": args.connections,
                      "workers": args.workers, "threads": args.threads, "rows": rows}))
    return 1 if any(r.errors for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
