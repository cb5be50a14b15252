"""Engine micro-benchmark: admission decisions per second as the pending backlog grows.

Runs the admission engine in memory (no API server) on the shape of Kueue's scheduler baseline
(``bench/baseline.yaml``): 5 cohorts x 6 ClusterQueues, one flavor, 20 cpu nominal and
100 cpu borrowing limit each, ``reclaimWithinCohort: Any`` and ``withinClusterQueue: LowerPriority``;
workloads in three classes (small 1 cpu / prio 50, medium 5 cpu / prio 100, large 20 cpu /
prio 200) in the baseline's proportions 350:100:50.

For each backlog size (1k, 5k, 15k, 50k by default) it loads that many pending workloads and then
runs in *steady state*: the simulated clock advances ``--step-ms`` per cycle, admitted workloads
finish after their class runtime, every admitted workload is replaced by a new pending one of its
class *in its own ClusterQueue* (an evicted one returns to the queue instead), and every
reservation is confirmed and echoed back through ``upsert_workload`` as the informer would. The
first queue of each cohort receives only small workloads (a lender whose workloads reclaim its
nominal quota), so the decisions mix classes, borrowing and preemptions.

Because every queue keeps its own size and class mix, the same workloads reach the heads at
every backlog size: the stream of decisions (admissions, preemptions, cycles, heads tried) is
identical from 1k to 50k pending, and only the depth of the queues differs. Cost per decision
is therefore comparable across sizes; the table prints those counts so that this can be checked.

Only engine calls are timed, in process CPU time (so the figure means "on one core" even on a
busy machine), after a warm-up of a fifth of the measured decisions. Each size runs
``--repeat`` times, interleaved across sizes (1k, 5k, ..., 1k, 5k, ...) so that a burst of load
on a shared machine hits every size; the medians, the ratio of the largest to the smallest size
and that ratio per repeat are printed. The ``gc us/dec`` column is the part of it spent in
CPython's cyclic garbage collector.

Prints the tables and a JSON summary (last line, or ``--json PATH``). ``--scale 0.01`` shrinks
every size and the measured decisions for a quick CI smoke run.

Usage::

    python -m bench.engine_micro                 # full run (a few minutes on one core)
    python -m bench.engine_micro --scale 0.02    # smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import heapq
import inspect
import json
import math
import os
import platform
import statistics
import struct
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from controller.engine import Engine
from pykueue.api.config import AdmissionFairSharing

API_VERSION = "kueue.x-k8s.io/v1beta1"


@dataclass(frozen=True)
class Shape:
    """One of the configurations in ``baseline.yaml``: cohorts x queues and workload classes."""

    cohorts: int
    queues_per_cohort: int
    # name: (cpu, runtime_ms, priority, share of the workloads)
    classes: dict[str, tuple[int, int, int, int]]


SHAPES: dict[str, Shape] = {
    "baseline": Shape(5, 6, {"small": (1, 200, 50, 350), "medium": (5, 500, 100, 100), "large": (20, 1000, 200, 50)}),
    "large_scale": Shape(10, 100, {"small": (1, 150, 50, 35), "medium": (5, 350, 100, 11), "large": (20, 700, 200, 4)}),
}
DEFAULT_PENDING = (1_000, 5_000, 15_000, 50_000)

# CPU time of this process, not wall time: the figure is "decisions per second on one core" and
# must not depend on what else the (shared) machine is running.
_clock = time.process_time


class _InstructionCounter:
    """User-space instructions retired by this thread, from the CPU's hardware counter.

    CPU time on a shared machine moves with everyone else's load (cache pressure, frequency);
    the number of instructions an engine call executes does not, so it is the stable way to see
    whether the work per decision grows with the backlog. Cache misses show up in CPU time and
    not here: the two together separate "more work" from "slower memory". Linux only
    (``perf_event_open``); ``available`` is False where the kernel or container forbids it.
    """

    _SYSCALL_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}
    _EXCLUDE_KERNEL_AND_HV = (1 << 5) | (1 << 6)

    def __init__(self) -> None:
        self.fd: int | None = None
        number = self._SYSCALL_PERF_EVENT_OPEN.get(platform.machine())
        if sys.platform != "linux" or number is None:
            return
        # struct perf_event_attr, first version (64 bytes): PERF_TYPE_HARDWARE,
        # PERF_COUNT_HW_INSTRUCTIONS, counting (not sampling), user space only.
        attr = struct.pack("IIQQQQQIIQ", 0, 64, 1, 0, 0, 0, self._EXCLUDE_KERNEL_AND_HV, 0, 0, 0)
        buffer = ctypes.create_string_buffer(attr, len(attr))
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.syscall(number, buffer, 0, -1, -1, 0)
        except (OSError, AttributeError):
            return
        if fd >= 0:
            self.fd = fd

    @property
    def available(self) -> bool:
        return self.fd is not None

    def read(self) -> int:
        return struct.unpack("Q", os.read(self.fd, 8))[0] if self.fd is not None else 0

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


@dataclass
class Row:
    pending: int
    decisions: int
    admissions: int
    preemptions: int
    cycles: int
    heads_tried: int
    engine_seconds: float
    cycle_seconds: float
    decisions_per_second: float
    cycle_decisions_per_second: float
    us_per_decision: float
    kinstructions_per_decision: float | None
    gc_us_per_decision: float
    gc_collections: list[int]
    mean_cycle_ms: float
    p99_cycle_ms: float
    load_us_per_workload: float
    final_pending: int


# --admission-fair-sharing: LocalQueues per ClusterQueue (workloads spread over them round-robin)
# and the Configuration section (a minute's half-life, a sample every 5 simulated seconds).
AFS_LOCAL_QUEUES = 4
AFS_CONFIG = {"usageHalfLifeTime": 60.0, "usageSamplingInterval": 5.0}


def _cluster_queue(name: str, cohort: str, afs: bool = False) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "cohort": cohort,
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "20", "borrowingLimit": "100"}]}
                    ],
                }
            ],
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        },
    }
    if afs:
        obj["spec"]["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
    return obj


def _workload(
    name: str, namespace: str, klass: str, cpu: int, priority: int, created_s: float, queue: str = "lq"
) -> dict[str, Any]:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created_s)) + "Z"
    return {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{namespace}-{name}",
            "generation": 1,
            "creationTimestamp": stamp,
            "labels": {"class": klass},
        },
        "spec": {
            "queueName": queue,
            "priority": priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}},
                }
            ],
        },
    }


def _class_sequence(shape: Shape) -> list[str]:
    """Classes in the shape's proportions (e.g. 7 small, 2 medium, 1 large for the baseline)."""
    divisor = math.gcd(*(share for *_, share in shape.classes.values()))
    seq: list[str] = []
    for klass, (*_, share) in shape.classes.items():
        seq += [klass] * (share // divisor)
    return seq


FAIR_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


def _new_engine(heads: int, batch_s: float, settle_gc: bool, fair_sharing: bool = False, afs: bool = False) -> Engine:
    """An engine with the benchmark's options; an older engine (an A/B run, ``--engine-src``)
    may predate the GC settling option, and then runs without it. ``fair_sharing``: Kueue's
    default strategies (refused by an engine without fair sharing)."""
    options: dict[str, Any] = {"heads_per_cluster_queue": heads, "requeue_batch_seconds": batch_s}
    if "settle_gc" in inspect.signature(Engine).parameters:
        options["settle_gc"] = settle_gc
    if fair_sharing:
        options["fair_sharing"] = FAIR_STRATEGIES
    if afs:
        options["admission_fair_sharing"] = AdmissionFairSharing(
            AFS_CONFIG["usageHalfLifeTime"], AFS_CONFIG["usageSamplingInterval"]
        )
    return Engine(**options)


class Simulation:
    def __init__(
        self,
        shape: Shape,
        pending: int,
        heads: int,
        step_ms: float,
        batch_s: float,
        settle_gc: bool,
        instructions: _InstructionCounter,
        fair_sharing: bool = False,
        afs: bool = False,
    ) -> None:
        self.shape = shape
        self.afs = afs
        self.engine = _new_engine(heads, batch_s, settle_gc, fair_sharing, afs)
        self.step = step_ms / 1000.0
        self.now = 1_800_000_000.0
        self.seq = 0
        self.classes = _class_sequence(shape)
        self.queues = [f"cq-{c}-{q}" for c in range(shape.cohorts) for q in range(shape.queues_per_cohort)]
        # The first queue of each cohort receives only the smallest class: it lends its nominal
        # quota to the others until its own small workloads reclaim it, so the stream of
        # decisions mixes classes, borrowing and preemptions at every backlog size.
        self.lenders = frozenset(self.queues[:: shape.queues_per_cohort])
        self.lender_class = self.classes[0]
        self.objects: dict[str, dict[str, Any]] = {}
        self.running: list[tuple[float, int, str]] = []  # (finish time, token, key)
        self.run_token: dict[str, int] = {}  # key -> token of its current run (evictions void it)
        self.engine_time = 0.0
        self.cycle_times: list[float] = []
        self.admissions = 0
        self.preemptions = 0
        self.heads_tried = 0
        self.gc_timer = _GcTimer()
        self.instructions = instructions
        self.engine_instructions = 0
        # Evicted workloads back in their queue stand in for new arrivals of their class. Keyed by
        # (ClusterQueue, class): each queue keeps its own size and class mix, so which workloads
        # reach the heads, and hence the stream of decisions, does not depend on the backlog size.
        self.requeued_victims: dict[tuple[str, str], int] = {}
        self.engine.upsert_resource_flavor({"metadata": {"name": "default"}, "spec": {}})
        for index, name in enumerate(self.queues):
            self.engine.upsert_cluster_queue(_cluster_queue(name, f"cohort-{index // shape.queues_per_cohort}", afs))
            self.engine.set_namespace(f"ns-{name}", {})
            for lq in self._local_queues():
                self.engine.upsert_local_queue(
                    {"metadata": {"name": lq, "namespace": f"ns-{name}"}, "spec": {"clusterQueue": name}}
                )
        objs = [self._new_workload() for _ in range(pending)]
        gc.collect()
        # Loaded as the controller loads its informers' caches, inside initial_load(); the first
        # cycle then settles the cyclic GC for the loaded state (controller.engine.gcpolicy)
        # unless --no-gc-settle turned that off.
        initial_load = getattr(self.engine, "initial_load", contextlib.nullcontext)  # older engines
        with initial_load():
            start = _clock()
            for obj in objs:
                self.engine.upsert_workload(obj)
            self.load_seconds = _clock() - start

    def _local_queues(self) -> list[str]:
        return ["lq", *(f"lq-{i}" for i in range(1, AFS_LOCAL_QUEUES))] if self.afs else ["lq"]

    def _new_workload(self, klass: str | None = None, queue: str | None = None) -> dict[str, Any]:
        self.seq += 1
        if queue is None:
            queue = self.queues[self.seq % len(self.queues)]
        if klass is None:
            if queue in self.lenders:
                klass = self.lender_class
            else:
                klass = self.classes[(self.seq // len(self.queues)) % len(self.classes)]
        cpu, _, priority, _ = self.shape.classes[klass]
        local_queues = self._local_queues()
        obj = _workload(
            f"wl-{self.seq}", f"ns-{queue}", klass, cpu, priority, self.now + self.seq * 1e-3,
            local_queues[self.seq % len(local_queues)],
        )
        self.objects[f"ns-{queue}/wl-{self.seq}"] = obj
        return obj

    def _timed(self, fn: Any, *args: Any) -> Any:
        self.gc_timer.inside = True
        counted = self.instructions.read()
        start = _clock()
        result = fn(*args)
        self.engine_time += _clock() - start
        self.engine_instructions += self.instructions.read() - counted
        self.gc_timer.inside = False
        return result

    def step_once(self) -> None:
        self.now += self.step
        arrivals = []
        while self.running and self.running[0][0] <= self.now:
            _, token, key = heapq.heappop(self.running)
            if self.run_token.get(key) != token:
                continue  # evicted meanwhile: it is pending again, not finishing
            del self.run_token[key]
            namespace, name = key.split("/")
            self._timed(self.engine.delete_workload, namespace, name)
            self.objects.pop(key, None)
        self.gc_timer.inside = True
        counted = self.instructions.read()
        start = _clock()
        result = self.engine.schedule(self.now)
        elapsed = _clock() - start
        self.engine_instructions += self.instructions.read() - counted
        self.gc_timer.inside = False
        self.engine_time += elapsed
        self.cycle_times.append(elapsed)
        self.heads_tried += getattr(result, "heads_tried", 0)
        for reservation in result.reservations:
            obj = self.objects[reservation.workload]
            echoed = dict(obj)
            echoed["status"] = {
                "admission": reservation.admission,
                "conditions": [
                    {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "",
                     "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now))},
                    {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "",
                     "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now))},
                ],
            }
            self.objects[reservation.workload] = echoed
            self._timed(self.engine.confirm, reservation.workload)
            self._timed(self.engine.upsert_workload, echoed)
            klass = obj["metadata"]["labels"]["class"]
            self.seq += 1
            self.run_token[reservation.workload] = self.seq
            heapq.heappush(self.running, (self.now + self.shape.classes[klass][1] / 1000.0, self.seq, reservation.workload))
            slot = (reservation.cluster_queue, klass)
            if self.requeued_victims.get(slot):
                self.requeued_victims[slot] -= 1
            else:
                arrivals.append(self._new_workload(klass, reservation.cluster_queue))
        for preemption in result.preemptions:
            # The eviction completes at once: the victim goes back to the queue without quota.
            victim = dict(self.objects[preemption.victim])
            victim.pop("status", None)
            self.objects[preemption.victim] = victim
            self.run_token.pop(preemption.victim, None)
            self._timed(self.engine.upsert_workload, victim)
            slot = (preemption.victim_cluster_queue, victim["metadata"]["labels"]["class"])
            self.requeued_victims[slot] = self.requeued_victims.get(slot, 0) + 1
        self.admissions += len(result.reservations)
        self.preemptions += len(result.preemptions)
        for obj in arrivals:
            self._timed(self.engine.upsert_workload, obj)
        if not (result.reservations or result.preemptions) and self.running:
            # Nothing to do until something finishes: jump there instead of idling (an
            # event-driven loop would sleep), so idle cycles do not dominate the figures.
            self.now = max(self.now, self.running[0][0] - self.step)

    @property
    def pending(self) -> int:
        return sum(self.engine.pending_count(q) for q in self.queues)


def run_size(
    shape: Shape,
    pending: int,
    decisions: int,
    heads: int,
    step_ms: float,
    batch_s: float,
    max_cycles: int,
    settle_gc: bool,
    instructions: _InstructionCounter,
    fair_sharing: bool = False,
    afs: bool = False,
) -> Row:
    """One run in a fresh engine, with the collector as a fresh process has it."""
    threshold = gc.get_threshold()
    try:
        return _measure(
            shape, pending, decisions, heads, step_ms, batch_s, max_cycles, settle_gc, instructions, fair_sharing, afs
        )
    finally:
        # The engine's GC settling is process-wide: undo it so the next run starts from scratch.
        gc.unfreeze()
        gc.set_threshold(*threshold)
        gc.collect()


def _measure(
    shape: Shape,
    pending: int,
    decisions: int,
    heads: int,
    step_ms: float,
    batch_s: float,
    max_cycles: int,
    settle_gc: bool,
    instructions: _InstructionCounter,
    fair_sharing: bool = False,
    afs: bool = False,
) -> Row:
    """Load ``pending`` workloads, warm up to steady state, measure ``decisions``."""
    sim = Simulation(shape, pending, heads, step_ms, batch_s, settle_gc, instructions, fair_sharing, afs)
    # Warm up until the quota has turned over a few times (three of the longest runtimes, and a
    # fifth of the measured decisions), so the measured part is steady state and not the initial
    # fill, which admits without preemptions (with 1,000 queues, thousands in one cycle).
    warm_until = sim.now + 3 * max(runtime_ms for _, runtime_ms, _, _ in shape.classes.values()) / 1000.0
    warm_cycles = 0
    while (
        sim.admissions + sim.preemptions < max(decisions // 5, 100) or sim.now < warm_until
    ) and warm_cycles < max_cycles:
        sim.step_once()
        warm_cycles += 1
    sim.engine_time = 0.0
    sim.engine_instructions = 0
    sim.cycle_times.clear()
    sim.admissions = sim.preemptions = sim.heads_tried = 0
    cycles = 0
    with sim.gc_timer as gc_timer:
        while sim.admissions + sim.preemptions < decisions and cycles < max_cycles:
            sim.step_once()
            cycles += 1
    made = sim.admissions + sim.preemptions
    cycle_total = sum(sim.cycle_times)
    sorted_cycles = sorted(sim.cycle_times)
    p99 = sorted_cycles[min(len(sorted_cycles) - 1, int(len(sorted_cycles) * 0.99))] if sorted_cycles else 0.0
    row = Row(
        pending=pending,
        decisions=made,
        admissions=sim.admissions,
        preemptions=sim.preemptions,
        cycles=cycles,
        heads_tried=sim.heads_tried,
        engine_seconds=round(sim.engine_time, 4),
        cycle_seconds=round(cycle_total, 4),
        decisions_per_second=round(made / sim.engine_time, 1) if sim.engine_time else 0.0,
        cycle_decisions_per_second=round(made / cycle_total, 1) if cycle_total else 0.0,
        us_per_decision=round(sim.engine_time / made * 1e6, 1) if made else 0.0,
        kinstructions_per_decision=(
            round(sim.engine_instructions / made / 1000, 1) if made and instructions.available else None
        ),
        gc_us_per_decision=round(gc_timer.seconds / made * 1e6, 1) if made else 0.0,
        gc_collections=gc_timer.collections,
        mean_cycle_ms=round(statistics.fmean(sim.cycle_times) * 1000, 3) if sim.cycle_times else 0.0,
        p99_cycle_ms=round(p99 * 1000, 3),
        load_us_per_workload=round(sim.load_seconds / pending * 1e6, 1) if pending else 0.0,
        final_pending=sim.pending,
    )
    return row


class _GcTimer:
    """CPU time the cyclic garbage collector (all generations) spent inside timed engine calls.

    A collection runs inside whichever call's allocation triggers it, so its time is part of the
    engine time when an engine call triggered it; this says how much of the engine time was the
    collector. Collections triggered by the simulation's own code are not counted.
    """

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = [0, 0, 0]
        self.inside = False  # an engine call is being timed
        self._started: float | None = None

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = _clock() if self.inside else None
        elif self._started is not None:
            self.seconds += _clock() - self._started
            self.collections[info["generation"]] += 1

    def __enter__(self) -> _GcTimer:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


def median_row(runs: Sequence[Row]) -> Row:
    """Per-field median of repeated runs of one size (counts are identical across repeats)."""
    first = runs[0]
    values: dict[str, Any] = {}
    for name, value in asdict(first).items():
        if isinstance(value, float) and all(getattr(r, name) is not None for r in runs):
            values[name] = round(statistics.median(getattr(r, name) for r in runs), 4)
        else:
            values[name] = value
    return Row(**values)


def _optional(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def _print_table(title: str, rows: Sequence[Row], smallest_us: float | None = None) -> None:
    print(title)
    header = (
        f"{'pending':>8} {'decisions':>9} {'admit':>6} {'preempt':>7} {'cycles':>6} {'heads':>6} "
        f"{'dec/s':>7} {'cycle dec/s':>11} {'us/dec':>7} {'x 1st':>6} {'kinstr/dec':>10} {'gc us/dec':>9} "
        f"{'cycle ms':>8} "
        f"{'p99 ms':>7} {'load us/wl':>10}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        ratio = r.us_per_decision / smallest_us if smallest_us else 1.0
        print(
            f"{r.pending:>8} {r.decisions:>9} {r.admissions:>6} {r.preemptions:>7} {r.cycles:>6} {r.heads_tried:>6} "
            f"{r.decisions_per_second:>7.0f} {r.cycle_decisions_per_second:>11.0f} {r.us_per_decision:>7.1f} "
            f"{ratio:>6.2f} {_optional(r.kinstructions_per_decision):>10} {r.gc_us_per_decision:>9.1f} "
            f"{r.mean_cycle_ms:>8.3f} {r.p99_cycle_ms:>7.3f} "
            f"{r.load_us_per_workload:>10.1f}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.engine_micro", description=__doc__.split("\n")[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="baseline", help="configuration of baseline.yaml")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the default sizes (e.g. 0.02 for CI)")
    parser.add_argument("--pending", type=str, default=None, help="comma-separated backlog sizes (overrides defaults)")
    parser.add_argument("--decisions", type=int, default=20_000, help="decisions measured per run (before --scale)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size, interleaved across sizes (median)")
    parser.add_argument("--heads", type=int, default=8, help="heads per ClusterQueue per cycle (Kueue: 1)")
    parser.add_argument("--step-ms", type=float, default=10.0, help="simulated time per cycle")
    parser.add_argument("--batch-s", type=float, default=1.0, help="requeue batch period (Kueue: 1 s)")
    parser.add_argument(
        "--no-gc-settle",
        "--no-gc-freeze",
        dest="no_gc_settle",
        action="store_true",
        help="Engine(settle_gc=False): leave the cyclic GC at CPython's defaults",
    )
    parser.add_argument(
        "--engine-src",
        action="append",
        default=[],
        metavar="[LABEL=]DIR",
        help="A/B: also run this benchmark against the engine of another source tree, interleaved "
        "(repeatable; bench/engine_micro_ab.py)",
    )
    parser.add_argument(
        "--fair-sharing",
        action="store_true",
        help="Engine(fair_sharing=...): the tournament order and fair preemption (docs/design/fair-sharing.md)",
    )
    parser.add_argument(
        "--admission-fair-sharing",
        action="store_true",
        help=f"admission fair sharing on, every ClusterQueue UsageBasedAdmissionFairSharing with {AFS_LOCAL_QUEUES} "
        "LocalQueues (docs/design/fair-sharing.md)",
    )
    parser.add_argument("--json", type=str, default=None, help="also write the JSON summary to this path")
    args = parser.parse_args(argv)
    if args.scale <= 0:
        parser.error("--scale must be positive")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.engine_src:
        return _compare_engines(parser, args)

    shape = SHAPES[args.shape]
    sizes = [int(s) for s in args.pending.split(",")] if args.pending else list(DEFAULT_PENDING)
    sizes = [max(shape.cohorts * shape.queues_per_cohort, int(s * args.scale)) for s in sizes]
    decisions = max(200, int(args.decisions * args.scale))
    max_cycles = max(2_000, decisions * 20)
    print(
        f"engine micro-benchmark ({args.shape}): {shape.cohorts} cohorts x {shape.queues_per_cohort} ClusterQueues, "
        f"heads/CQ={args.heads}, "
        f"step={args.step_ms} ms, requeue batch={args.batch_s} s, {decisions} decisions per run, "
        f"{args.repeat} run(s) per size interleaved, GC settled by the engine={not args.no_gc_settle}, "
        f"fair sharing={args.fair_sharing}, admission fair sharing={args.admission_fair_sharing}"
    )
    print(f"python {platform.python_version()} on {platform.machine()} ({platform.processor() or 'unknown cpu'})")
    instructions = _InstructionCounter()
    runs: dict[int, list[Row]] = {n: [] for n in sizes}
    for _ in range(args.repeat):
        # Interleaved (1k, 5k, ..., 1k, 5k, ...): a burst of load on the shared machine then
        # hits every size instead of skewing one of them.
        for n in sizes:
            runs[n].append(
                run_size(
                    shape, n, decisions, args.heads, args.step_ms, args.batch_s, max_cycles, not args.no_gc_settle,
                    instructions, args.fair_sharing, args.admission_fair_sharing,
                )
            )
    instructions.close()
    rows = [median_row(runs[n]) for n in sizes]
    if args.repeat > 1:
        _print_table("every run:", [r for rep in zip(*runs.values(), strict=True) for r in rep])
    _print_table(f"median of {args.repeat} run(s) per size:", rows, rows[0].us_per_decision)
    smallest, largest = sizes[0], sizes[-1]
    per_repeat = [
        round(big.us_per_decision / small.us_per_decision, 2)
        for small, big in zip(runs[smallest], runs[largest], strict=True)
        if small.us_per_decision
    ]
    ratio = round(rows[-1].us_per_decision / rows[0].us_per_decision, 2) if rows[0].us_per_decision else None
    summary = {
        "benchmark": "engine_micro",
        "shape": {"name": args.shape, "cohorts": shape.cohorts, "cluster_queues": shape.cohorts * shape.queues_per_cohort},
        "heads_per_cluster_queue": args.heads,
        "step_ms": args.step_ms,
        "requeue_batch_s": args.batch_s,
        "gc_settled": not args.no_gc_settle,
        "fair_sharing": args.fair_sharing,
        "admission_fair_sharing": args.admission_fair_sharing,
        "scale": args.scale,
        "repeat": args.repeat,
        "rows": [asdict(r) for r in rows],
        "runs": [asdict(r) for n in sizes for r in runs[n]],
        "cost_ratio_largest_to_smallest": ratio,
        "cost_ratio_per_repeat": per_repeat,
    }
    print(
        f"CPU time per decision, {largest} / {smallest} pending: {ratio} "
        f"(median of {args.repeat}; per interleaved repeat: {', '.join(map(str, per_repeat))})"
    )
    text = json.dumps(summary)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    return 0


def _compare_engines(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from bench.engine_micro_ab import THIS_CHECKOUT, EngineTree, compare, parse_engine_src

    try:
        others = [parse_engine_src(value) for value in args.engine_src]
    except ValueError as error:
        parser.error(str(error))
    bench_args = [
        "--shape", args.shape, "--scale", str(args.scale), "--decisions", str(args.decisions),
        "--heads", str(args.heads), "--step-ms", str(args.step_ms), "--batch-s", str(args.batch_s),
    ]
    if args.pending:
        bench_args += ["--pending", args.pending]
    if args.no_gc_settle:
        bench_args.append("--no-gc-settle")
    print(f"engine micro-benchmark A/B: this checkout against {', '.join(t.label for t in others)}; {' '.join(bench_args)}")
    summary = compare([EngineTree("this", THIS_CHECKOUT), *others], bench_args, args.repeat)
    text = json.dumps(summary)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
