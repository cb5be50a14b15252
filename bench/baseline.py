"""Scheduler baseline: Kueue's scheduler performance test shape against a real (local) cluster.

The shape (``bench/baseline.yaml``, config ``baseline``): 30 ClusterQueues in 5 cohorts, one
flavor, cpu nominal 20 / borrowing limit 100, ``reclaimWithinCohort: Any`` and
``withinClusterQueue: LowerPriority``; one namespace and LocalQueue per ClusterQueue; three classes
of standalone Workloads created per ClusterQueue at fixed intervals (15,000 in all); each
workload is marked Finished ``runtime_ms`` after it is admitted (see :mod:`bench.baseline_driver`).

Each *variant* starts its own ``pykueue-controller`` process: ``kueue-qps`` with client QPS 50 /
burst 100 as in Kueue's run, and ``unthrottled`` with a client limit far above what the apiserver
serves; ``fair-sharing`` as ``kueue-qps`` with ``fairSharing.enable`` in the controller's
Configuration; ``floor`` starts no controller but :mod:`bench.floor_admitter`, which admits every
workload the moment it is watched (no quota, no Events): the wall the cluster allows for the
same requests, which no controller can beat. Printed per run: wall time, time to admission per class (mean, p50, p90; from the create
sent and from the first watch event), ClusterQueue utilisation both ways (ours from workload
time; Kueue's from ClusterQueue status usage, :mod:`bench.baseline_cq`), evictions, controller
CPU seconds and peak RSS (``/proc``), the load driver's own lag, and Kueue's published means
beside ours; the last line is a JSON summary.

``--controller-src [LABEL=]DIR`` adds, per rate limit, a variant running another checkout's
controller (``kueue-qps@LABEL``; :mod:`bench.baseline_variants`), and runs go A, B, A, B, ...
so the machine's drift hits both.

The cluster: ``--kubeconfig`` (or ``$PYKUEUE_KUBECONFIG``), else the local cluster named
``$PYKUEUE_CLUSTER_NAME`` (default ``pykueue-bench``), brought up if needed and torn down at the
end if this program started it. ``--controller-pid`` uses an already running controller instead
of starting one (its CPU/RSS are still read from ``/proc``); only one variant runs then.

Usage::

    python -m bench.baseline --scale 0.1                 # both variants, 1,500 workloads each
    python -m bench.baseline --variants kueue-qps        # full scale, Kueue's QPS only
    python -m bench.baseline --scale 0.1 --repeat 3      # medians of three runs per variant
    python -m bench.baseline --scale 0.1 --variants kueue-qps,fair-sharing   # fair sharing off and on
    python -m bench.baseline --scale 0.3 --variants unthrottled,kueue@v0.14.8:unthrottled   # both unthrottled
    python -m bench.baseline --scale 0.3 --variants floor,unthrottled   # what the cluster allows, beside pykueue
    python -m bench.baseline --scale 0.1 --profile /tmp/prof   # py-spy the controller
    python -m bench.baseline --apiserver-profile /tmp/prof --apiserver-profile-windows 0-60,150-210
    python -m bench.baseline --scale 0.1 --variants kueue-qps --repeat 3 --controller-src old=/tmp/old-tree
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import resource
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.runtime.informer import FuncHandler, Informer
from hack.localcluster.components import APISERVER_PROFILING_ENV
from pykueue.kube.client import KubeClient
from pykueue.kube.errors import AlreadyExists
from pykueue.kube.resources import CLUSTER_QUEUES, LOCAL_QUEUES, NAMESPACES, RESOURCE_FLAVORS, WORKLOADS
from pykueue.kube.transport import ApiClientTransport, configuration_factory

from . import baseline_shape as objects
from .apiserver_profile import NOT_SERVED, ApiserverProfiler, Window, parse_windows, serves_profiles
from .apiserver_requests import CountingTransport, Key, controller_writes, read_request_totals
from .baseline_cq import ClusterQueueRecorder
from .baseline_driver import FinishRunner, Generator, Recorder
from .baseline_evictions import EvictionCompleter
from .baseline_report import format_run, lag_summary, median_of_runs, summarise
from .baseline_shape import RUN_LABEL, Names, Shape, load_shape
from .baseline_variants import (
    EXTERNAL,
    KUEUE_RATE_LIMITS,
    UNTHROTTLED_QPS,
    VARIANTS,
    Variant,
    choose_variants,
    controller_configuration,
    describe_tree,
    parse_source_tree,
    path_safe,
    plan_runs,
)
from .controller_process import REPO_ROOT, ControllerProcess
from .floor_admitter import FloorProcess
from .kueue_process import CrdSwap, KueueProcess, kueue_artifacts, require_mount_namespace, stored_version
from .procstats import ProcSample, control_plane_pids, sample

log = logging.getLogger("bench.baseline")

# How long after the last workload finished the ClusterQueue recorder may wait for the status
# event that shows every queue idle (Kueue's end of recording).
CQ_SETTLE_TIMEOUT_S = 60.0


def connect(kubeconfig: str | None) -> tuple[KubeClient, str, Any]:
    """The driver's client (never throttled: the driver must not be the bottleneck), the
    kubeconfig path, and the LocalCluster this program started (None when it reused one)."""
    kubeconfig = kubeconfig or os.environ.get("PYKUEUE_KUBECONFIG")
    started = None
    if not kubeconfig:
        from hack.localcluster import LocalCluster

        cluster = LocalCluster(os.environ.get("PYKUEUE_CLUSTER_NAME") or "pykueue-bench")
        if not cluster.is_healthy():
            started = cluster
        cluster.up()
        kubeconfig = cluster.kubeconfig
    # Connections for every create, Finished patch and watch in flight, so none is discarded
    # and re-opened (a TLS handshake each) while the driver is busiest.
    transport = ApiClientTransport(configuration_factory(kubeconfig), user_agent="pykueue-bench", pool_size=256)
    # Counted, so that the apiserver's totals can be split into the driver's and the rest.
    client = KubeClient(CountingTransport(transport), qps=UNTHROTTLED_QPS, burst=200_000)
    return client, kubeconfig, started


# --- queues ---------------------------------------------------------------------------------------


def create_queues(client: KubeClient, shape: Shape, names: Names) -> None:
    def create(res: Any, obj: dict[str, Any]) -> None:
        with contextlib.suppress(AlreadyExists):
            client.create(res, obj)

    create(RESOURCE_FLAVORS, objects.resource_flavor(names))
    for index in range(shape.cluster_queues):
        create(CLUSTER_QUEUES, objects.cluster_queue(shape, names, index))
        create(NAMESPACES, objects.namespace(names, index))
        create(LOCAL_QUEUES, objects.local_queue(names, index))


def _active(cq: dict[str, Any] | None) -> bool:
    for cond in ((cq or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Active":
            return bool(cond.get("status") == "True")
    return False


def wait_queues_active(client: KubeClient, shape: Shape, names: Names, timeout: float = 120.0) -> None:
    """Every ClusterQueue reports ``Active=True`` (the controller has seen flavor and queue)."""
    deadline = time.monotonic() + timeout
    pending = {names.cluster_queue(i) for i in range(shape.cluster_queues)}
    while pending:
        items = client.list(CLUSTER_QUEUES, label_selector=f"{RUN_LABEL}={names.run_id}").get("items") or []
        pending -= {cq["metadata"]["name"] for cq in items if _active(cq)}
        if not pending:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"ClusterQueues not Active after {timeout:.0f}s: {sorted(pending)[:5]}")
        time.sleep(0.5)


# What a run creates, Kueue's kinds first. A run's Workloads and LocalQueues must be gone before
# the next run starts: after a `kueue@` run they are stored in Kueue's version, and once the
# project's CRDs are back no controller of the next run can list them.
RUN_KINDS = (WORKLOADS, LOCAL_QUEUES, CLUSTER_QUEUES, RESOURCE_FLAVORS, NAMESPACES)
# The least a run's cleanup is given, and what each of its workloads adds: a namespace's
# Workloads are deleted one by one, and the 50,000 of `large_scale` took longer than 300 s.
CLEANUP_BASE_S = 300.0
CLEANUP_PER_WORKLOAD_S = 0.05
# Namespaces whose Workloads are deleted at once.
CLEANUP_THREADS = 16


def cleanup_seconds(workloads: int) -> float:
    """How long :func:`delete_run` may wait for a run of ``workloads`` workloads to be gone."""
    return CLEANUP_BASE_S + CLEANUP_PER_WORKLOAD_S * max(0, workloads)


def delete_run(
    client: KubeClient,
    names: Names,
    *,
    wait_s: float,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Delete the run's namespaces (with their workloads), ClusterQueues and flavor; wait up to
    ``wait_s`` until none of :data:`RUN_KINDS` is left (finalizers need the controller, so call
    before stopping it)."""
    selector = f"{RUN_LABEL}={names.run_id}"
    namespaces = [obj["metadata"]["name"] for obj in client.list(NAMESPACES, label_selector=selector).get("items") or []]
    # The Workloads first, a namespace's in one request and many namespaces at once: left to the
    # namespace controller they go at about 40 per second (bench/controller_cold_start.py).
    with ThreadPoolExecutor(max_workers=CLEANUP_THREADS) as pool:
        list(pool.map(lambda ns: client.delete_collection(WORKLOADS, ns, label_selector=selector), namespaces))
    for name in namespaces:
        client.delete(NAMESPACES, name)
    for res in (CLUSTER_QUEUES, RESOURCE_FLAVORS):
        for obj in client.list(res, label_selector=selector).get("items") or []:
            client.delete(res, obj["metadata"]["name"])
    deadline = clock() + wait_s
    while True:
        left = [res for res in RUN_KINDS if client.list(res, label_selector=selector, limit=1).get("items")]
        if not left:
            return True
        if clock() > deadline:
            print(f"  run {names.run_id}: still there after {wait_s:.0f} s: {', '.join(str(r) for r in left)}", flush=True)
            return False
        sleep(1.0)


