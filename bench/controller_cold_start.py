"""Controller cold start: the real controller process started against N pending Workloads.

A controller that restarts (a rollout, a crash, a new leader) must list everything before it can
admit anything, and at Kueue's scale "everything" is tens of thousands of pending Workloads.
This program measures that way back, for the whole ``pykueue-controller`` process rather than
one informer in isolation (:mod:`bench.informer_sync` does the latter):

1. a queue setup in which nothing fits: one ResourceFlavor, ``--cluster-queues`` ClusterQueues
   (10) in one cohort with a cpu quota of 0, one namespace and LocalQueue per ClusterQueue (the
   scheduler baseline's objects, :mod:`bench.baseline_shape`), and ``--count`` standalone
   Workloads (50,000) of 1 cpu spread over them, created with ``--concurrency`` creates in flight
   while **no controller runs**, so they are all pending when it starts;
2. a ``pykueue-controller`` process (:class:`bench.controller_process.ControllerProcess`, client
   QPS 50 / burst 100 as Kueue's runs) is launched, and its ``/metrics`` and ``/readyz`` are
   polled every ``--poll`` seconds. From the launch, seconds until:

   * ``/metrics`` first answers (interpreter start and imports),
   * the Workload informer reports synced (``pykueue_informer_synced``) and
   * every informer has (``/readyz``, the manager's ``informers-synced`` check),
   * the engine holds every workload as pending: ``kueue_pending_workloads`` (active plus
     inadmissible) summed over this run's ClusterQueues equals the count created — the
     scheduler sets it after its first cycle on the freshly loaded engine.

   Each is when a poll first saw it, so it is late by up to one poll and its answer time (a
   busy controller answers slower); ``/readyz`` is asked before ``/metrics`` in every poll.
   At that last moment the controller's resident memory, its peak (``VmHWM``) and its CPU
   seconds (:mod:`bench.procstats`; memory and CPU also when ``/readyz`` first answered, which
   splits the listing from the engine's load), plus its own figure for the Workload list (all pages and
   the store replace, ``pykueue_reflector_list_duration_seconds``);
3. the run's workloads, namespaces, ClusterQueues and flavor are deleted while the controller
   still runs (:func:`clean_up`), unless ``--keep`` or the cluster is one this program started
   (then it is stopped instead); last the controller is stopped.

``--controller kueue@<version>`` (e.g. ``kueue@v0.14.8``) starts Kueue's own manager instead
(:mod:`bench.kueue_process`, at the same client rate) against the same queues and workloads. Its
CRDs replace the cluster's before anything is created (:class:`bench.kueue_process.CrdSwap`), so
the workloads are written and stored in its version (v1beta1), and they are put back after the
run's objects are deleted. Its milestones, from the same polls: ``/metrics`` answers (over TLS,
with a token of :class:`bench.kueue_process.MetricsReader`), the Workload reconciler and every
controller synced (from its log, controller-runtime's ``Starting workers``: Kueue has no metric
for it, and its ``/readyz`` only says its webhook server listens, timed separately), and its
queue manager holds every workload as pending (the same ``kueue_pending_workloads`` sum, which
Kueue's queue manager sets as it adds each workload). The Workload list's own time and the
informer's object count are pykueue's metrics only (``n/a`` for Kueue); its API requests are by
HTTP method (client-go's ``rest_client_requests_total``, watches counted as GETs).

``--controller-src LABEL=DIR`` (repeatable) and ``--starts N`` compare controllers side by side
against one creation of the workloads: each start is a fresh process (this checkout's is labelled
``this``), one at a time, interleaved (this, LABEL, this, LABEL, ...), and the medians per
controller are printed after the starts' own summaries. Later starts find what the earlier ones
wrote: the pending reason of each queue's heads (a few hundred writes at QPS 50 before the
previous controller stopped), so the objects differ by a condition on some of them.

The cluster: ``--kubeconfig`` (or ``$PYKUEUE_KUBECONFIG``), else the local cluster named
``$PYKUEUE_CLUSTER_NAME`` (default ``pykueue-bench``), brought up if needed and stopped at the end
if this program started it. No other admission controller may run on it: one would admit or
annotate the workloads before the measured controller starts (with a quota of 0 it admits none,
but it would write their pending reasons).

Usage::

    python -m bench.controller_cold_start                 # 50,000 workloads
    python -m bench.controller_cold_start --scale 0.1     # 5,000
    python -m bench.controller_cold_start --scale 0.1 --profile /tmp/cold.txt   # py-spy the start
    python -m bench.controller_cold_start --controller kueue@v0.14.8   # Kueue's manager instead
    python -m bench.controller_cold_start --starts 2 --controller-src before=/tmp/tree   # A/B, one creation
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from prometheus_client.parser import text_string_to_metric_families

from pykueue.kube.client import KubeClient
from pykueue.kube.errors import AlreadyExists, ApiError
from pykueue.kube.resources import WORKLOADS

from .baseline import connect, create_queues, delete_run
from .baseline_shape import Anchor, Names, Shape, WorkloadClass, workload
from .baseline_variants import VARIANTS, Variant, kueue_variant, parse_source_tree
from .controller_process import ControllerProcess, SyncMilestones
from .kueue_process import (
    CrdSwap,
    KueueProcess,
    MetricsReader,
    kueue_artifacts,
    require_mount_namespace,
    stored_version,
)
from .procstats import ProcSample

WORKLOAD_RESOURCE = str(WORKLOADS)
# Every workload asks for 1 cpu; every ClusterQueue has 0, borrows nothing: none can be admitted.
WORKLOAD_CLASS = WorkloadClass(name="pending", count=1, cpu=1, runtime_ms=1, priority=0, every_ms=1)


def queue_shape(cluster_queues: int) -> Shape:
    """The baseline's ClusterQueue objects, all in one cohort, with a cpu quota of 0 and no
    borrowing: every workload stays pending however long the controller runs."""
    return Shape(
        config="cold_start",
        cohorts=1,
        queues_per_cohort=cluster_queues,
        classes=(WORKLOAD_CLASS,),
        anchor=Anchor(wall_s=0.0, cq_utilisation_pct=0.0, mean_time_to_admission_s={}),
        nominal_cpu=0,
        borrowing_limit_cpu=0,
    )


def planned_workload(names: Names, cluster_queues: int, index: int) -> dict[str, Any]:
    """Workload ``index`` of the run: round-robin over the ClusterQueues' namespaces, so every
    queue holds ``count / cluster_queues`` of them (named ``pending-<ordinal>`` per namespace)."""
    return workload(names, index % cluster_queues, WORKLOAD_CLASS, index // cluster_queues)


@dataclass
class Batch:
    """What one pass over the run's workloads (creates or deletes) came to."""

    done: int  # succeeded, or found already done (a retried request whose first try had landed)
    errors: int
    seconds: float


