"""MultiKueue dispatch: Jobs per second dispatched, and submit-to-running time, across 2 workers.

Brings up (or reuses) the local MultiKueue setup of :mod:`hack.multikueue` (a manager and two
workers, each a full local control plane with kwok nodes and its own pykueue), gives every
cluster a ClusterQueue large enough for all the Jobs, submits ``--jobs`` one-pod Jobs to the
manager in batches of ``--batch`` and watches, by looking at the manager after each batch and
then every ``--poll`` seconds:

* **dispatched**: the manager's Workload has ``status.clusterName`` (a worker admitted its copy
  and the Job was created there);
* **running**: the manager's Job shows an active or finished pod (the worker's Job status,
  mirrored onto the manager), what a user of the manager sees.

Reports the dispatch rate (Jobs / seconds from the first submit to the last dispatch), the
submit-to-dispatched and submit-to-running times (median, p95, max; each sample is late by up to
one poll interval) and how the Jobs split between the workers. The pods run for
``--run-seconds`` (long by default, so that "running" is not missed). Prints a table and a JSON
summary (last line).

The three control planes, three controllers and three webhooks share this machine's cores, so
the figures say how pykueue's dispatch behaves here, not what separate clusters would reach.

Usage::

    python -m bench.multikueue --jobs 500          # the full measure
    python -m bench.multikueue --jobs 60 --keep    # small, leave the clusters up
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

from hack import multikueue as mk
from hack.localcluster import LocalCluster

CHECK = "bench-check"
NAMESPACE = "mk-bench"


def _job(index: int, run_seconds: int) -> dict[str, Any]:
    job = mk.job(f"bench-{index:05d}", NAMESPACE, run_seconds=run_seconds)
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "10m"
    return job


def _items(cluster: LocalCluster, kind: str) -> list[dict[str, Any]]:
    result = cluster.kubectl("get", kind, "-n", NAMESPACE, "-o", "json", check=False, timeout=60)
    if result.returncode != 0:
        return []
    return list(json.loads(result.stdout).get("items") or [])


def _wait_active(manager: LocalCluster, names: list[str], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = manager.kubectl("get", "multikueueclusters", "-o", "json", check=False)
        items = json.loads(result.stdout).get("items") if result.returncode == 0 else []
        active = {
            i["metadata"]["name"]
            for i in items or []
            for c in (i.get("status") or {}).get("conditions") or []
            if c["type"] == "Active" and c["status"] == "True"
        }
        if set(names) <= active:
            return
        time.sleep(1)
    raise SystemExit(f"workers not active after {timeout:.0f}s")


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"median": float("nan"), "p95": float("nan"), "max": float("nan")}
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "max": ordered[-1],
    }


def measure(setup: mk.Setup, jobs: int, batch: int, poll: float, run_seconds: int, timeout: float) -> dict[str, Any]:
    manager, workers = setup.manager, setup.workers
    quota = str(max(4, jobs))
    mk.apply(manager, *mk.queues(CHECK, list(workers), namespace=NAMESPACE, cpu=quota))
    for worker in workers.values():
        mk.apply(worker, *mk.queues(None, namespace=NAMESPACE, cpu=quota))
    _wait_active(manager, list(workers))

    submitted: dict[str, float] = {}
    dispatched: dict[str, float] = {}
    running: dict[str, float] = {}
    where: dict[str, str] = {}

    def observe() -> None:
        """One look at the manager: Workloads given a worker, Jobs showing a pod."""
        now = time.monotonic()
        for wl in _items(manager, "workloads"):
            owners = wl["metadata"].get("ownerReferences") or []
            owner = str(owners[0].get("name")) if owners else ""
            cluster = (wl.get("status") or {}).get("clusterName")
            if owner in submitted and cluster and owner not in dispatched:
                dispatched[owner], where[owner] = now, cluster
        for job in _items(manager, "jobs"):
            name, status = job["metadata"]["name"], job.get("status") or {}
            if name in submitted and name not in running and (status.get("active") or status.get("succeeded")):
                running[name] = now

    # The manager is looked at between batches too: dispatch overlaps submission, and a look
    # only after the last submit would report every early Job as late as the submission took.
    started = time.monotonic()
    for first in range(0, jobs, batch):
        batch_jobs = [_job(i, run_seconds) for i in range(first, min(jobs, first + batch))]
        at = time.monotonic()
        mk.apply(manager, *batch_jobs)
        for job in batch_jobs:
            submitted[job["metadata"]["name"]] = at
        observe()
    submit_seconds = time.monotonic() - started

    deadline = time.monotonic() + timeout
    while (len(running) < jobs or len(dispatched) < jobs) and time.monotonic() < deadline:
        observe()
        time.sleep(poll)

    to_dispatch = [dispatched[n] - submitted[n] for n in dispatched]
    to_run = [running[n] - submitted[n] for n in running]
    span = (max(dispatched.values()) - started) if dispatched else float("nan")
    split: dict[str, int] = {}
    for cluster in where.values():
        split[cluster] = split.get(cluster, 0) + 1
    return {
        "jobs": jobs,
        "submit_seconds": round(submit_seconds, 1),
        "dispatched": len(dispatched),
        "running": len(running),
        "dispatch_jobs_per_second": round(len(dispatched) / span, 2) if dispatched else 0.0,
        "submit_to_dispatched_s": {k: round(v, 1) for k, v in _stats(to_dispatch).items()},
        "submit_to_running_s": {k: round(v, 1) for k, v in _stats(to_run).items()},
        "per_worker": split,
        "poll_seconds": poll,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.multikueue", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--batch", type=int, default=50, help="Jobs per kubectl apply")
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between looks at the manager")
    parser.add_argument("--run-seconds", type=int, default=900, help="how long each simulated pod runs")
    parser.add_argument("--timeout", type=float, default=1800.0, help="give up waiting after this many seconds")
    parser.add_argument("--prefix", default="mk-bench", help="cluster name prefix (default: mk-bench)")
    parser.add_argument("--keep", action="store_true", help="leave the clusters up afterwards")
    args = parser.parse_args(argv)
    setup = mk.clusters(args.prefix)
    mk.up(setup)
    try:
        result = measure(setup, args.jobs, args.batch, args.poll, args.run_seconds, args.timeout)
    finally:
        for cluster in (setup.manager, *setup.workers.values()):
            cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)
        if not args.keep:
            mk.down(setup)
    print(f"{'jobs':<28}{result['jobs']}")
    print(f"{'dispatched / running':<28}{result['dispatched']} / {result['running']}")
    print(f"{'dispatch rate (Jobs/s)':<28}{result['dispatch_jobs_per_second']}")
    for key in ("submit_to_dispatched_s", "submit_to_running_s"):
        s = result[key]
        print(f"{key:<28}median {s['median']}  p95 {s['p95']}  max {s['max']}")
    print(f"{'per worker':<28}{result['per_worker']}")
    print(json.dumps(result))
    return 0 if result["running"] == result["jobs"] else 1


if __name__ == "__main__":
    sys.exit(main())
