"""The apiserver's floor: a stand-in that admits every Workload the moment it is watched.

Not a controller. The baseline's ``floor`` variant runs this process in the controller's place
to measure what the local cluster itself allows: each workload still costs the apiserver its
create, one status patch (the very merge patch pykueue's scheduler writes for a reservation
without admission checks, ``controller.workload.scheduling_patches.reservation_patch``) and the
driver's ``Finished`` patch, but nothing decides anything: no quota, no order, no preemption, no
Events, no queue status. Every workload is admitted as soon as it is seen, so the run takes as
long as the apiserver, etcd and the driver need for those requests on the machine's cores, plus
the last workload's runtime.

What it is for: a wall-time target for a real controller is only reachable on a machine where
this floor's wall is below it. A controller that honours quota makes the same requests (and
more) and can only admit later, so its wall is at or above the floor's, up to noise; the gap
between the two is what the controller's own decisions, CPU and extra requests cost
(docs/performance.md, "The floor under the two targets left").

Run by :class:`FloorProcess` as ``python -m bench.floor_admitter``: its own process, like the
controllers it stands in for, so its CPU is counted apart from the driver's. It reads
LocalQueues and ClusterQueues to name the ClusterQueue and flavor each admission records, and
writes from ``--writers`` threads (64, as many as the driver sends creates from, so that its own
writes are not what bounds it; with 16, as pykueue's admission writers, they were).
"""

from __future__ import annotations

import argparse
import http.server
import logging
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.runtime.informer import FuncHandler, Informer
from controller.workload import view as wv
from controller.workload.scheduling_patches import reservation_patch
from hack.localcluster.ports import pick_free_ports
from pykueue.api.objects import list_or_empty, mapping_or_empty
from pykueue.api.quantity import format_quantity, parse_quantity
from pykueue.kube.client import KubeClient
from pykueue.kube.errors import ApiError
from pykueue.kube.resources import CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOADS
from pykueue.kube.transport import ApiClientTransport, configuration_factory

from .baseline_variants import UNTHROTTLED_QPS
from .controller_process import REPO_ROOT, LocalProcess, SyncMilestones, controller_environment

log = logging.getLogger("bench.floor")

DEFAULT_WRITERS = 64  # as many as the driver's creates in flight: the writers must not be what bounds it
RETRY_AFTER_S = 0.5  # a workload whose queues are not in the caches yet
ADMITTED_MESSAGE = "Admitted by the benchmark's floor (no quota is checked)"


def podset_usage(podset: Mapping[str, Any]) -> dict[str, int]:
    """A pod set's requests times its count, in the engine's integer units per resource."""
    count = int(podset.get("count") or 1)
    total: dict[str, int] = {}
    spec = mapping_or_empty(mapping_or_empty(podset.get("template")).get("spec"))
    for container in list_or_empty(spec.get("containers")):
        requests = mapping_or_empty(mapping_or_empty(mapping_or_empty(container).get("resources")).get("requests"))
        for resource, value in requests.items():
            total[resource] = total.get(resource, 0) + parse_quantity(value, resource) * count
    return total


def admission_for(wl: Mapping[str, Any], cluster_queue: str, flavor: str) -> dict[str, Any]:
    """The ``status.admission`` Kueue's scheduler would record for ``wl`` on one flavor: every pod
    set on ``flavor`` for each resource it requests, its usage its requests times its count."""
    assignments = []
    for podset in list_or_empty(wv.spec(wl).get("podSets")):
        podset = mapping_or_empty(podset)
        usage = podset_usage(podset)
        assignments.append({
            "name": str(podset.get("name") or "main"),
            "flavors": {resource: flavor for resource in usage},
            "resourceUsage": {resource: format_quantity(amount, resource) for resource, amount in usage.items()},
            "count": int(podset.get("count") or 1),
        })
    return {"clusterQueue": cluster_queue, "podSetAssignments": assignments}


def first_flavor(cq: Mapping[str, Any] | None) -> str | None:
    """The first flavor of the ClusterQueue's first resource group (the baseline's only one)."""
    for group in list_or_empty(mapping_or_empty(mapping_or_empty(cq).get("spec")).get("resourceGroups")):
        for flavor in list_or_empty(mapping_or_empty(group).get("flavors")):
            name = mapping_or_empty(flavor).get("name")
            if name:
                return str(name)
    return None