def for_each_workload(
    client: KubeClient, names: Names, cluster_queues: int, count: int, options: argparse.Namespace, verb: str
) -> Batch:
    """Create (``verb="create"``) or delete every workload of the run with at most
    ``options.concurrency`` requests in flight, printing progress every ``options.progress_every``
    seconds."""
    lock = threading.Lock()
    tally = {"done": 0, "errors": 0}
    all_done = threading.Event()
    started = time.monotonic()

    def one(index: int) -> None:
        obj = planned_workload(names, cluster_queues, index)
        outcome = "errors"
        try:
            if verb == "create":
                with contextlib.suppress(AlreadyExists):
                    client.create(WORKLOADS, obj)
            else:
                client.delete(WORKLOADS, obj["metadata"]["name"], obj["metadata"]["namespace"])
            outcome = "done"
        except ApiError as err:  # the client's retries are spent; count it, carry on
            print(f"  {verb} workload {index} failed: {err}", flush=True)
        finally:
            with lock:
                tally[outcome] += 1
                if tally["done"] + tally["errors"] >= count:
                    all_done.set()

    with ThreadPoolExecutor(max_workers=options.concurrency, thread_name_prefix=f"bench-{verb}") as pool:
        for index in range(count):
            pool.submit(one, index)
        while not all_done.wait(options.progress_every):
            elapsed = time.monotonic() - started
            with lock:
                done, errors = tally["done"], tally["errors"]
            print(f"  [{elapsed:6.0f}s] {verb}d {done}/{count} ({done / elapsed:.0f}/s), errors {errors}", flush=True)
    return Batch(tally["done"], tally["errors"], time.monotonic() - started)


