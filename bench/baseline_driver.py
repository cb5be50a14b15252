"""The baseline's load driver: creates Workloads on schedule, watches them, "runs" them.

Three parts, each on its own threads so the driver is never the bottleneck it measures:

* **generator** — one dispatcher thread walks the merged creation timeline (every ClusterQueue,
  every class, one workload every ``every_ms``) and hands each create to a bounded pool; the
  lag between a create's scheduled time and the moment it is sent is recorded;
* **recorder** — an informer on this run's Workloads (label-selected) notes, per workload, when it
  was first watched, when it was first admitted, when an admission ended (eviction), each rise of
  its ``Evicted`` condition (what Kueue's recorder counts as an eviction) and when it finished;
* **runner** — when a workload is admitted, a timer fires ``runtime_ms`` later and a pool
  appends ``Finished=True`` to its conditions (a JSON patch, so no read-modify-write race with
  the controller's own status patches). An eviction before that — ``Evicted=True``, even while
  the workload still holds its reservation and ``Admitted=True`` — cancels the timer, as Kueue's
  runner never marks an evicted workload Finished (it completes the eviction instead); the next
  admission starts a new one. The lag between due time and patch is recorded too.

All times are ``time.monotonic()`` seconds of this process; admission is "when the watch event
said so", which is what Kueue's runner records as well.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from pykueue.kube.errors import ApiError, NotFound
from pykueue.kube.resources import WORKLOADS

from .baseline_shape import Names, Shape, workload

log = logging.getLogger("bench.baseline")

Key = tuple[str, str]  # namespace, name


@dataclass
class WorkloadRecord:
    """What happened to one workload, in driver-monotonic seconds."""

    klass: str
    cpu: int
    runtime_s: float
    queue: str = ""  # the workload's namespace: one LocalQueue and ClusterQueue each
    scheduled_at: float = 0.0
    created_at: float | None = None
    first_seen_at: float | None = None  # first watch event: Kueue's time-to-admission origin
    first_admitted_at: float | None = None
    admitted_since: float | None = None
    finished_at: float | None = None
    evictions: int = 0  # admissions lost (Admitted True -> not True)
    evicted_transitions: int = 0  # Evicted condition rising to True (Kueue's eviction count)
    evicted_now: bool = False
    finish_held: bool = False  # admitted, but Evicted=True: no finish until readmitted
    finished_while_evicted: bool = False  # Finished arrived with Evicted=True (patch already sent)
    finish_sent_at: float | None = None  # the runner's last Finished patch for it was sent
    finish_answered_at: float | None = None  # ... and the apiserver answered it (committed)
    used_cpu_seconds: float = 0.0
    create_failed: bool = False
    token: int = 0  # bumped on every admission change; a stale finish timer compares unequal
    admitted_at: list[float] = field(default_factory=list)  # every admission, re-admissions too
    evicted_at: list[float] = field(default_factory=list)  # every rise of Evicted


@dataclass
class LagStats:
    """Scheduled-vs-actual lag of the driver's own work (seconds)."""

    samples: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, value: float) -> None:
        with self.lock:
            self.samples.append(max(0.0, value))


def _condition_true(obj: dict[str, Any], type_: str) -> bool:
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for cond in conditions if isinstance(conditions, list) else []:
        if isinstance(cond, dict) and cond.get("type") == type_:
            return cond.get("status") == "True"
    return False


