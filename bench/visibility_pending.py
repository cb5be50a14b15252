"""Visibility API answer time on a deep queue: one ClusterQueue with N pending workloads.

Builds the admission engine in memory with ``--pending`` (default 50,000) workloads in one
ClusterQueue spread over 10 LocalQueues (priorities 0-9, shapes of 1-4 cpu, quota too small to
admit any), runs a scheduling cycle so that shape classes are parked as in a real backlog, and
then times, ``--repeat`` times each:

* ``snapshot``: the part that runs on the scheduler loop's thread (``Engine.pending_snapshot``,
  copies only) — what a visibility request costs admission;
* ``clusterqueue``: a whole answer of ``GET .../clusterqueues/cq/pendingworkloads`` (Kueue's
  default limit 1000) through ``VisibilityService.handle``: snapshot, sort, positions, JSON-ready
  summary, authorization answered from its cache — everything but TLS and the socket;
* ``localqueue``: the same for one LocalQueue's view (its workloads are spread over the whole
  ClusterQueue order, so the whole order is walked);
* ``clusterqueue, last page``: ``offset`` near the end (the positions walk is longest).

Wall-clock milliseconds, median and max. Prints a table and a JSON summary (last line).

Usage::

    python -m bench.visibility_pending                  # 50,000 pending
    python -m bench.visibility_pending --pending 5000   # smaller
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from controller.core.engine_reads import NotLeading
from controller.engine import Engine
from controller.visibility.auth import Authorizer, UserInfo
from controller.visibility.service import VisibilityService
from tests.builders import (
    FungibleClusterQueueBuilder,
    LocalQueueBuilder,
    PlacementWorkloadBuilder,
    ResourceFlavorBuilder,
)

GROUP_PATH = "/apis/visibility.kueue.x-k8s.io/v1beta1"
ADMIN = UserInfo("admin", ("system:masters",))


class _AllowAll:
    def create(self, res: Any, obj: dict[str, Any]) -> dict[str, Any]:
        return {"status": {"allowed": True}}


class _Inline:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def submit(self, read: Callable[[Engine], Any], timeout: float = 5.0) -> Any:
        if self.engine is None:
            raise NotLeading()
        return read(self.engine)


def build(pending: int) -> tuple[Engine, dict[str, dict[str, Any]]]:
    engine = Engine(settle_gc=True)
    engine.upsert_resource_flavor(ResourceFlavorBuilder("default").obj())
    engine.upsert_cluster_queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="0").obj())
    for i in range(10):
        engine.upsert_local_queue(LocalQueueBuilder(f"lq-{i}", "ns", "cq").obj())
    objects: dict[str, dict[str, Any]] = {}
    with engine.initial_load():
        for i in range(pending):
            wl = (PlacementWorkloadBuilder(f"wl-{i}", "ns").queue(f"lq-{i % 10}").podset(cpu=str(1 + i % 4))
                  .priority(i % 10).at(i).obj())
            objects[f"ns/wl-{i}"] = wl
            engine.upsert_workload(wl)
    engine.schedule(now=float(pending + 10))
    return engine, objects


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    samples, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    engine, objects = build(args.pending)
    build_s = time.perf_counter() - t0
    assert engine.pending_count("cq") == args.pending
    service = VisibilityService(_Inline(engine), Authorizer(_AllowAll()), objects.get)
    cases: dict[str, Callable[[], Any]] = {
        "snapshot (scheduler thread)": lambda: engine.pending_snapshot("cq"),
        "clusterqueue, limit 1000": lambda: service.handle(f"{GROUP_PATH}/clusterqueues/cq/pendingworkloads", {}, ADMIN),
        "localqueue, limit 1000": lambda: service.handle(
            f"{GROUP_PATH}/namespaces/ns/localqueues/lq-3/pendingworkloads", {}, ADMIN),
        "clusterqueue, last page": lambda: service.handle(
            f"{GROUP_PATH}/clusterqueues/cq/pendingworkloads", {"offset": [str(args.pending - 100)]}, ADMIN),
    }
    rows = []
    print(f"pending={args.pending} (built in {build_s:.1f}s), repeat={args.repeat}")
    print(f"{'answer':32} {'median ms':>10} {'max ms':>8} {'items':>6}")
    for name, fn in cases.items():
        fn()  # warm-up (also fills the authorization cache)
        samples, result = timed(fn, args.repeat)
        items = len(result[1]["items"]) if isinstance(result, tuple) else len(result)
        if isinstance(result, tuple):
            assert result[0] == 200, result
        row = {"answer": name, "median_ms": round(statistics.median(samples), 2), "max_ms": round(max(samples), 2),
               "items": items}
        rows.append(row)
        print(f"{name:32} {row['median_ms']:>10} {row['max_ms']:>8} {items:>6}")
    print(json.dumps({"benchmark": "visibility_pending", "pending": args.pending, "rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