def clean_up(client: KubeClient, names: Names, cluster_queues: int, count: int, options: argparse.Namespace) -> None:
    """Delete the workloads one by one while the controller still runs, then the run's
    namespaces, ClusterQueues and flavor (the controller removes its finalizers).

    Workloads first: deleting a namespace or queue under tens of thousands of pending workloads
    makes the controller write a new pending reason (and an Event) for each, and the namespace
    controller then deleted them at about 40 per second on the development machine."""
    deleted = for_each_workload(client, names, cluster_queues, count, options, "delete")
    print(f"deleted {deleted.done} workloads in {deleted.seconds:.1f}s ({deleted.errors} errors)", flush=True)
    if not delete_run(client, names, wait_s=300.0):
        print(f"warning: run {names.run_id}'s objects were not all deleted within 300 s", flush=True)


@dataclass(frozen=True)
class ControllerState:
    """What one ``/metrics`` page says about the controller's start."""

    workloads_synced: bool
    workloads_cached: int
    pending: int  # kueue_pending_workloads, active + inadmissible, over the given ClusterQueues
    workloads_list_seconds: float | None  # the reflector's own time for the Workload list


def read_state(metrics_text: str, cluster_queues: set[str]) -> ControllerState:
    synced, cached, pending = False, 0, 0
    list_seconds: float | None = None
    for family in text_string_to_metric_families(metrics_text):
        for metric in family.samples:
            labels = metric.labels
            if metric.name == "pykueue_informer_synced" and labels.get("resource") == WORKLOAD_RESOURCE:
                synced = metric.value >= 1
            elif metric.name == "pykueue_informer_cached_objects" and labels.get("resource") == WORKLOAD_RESOURCE:
                cached = int(metric.value)
            elif metric.name == "kueue_pending_workloads" and labels.get("cluster_queue") in cluster_queues:
                pending += int(metric.value)
            elif (
                metric.name == "pykueue_reflector_list_duration_seconds_sum"
                and labels.get("resource") == WORKLOAD_RESOURCE
            ):
                list_seconds = metric.value
    return ControllerState(synced, cached, pending, list_seconds)


class StartingController(Protocol):
    """What the cold start reads of the controller it starts (pykueue's or Kueue's)."""

    ready_means_informers_synced: bool  # else the informers' syncs come from sync_milestones()

    def launch(self) -> None: ...
    def alive(self) -> bool: ...
    def ready(self) -> bool: ...
    def metrics_text(self, timeout: float = 5.0) -> str | None: ...
    def sample(self) -> ProcSample | None: ...
    def start_profiler(self) -> bool: ...
    def stop_profiler(self) -> None: ...
    def log_tail(self, lines: int = 40) -> str: ...
    def sync_milestones(self) -> SyncMilestones: ...
    def requests_by_verb(self, metrics_text: str) -> dict[str, int]: ...


@dataclass
class Startup:
    """Seconds from the controller's launch to each milestone (None: not seen before the end)."""

    metrics_up_s: float | None = None
    workloads_synced_s: float | None = None
    ready_s: float | None = None  # every informer synced
    readyz_s: float | None = None  # /readyz first answered 200 (for pykueue the same moment)
    all_pending_s: float | None = None
    state: ControllerState | None = None
    at_ready: ProcSample | None = None
    at_all_pending: ProcSample | None = None
    requests_by_verb: dict[str, int] | None = None  # None: the page has no request counter
    metrics_at_all_pending: str | None = None  # the page itself, kept with the run's logs


# How long, once the engine holds every workload, a controller whose syncs come from its log
# (Kueue) may take to log its last controller's sync.
LOGGED_SYNC_GRACE_S = 60.0


def _read_logged_syncs(controller: StartingController, startup: Startup, launched_wall: float) -> None:
    """Fill the sync milestones a controller logs (Kueue) once they appear, as seconds since launch."""
    if startup.workloads_synced_s is not None and startup.ready_s is not None:
        return
    logged = controller.sync_milestones()
    if startup.workloads_synced_s is None and logged.workloads_synced is not None:
        startup.workloads_synced_s = max(0.0, logged.workloads_synced - launched_wall)
    if startup.ready_s is None and logged.all_synced is not None:
        startup.ready_s = max(0.0, logged.all_synced - launched_wall)
        startup.at_ready = controller.sample()


