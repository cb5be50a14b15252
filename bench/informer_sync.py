"""Informer cold start: initial list + sync time and resident memory for N objects of one kind.

Creates ``--count`` ConfigMaps (10,000 by default; each with a label and three short data keys,
roughly the size of a small Workload's metadata) in a dedicated namespace with at most
``--concurrency`` creates in flight, then starts one informer on that namespace and measures:

* **list + sync**: from ``start()`` until the store holds every object (the paginated list and
  the replace), and until the handler thread delivered every initial ADDED notification;
* **memory**: the process's resident set size before the informer exists and after it synced
  (after a garbage collection), i.e. what the cache of N trimmed objects costs.

The cluster: ``--kubeconfig`` (or ``$PYKUEUE_KUBECONFIG``), else the local cluster named
``$PYKUEUE_CLUSTER_NAME`` (default ``pykueue-bench``), brought up if needed and stopped at the end
if this program started it. The namespace is deleted afterwards unless ``--keep``.

Usage::

    python -m bench.informer_sync                  # 10,000 ConfigMaps
    python -m bench.informer_sync --scale 0.05     # 500, for a quick run
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import resource
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from controller.runtime.informer import FuncHandler, Informer
from pykueue.kube.client import KubeClient
from pykueue.kube.errors import AlreadyExists
from pykueue.kube.resources import CONFIG_MAPS, NAMESPACES

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    """Current resident set size (``/proc/self/statm``), not the peak."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE_BYTES


@dataclass
class Result:
    objects: int
    create_seconds: float
    list_sync_seconds: float
    handlers_delivered_seconds: float
    rss_before_mib: float
    rss_after_mib: float
    rss_delta_mib: float
    bytes_per_object: float
    peak_rss_mib: float


def config_map(name: str, namespace: str, index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"bench.pykueue.dev/group": str(index % 10)}},
        "data": {"queue": f"lq-{index % 50}", "priority": str(index % 7), "payload": "x" * 64},
    }


def create_objects(client: KubeClient, namespace: str, count: int, concurrency: int) -> float:
    started = time.monotonic()

    def create(index: int) -> None:
        # A create retried after a lost answer may find its own object: that is success.
        with contextlib.suppress(AlreadyExists):
            client.create(CONFIG_MAPS, config_map(f"cm-{index:06d}", namespace, index))

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for _ in pool.map(create, range(count)):
            pass
    return time.monotonic() - started


def measure_informer(client: KubeClient, namespace: str, expected: int) -> tuple[float, float, int, int]:
    delivered = 0
    all_delivered = threading.Event()

    def on_add(_obj: dict[str, Any]) -> None:
        nonlocal delivered
        delivered += 1
        if delivered >= expected:
            all_delivered.set()

    gc.collect()
    before = rss_bytes()
    informer = Informer(client, CONFIG_MAPS, namespace=namespace)
    informer.add_handler(FuncHandler(add=on_add))
    started = time.monotonic()
    informer.start()
    if not informer.wait_for_sync(600):
        raise SystemExit("informer did not sync within 600 s")
    synced = time.monotonic() - started
    if not all_delivered.wait(600):
        raise SystemExit(f"handlers got {delivered} of {expected} notifications")
    delivered_at = time.monotonic() - started
    gc.collect()
    after = rss_bytes()
    cached = len(informer.store)
    informer.stop()
    if cached < expected:
        raise SystemExit(f"the store holds {cached} objects, expected at least {expected}")
    return synced, delivered_at, before, after


def connect(args: argparse.Namespace) -> tuple[KubeClient, Any]:
    kubeconfig = args.kubeconfig or os.environ.get("PYKUEUE_KUBECONFIG")
    started_cluster = None
    if not kubeconfig:
        from hack.localcluster import LocalCluster

        cluster = LocalCluster(os.environ.get("PYKUEUE_CLUSTER_NAME") or "pykueue-bench")
        if not cluster.is_healthy():
            started_cluster = cluster
        cluster.up()
        kubeconfig = cluster.kubeconfig
    # A generous client-side limit: the benchmark measures the informer, not our throttling.
    return KubeClient.from_config(kubeconfig, qps=1000, burst=1000, user_agent="pykueue-bench"), started_cluster


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply --count (e.g. 0.05 for a smoke run)")
    parser.add_argument("--concurrency", type=int, default=16, help="creates in flight at once")
    parser.add_argument("--kubeconfig")
    parser.add_argument("--keep", action="store_true", help="keep the namespace and its objects")
    parser.add_argument("--json", help="also write the result to this file")
    args = parser.parse_args(argv)
    count = max(1, int(args.count * args.scale))

    client, started_cluster = connect(args)
    namespace = f"bench-informer-{uuid.uuid4().hex[:6]}"
    try:
        client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        print(f"creating {count} ConfigMaps in {namespace} ({args.concurrency} in flight)...", flush=True)
        create_seconds = create_objects(client, namespace, count, args.concurrency)
        print(f"created in {create_seconds:.1f}s; starting the informer...", flush=True)
        # The namespace also holds kube-root-ca.crt, published by the controller manager.
        synced, delivered, before, after = measure_informer(client, namespace, count)
        result = Result(
            objects=count,
            create_seconds=round(create_seconds, 2),
            list_sync_seconds=round(synced, 3),
            handlers_delivered_seconds=round(delivered, 3),
            rss_before_mib=round(before / 2**20, 1),
            rss_after_mib=round(after / 2**20, 1),
            rss_delta_mib=round((after - before) / 2**20, 1),
            bytes_per_object=round((after - before) / count),
            peak_rss_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        )
    finally:
        if not args.keep:
            client.delete(NAMESPACES, namespace)
        client.close()
        if started_cluster is not None:
            started_cluster.down()

    print(f"objects                         {result.objects}")
    print(f"initial list + sync             {result.list_sync_seconds:.2f} s")
    print(f"  + handlers got every ADDED    {result.handlers_delivered_seconds:.2f} s")
    print(f"RSS before / after informer     {result.rss_before_mib} MiB / {result.rss_after_mib} MiB")
    print(f"RSS delta (informer cache)      {result.rss_delta_mib} MiB ({result.bytes_per_object} bytes/object)")
    print(json.dumps(asdict(result)))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(asdict(result), out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