def describe_unfinished(informer: Informer, recorder: Recorder, limit: int = 5) -> list[str]:
    """Where the first few unfinished workloads stand (their conditions as last watched), so an
    incomplete run says what it waited for."""
    lines = []
    for (namespace, name), record in sorted(recorder.records.items()):
        if record.finished_at is not None or record.create_failed:
            continue
        obj = informer.store.get(f"{namespace}/{name}") or {}
        conditions = ", ".join(
            f"{c.get('type')}={c.get('status')}({c.get('reason')})"
            for c in (obj.get("status") or {}).get("conditions") or []
        )
        lines.append(f"{namespace}/{name} evictions={record.evictions}: {conditions or 'no conditions'}")
        if len(lines) >= limit:
            break
    return lines


# --- one run --------------------------------------------------------------------------------------


@dataclass
class RunOptions:
    scale: float
    timeout_s: float
    create_concurrency: int
    finish_concurrency: int
    workdir: Path
    profile_dir: Path | None
    profile_mode: str
    controller_pid: int | None
    controller_log_level: str = "WARNING"
    external_controller: bool = False
    progress_every_s: float = 10.0
    apiserver_profile_dir: Path | None = None
    apiserver_profile_windows: tuple[Window, ...] = ()


def _process_figures(before: ProcSample | None, after: ProcSample | None, seconds: float) -> dict[str, Any]:
    """CPU over ``seconds`` and resident memory of one process (the controller, the apiserver, etcd)
    from two samples; None figures when either sample is missing."""
    if before is None or after is None:
        return {"cpu_s": None, "cpu_cores": None, "peak_rss_mib": None}
    cpu = after.cpu_seconds - before.cpu_seconds
    return {
        "cpu_s": round(cpu, 1),
        "cpu_cores": round(cpu / seconds, 2) if seconds > 0 else None,
        "peak_rss_mib": round(after.peak_rss_mib, 1),
        "rss_at_end_mib": round(after.rss_mib, 1),
    }