def watch_start(
    controller: StartingController, expected: int, cluster_queues: set[str], poll_s: float, timeout_s: float
) -> Startup:
    """Launch the controller and poll it until its engine holds ``expected`` pending workloads."""
    startup = Startup()
    started = time.monotonic()
    launched_wall = time.time()
    controller.launch()
    deadline = started + timeout_s
    synced_by_readyz = controller.ready_means_informers_synced
    while startup.all_pending_s is None:
        if not controller.alive():
            raise RuntimeError(f"the controller exited during start-up:\n{controller.log_tail()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the engine did not hold {expected} pending workloads within {timeout_s:.0f}s "
                               f"(last seen: {startup.state}):\n{controller.log_tail()}")
        # /readyz first: the engine is loaded only after every informer synced, so a poll that
        # finds it loaded should also see the controller ready.
        if startup.readyz_s is None and controller.ready():
            startup.readyz_s = time.monotonic() - started
            if synced_by_readyz:
                startup.ready_s, startup.at_ready = startup.readyz_s, controller.sample()
        if not synced_by_readyz:
            _read_logged_syncs(controller, startup, launched_wall)
        text = controller.metrics_text(timeout=max(1.0, poll_s))
        now = time.monotonic() - started
        if text is not None:
            if startup.metrics_up_s is None:
                startup.metrics_up_s = now
                controller.start_profiler()
            state = read_state(text, cluster_queues)
            startup.state = state
            if startup.workloads_synced_s is None and (state.workloads_synced or startup.ready_s is not None):
                # Every informer synced bounds the Workload informer's sync too.
                startup.workloads_synced_s = min(now, startup.ready_s if startup.ready_s is not None else now)
            if state.pending >= expected:
                startup.all_pending_s = now
                startup.at_all_pending = controller.sample()
                startup.requests_by_verb = controller.requests_by_verb(text) or None
                startup.metrics_at_all_pending = text
                break
        time.sleep(poll_s)
    controller.stop_profiler()
    if not synced_by_readyz:
        # Kueue's queue manager can hold every workload before its last controller logs that its
        # caches synced, and before its /readyz (its webhook server listening) answers (both seen
        # on the loaded CI machine): they follow, so wait for them.
        _read_logged_syncs(controller, startup, launched_wall)
        grace_ends = time.monotonic() + LOGGED_SYNC_GRACE_S
        while (
            (startup.ready_s is None or startup.readyz_s is None)
            and time.monotonic() < grace_ends
            and controller.alive()
        ):
            time.sleep(max(poll_s, 0.05))
            _read_logged_syncs(controller, startup, launched_wall)
            if startup.readyz_s is None and controller.ready():
                startup.readyz_s = time.monotonic() - started
    elif startup.ready_s is None:  # ready and loaded between two polls: ready came no later
        startup.ready_s, startup.at_ready = startup.all_pending_s, startup.at_all_pending
        startup.readyz_s = startup.ready_s
    return startup


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def summarise(
    run_id: str, count: int, cluster_queues: int, creation: Batch, startup: Startup, *,
    controller: str = "pykueue", qps: float | None = None, burst: int | None = None,
) -> dict[str, Any]:
    proc, state = startup.at_all_pending, startup.state
    pykueue = controller == "pykueue"
    return {
        "benchmark": "controller_cold_start",
        "controller": controller,
        "qps": qps,
        "burst": burst,
        "run_id": run_id,
        "workloads": creation.done,
        "requested": count,
        "cluster_queues": cluster_queues,
        "create_seconds": round(creation.seconds, 1),
        "create_errors": creation.errors,
        "seconds_to_metrics": _round(startup.metrics_up_s),
        "seconds_to_workloads_synced": _round(startup.workloads_synced_s),
        "seconds_to_ready": _round(startup.ready_s),
        "seconds_to_readyz": _round(startup.readyz_s),
        "seconds_to_all_pending": _round(startup.all_pending_s),
        # pykueue's own metrics; Kueue exports neither
        "workloads_list_seconds": _round(state.workloads_list_seconds if state and pykueue else None),
        "workloads_cached": state.workloads_cached if state and pykueue else None,
        "pending_in_engine": state.pending if state else None,
        "rss_mib": _round(proc.rss_mib if proc else None, 1),
        "peak_rss_mib": _round(proc.peak_rss_mib if proc else None, 1),
        "cpu_s": _round(proc.cpu_seconds if proc else None, 1),
        "rss_mib_at_ready": _round(startup.at_ready.rss_mib if startup.at_ready else None, 1),
        "cpu_s_at_ready": _round(startup.at_ready.cpu_seconds if startup.at_ready else None, 1),
        "cpu_ms_per_workload": _round(1000 * proc.cpu_seconds / creation.done if proc and creation.done else None,
                                      3),
        "controller_requests_by_verb": startup.requests_by_verb,
    }