class FloorAdmitter:
    """Watches Workloads and admits each pending one once, from a pool of writers."""

    def __init__(self, client: KubeClient, writers: int = DEFAULT_WRITERS) -> None:
        self.client = client
        self.local_queues = Informer(client, LOCAL_QUEUES)
        self.cluster_queues = Informer(client, CLUSTER_QUEUES)
        self.workloads = Informer(client, WORKLOADS)
        self.pool = ThreadPoolExecutor(writers, thread_name_prefix="floor-write")
        self._lock = threading.Lock()
        self._in_flight: set[str] = set()
        self.admitted = 0
        self.failed = 0

    def start(self) -> None:
        for informer in (self.local_queues, self.cluster_queues):
            informer.start()
            informer.wait_for_sync()
        self.workloads.add_handler(FuncHandler(add=self.offer, update=lambda _old, new: self.offer(new)))
        self.workloads.start()
        self.workloads.wait_for_sync()

    def synced(self) -> bool:
        return all(i.has_synced() for i in (self.local_queues, self.cluster_queues, self.workloads))

    def stop(self) -> None:
        for informer in (self.workloads, self.cluster_queues, self.local_queues):
            informer.stop()
        self.pool.shutdown(wait=False, cancel_futures=True)

    def offer(self, wl: dict[str, Any]) -> None:
        """Queue an admission for ``wl`` unless it holds quota, has finished, is being deleted or
        one is already on its way."""
        if wv.has_reservation(wl) or wv.is_finished(wl) or wv.meta(wl).get("deletionTimestamp"):
            return
        key = wv.key(wl)
        with self._lock:
            if key in self._in_flight:
                return
            self._in_flight.add(key)
        self.pool.submit(self._admit, key, wl)

    def _admit(self, key: str, wl: dict[str, Any]) -> None:
        try:
            planned = admission_patch(wl, self.local_queues.store.get, self.cluster_queues.store.get, datetime.now(UTC))
            if isinstance(planned, str):
                # Its queues may reach this process's caches just after it does: try again soon.
                log.warning("%s: not admitted yet: %s", key, planned)
                self.failed += 1
                self._retry_later(wl)
            elif planned is not None:
                self.client.patch_status(WORKLOADS, wv.name(wl), planned, wv.namespace(wl))
                self.admitted += 1
        except ApiError as err:  # a conflict: the next watch event offers the workload again
            log.info("admitting %s: %s", key, err)
            self.failed += 1
        finally:
            with self._lock:
                self._in_flight.discard(key)

    def _retry_later(self, wl: dict[str, Any]) -> None:
        timer = threading.Timer(RETRY_AFTER_S, lambda: self.offer(self.workloads.store.get(wv.key(wl)) or wl))
        timer.daemon = True
        timer.start()


Lookup = Callable[[str], Mapping[str, Any] | None]


def admission_patch(wl: Mapping[str, Any], local_queue: Lookup, cluster_queue: Lookup, now: datetime) -> dict[str, Any] | str | None:
    """The status patch that admits ``wl`` on its ClusterQueue's first flavor; None when it needs
    none (it holds quota already, or finished: the reservation patch's own guard), or a sentence
    saying why it cannot be admitted (no such LocalQueue, ClusterQueue or flavor)."""
    namespace, queue_name = wv.namespace(wl), str(wv.spec(wl).get("queueName") or "")
    lq = local_queue(f"{namespace}/{queue_name}")
    if lq is None:
        return f"LocalQueue {namespace}/{queue_name!r} is not known"
    cq_name = str(wv.spec(lq).get("clusterQueue") or "")
    flavor = first_flavor(cluster_queue(cq_name)) if cq_name else None
    if flavor is None:
        return f"ClusterQueue {cq_name!r} of LocalQueue {namespace}/{queue_name} is not known or has no flavor"
    planned = reservation_patch(
        wl, uid=str(wv.meta(wl).get("uid") or ""), admission=admission_for(wl, cq_name, flavor),
        admission_checks=(), message=ADMITTED_MESSAGE, now=now,
    )
    return planned.patch if planned is not None else None


def _serve_readiness(address: str, admitter: FloorAdmitter) -> http.server.HTTPServer:
    """``/readyz`` answers 200 once every informer has synced, as the controller's does."""

    class Ready(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/readyz" and admitter.synced() else 503)
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    host, port = address.rsplit(":", 1)
    server = http.server.HTTPServer((host, int(port)), Ready)
    threading.Thread(target=server.serve_forever, name="floor-readyz", daemon=True).start()
    return server


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor_admitter", description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--health-addr", required=True, help="HOST:PORT for /readyz")
    parser.add_argument("--writers", type=int, default=DEFAULT_WRITERS, help="admission writes in flight")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    transport = ApiClientTransport(
        configuration_factory(args.kubeconfig), user_agent="pykueue-bench-floor", pool_size=args.writers + 8
    )
    client = KubeClient(transport, qps=UNTHROTTLED_QPS, burst=200_000)
    admitter = FloorAdmitter(client, args.writers)
    _serve_readiness(args.health_addr, admitter)
    admitter.start()
    threading.Event().wait()  # until SIGTERM
    return 0


class FloorProcess(LocalProcess):
    """The floor admitter as a process of its own, started and measured as a controller is."""

    def __init__(self, kubeconfig: str, *, workdir: Path, label: str, writers: int = DEFAULT_WRITERS) -> None:
        self.kubeconfig = kubeconfig
        self.workdir = workdir
        self.writers = writers
        self.log_path = workdir / f"floor-{label}.log"
        self.health_port = 0
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        (self.health_port,) = pick_free_ports(1)
        with self.log_path.open("wb") as log_file:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bench.floor_admitter", "--kubeconfig", self.kubeconfig,
                 "--health-addr", f"127.0.0.1:{self.health_port}", "--writers", str(self.writers)],
                stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
                cwd=REPO_ROOT, env=controller_environment(None),
            )
        self._wait_ready("the floor admitter", stop_if_exited=True)

    def start_profiler(self) -> bool:
        return False

    def stop_profiler(self) -> None:
        pass

    def api_requests(self) -> dict[str, Any] | None:
        """It keeps no request counters: the apiserver's, which the run reads, count its writes."""
        return None

    def sync_milestones(self) -> SyncMilestones:
        return SyncMilestones(None, None)


if __name__ == "__main__":
    sys.exit(main())