def _key(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


class Recorder:
    """Per-workload timeline from watch events; thread-safe (informer dispatch thread + driver)."""

    def __init__(self, on_admitted: Callable[[Key, float, int], None], clock: Callable[[], float] = time.monotonic):
        self.records: dict[Key, WorkloadRecord] = {}
        self._lock = threading.Lock()
        self._on_admitted = on_admitted
        self._clock = clock
        self._settled = 0  # finished or failed to create
        self.all_settled = threading.Event()

    def expect(self, key: Key, record: WorkloadRecord) -> None:
        with self._lock:
            self.records[key] = record

    def created(self, key: Key, scheduled_at: float, sent_at: float) -> None:
        """The create request for ``key`` is being sent (before the object can be watched)."""
        with self._lock:
            record = self.records[key]
            record.scheduled_at = scheduled_at
            record.created_at = sent_at

    def create_failed(self, key: Key) -> None:
        with self._lock:
            self.records[key].create_failed = True
            self._settle()

    def observe(self, obj: dict[str, Any]) -> None:
        """Apply one watched version of a workload (add or update)."""
        now = self._clock()
        key = _key(obj)
        admitted = _condition_true(obj, "Admitted")
        finished = _condition_true(obj, "Finished")
        evicted = _condition_true(obj, "Evicted")
        schedule: tuple[float, int] | None = None
        with self._lock:
            record = self.records.get(key)
            if record is None or record.finished_at is not None:
                return
            if record.first_seen_at is None:
                record.first_seen_at = now
            if evicted and not record.evicted_now:
                record.evicted_transitions += 1
                record.evicted_at.append(now)
            record.evicted_now = evicted
            if finished:
                self._end_admission(record, now)
                record.finished_at = now
                record.finished_while_evicted = evicted
                record.token += 1
                self._settle()
            elif admitted and record.admitted_since is None:
                record.admitted_since = now
                record.admitted_at.append(now)
                if record.first_admitted_at is None:
                    record.first_admitted_at = now
                record.token += 1
                record.finish_held = evicted
                if not evicted:
                    schedule = (now + record.runtime_s, record.token)
            elif admitted and evicted and not record.finish_held:
                # Being evicted while the quota is still held: a finish now would let the
                # eviction end as a success, which Kueue's runner never allows.
                record.finish_held = True
                record.token += 1
            elif admitted and not evicted and record.finish_held and record.admitted_since is not None:
                # The eviction was withdrawn while still admitted: the run goes on where it was.
                record.finish_held = False
                record.token += 1
                schedule = (record.admitted_since + record.runtime_s, record.token)
            elif not admitted and record.admitted_since is not None:
                self._end_admission(record, now)
                record.evictions += 1
                record.finish_held = False
                record.token += 1
        if schedule is not None:
            self._on_admitted(key, *schedule)

    def token(self, key: Key) -> int:
        with self._lock:
            return self.records[key].token

    def finish_sent(self, key: Key) -> None:
        """The runner is sending ``key``'s Finished patch now."""
        self._stamp(key, "finish_sent_at")

    def finish_answered(self, key: Key) -> None:
        """The apiserver has answered ``key``'s Finished patch: from now on the watch can show it."""
        self._stamp(key, "finish_answered_at")

    def _stamp(self, key: Key, field_name: str) -> None:
        """Set one of ``key``'s times to now (a key not of this run is ignored)."""
        now = self._clock()
        with self._lock:
            record = self.records.get(key)
            if record is not None:
                setattr(record, field_name, now)

    def progress(self) -> dict[str, int]:
        with self._lock:
            records = list(self.records.values())
        return {
            "created": sum(r.created_at is not None for r in records),
            "admitted_now": sum(r.admitted_since is not None for r in records),
            "finished": sum(r.finished_at is not None for r in records),
            "failed": sum(r.create_failed for r in records),
            "total": len(records),
        }

    def snapshot(self) -> list[WorkloadRecord]:
        with self._lock:
            return [replace(r, admitted_at=list(r.admitted_at), evicted_at=list(r.evicted_at))
                    for r in self.records.values()]

    def _end_admission(self, record: WorkloadRecord, now: float) -> None:
        if record.admitted_since is not None:
            record.used_cpu_seconds += record.cpu * (now - record.admitted_since)
            record.admitted_since = None

    def _settle(self) -> None:
        self._settled += 1
        if self._settled >= len(self.records):
            self.all_settled.set()


class FinishRunner:
    """Marks workloads Finished when their simulated runtime after admission is over."""

    def __init__(
        self,
        client: Any,
        recorder_token: Callable[[Key], int],
        concurrency: int,
        on_sent: Callable[[Key], None] | None = None,
        on_answered: Callable[[Key], None] | None = None,
    ) -> None:
        self._client = client
        self._token = recorder_token
        self._on_sent = on_sent  # told just before each Finished patch is sent
        self._on_answered = on_answered  # told when the apiserver has answered it
        self._heap: list[tuple[float, int, Key, int]] = []
        self._sequence = itertools.count()
        self._cv = threading.Condition()
        self._stopped = False
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="bench-finish")
        self._thread = threading.Thread(target=self._loop, name="bench-finish-timer", daemon=True)
        self.lag = LagStats()
        self.errors = 0

    def start(self) -> None:
        self._thread.start()

    def schedule(self, key: Key, due: float, token: int) -> None:
        with self._cv:
            heapq.heappush(self._heap, (due, next(self._sequence), key, token))
            self._cv.notify()

    def stop(self) -> None:
        with self._cv:
            self._stopped = True
            self._cv.notify()
        self._thread.join(timeout=10)
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._stopped and (not self._heap or self._heap[0][0] > time.monotonic()):
                    timeout = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cv.wait(timeout)
                if self._stopped:
                    return
                due, _, key, token = heapq.heappop(self._heap)
            self._pool.submit(self._finish, key, due, token)

    def _finish(self, key: Key, due: float, token: int) -> None:
        if self._token(key) != token:
            return  # evicted (or already finished) since this timer was set
        self.lag.add(time.monotonic() - due)
        condition = {
            "type": "Finished",
            "status": "True",
            "reason": "Succeeded",
            "message": "simulated run completed",
            "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        if self._on_sent is not None:
            self._on_sent(key)
        try:
            self._client.patch_status(
                WORKLOADS,
                key[1],
                [{"op": "add", "path": "/status/conditions/-", "value": condition}],
                key[0],
                patch_type="json",
            )
            if self._on_answered is not None:
                self._on_answered(key)
        except NotFound:
            pass
        except (ApiError, ValueError) as err:  # ValueError: a client that cannot send the patch
            self.errors += 1
            log.warning("marking %s/%s Finished failed: %s", key[0], key[1], err)


@dataclass(frozen=True)
class PlannedCreate:
    due: float  # seconds after the start of the load
    queue_index: int
    class_index: int
    ordinal: int


def creation_timeline(shape: Shape) -> list[PlannedCreate]:
    """Every create of the run in time order: per ClusterQueue and class, one every ``every_ms``."""
    plan = [
        PlannedCreate(ordinal * klass.every_ms / 1000.0, queue, class_index, ordinal)
        for queue in range(shape.cluster_queues)
        for class_index, klass in enumerate(shape.classes)
        for ordinal in range(klass.count)
    ]
    plan.sort(key=lambda p: (p.due, p.queue_index, p.class_index))
    return plan


class Generator:
    """Creates the run's workloads on schedule with at most ``concurrency`` creates in flight."""

    def __init__(self, client: Any, shape: Shape, names: Names, recorder: Recorder, concurrency: int) -> None:
        self._client = client
        self._shape = shape
        self._names = names
        self._recorder = recorder
        self._slots = threading.BoundedSemaphore(concurrency)
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="bench-create")
        self._thread = threading.Thread(target=self._dispatch, name="bench-generator", daemon=True)
        self._plan = creation_timeline(shape)
        self.lag = LagStats()
        self.errors = 0
        self.started_at = 0.0
        self.done = threading.Event()
        for planned in self._plan:
            klass = shape.classes[planned.class_index]
            key = (names.namespace(planned.queue_index), f"{klass.name}-{planned.ordinal}")
            recorder.expect(key, WorkloadRecord(klass.name, klass.cpu, klass.runtime_ms / 1000.0, queue=key[0]))

    def start(self) -> None:
        self.started_at = time.monotonic()
        self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        return self.done.wait(timeout)

    def _dispatch(self) -> None:
        try:
            for planned in self._plan:
                due = self.started_at + planned.due
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                self._slots.acquire()
                self._pool.submit(self._create, planned, due)
        finally:
            self._pool.shutdown(wait=True)
            self.done.set()

    def _create(self, planned: PlannedCreate, due: float) -> None:
        klass = self._shape.classes[planned.class_index]
        obj = workload(self._names, planned.queue_index, klass, planned.ordinal)
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        try:
            sent = time.monotonic()
            self.lag.add(sent - due)
            self._recorder.created(key, due, sent)
            self._client.create(WORKLOADS, obj)
        except ApiError as err:
            self.errors += 1
            log.warning("creating %s/%s failed: %s", key[0], key[1], err)
            self._recorder.create_failed(key)
        finally:
            self._slots.release()
