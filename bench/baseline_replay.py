"""The scheduler baseline replayed in memory: how many evictions the engine's decisions cause.

A deterministic discrete-event replay of a ``bench/baseline.yaml`` shape through the real
admission engine (``controller.engine.Engine``), with no API server and no threads. It exists
because on real clusters pykueue evicted many more workloads than Kueue in the baseline shape
(issue 25), and a cluster run is too slow and too noisy to find out why; here every decision
is visible and a run takes seconds.

The model, in simulated milliseconds, is the controller's loop against an API server that
answers at a fixed rate and latency (defaults: the controller's settings and the client's QPS 50):

* **arrivals** on the shape's creation timeline (``bench.baseline_driver.creation_timeline``:
  per ClusterQueue and class, one workload every ``every_ms``), fed to the engine as the
  informer would (``bench.baseline_shape.workload``). The driver sends the creates due at one
  instant one after another, in the timeline's order (``--create-spacing-ms`` apart), and
  ``--create-jitter-ms`` makes each one late by a seeded pseudo-random amount (the driver's
  create lag on a loaded machine);
* **cycles** on a ``--cycle-ms`` grid whenever something changed or the last cycle was
  productive, else when the next event or the engine's own timer is due (the controller
  sleeps until then); no cycle runs while ``--max-in-flight`` writes are in flight (the
  controller's backpressure);
* **writes**: every reservation and every preemption is one API write; writes take a token
  each, ``1/--qps`` apart, and land ``--latency-ms`` after their token. A reservation is
  confirmed when it lands; the runner sees it ``--watch-ms`` later, sends ``Finished``
  ``runtime_ms`` after that, and the engine sees the workload finish a latency and a watch
  delay later;
* a **preemption** lands as ``Evicted=True``/``Preempted=True`` on the victim. If the
  runner had already sent the victim's ``Finished`` it is *moot* (the victim ends as a
  success, as on a cluster); otherwise the victim's run is void and ``--release-ms`` later its
  reservation is cleared as Kueue's runner does (``bench.baseline_evictions.release_patch``)
  and it waits in its queue again.

It prints the preemptions (by class of victim and preemptor, and by reason; "moot" ones
included, as Kueue's count of ``Evicted`` rises includes them), the simulated wall time until the
last workload finished, the mean time to admission per class (to the reservation landing) and
the number of cycles, then a JSON summary on the last line. ``--trace N`` prints the first N
preemptions with the preemptor's queue usage and the cohort's free quota before that cycle.
``--idle-backoff-ms 100`` gives the loop Kueue's backoff after unproductive cycles.
``--engine-src [LABEL=]DIR`` replays the same model against the engine of another source tree
too (a child process each) and prints the runs side by side. A measurement program: it asserts
nothing about the figures. ``docs/performance.md`` has the figures and what they showed.

Usage::

    python -m bench.baseline_replay                       # full baseline shape, the controller's settings
    python -m bench.baseline_replay --scale 0.2 --heads 1 --create-jitter-ms 2000
    git archive main controller pykueue | tar -x -C /tmp/engine-main
    python -m bench.baseline_replay --create-jitter-ms 2000 --engine-src main=/tmp/engine-main
"""

from __future__ import annotations

import argparse
import heapq
import inspect
import json
import math
import os
import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.core.setup import DEFAULT_PREEMPTION_GRACE_SECONDS, REQUEUE_BATCH_SECONDS
from controller.engine import Engine

from .baseline_driver import creation_timeline
from .baseline_evictions import release_patch
from .baseline_shape import (
    Names,
    Shape,
    WorkloadClass,
    cluster_queue,
    load_shape,
    local_queue,
    resource_flavor,
    workload,
)
from .baseline_timeline import ADMITTED, CREATED, EVICTED, Stamp, as_json, build, format_table
from .engine_micro_ab import CHILD_UNDER_TREE

# The simulated clock starts here (seconds since the epoch); only differences matter.
EPOCH_S = 1_800_000_000.0
CONTROLLER_HEADS = 8  # the Engine's default, which the controller uses
MAX_WRITES_IN_FLIGHT = 32  # controller.core.scheduler: 2 x 16 write threads
# The controller's own settings, so that the replay follows them when they change.
REQUEUE_BATCH_MS = round(REQUEUE_BATCH_SECONDS * 1000)
PREEMPTION_GRACE_MS = round(DEFAULT_PREEMPTION_GRACE_SECONDS * 1000)