def _driver_writes(client: KubeClient) -> Counter[Key]:
    transport = client.transport
    return transport.counts() if isinstance(transport, CountingTransport) else Counter()


def run_once(
    client: KubeClient, kubeconfig: str, shape: Shape, variant: Variant, options: RunOptions, index: int
) -> dict[str, Any]:
    """Start a controller (unless one is given), run the load, measure, clean up."""
    names = Names(uuid.uuid4().hex[:6])
    controller: ControllerProcess | KueueProcess | FloorProcess | None = None
    crd_swap: CrdSwap | None = None
    profile = None
    if options.profile_dir is not None:
        profile = options.profile_dir / f"controller-{variant.name}-{index}-{options.profile_mode}.txt"
    if variant.kueue_version is not None:
        _, crd_dir = kueue_artifacts(variant.kueue_version)
        client = client.speaking(stored_version(crd_dir))
        crd_swap = CrdSwap(client, crd_dir)
        crd_swap.install()
        controller = KueueProcess(
            kubeconfig, version=variant.kueue_version, qps=variant.qps, burst=variant.burst,
            workdir=options.workdir, label=f"{path_safe(variant.name)}-{index}",
        )
        try:
            controller.start()
        except Exception:
            crd_swap.restore()
            raise
    elif variant.floor:
        controller = FloorProcess(kubeconfig, workdir=options.workdir, label=f"{variant.name}-{index}")
        controller.start()
    elif not options.external_controller:
        controller = ControllerProcess(
            kubeconfig, qps=variant.qps, burst=variant.burst, workdir=options.workdir,
            label=f"{variant.name}-{index}", profile_to=profile, profile_mode=options.profile_mode,
            log_level=options.controller_log_level, source_tree=variant.source_tree,
            config=controller_configuration(variant),
        )
        controller.start()
    pid = controller.pid if controller is not None else options.controller_pid
    informer: Informer | None = None
    cq_informer: Informer | None = None
    runner: FinishRunner | None = None
    apiserver_profiler: ApiserverProfiler | None = None
    # Kueue leaves a standalone workload's eviction to its owner: the driver completes it, as
    # Kueue's own runner does (bench/baseline_evictions.py); pykueue's controller does it itself.
    evictions = (
        EvictionCompleter(client, options.finish_concurrency) if variant.kueue_version is not None else None
    )
    try:
        create_queues(client, shape, names)
        if not variant.floor:  # nothing in a floor run makes them Active (it does not look)
            wait_queues_active(client, shape, names)
        recorder = Recorder(on_admitted=lambda key, due, token: runner.schedule(key, due, token) if runner else None)
        runner = FinishRunner(
            client, recorder.token, options.finish_concurrency,
            on_sent=recorder.finish_sent, on_answered=recorder.finish_answered,
        )
        generator = Generator(client, shape, names, recorder, options.create_concurrency)
        informer = Informer(client, WORKLOADS, label_selector=f"{RUN_LABEL}={names.run_id}")
        informer.add_handler(FuncHandler(add=recorder.observe, update=lambda _old, new: recorder.observe(new)))
        if evictions is not None:
            informer.add_handler(FuncHandler(add=evictions.offer, update=lambda _old, new: evictions.offer(new)))
        informer.start()
        if not informer.wait_for_sync(60):
            raise RuntimeError("the benchmark's Workload informer did not sync within 60 s")
        # Started just before the load, so its first events (the initial list) mark the start of
        # Kueue's window as its runner's do (it creates the queues right before the workloads).
        cq_recorder = ClusterQueueRecorder(generation_done=generator.done)
        cq_informer = Informer(client, CLUSTER_QUEUES, label_selector=f"{RUN_LABEL}={names.run_id}")
        cq_informer.add_handler(FuncHandler(add=cq_recorder.observe, update=lambda _old, new: cq_recorder.observe(new)))
        cq_informer.start()
        if not cq_informer.wait_for_sync(60):
            raise RuntimeError("the benchmark's ClusterQueue informer did not sync within 60 s")
        runner.start()
        profiling = controller.start_profiler() if controller is not None else False
        controller_before = sample(pid) if pid is not None else None
        control_plane = control_plane_pids(kubeconfig)
        control_plane_before = {name: sample(component) for name, component in control_plane.items()}
        apiserver_before = read_request_totals(client.transport)
        driver_writes_before = _driver_writes(client)
        driver_before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.monotonic()
        generator.start()
        if options.apiserver_profile_dir is not None:
            apiserver_profiler = ApiserverProfiler(
                client.transport, options.apiserver_profile_dir, f"{path_safe(variant.name)}-{index}",
                list(options.apiserver_profile_windows),
            )
            apiserver_profiler.start(started)
        deadline = started + options.timeout_s
        while not recorder.all_settled.wait(min(options.progress_every_s, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                break
            if controller is not None and not controller.alive():
                raise RuntimeError(f"the controller exited during the run:\n{controller.log_tail()}")
            progress = recorder.progress()
            print(f"  [{variant.name} {time.monotonic() - started:6.0f}s] created {progress['created']}/"
                  f"{progress['total']}, holding quota {progress['admitted_now']}, finished {progress['finished']}",
                  flush=True)
            if evictions is not None:
                evictions.resync(informer.store.list())
        elapsed = time.monotonic() - started
        if recorder.all_settled.is_set() and not variant.floor:  # no ClusterQueue status in a floor run
            cq_recorder.done.wait(CQ_SETTLE_TIMEOUT_S)
        controller_after = sample(pid) if pid is not None else None
        control_plane_after = {name: sample(component) for name, component in control_plane.items()}
        apiserver_after = read_request_totals(client.transport)
        driver_writes_after = _driver_writes(client)
        api = controller.api_requests() if controller is not None else None
        driver_after = resource.getrusage(resource.RUSAGE_SELF)
        if controller is not None:
            controller.stop_profiler()
        apiserver_profiles = apiserver_profiler.finish() if apiserver_profiler is not None else []
        for captured in apiserver_profiles:
            print(f"  apiserver profile {captured.window.label}: "
                  f"{captured.path or captured.error}", flush=True)
        generator.wait(30)
        result: dict[str, Any] = {
            "variant": variant.name,
            "qps": None if options.external_controller else variant.qps,
            "burst": None if options.external_controller else variant.burst,
            "scale": options.scale,
            "run_id": names.run_id,
            "controller_source": {"kueue": variant.kueue_version}
            if variant.kueue_version is not None
            else {"floor": "bench.floor_admitter"}
            if variant.floor
            else describe_tree(variant.source_tree or REPO_ROOT)
            if not options.external_controller
            else None,
            "controller_configuration": None if options.external_controller else controller_configuration(variant),
            **summarise(recorder.snapshot(), shape, cq_recorder.snapshot()),
            "cq_recording_complete": cq_recorder.done.is_set(),
            "controller": _process_figures(controller_before, controller_after, elapsed),
            # The apiserver and etcd of a local cluster: CPU over the load; peak RSS since they started.
            "control_plane": {
                name: _process_figures(control_plane_before[name], control_plane_after[name], elapsed)
                for name in control_plane
            },
            "controller_api": api,
            # The same figure for either controller, from the apiserver (bench/apiserver_requests.py).
            "apiserver_writes": controller_writes(
                apiserver_before, apiserver_after, driver_writes_after - driver_writes_before
            )
            if apiserver_before is not None and apiserver_after is not None
            else None,
            "driver": {
                "cpu_s": round(
                    driver_after.ru_utime + driver_after.ru_stime - driver_before.ru_utime - driver_before.ru_stime, 1
                ),
                "create_lag": lag_summary(generator.lag.samples),
                "finish_lag": lag_summary(runner.lag.samples),
                "errors": generator.errors + runner.errors + (evictions.errors if evictions else 0),
                "evictions_completed": evictions.completed if evictions is not None else None,
                "evictions_resynced": evictions.resynced if evictions is not None else None,
            },
        }
        if profiling and profile is not None:
            result["profile"] = str(profile)
        if apiserver_profiles:
            result["apiserver_profiles"] = {
                c.window.label: str(c.path) if c.path is not None else None for c in apiserver_profiles
            }
        if not result["completed"]:
            result["unfinished"] = describe_unfinished(informer, recorder)
            for line in result["unfinished"]:
                print(f"  unfinished: {line}", flush=True)
        return result
    finally:
        if runner is not None:
            runner.stop()
        if evictions is not None:
            evictions.stop()
        if informer is not None:
            informer.stop()
        if cq_informer is not None:
            cq_informer.stop()
        if not delete_run(client, names, wait_s=cleanup_seconds(shape.total_workloads)):
            print(f"  warning: run {names.run_id}'s objects were not all deleted; the next run may meet them", flush=True)
        if controller is not None:
            controller.stop()
        if crd_swap is not None:
            crd_swap.restore()


# --- command line ---------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench.baseline", description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="baseline", help="config of bench/baseline.yaml (baseline, large_scale)")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the workloads (intervals kept)")
    parser.add_argument(
        "--variants",
        default="kueue-qps,unthrottled",
        help=f"comma-separated: {', '.join(VARIANTS)}, kueue@<version>[:<rate limit>] (Kueue's own manager at "
        f"Kueue's QPS, or at the QPS/burst of one of {', '.join(KUEUE_RATE_LIMITS)}; e.g. kueue@v0.14.8, "
        "kueue@v0.14.8:unthrottled)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per variant, interleaved A, B, A, B, ...; medians are reported"
    )
    parser.add_argument(
        "--controller-src",
        action="append",
        default=[],
        metavar="[LABEL=]DIR",
        help="also run each variant with the controller of this checkout (e.g. a git worktree of an older "
        "commit), named VARIANT@LABEL (default label: its short commit); repeatable",
    )
    parser.add_argument("--kubeconfig", help="an existing cluster (default: $PYKUEUE_KUBECONFIG, else a local one)")
    parser.add_argument("--controller-pid", type=int, help="use this running controller instead of starting one")
    parser.add_argument(
        "--external-controller",
        action="store_true",
        help="a controller already runs (e.g. installed by the chart): start none; CPU/RSS need --controller-pid",
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds a run may take before it is cut off")
    parser.add_argument("--create-concurrency", type=int, default=64, help="workload creates in flight at once")
    parser.add_argument("--finish-concurrency", type=int, default=64, help="Finished patches in flight at once")
    parser.add_argument("--profile", type=Path, help="py-spy the controller; collapsed stacks go to this directory")
    parser.add_argument(
        "--profile-mode",
        choices=("cpu", "wall"),
        default="cpu",
        help="cpu: where the controller's CPU goes (GIL holder); wall: every thread's time, waits included",
    )
    parser.add_argument(
        "--controller-log-level", default="WARNING", help="log level of a controller this program starts"
    )
    parser.add_argument(
        "--apiserver-profile",
        type=Path,
        help="CPU-profile the apiserver (it must serve /debug/pprof: PYKUEUE_APISERVER_PROFILING=1 for a local "
        "cluster, set for one this program brings up); pprof files go to this directory",
    )
    parser.add_argument(
        "--apiserver-profile-windows",
        default="0-60",
        help="with --apiserver-profile: seconds from the first create to profile, e.g. 0-60,150-210",
    )
    parser.add_argument("--json", type=Path, help="also write the JSON summary to this file")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        shape = load_shape(args.config).scaled(args.scale)
    except ValueError as err:
        print(f"bench.baseline: {err}", file=sys.stderr)
        return 2
    external = args.external_controller or args.controller_pid is not None
    try:
        if args.repeat < 1:
            raise ValueError(f"--repeat: must be at least 1, got {args.repeat}")
        if external and args.controller_src:
            raise ValueError("--controller-src: cannot be combined with --controller-pid/--external-controller")
        trees = [parse_source_tree(spec) for spec in args.controller_src]
        variants = [EXTERNAL] if external else choose_variants(
            [v.strip() for v in args.variants.split(",") if v.strip()], trees
        )
        windows = tuple(parse_windows(args.apiserver_profile_windows)) if args.apiserver_profile else ()
    except ValueError as err:
        print(f"bench.baseline: {err}", file=sys.stderr)
        return 2
    try:
        for variant in variants:  # before any cluster is touched
            if variant.kueue_version is not None:
                require_mount_namespace()
                kueue_artifacts(variant.kueue_version)
    except RuntimeError as err:
        print(f"bench.baseline: {variant.name}: {err}", file=sys.stderr)
        return 2
    if args.apiserver_profile:
        # A local cluster this program brings up serves /debug/pprof; a running one keeps its flags.
        os.environ.setdefault(APISERVER_PROFILING_ENV, "1")
    client, kubeconfig, started_cluster = connect(args.kubeconfig)
    if args.apiserver_profile and not serves_profiles(client.transport):
        print(f"bench.baseline: --apiserver-profile: {NOT_SERVED}", file=sys.stderr)
        if started_cluster is not None:
            started_cluster.down()
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="pykueue-bench-baseline-"))
    print(f"scheduler baseline ({shape.config}): {shape.cluster_queues} ClusterQueues in {shape.cohorts} cohorts, "
          f"{shape.total_workloads} workloads per run (scale {args.scale}); {os.cpu_count()} CPUs shared with the "
          f"apiserver, etcd and the driver; logs in {workdir}", flush=True)
    runs: dict[str, list[dict[str, Any]]] = {}
    options = RunOptions(
        scale=args.scale, timeout_s=args.timeout, create_concurrency=args.create_concurrency,
        finish_concurrency=args.finish_concurrency, workdir=workdir, profile_dir=args.profile,
        profile_mode=args.profile_mode, controller_log_level=args.controller_log_level,
        controller_pid=args.controller_pid, external_controller=external,
        apiserver_profile_dir=args.apiserver_profile, apiserver_profile_windows=windows,
    )
    try:
        for variant, index in plan_runs(variants, args.repeat):
            result = run_once(client, kubeconfig, shape, variant, options, index)
            runs.setdefault(variant.name, []).append(result)
            print(format_run(result, shape), flush=True)
    finally:
        client.close()
        if started_cluster is not None:
            started_cluster.down()
    summary = {
        "benchmark": "baseline",
        "config": shape.config,
        "scale": args.scale,
        "workloads_per_run": shape.total_workloads,
        "anchor_kueue": {
            "wall_s": shape.anchor.wall_s,
            "cq_utilisation_pct": shape.anchor.cq_utilisation_pct,
            "mean_time_to_admission_s": shape.anchor.mean_time_to_admission_s,
        },
        "medians": {name: median_of_runs(results) for name, results in runs.items()},
        "runs": [r for results in runs.values() for r in results],
    }
    text = json.dumps(summary)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0 if all(r["completed"] for results in runs.values() for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