def _figure(value: Any, unit: str = "") -> str:
    """A printed figure, ``n/a`` where the controller has none."""
    return "n/a" if value is None else f"{value}{unit}"


def format_summary(result: dict[str, Any]) -> str:
    rate = f" at QPS {result['qps']:g} / burst {result['burst']}" if result.get("qps") is not None else ""
    rows = [
        ("controller", f"{result.get('controller', 'pykueue')}{rate}"),
        ("workloads pending at start", f"{result['workloads']} in {result['cluster_queues']} ClusterQueues"
                                       f" (created in {result['create_seconds']} s)"),
        ("launch -> /metrics answers", _figure(result["seconds_to_metrics"], " s")),
        ("launch -> /readyz answers", _figure(result.get("seconds_to_readyz"), " s")),
        ("launch -> Workload informer synced", f"{_figure(result['seconds_to_workloads_synced'], ' s')}"
                                               f" (its list: {_figure(result['workloads_list_seconds'], ' s')})"),
        ("launch -> every informer synced", _figure(result["seconds_to_ready"], " s")),
        ("launch -> engine holds all pending", _figure(result["seconds_to_all_pending"], " s")),
        ("controller RSS then / peak", f"{_figure(result['rss_mib'], ' MiB')} / {_figure(result['peak_rss_mib'], ' MiB')}"
                                       f" (at every informer synced: {_figure(result['rss_mib_at_ready'], ' MiB')})"),
        ("controller CPU then", f"{_figure(result['cpu_s'], ' s')} ({_figure(result['cpu_ms_per_workload'])} ms per"
                                f" workload; at every informer synced: {_figure(result['cpu_s_at_ready'], ' s')})"),
        ("controller API requests", _figure(result.get("controller_requests_by_verb"))),
    ]
    return "\n".join(f"{label:<38}{value}" for label, value in rows)


def start_once(
    controller: ControllerProcess | KueueProcess, creation: Batch, names: Names, queues: set[str],
    args: argparse.Namespace, *, qps: float, burst: int, workdir: Path, source: str | None = None,
) -> dict[str, Any]:
    """Launch ``controller`` against the created workloads, time its start and print the summary."""
    startup = watch_start(controller, creation.done, queues, args.poll, args.timeout)
    result = summarise(names.run_id, creation.done, len(queues), creation, startup,
                       controller=args.controller, qps=qps, burst=burst)
    if source is not None:
        result["source"] = source
    if startup.metrics_at_all_pending is not None:
        page = "metrics-at-all-pending" + ("" if source is None else f"-{controller.label}")
        (workdir / f"{page}.txt").write_text(startup.metrics_at_all_pending)
    if args.profile is not None and isinstance(controller, ControllerProcess) and controller.profiler is not None:
        result["profile"] = str(args.profile)
    print(format_summary(result), flush=True)
    return result


# The figures of one start whose medians an A/B of several starts prints, per source.
MEDIAN_FIGURES = (
    ("seconds_to_workloads_synced", "launch -> Workload informer synced", " s"),
    ("workloads_list_seconds", "its list", " s"),
    ("seconds_to_all_pending", "launch -> engine holds all pending", " s"),
    ("cpu_s", "controller CPU then", " s"),
    ("peak_rss_mib", "controller peak RSS", " MiB"),
)