# How the creates due at one instant are ordered (the driver sends them in the timeline's
# order: queue, then class, small first; Kueue's generator runs one goroutine per queue and class,
# so its order at one instant is whatever the scheduler of goroutines makes it).
TIMELINE_ORDER, PRIORITY_ORDER, RANDOM_ORDER = "timeline", "priority", "random"
SAME_INSTANT_ORDERS = (TIMELINE_ORDER, PRIORITY_ORDER, RANDOM_ORDER)


def _ordered(plan: list[Any], order: str, rng: random.Random, priorities: Sequence[int]) -> list[Any]:
    """``plan`` (in due order) with the creates of each instant in ``order``: the timeline's,
    the class's priority first (the order a priority queue would pick them in had they arrived
    together), or shuffled (seeded)."""
    if order == PRIORITY_ORDER:
        return sorted(plan, key=lambda p: (p.due, -priorities[p.class_index], p.queue_index))
    if order == RANDOM_ORDER:
        keys = {id(p): rng.random() for p in plan}
        return sorted(plan, key=lambda p: (p.due, keys[id(p)]))
    return plan


_CREATE, _FINISH, _RELEASE, _ADMITTED, _EVICTED, _FINISH_SENT = 0, 1, 2, 3, 4, 5


def _stamp(ms: int) -> str:
    return datetime.fromtimestamp(EPOCH_S + ms / 1000.0, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class Record:
    """One workload of the replay."""

    klass: WorkloadClass
    created_ms: int
    first_admitted_ms: int | None = None
    finished_ms: int | None = None
    run_token: int = 0  # the current run's token; an eviction voids the pending finish
    finish_sent: bool = False  # the runner's Finished patch is on its way: an eviction is moot
    evictions: int = 0


@dataclass
class EvictionTrace:
    """One preemption, with what the preemptor's queue and cohort held at that moment."""

    at_ms: int
    victim: str
    victim_class: str
    victim_cluster_queue: str
    preemptor: str
    preemptor_class: str
    preemptor_cluster_queue: str
    reason: str
    preemptor_queue_usage: int  # cpu (whole cores) the preemptor's queue used before the cycle
    cohort_free: int  # cpu of the cohort's quota nobody used before the cycle
    preemptor_cpu: int


@dataclass
class ReplayResult:
    scale: float
    heads: int
    cycle_ms: int
    release_ms: int
    qps: float
    workloads: int
    finished: int
    cycles: int
    wall_s: float
    evictions: int
    by_victim_class: dict[str, int]
    by_preemptor_class: dict[str, int]
    by_pair: dict[str, int]
    by_reason: dict[str, int]
    mean_time_to_admission_s: dict[str, float]
    admissions: int
    moot_preemptions: int
    traces: list[EvictionTrace] = field(default_factory=list)
    # Creates, landed admissions and landed evictions (moot ones too), as a cluster run's
    # timeline counts them (bench.baseline_timeline); seconds of simulated time.
    stamps: list[Stamp] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out.pop("traces")
        out.pop("stamps")
        return out

    def timeline(self, window_s: float) -> dict[str, Any]:
        return as_json(build(self.stamps, window_s), window_s)


class Replay:
    """The engine, the shape's objects and the simulated clock."""

    def __init__(
        self, shape: Shape, *, heads: int, cycle_ms: int, release_ms: int, qps: float = 50.0,
        max_in_flight: int = MAX_WRITES_IN_FLIGHT, requeue_batch_ms: int = REQUEUE_BATCH_MS, latency_ms: int = 200,
        watch_ms: int = 50, create_spacing_ms: float = 5.0, create_jitter_ms: int = 0, seed: int = 1, trace: int = 0,
        idle_backoff_ms: int = 0, engine: type = Engine, same_instant_order: str = TIMELINE_ORDER,
        preemption_grace_ms: int = PREEMPTION_GRACE_MS,
    ) -> None:
        if same_instant_order not in SAME_INSTANT_ORDERS:
            raise ValueError(f"same_instant_order must be one of {', '.join(SAME_INSTANT_ORDERS)}, got {same_instant_order!r}")
        if cycle_ms <= 0 or release_ms < 0 or qps < 0 or max_in_flight < 1:
            raise ValueError("cycle_ms and max_in_flight must be positive, release_ms and qps not negative")
        self.qps = qps
        self.max_backoff_ms = idle_backoff_ms
        self.backoff_ms = 0
        self.latency_ms = latency_ms
        self.watch_ms = watch_ms
        self.write_interval_ms = 1000.0 / qps if qps else 0.0
        self.writes_free_ms = 0.0
        self.max_in_flight = max_in_flight
        self.in_flight = 0
        self.payloads: dict[int, Any] = {}  # write event seq -> what it writes
        self.moot = 0  # preemptions whose victim finished before the eviction landed
        self.shape = shape
        self.cycle_ms = cycle_ms
        self.release_ms = release_ms
        self.heads = heads
        self.trace_limit = trace
        self.names = Names("replay")
        self.now_ms = 0
        # Passed only when set, so that --engine-src can replay an engine from before the grace.
        grace: dict[str, float] = {"preemption_grace_seconds": preemption_grace_ms / 1000.0} if preemption_grace_ms else {}
        if grace and "preemption_grace_seconds" not in inspect.signature(engine).parameters:
            raise SystemExit("this engine has no preemption grace: replay it with --preemption-grace-ms 0")
        self.engine = engine(
            heads_per_cluster_queue=heads, requeue_batch_seconds=requeue_batch_ms / 1000.0,
            clock=lambda: EPOCH_S + self.now_ms / 1000.0, **grace,
        )
        self.engine.upsert_resource_flavor(resource_flavor(self.names))
        for index in range(shape.cluster_queues):
            self.engine.upsert_cluster_queue(cluster_queue(shape, self.names, index))
            self.engine.set_namespace(self.names.namespace(index), {})
            self.engine.upsert_local_queue(local_queue(self.names, index))
        self.events: list[tuple[int, int, int, str]] = []  # (due ms, seq, kind, key)
        self.seq = 0
        self.objects: dict[str, dict[str, Any]] = {}
        self.records: dict[str, Record] = {}
        self.pending_creates: dict[str, tuple[int, WorkloadClass]] = {}
        last_due, behind = -1, 0
        rng = random.Random(seed)  # the replay is deterministic for a given seed
        for planned in _ordered(creation_timeline(shape), same_instant_order, random.Random(seed),
                                [k.priority for k in shape.classes]):
            klass = shape.classes[planned.class_index]
            obj = workload(self.names, planned.queue_index, klass, planned.ordinal)
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            due = round(planned.due * 1000)
            # The driver sends the creates due at one instant one after another, in the
            # timeline's order (queue, then class: small before large).
            behind = behind + 1 if due == last_due else 0
            last_due = due
            due += math.floor(behind * create_spacing_ms) + (rng.randrange(create_jitter_ms + 1) if create_jitter_ms else 0)
            self.objects[key] = obj
            self.records[key] = Record(klass, due)
            self._push(due, _CREATE, key)
        self.cycles = 0
        self.admissions = 0
        self.evicted: list[tuple[str, str, str]] = []  # (victim class, preemptor class, reason)
        self.traces: list[EvictionTrace] = []
        self.stamps: list[Stamp] = []

    def _push(self, due: int, kind: int, key: str) -> None:
        self.seq += 1
        heapq.heappush(self.events, (due, self.seq, kind, key))

    def _apply(self, kind: int, key: str) -> None:
        record = self.records[key]
        obj = self.objects[key]
        if kind == _CREATE:
            meta = obj["metadata"]
            meta["uid"] = f"uid-{key}"
            meta["generation"] = 1
            meta["resourceVersion"] = "1"
            meta["creationTimestamp"] = _stamp(self.now_ms)
            self.stamps.append(Stamp(self.now_ms / 1000.0, CREATED, record.klass.name))
            self.engine.upsert_workload(obj)
        elif kind == _FINISH:
            namespace, name = key.split("/")
            record.finished_ms = self.now_ms
            self.engine.delete_workload(namespace, name)
        else:  # release: the evicted workload's reservation is cleared; it waits again
            patch = release_patch(obj, datetime.fromtimestamp(EPOCH_S + self.now_ms / 1000.0, UTC))
            status = dict(obj.get("status", {}))
            status.update(patch["status"])
            status.pop("admission", None)
            self.objects[key] = obj = {**obj, "status": status}
            self.engine.upsert_workload(obj)

    def _conditions(self, key: str, updates: dict[str, tuple[str, str]]) -> None:
        obj = self.objects[key]
        status = dict(obj.get("status", {}))
        by_type = {cond["type"]: cond for cond in status.get("conditions", [])}
        for type_, (value, reason) in updates.items():
            old = by_type.get(type_)
            stamp = old["lastTransitionTime"] if old is not None and old["status"] == value else _stamp(self.now_ms)
            by_type[type_] = {"type": type_, "status": value, "reason": reason, "message": "",
                              "lastTransitionTime": stamp}
        status["conditions"] = list(by_type.values())
        self.objects[key] = {**obj, "status": status}

    def _cpu(self, amount: int) -> int:
        return amount // 1000

    def _cohort_free(self, cq: str) -> tuple[int, int]:
        node = self.engine.forest.cluster_queues[cq]
        fr = (self.names.flavor, "cpu")
        cohort = node.parent
        free = 0
        if cohort is not None:
            free = cohort.subtree.get(fr, 0) - cohort.usage.get(fr, 0)
        return self._cpu(node.usage.get(fr, 0)), self._cpu(free)

    def _write(self, kind: int, key: str, payload: Any) -> None:
        """Queue one API write; it lands ``1/qps`` after the previous one (or now, if idle)."""
        begin = max(self.now_ms, self.writes_free_ms)
        self.writes_free_ms = begin + self.write_interval_ms
        self.in_flight += 1
        self.payloads[self.seq + 1] = payload
        self._push(math.ceil(begin + self.latency_ms), kind, key)

    def _cycle(self) -> bool:
        before: dict[str, tuple[int, int]] = {}
        if self.trace_limit > len(self.traces):
            before = {name: self._cohort_free(name) for name in self.engine.forest.cluster_queues}
        result = self.engine.schedule(now=EPOCH_S + self.now_ms / 1000.0)
        self.cycles += 1
        for preemption in result.preemptions:
            victim = self.records[preemption.victim]
            preemptor = self.records[preemption.preemptor]
            self.evicted.append((victim.klass.name, preemptor.klass.name, preemption.reason))
            if len(self.traces) < self.trace_limit:
                usage, free = before.get(preemption.preemptor_cluster_queue, (0, 0))
                self.traces.append(EvictionTrace(
                    self.now_ms, preemption.victim, victim.klass.name, preemption.victim_cluster_queue,
                    preemption.preemptor, preemptor.klass.name, preemption.preemptor_cluster_queue,
                    preemption.reason, usage, free, preemptor.klass.cpu,
                ))
            self._write(_EVICTED, preemption.victim, preemption.reason)
        for reservation in result.reservations:
            self._write(_ADMITTED, reservation.workload, reservation.admission)
        return result.admitted_anything

    def _admitted(self, key: str, admission: dict[str, Any]) -> None:
        """The reservation's write landed: the workload is admitted and starts running."""
        obj = self.objects[key]
        self.objects[key] = {**obj, "status": {**obj.get("status", {}), "admission": admission}}
        self._conditions(key, {"QuotaReserved": ("True", "QuotaReserved"), "Admitted": ("True", "Admitted"),
                               "Evicted": ("False", "QuotaReserved"), "Preempted": ("False", "QuotaReserved")})
        self.engine.confirm(key)
        self.engine.upsert_workload(self.objects[key])
        record = self.records[key]
        self.stamps.append(Stamp(self.now_ms / 1000.0, ADMITTED, record.klass.name))
        if record.first_admitted_ms is None:
            record.first_admitted_ms = self.now_ms
        record.run_token = self.seq + 1
        self._push(self.now_ms + self.watch_ms + record.klass.runtime_ms, _FINISH_SENT, key)
        self.admissions += 1

    def _evicted(self, key: str, reason: str) -> None:
        """The preemption's write landed: the victim stops running and, ``release_ms`` later,
        gives its quota back. A victim that finished meanwhile stays finished."""
        record = self.records[key]
        self.stamps.append(Stamp(self.now_ms / 1000.0, EVICTED, record.klass.name))
        if record.finished_ms is not None or record.finish_sent:
            self.moot += 1
            return
        record.evictions += 1
        record.run_token = -1  # its finish is void: it runs again after a new admission
        self._conditions(key, {"Evicted": ("True", "Preempted"), "Preempted": ("True", reason)})
        self.engine.upsert_workload(self.objects[key])
        self._push(self.now_ms + self.release_ms, _RELEASE, key)

    def run(self) -> ReplayResult:
        changed = True
        productive = False
        last_cycle_ms = 0
        while True:
            blocked = self.in_flight >= self.max_in_flight
            if blocked or not (changed or productive):
                # Nothing happened since an unproductive cycle (or the writes in flight are at
                # the cap): sleep until the next event or the engine's own timer, on the cycle
                # grid; with neither, the replay is over.
                timer = None if blocked else self.engine.next_timer()
                timer_ms = None if timer is None else max(self.now_ms, round((timer - EPOCH_S) * 1000))
                dues = [d for d in (self.events[0][0] if self.events else None, timer_ms) if d is not None]
                if not dues:
                    break
                ticks = max(1, -(-(min(dues) - self.now_ms) // self.cycle_ms))
                self.now_ms += ticks * self.cycle_ms
            else:
                self.now_ms += self.cycle_ms
            if self.backoff_ms > self.now_ms - last_cycle_ms:
                # Kueue's loop after an unproductive cycle: no cycle before the backoff is over.
                ticks = -(-(last_cycle_ms + self.backoff_ms - self.now_ms) // self.cycle_ms)
                self.now_ms += ticks * self.cycle_ms
            changed = False
            while self.events and self.events[0][0] <= self.now_ms:
                _, seq, kind, key = heapq.heappop(self.events)
                if kind == _FINISH_SENT:
                    if self.records[key].run_token == seq:  # else evicted meanwhile: no finish
                        self.records[key].finish_sent = True
                        self._push(self.now_ms + self.latency_ms + self.watch_ms, _FINISH, key)
                    continue
                if kind == _ADMITTED:
                    self.in_flight -= 1
                    self._admitted(key, self.payloads.pop(seq))
                elif kind == _EVICTED:
                    self.in_flight -= 1
                    self._evicted(key, self.payloads.pop(seq))
                else:
                    self._apply(kind, key)
                changed = True
            if self.in_flight < self.max_in_flight:
                productive = self._cycle()
                last_cycle_ms = self.now_ms
                if productive or not self.max_backoff_ms:
                    self.backoff_ms = 0
                else:
                    self.backoff_ms = min(self.max_backoff_ms, 2 * self.backoff_ms or 1)
        return self._result()

    def _result(self) -> ReplayResult:
        tta: dict[str, list[int]] = {}
        for record in self.records.values():
            if record.first_admitted_ms is not None:
                tta.setdefault(record.klass.name, []).append(record.first_admitted_ms - record.created_ms)
        finished = [r.finished_ms for r in self.records.values() if r.finished_ms is not None]
        return ReplayResult(
            scale=0.0,
            heads=self.heads,
            cycle_ms=self.cycle_ms,
            release_ms=self.release_ms,
            qps=self.qps,
            workloads=len(self.records),
            finished=len(finished),
            cycles=self.cycles,
            wall_s=max(finished, default=0) / 1000.0,
            evictions=len(self.evicted),
            by_victim_class=dict(sorted(Counter(v for v, _, _ in self.evicted).items())),
            by_preemptor_class=dict(sorted(Counter(p for _, p, _ in self.evicted).items())),
            by_pair=dict(sorted(Counter(f"{p}->{v}" for v, p, _ in self.evicted).items())),
            by_reason=dict(sorted(Counter(r for _, _, r in self.evicted).items())),
            mean_time_to_admission_s={
                k.name: round(sum(tta[k.name]) / len(tta[k.name]) / 1000.0, 3) if tta.get(k.name) else 0.0
                for k in self.shape.classes
            },
            admissions=self.admissions,
            moot_preemptions=self.moot,
            traces=self.traces,
            stamps=self.stamps,
        )


def replay(
    shape: Shape, *, scale: float = 1.0, heads: int = CONTROLLER_HEADS, cycle_ms: int = 1, release_ms: int = 100,
    qps: float = 50.0, max_in_flight: int = MAX_WRITES_IN_FLIGHT, requeue_batch_ms: int = REQUEUE_BATCH_MS,
    latency_ms: int = 200, watch_ms: int = 50, create_spacing_ms: float = 5.0, create_jitter_ms: int = 0,
    seed: int = 1, trace: int = 0, idle_backoff_ms: int = 0, engine: type = Engine,
    same_instant_order: str = TIMELINE_ORDER, preemption_grace_ms: int = PREEMPTION_GRACE_MS,
) -> ReplayResult:
    """Replay ``shape`` scaled by ``scale``; see the module docstring for the model."""
    result = Replay(shape.scaled(scale), heads=heads, cycle_ms=cycle_ms, release_ms=release_ms, qps=qps,
                    max_in_flight=max_in_flight, requeue_batch_ms=requeue_batch_ms, latency_ms=latency_ms, watch_ms=watch_ms,
                    create_spacing_ms=create_spacing_ms, create_jitter_ms=create_jitter_ms, seed=seed, trace=trace,
                    idle_backoff_ms=idle_backoff_ms, engine=engine, same_instant_order=same_instant_order,
                    preemption_grace_ms=preemption_grace_ms).run()
    result.scale = scale
    return result


def _print(result: ReplayResult, label: str = "") -> None:
    head = f"[{label}] " if label else ""
    print(f"{head}scale {result.scale} heads {result.heads} cycle {result.cycle_ms} ms release {result.release_ms} ms "
          f"qps {result.qps:g}")
    print(f"  workloads {result.workloads}  finished {result.finished}  admissions {result.admissions}  "
          f"cycles {result.cycles}  simulated wall {result.wall_s:.1f} s")
    print(f"  evictions {result.evictions} (moot: victim finished before the eviction landed: "
          f"{result.moot_preemptions})")
    print(f"    by victim class:    {result.by_victim_class}")
    print(f"    by preemptor class: {result.by_preemptor_class}")
    print(f"    by pair (preemptor->victim): {result.by_pair}")
    print(f"    by reason:          {result.by_reason}")
    print(f"  mean time to admission (s): {result.mean_time_to_admission_s}")
    for t in result.traces:
        print(f"  t={t.at_ms / 1000:.2f}s {t.reason}: {t.preemptor_class} {t.preemptor} ({t.preemptor_cpu} cpu, "
              f"{t.preemptor_cluster_queue} used {t.preemptor_queue_usage}, cohort free {t.cohort_free}) "
              f"evicts {t.victim_class} {t.victim} in {t.victim_cluster_queue}")




def _replay_in(tree: Path, argv: list[str]) -> dict[str, Any]:
    """The JSON summary of this replay run against the engine of ``tree`` (a child process)."""
    program = Path(__file__).resolve()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(program.parent.parent)])}
    done = subprocess.run([sys.executable, "-c", CHILD_UNDER_TREE, str(tree), str(program), *argv],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"replay against {tree} failed:\n{done.stderr}")
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return summary


def _side_by_side(rows: list[tuple[str, dict[str, Any]]]) -> None:
    print(f"{'engine':<24} {'preemptions':>11} {'moot':>5} {'landed':>6} {'wall s':>7} {'cycles':>7}  "
          "time to admission s (large / medium / small)  by reason")
    for label, row in rows:
        tta = row["mean_time_to_admission_s"]
        print(f"{label:<24} {row['evictions']:>11} {row['moot_preemptions']:>5} "
              f"{row['evictions'] - row['moot_preemptions']:>6} {row['wall_s']:>7.1f} {row['cycles']:>7}  "
              f"{tta.get('large', 0):.1f} / {tta.get('medium', 0):.1f} / {tta.get('small', 0):.1f}  {row['by_reason']}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="baseline", help="config of bench/baseline.yaml")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every class's count")
    parser.add_argument("--heads", type=int, default=CONTROLLER_HEADS, help="heads per ClusterQueue per cycle")
    parser.add_argument("--cycle-ms", type=int, default=1,
                        help="the grid of cycles: at most one cycle per this much simulated time")
    parser.add_argument("--release-ms", type=int, default=100,
                        help="simulated time from a preemption until the victim's quota is released")
    parser.add_argument("--qps", type=float, default=50.0,
                        help="API writes per second (admissions and evictions, one each); 0: writes land at once")
    parser.add_argument("--max-in-flight", type=int, default=MAX_WRITES_IN_FLIGHT,
                        help="no cycle runs while this many writes are in flight (the controller's backpressure)")
    parser.add_argument("--requeue-batch-ms", type=int, default=REQUEUE_BATCH_MS,
                        help="the engine's batching of requeues after quota is freed (the controller's setting)")
    parser.add_argument("--latency-ms", type=int, default=200,
                        help="an API write's latency once its token is taken (controller's and runner's writes)")
    parser.add_argument("--watch-ms", type=int, default=50, help="from a write landing to its watch event")
    parser.add_argument("--create-spacing-ms", type=float, default=5.0,
                        help="the driver sends the creates due at one instant this far apart, in timeline order")
    parser.add_argument("--create-jitter-ms", type=int, default=0,
                        help="each create is late by a pseudo-random 0..N ms (the driver's create lag)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the create lag and of --same-instant-order random")
    parser.add_argument("--same-instant-order", choices=SAME_INSTANT_ORDERS, default=TIMELINE_ORDER,
                        help="order of the creates due at one instant: the driver's (queue, then class, small "
                        "first), highest priority first, or shuffled")
    parser.add_argument("--idle-backoff-ms", type=int, default=0,
                        help="after an unproductive cycle wait 1 ms, doubling up to this, before the next one "
                        "whatever arrives (Kueue's loop: 100); 0: the next event wakes the loop (the controller)")
    parser.add_argument("--preemption-grace-ms", type=int, default=PREEMPTION_GRACE_MS,
                        help="a workload admitted less than this long ago is not preempted yet (the "
                        "controller's --preemption-grace-seconds; 0: at once, as Kueue and engines before it)")
    parser.add_argument("--timeline", type=float, default=0.0, metavar="SECONDS",
                        help="print admissions, evictions and creates per window of this many simulated "
                        "seconds, and the share of the write budget the admissions used (as a cluster run prints)")
    parser.add_argument("--trace", type=int, default=0, help="print the first N preemptions in detail")
    parser.add_argument("--engine-src", action="append", default=[], metavar="[LABEL=]DIR",
                        help="also replay against the engine of another source tree (controller/ and "
                        "pykueue/ of DIR, e.g. `git archive main controller pykueue | tar -x -C DIR`) "
                        "and print the runs side by side; repeatable")
    args = parser.parse_args(argv)
    if args.engine_src:
        raw = list(sys.argv[1:] if argv is None else argv)
        rest = [a for i, a in enumerate(raw)
                if not (a == "--engine-src" or a.startswith("--engine-src=")
                        or (i > 0 and raw[i - 1] == "--engine-src"))]
        rows = [("this checkout", _replay_in(Path(__file__).resolve().parent.parent, rest))]
        for value in args.engine_src:
            label, _, path = value.rpartition("=")
            tree = Path(path).expanduser().resolve()
            if not (tree / "controller" / "engine" / "__init__.py").is_file():
                parser.error(f"--engine-src: {tree} has no controller/engine package")
            rows.append((label or tree.name, _replay_in(tree, rest)))
        _side_by_side(rows)
        print(json.dumps({label: row for label, row in rows}, sort_keys=True))
        return 0
    started = time.perf_counter()
    result = replay(load_shape(args.config), scale=args.scale, heads=args.heads, cycle_ms=args.cycle_ms,
                    release_ms=args.release_ms, qps=args.qps, max_in_flight=args.max_in_flight,
                    requeue_batch_ms=args.requeue_batch_ms, latency_ms=args.latency_ms, watch_ms=args.watch_ms,
                    create_spacing_ms=args.create_spacing_ms, create_jitter_ms=args.create_jitter_ms, seed=args.seed,
                    trace=args.trace, idle_backoff_ms=args.idle_backoff_ms, same_instant_order=args.same_instant_order,
                    preemption_grace_ms=args.preemption_grace_ms)
    _print(result)
    summary = result.summary()
    if args.timeline > 0:
        timeline = result.timeline(args.timeline)
        windows = build(result.stamps, args.timeline)
        print(format_table(windows, [k.name for k in load_shape(args.config).classes], window_s=args.timeline,
                           budget_per_s=args.qps or None))
        summary["timeline"] = timeline
    summary["replay_cpu_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