def start_medians(starts: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per source: how many starts, each figure's values in start order and their median."""
    medians: dict[str, dict[str, Any]] = {}
    for start in starts:
        entry = medians.setdefault(start.get("source", "this"), {"starts": 0})
        entry["starts"] += 1
        for key, _, _ in MEDIAN_FIGURES:
            entry.setdefault(key, {"values": []})["values"].append(start.get(key))
    for entry in medians.values():
        for key, _, _ in MEDIAN_FIGURES:
            values = [v for v in entry[key]["values"] if v is not None]
            entry[key]["median"] = round(statistics.median(values), 2) if values else None
    return medians


def format_medians(medians: dict[str, dict[str, Any]]) -> str:
    lines = ["medians of the starts, per controller source (values in start order):"]
    for source, entry in medians.items():
        lines.append(f"  {source} ({entry['starts']} starts)")
        for key, label, unit in MEDIAN_FIGURES:
            figure = entry[key]
            values = ", ".join(_figure(v) for v in figure["values"])
            lines.append(f"    {label:<36}{_figure(figure['median'], unit)} ({values})")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench.controller_cold_start", description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=50_000, help="pending workloads at the controller's start")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply --count (e.g. 0.1 for 5,000)")
    parser.add_argument("--cluster-queues", type=int, default=10, help="ClusterQueues (one namespace each)")
    parser.add_argument("--concurrency", type=int, default=64, help="workload creates in flight at once")
    parser.add_argument(
        "--controller",
        default="pykueue",
        help="pykueue (this checkout's controller), or kueue@<version>[:<rate limit>] for Kueue's own manager "
        "(e.g. kueue@v0.14.8; the rate limit as in bench.baseline --variants)",
    )
    parser.add_argument("--qps", type=float, help=f"the controller's client QPS (default {VARIANTS['kueue-qps'].qps:g},"
                        " or the kueue@ spelling's rate limit)")
    parser.add_argument("--burst", type=int, help=f"the controller's burst (default {VARIANTS['kueue-qps'].burst},"
                        " or the kueue@ spelling's rate limit)")
    parser.add_argument("--poll", type=float, default=0.25, help="seconds between polls of the controller")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds the start may take")
    parser.add_argument("--progress-every", type=float, default=10.0, help="seconds between creation progress lines")
    parser.add_argument("--kubeconfig", help="an existing cluster (default: $PYKUEUE_KUBECONFIG, else a local one)")
    parser.add_argument("--profile", type=Path, help="py-spy the controller from /metrics up to all pending loaded")
    parser.add_argument(
        "--controller-src",
        action="append",
        default=[],
        metavar="[LABEL=]DIR",
        help="also start the controller of this checkout against the same workloads, interleaved with this "
        "checkout's (an A/B of one creation); repeatable",
    )
    parser.add_argument(
        "--starts", type=int, default=1, help="starts per controller against the same workloads, interleaved A, B, A, B"
    )
    parser.add_argument("--keep", action="store_true", help="keep the run's queues, namespaces and workloads")
    parser.add_argument("--json", type=Path, help="also write the JSON summary to this file")
    return parser


def choose_controller(spec: str) -> Variant | None:
    """None for pykueue's controller, else the ``kueue@`` variant (its version and rate limit);
    ValueError naming ``--controller`` for anything else."""
    if spec == "pykueue":
        return None
    kueue = kueue_variant(spec, flag="--controller")
    if kueue is None:
        raise ValueError(f"--controller {spec}: expected pykueue or kueue@<version>[:<rate limit>], e.g. kueue@v0.14.8")
    return kueue


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    count = max(1, int(args.count * args.scale))
    if args.cluster_queues < 1:
        print("bench.controller_cold_start: --cluster-queues must be at least 1", file=sys.stderr)
        return 2
    try:
        kueue = choose_controller(args.controller)
        if kueue is not None and args.profile is not None:
            raise ValueError("--profile: py-spy profiles pykueue's controller; Kueue's manager is Go")
        if kueue is not None and (args.controller_src or args.starts != 1):
            raise ValueError("--controller-src/--starts: only for pykueue's controller")
        if args.starts < 1:
            raise ValueError("--starts: at least 1")
        if args.profile is not None and (args.controller_src or args.starts != 1):
            raise ValueError("--profile: one start only (without --controller-src/--starts)")
        trees: list[tuple[str, Path | None]] = [("this", None)]
        trees += [(tree.label, tree.path) for tree in map(parse_source_tree, args.controller_src)]
        if len({label for label, _ in trees}) != len(trees):
            raise ValueError(f"--controller-src: labels must differ from each other and from 'this', got "
                             f"{[label for label, _ in trees]}")
        if kueue is not None and kueue.kueue_version is not None:  # before any cluster is touched
            require_mount_namespace()
            kueue_artifacts(kueue.kueue_version)
    except (ValueError, RuntimeError) as err:
        print(f"bench.controller_cold_start: {err}", file=sys.stderr)
        return 2
    rate = kueue or VARIANTS["kueue-qps"]
    qps = args.qps if args.qps is not None else rate.qps
    burst = args.burst if args.burst is not None else rate.burst
    client, kubeconfig, started_cluster = connect(args.kubeconfig)
    workdir = Path(tempfile.mkdtemp(prefix="pykueue-bench-cold-start-"))
    names = Names(uuid.uuid4().hex[:6])
    shape = queue_shape(args.cluster_queues)
    crd_swap: CrdSwap | None = None
    reader: MetricsReader | None = None
    controller: ControllerProcess | KueueProcess | None = None
    objects_left = True
    try:
        if kueue is not None and kueue.kueue_version is not None:
            _, crd_dir = kueue_artifacts(kueue.kueue_version)
            client = client.speaking(stored_version(crd_dir))
            crd_swap = CrdSwap(client, crd_dir)
            crd_swap.install()
            reader = MetricsReader(client, f"pykueue-bench-metrics-{names.run_id}")
            controller = KueueProcess(
                kubeconfig, version=kueue.kueue_version, qps=qps, burst=burst, workdir=workdir, label="cold-start",
                log_level="info", metrics_token=reader.grant(),
            )
        result: dict[str, Any] = {}
        create_queues(client, shape, names)
        print(f"creating {count} workloads in {args.cluster_queues} ClusterQueues of run {names.run_id}"
              f" ({args.concurrency} in flight; no controller runs); logs in {workdir}", flush=True)
        creation = for_each_workload(client, names, args.cluster_queues, count, args, "create")
        print(f"created {creation.done} in {creation.seconds:.1f}s ({creation.errors} errors)", flush=True)
        queues = {names.cluster_queue(index) for index in range(args.cluster_queues)}
        if controller is not None:  # Kueue's manager
            print(f"starting {args.controller}...", flush=True)
            result = start_once(controller, creation, names, queues, args, qps=qps, burst=burst, workdir=workdir)
        plan = [(label, tree, n) for n in range(args.starts) for label, tree in trees] if kueue is None else []
        starts: list[dict[str, Any]] = []
        for label, tree, n in plan:
            if controller is not None:  # the previous start's: one controller at a time
                controller.stop()
            suffix = "" if len(plan) == 1 else f"-{label}-{n + 1}"
            controller = ControllerProcess(
                kubeconfig, qps=qps, burst=burst, workdir=workdir, label=f"cold-start{suffix}",
                profile_to=args.profile, source_tree=tree,
            )
            print(f"starting pykueue's controller ({label}{'' if tree is None else f' = {tree}'},"
                  f" start {n + 1} of {args.starts})...", flush=True)
            source = label if len(plan) > 1 else None
            result = start_once(controller, creation, names, queues, args, qps=qps, burst=burst, workdir=workdir,
                                source=source)
            starts.append(result)
        if len(starts) > 1:
            result = {**starts[0], "starts": starts, "medians": start_medians(starts)}
            print(format_medians(result["medians"]), flush=True)
    finally:
        try:
            if args.keep:
                print(f"kept run {names.run_id}'s objects", flush=True)
            elif started_cluster is not None:
                print("not deleting the run's objects: the cluster this program started is stopped", flush=True)
            else:
                clean_up(client, names, args.cluster_queues, count, args)
                objects_left = False
        finally:
            if controller is not None:
                controller.stop()
            try:
                if reader is not None and started_cluster is None:
                    reader.revoke()
                if crd_swap is not None and started_cluster is None:
                    if objects_left:
                        print("the cluster keeps Kueue's CRDs: the run's objects are still stored in its version",
                              flush=True)
                    else:
                        crd_swap.restore()
            finally:
                client.close()
                if started_cluster is not None:
                    started_cluster.down()
    text = json.dumps(result)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0 if result["create_errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
