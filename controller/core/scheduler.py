"""The scheduler loop: informer events in, engine cycles, decisions written as status patches.

Runs only on the leader, in one thread that owns the :class:`controller.engine.engine.Engine`
(which is not thread-safe). Informer handlers never touch the engine: they put ``(kind, key)`` on
a queue and wake the loop. The loop then reads the *current* object from the informer's store
for each key (level-triggered: a queued notification older than the store can never roll the
engine back to a stale state), feeds the engine, and runs ``schedule()`` while there is work;
when a cycle admits nothing it sleeps until the next event (or a short idle tick for the engine's
timers: requeue batching and ``requeueAt`` backoffs).

Writes follow assume-then-write, as Kueue's: the engine has already assumed each reservation;
the loop hands the ``status.admission`` patch (resourceVersion-guarded) to a thread pool and goes
on with the next cycle. Outcomes come back through :class:`controller.core.inflight.InFlightWrites`
and are applied on the loop thread (``confirm``/``rollback``, ``eviction_failed``,
``preemption_failed``), so the engine is only ever touched by one thread. A 409 is retried once
against a fresh GET.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from controller.core import metrics as m
from controller.core.engine_reads import EngineReads
from controller.core.inflight import InFlightWrites
from controller.core.own_writes import OwnWrites
from controller.core.pending_writer import GRACE_SECONDS as PENDING_REASON_GRACE_SECONDS
from controller.core.pending_writer import PendingReasonWriter
from controller.engine.engine import Engine
from controller.engine.results import CycleResult, Eviction, Preemption, Reservation
from controller.runtime.events import EventSink
from controller.runtime.informer import FuncHandler
from controller.workload import view as wv
from controller.workload.indexes import ApiClient, InformerLike, cached_keys
from controller.workload.scheduling_patches import (
    CyclePatch,
    eviction_patch,
    pending_patch,
    preemption_patch,
    queued_since,
    reservation_patch,
)
from controller.workload.status_plan import EVENT_NORMAL, EventSpec
from pykueue.api import constants as C
from pykueue.api.timestamps import format_time
from pykueue.kube.errors import ApiError, Conflict, NotFound
from pykueue.kube.resources import WORKLOADS

log = logging.getLogger(__name__)

# Kinds the engine consumes, in the order a fresh engine is filled (queues before workloads, so
# workloads are routed once instead of being parked and re-routed).
KINDS = (
    "resourceflavors",
    "admissionchecks",
    "workloadpriorityclasses",
    "priorityclasses",
    "cohorts",
    "namespaces",
    "clusterqueues",
    "localqueues",
    "workloads",
)

# Safety net only: the loop sleeps until the next event or the engine's next timer.
IDLE_TICK_SECONDS = 5.0
METRICS_INTERVAL_SECONDS = 1.0
# Threads sending admission writes (reservations, preemptions, evictions). Each write is one API
# round trip (plus the client's rate-limit wait); 4 capped the scheduler baseline at the
# apiserver's latency (Kueue issues each admission write from its own goroutine).
# docs/performance.md has the measurements.
WRITE_THREADS = 16
# Writes whose outcome the loop has not applied yet. At the cap the loop stops running cycles
# and waits for completions (backpressure). Twice the threads keeps every thread busy between
# two steps; more only queues decisions behind the client's rate limit, where they age: in the
# baseline at a cap of 64, two in three preemptions reached a victim that had finished 1-3 s
# earlier (docs/performance.md).
MAX_WRITES_IN_FLIGHT = 2 * WRITE_THREADS
# How long sequential admission (blockAdmission) waits for a cycle's write before moving on.
SEQUENTIAL_WRITE_TIMEOUT_SECONDS = 60.0


def _may_hide_our_reservation(cached: dict[str, Any]) -> bool:
    """The cache shows no reservation on a workload the engine believes holds one: it may be our
    own reservation whose echo has not arrived yet. Finished is final: no second look."""
    return not wv.has_reservation(cached) and not wv.is_finished(cached)


def _split(key: str) -> tuple[str, str]:
    namespace, sep, name = key.partition("/")
    return (namespace, name) if sep else ("", namespace)


class SchedulerLoop:
    """See the module docstring. ``informers`` maps each kind in :data:`KINDS` to its informer."""

    def __init__(
        self,
        client: ApiClient,
        informers: Mapping[str, InformerLike],
        events: EventSink,
        *,
        engine_factory: Callable[[], Engine] = Engine,
        clock: Callable[[], float] = time.time,
        write_threads: int = WRITE_THREADS,
        max_in_flight: int = MAX_WRITES_IN_FLIGHT,
        block_admission: bool = False,
        pending_reason_grace: float = PENDING_REASON_GRACE_SECONDS,
        claim_winner: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> None:
        """``claim_winner``: see :class:`controller.concurrentadmission.winner.WinnerClaims`; an
        option reserved without checks is admitted by the reservation write, so it claims its
        parent first."""
        missing = [kind for kind in KINDS if kind not in informers]
        if missing:
            raise ValueError(f"scheduler needs informers for {missing}")
        self._client = client
        self._informers = informers
        self._events = events
        self._claim_winner = claim_winner
        self._engine_factory = engine_factory
        self._clock = clock
        self._write_threads = write_threads
        self._changes: queue.SimpleQueue[tuple[str, str]] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._accepting = False
        # Set when leadership ends: writes still queued or retrying give up (the next leader
        # decides again from the API).
        self._abandon = threading.Event()
        self.writes = InFlightWrites(max_in_flight, self.wake)
        self.own_writes = OwnWrites()  # see own_writes.py: patches built on our latest write
        self.engine: Engine | None = None
        self._applied_rv: dict[tuple[str, str], str] = {}
        self._reserved_seen: dict[str, dict[str, Any]] = {}  # see handler_for
        self.cycles = 0
        self._metrics_at = 0.0
        self.pending_reasons = PendingReasonWriter(
            self._write_pending_reason, admission_busy=self.admission_busy, grace_seconds=pending_reason_grace
        )
        # waitForPodsReady.blockAdmission: admit one workload at a time, and nothing while an
        # admitted workload's pods are not ready ("sequential admission").
        self._block_admission = block_admission
        self._not_ready: set[str] = set()
        # Reads of the engine by other threads (the visibility API), served between steps.
        self.reads = EngineReads(self.wake)

    # --- informer side (any thread) --------------------------------------------------------------

    def notify(self, kind: str, key: str) -> None:
        """Called by informer handlers; cheap and non-blocking."""
        if self._accepting:
            self._changes.put((kind, key))
            self._wake.set()

    def handler_for(self, kind: str) -> FuncHandler:
        def on(obj: dict[str, Any]) -> None:
            self.notify(kind, wv.key(obj))

        if kind != "workloads":
            return FuncHandler(add=on, update=lambda _old, new: on(new), delete=on)

        def on_workload(obj: dict[str, Any]) -> None:
            # The loop reads only the latest cached version, which may already have moved past a
            # reservation (ours, echoed, then evicted and cleared). Remember the last version
            # that held quota so the engine sees that reservation before its release.
            if self._accepting and wv.has_reservation(obj):
                self._reserved_seen[wv.key(obj)] = obj
            self.own_writes.observed(wv.key(obj), obj)
            on(obj)

        def on_workload_deleted(obj: dict[str, Any]) -> None:
            self.own_writes.observed(wv.key(obj), None)
            on(obj)

        return FuncHandler(
            add=on_workload, update=lambda _old, new: on_workload(new), delete=on_workload_deleted
        )

    # --- loop thread -----------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Lead: build a fresh engine from the caches and schedule until ``stop`` is set."""
        engine = self.start_engine()
        self.pending_reasons.start()
        pool = ThreadPoolExecutor(max_workers=self._write_threads, thread_name_prefix="admission-write")
        try:
            while not stop.is_set():
                self.reads.serve(engine)
                try:
                    result = self.step(engine, pool)
                except Exception:
                    # Nothing may kill the admission thread: log, wait, try again.
                    log.exception("scheduler step failed")
                    result = None
                if self.writes.full():
                    self._wait_for_wake()  # backpressure: the next completion wakes us
                elif result is None or self._changes.empty():
                    # Also after a productive cycle: its writes' completions (and echoes) wake
                    # the loop, and a cycle run before anything changed would only decide again
                    # from the same, staler view while holding the GIL the informers need.
                    self._wait(engine)
        finally:
            # No outcome is applied after this point: the engine is dropped, writes not started
            # are cancelled and running ones give up before any retry (all are
            # resourceVersion-guarded, and the next leader reads what did land).
            self._abandon.set()
            self._accepting = False
            self.reads.close()
            self.engine = None
            self.writes.reset()
            self.pending_reasons.stop()
            pool.shutdown(wait=True, cancel_futures=True)
        log.info("scheduler stopped")

    def start_engine(self) -> Engine:
        """Accept events from now on and fill a fresh engine from every informer's cache."""
        self._accepting = True
        self._abandon.clear()
        self.writes.reset()
        self.own_writes.clear()
        self._applied_rv.clear()
        self._reserved_seen.clear()
        engine = self.engine = self._engine_factory()
        with engine.initial_load():  # cache order is not arrival order
            for kind in KINDS:
                for key in cached_keys(self._informers[kind]):
                    self._sync(engine, kind, key)
        self.reads.open()
        log.info(
            "scheduler started",
            extra={"workloads": len(engine.workloads), "clusterQueues": len(engine.cluster_queues)},
        )
        return engine

    def step(self, engine: Engine, pool: ThreadPoolExecutor) -> CycleResult | None:
        """Apply finished writes, feed pending changes, run one cycle and hand its decisions to
        ``pool``. Returns None when no cycle ran (at the cap on writes in flight, admission
        blocked, or the cycle failed). The cycle's writes may still be in flight on return
        (:meth:`settle` waits for them)."""
        self.writes.apply_completed()
        self._drain(engine)
        if self.writes.full():
            return None  # backpressure: wait for completions, not for more decisions
        if self._block_admission and (self._not_ready or len(self.writes)):
            return None  # woken again by the PodsReady (or Finished) event that unblocks us
        try:
            result = engine.schedule(self._clock())
        except Exception:
            # A bug in one cycle must not stop admission for everyone; the next event or tick
            # retries with whatever changed in between.
            log.exception("scheduling cycle failed")
            return None
        self.cycles += 1
        self._apply(engine, result, pool)
        if self._block_admission:
            # Sequential admission: the decision's outcome is known before the next cycle.
            self.writes.settle(SEQUENTIAL_WRITE_TIMEOUT_SECONDS)
        try:
            self._observe(engine, result)
        except Exception:
            log.exception("recording scheduler metrics failed")
        return result

    def settle(self, timeout: float = 10.0) -> bool:
        """Loop thread (or a test driving :meth:`step`): wait until every admission write in
        flight has finished and its outcome is applied to the engine; False on timeout."""
        return self.writes.settle(timeout)

    def _wait(self, engine: Engine) -> None:
        """Sleep until an informer event, the engine's next timer, or the safety tick."""
        timeout = IDLE_TICK_SECONDS
        try:
            due = engine.next_timer()
        except Exception:
            log.exception("engine timer query failed")
            due = None
        if due is not None:
            timeout = min(timeout, max(0.0, due - self._clock()))
        self._wake.wait(timeout)
        self._wake.clear()

    def _wait_for_wake(self) -> None:
        """At the cap on writes in flight: sleep until a completion (or an event) wakes the loop.
        The engine's timers are not waited for: no cycle may run before a completion anyway."""
        self._wake.wait(IDLE_TICK_SECONDS)
        self._wake.clear()

    def wake(self) -> None:
        self._wake.set()

    def admission_blocked_by(self) -> list[str]:
        """Loop thread (a read served by :attr:`reads` runs there): the admitted workloads whose
        pods are not ready, for which blockAdmission holds every admission back; empty when
        blockAdmission is off. What ``explain`` names (controller.engine.explain), so its answer
        and the loop's next step agree."""
        return sorted(self._not_ready) if self._block_admission else []

    def admission_busy(self) -> bool:
        """Any thread: at least half the admission-write threads have work, so the client's
        budget is going to admission (the status and pending-reason writers then slow down).
        Half, not all: at QPS 50 and ~150 ms per write, 8 writes in flight already spend the
        whole budget (full-scale baseline, docs/performance.md). Approximate by design: a read
        of a counter the loop thread owns."""
        return len(self.writes) >= max(1, self._write_threads // 2)

    def _drain(self, engine: Engine) -> None:
        batch: OrderedDict[tuple[str, str], None] = OrderedDict()
        while True:
            try:
                batch[self._changes.get_nowait()] = None
            except queue.Empty:
                break
        for kind, key in batch:
            if kind == "workloads":
                self._replay_skipped_reservation(engine, key)
            self._sync(engine, kind, key)

    def _replay_skipped_reservation(self, engine: Engine, key: str) -> None:
        """Feed the engine a reservation it never saw because the cache already shows it gone.

        Without it, an assumed reservation whose echo was skipped looks like "our write has not
        come back yet" to the engine when the latest version has no admission, and the workload
        is never queued again (seen in the scheduler baseline: preempted workloads stuck)."""
        reserved = self._reserved_seen.pop(key, None)
        latest = self._informers["workloads"].store.get(key)
        if reserved is None or latest is None or wv.has_reservation(latest):
            return  # nothing skipped: the latest version tells the engine everything
        rv_key = ("workloads", key)
        rv = wv.resource_version(reserved)
        if rv and self._applied_rv.get(rv_key) == rv:
            return
        try:
            self._upsert(engine, "workloads", reserved)
            self._applied_rv[rv_key] = rv
        except Exception:
            log.exception("engine rejected an object", extra={"kind": "workloads", "key": key})

    def _sync(self, engine: Engine, kind: str, key: str) -> None:
        """Bring the engine's view of one object in line with the informer's store."""
        obj = self._informers[kind].store.get(key)
        rv_key = (kind, key)
        if kind == "workloads":
            self._track_pods_ready(key, obj)
        try:
            if obj is None:
                self._applied_rv.pop(rv_key, None)
                self._delete(engine, kind, key)
                return
            rv = wv.resource_version(obj)
            if rv and self._applied_rv.get(rv_key) == rv:
                return
            self._upsert(engine, kind, obj)
            self._applied_rv[rv_key] = rv
        except Exception:
            log.exception("engine rejected an object", extra={"kind": kind, "key": key})

    @staticmethod
    def _upsert(engine: Engine, kind: str, obj: dict[str, Any]) -> None:
        if kind == "workloads":
            engine.upsert_workload(obj)
        elif kind == "localqueues":
            engine.upsert_local_queue(obj)
        elif kind == "clusterqueues":
            engine.upsert_cluster_queue(obj)
        elif kind == "cohorts":
            engine.upsert_cohort(obj)
        elif kind == "resourceflavors":
            engine.upsert_resource_flavor(obj)
        elif kind == "admissionchecks":
            engine.upsert_admission_check(obj)
        elif kind in ("workloadpriorityclasses", "priorityclasses"):
            engine.upsert_priority_class(obj)
        elif kind == "namespaces":
            labels = wv.meta(obj).get("labels")
            engine.set_namespace(wv.name(obj), labels if isinstance(labels, dict) else {})

    @staticmethod
    def _delete(engine: Engine, kind: str, key: str) -> None:
        namespace, name = _split(key)
        if kind == "workloads":
            engine.delete_workload(namespace, name)
        elif kind == "localqueues":
            engine.delete_local_queue(namespace, name)
        elif kind == "clusterqueues":
            engine.delete_cluster_queue(name)
        elif kind == "cohorts":
            engine.delete_cohort(name)
        elif kind == "resourceflavors":
            engine.delete_resource_flavor(name)
        elif kind == "admissionchecks":
            engine.delete_admission_check(name)
        elif kind == "workloadpriorityclasses":
            engine.delete_priority_class(name, kind="WorkloadPriorityClass")
        elif kind == "priorityclasses":
            engine.delete_priority_class(name, kind="PriorityClass")
        elif kind == "namespaces":
            engine.delete_namespace(name)

    def _track_pods_ready(self, key: str, wl: dict[str, Any] | None) -> None:
        if (
            wl is not None
            and wv.is_admitted(wl)
            and not wv.is_finished(wl)
            and not wv.is_true(wl, C.COND_PODS_READY)
        ):
            self._not_ready.add(key)
        else:
            self._not_ready.discard(key)

    # --- applying a cycle ----------------------------------------------------------------------------

    def _apply(self, engine: Engine, result: CycleResult, pool: ThreadPoolExecutor) -> None:
        """Hand the cycle's writes to ``pool``; their outcomes are applied by a later step.

        Order matters only per workload (a later write on the same workload waits for the earlier
        one, :class:`InFlightWrites`)."""
        now = datetime.fromtimestamp(self._clock(), UTC).replace(microsecond=0)
        for eviction in result.evictions:
            self.writes.submit(
                pool,
                (eviction.workload,),
                functools.partial(self._evict, eviction, now),
                functools.partial(self._eviction_done, engine, eviction),
            )
        # A concurrent-admission option's preemption gate is written before the preemptions it
        # covers, and they are not issued when it could not be: a crash between the two leaves
        # the gate without victims (it lapses), never victims without the gate.
        gates: dict[str, Future[bool]] = {}
        for preemptor in self._gates_to_open(engine, result, now.timestamp()):
            gates[preemptor] = self.writes.submit(
                pool,
                (preemptor,),
                functools.partial(self._open_gate, preemptor, now),
                lambda ok: None,
            )
        for preemption in result.preemptions:
            self.writes.submit(
                pool,
                (preemption.victim,),
                functools.partial(self._preempt_behind_gate, gates.get(preemption.preemptor), preemption, now),
                functools.partial(self._preemption_done, engine, preemption.victim),
            )
        reservations = result.reservations
        if self._block_admission and len(reservations) > 1:
            # Sequential admission: keep the first decision, give the others back to the queue.
            for extra in reservations[1:]:
                engine.rollback(extra.workload)
            reservations = reservations[:1]
        for reservation in reservations:
            self.pending_reasons.discard(reservation.workload)
            keys: tuple[str, ...] = (reservation.workload,)
            self.writes.submit(
                pool,
                keys,
                functools.partial(self._reserve, reservation, now),
                functools.partial(self._reservation_done, engine, reservation),
            )
        for reason in result.pending:
            self.pending_reasons.submit(reason.workload, reason.reason, reason.message)

    # --- outcomes, applied on the loop thread ------------------------------------------------------

    @staticmethod
    def _eviction_done(engine: Engine, eviction: Eviction, ok: bool) -> None:
        if not ok:
            engine.eviction_failed(eviction)

    @staticmethod
    def _preemption_done(engine: Engine, victim: str, ok: bool) -> None:
        if not ok:
            engine.preemption_failed(victim)

    def _reservation_done(self, engine: Engine, reservation: Reservation, ok: bool) -> None:
        """Confirm or roll back. The informer may already have delivered our own write's echo:
        then the engine holds the written reservation and both calls leave it alone."""
        key = reservation.workload
        if not ok:
            engine.rollback(key)
            return
        engine.confirm(key)
        if self._block_admission and not reservation.admission_checks:
            # Admitted by this write; its pods are not ready yet unless the cache already says so.
            cached = self._informers["workloads"].store.get(key)
            if cached is not None and wv.is_admitted(cached):
                self._track_pods_ready(key, cached)
            else:
                self._not_ready.add(key)

    # --- writes, on the pool's threads ----------------------------------------------------------------

    def _evict(self, eviction: Eviction, now: datetime) -> bool:
        """A HoldAndDrain eviction; False only when the write failed (the engine emits it again)."""
        try:
            self._write(
                eviction.workload,
                lambda wl: eviction_patch(wl, reason=eviction.reason, message=eviction.message, now=now),
                kind="eviction",
                recheck=_may_hide_our_reservation,
            )
        except ApiError as err:
            log.warning("eviction write failed", extra={"workload": eviction.workload, "error": str(err)})
            return False
        return True

    def _write_pending_reason(self, key: str, reason: str, message: str) -> None:
        now = datetime.fromtimestamp(self._clock(), UTC).replace(microsecond=0)
        try:
            self._write(
                key, lambda wl: pending_patch(wl, reason=reason, message=message, now=now), kind="pending_reason"
            )
        except Conflict:
            # The workload kept changing under us; its change reaches the engine, which decides
            # (and reports) again.
            log.info("pending reason not written: the workload kept changing", extra={"workload": key})

    def _current(self, key: str, fresh: bool) -> dict[str, Any] | None:
        if not fresh:
            return self.own_writes.current(key, self._informers["workloads"].store.get(key))
        namespace, name = _split(key)
        return self._client.get(WORKLOADS, name, namespace)

    def _write(
        self,
        key: str,
        build: Callable[[dict[str, Any]], CyclePatch | None],
        *,
        kind: str,
        recheck: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any] | None:
        """Build and send a patch for ``key``; on 409 rebuild from a fresh GET once. Returns the
        written object (None when the decision no longer applied or the object is gone).

        The object comes from the cache, or from our own last write when the cache has not
        delivered it yet (:class:`OwnWrites`). ``recheck``: when a decision does not apply to the *cached*
        object and ``recheck(cached)`` is true, check once more against a GET before giving up —
        for evictions, whose target may hold a reservation we wrote that the cache does not show
        yet. ``kind`` labels ``pykueue_scheduler_status_writes_total``.

        Raises :class:`Conflict` when the fresh copy conflicted too: nothing was written, and
        the caller must not take that for "no longer needed" (a preemption or eviction taken as
        done would never be decided again)."""
        conflict: Conflict | None = None
        for fresh in (False, True):
            if self._abandon.is_set():
                return None
            wl = self._current(key, fresh)
            if wl is None:
                return None
            built = build(wl)
            if built is None:
                if recheck is not None and not fresh and recheck(wl):
                    continue
                m.SCHEDULER_WRITES.labels(kind, "not_needed").inc()
                return None
            namespace, name = _split(key)
            try:
                written = self._client.patch_status(WORKLOADS, name, built.patch, namespace)
            except Conflict as err:
                m.SCHEDULER_WRITES.labels(kind, "conflict").inc()
                conflict = err
                continue
            except NotFound:
                m.SCHEDULER_WRITES.labels(kind, "gone").inc()
                return None
            except ApiError:
                m.SCHEDULER_WRITES.labels(kind, "failed").inc()
                raise
            m.SCHEDULER_WRITES.labels(kind, "written").inc()
            self.own_writes.record(key, wl, written)
            for event in built.events:
                self._events.emit(written, event)
            return written
        if conflict is not None:
            raise conflict
        return None

    def _reserve(self, reservation: Reservation, now: datetime) -> bool:
        """The reservation write."""
        wl_before = self._informers["workloads"].store.get(reservation.workload)
        if not reservation.admission_checks and not self._claimed(wl_before):
            return False
        try:
            written = self._write(
                reservation.workload,
                lambda wl: reservation_patch(
                    wl,
                    uid=reservation.uid,
                    admission=reservation.admission,
                    admission_checks=reservation.admission_checks,
                    message=reservation.message,
                    now=now,
                    record_flavor_history=reservation.record_flavor_history,
                ),
                kind="reservation",
            )
        except ApiError as err:
            log.warning("admission write failed", extra={"workload": reservation.workload, "error": str(err)})
            return False
        if written is None:
            return False
        priority_class = wv.priority_class_name(written)
        m.QUOTA_RESERVED_TOTAL.labels(reservation.cluster_queue, priority_class).inc()
        since = queued_since(wl_before or written)
        if since is not None:
            waited = max(0.0, (now - since).total_seconds())
            m.QUOTA_RESERVED_WAIT.labels(reservation.cluster_queue, priority_class).observe(waited)
            if not reservation.admission_checks:
                m.ADMITTED_TOTAL.labels(reservation.cluster_queue, priority_class).inc()
                m.ADMISSION_WAIT.labels(reservation.cluster_queue, priority_class).observe(waited)
        log.info(
            "quota reserved",
            extra={
                "workload": reservation.workload,
                "clusterQueue": reservation.cluster_queue,
                "borrowing": reservation.borrowing,
            },
        )
        return True

    def _claimed(self, wl: dict[str, Any] | None) -> bool:
        """A reservation without checks also admits: a concurrent-admission option claims its
        parent first (one winner per parent). False sends the reservation back to the engine,
        which sees the winning sibling Admitted once the cache has it (engine rule 3)."""
        if wl is None or self._claim_winner is None:
            return True
        try:
            refused = self._claim_winner(wl)
        except ApiError as err:
            log.warning("winner claim failed", extra={"workload": wv.key(wl), "error": str(err)})
            return False
        if refused is not None:
            log.info("reservation dropped", extra={"workload": wv.key(wl), "reason": refused})
            return False
        return True

    @staticmethod
    def _gates_to_open(engine: Engine, result: CycleResult, now: float) -> list[str]:
        """Options that issued preemptions in this cycle and do not hold their parent's
        preemption gate yet (or whose gate lapsed)."""
        keys = []
        for preemptor in dict.fromkeys(p.preemptor for p in result.preemptions):
            info = engine.workloads.get(preemptor)
            option = info.option if info is not None else None
            if option is None:
                continue
            opened = option.gate_opened
            if opened is None or now - opened >= C.OPTION_PREEMPTION_GATE_SECONDS:
                keys.append(preemptor)
        return keys

    def _open_gate(self, key: str, now: datetime) -> bool:
        """Record in the API that option ``key`` preempts for its parent (see
        ``controller.engine.options``): siblings hold back, across a restart too."""
        namespace, name = key.split("/", 1)
        patch = {"metadata": {"annotations": {C.OPTION_PREEMPTION_GATE_ANNOTATION: format_time(now)}}}
        try:
            self._client.patch(WORKLOADS, name, patch, namespace)
        except ApiError as err:
            log.warning("preemption gate not recorded", extra={"workload": key, "error": str(err)})
            return False
        return True

    def _preempt_behind_gate(self, gate: Future[bool] | None, preemption: Preemption, now: datetime) -> bool:
        """Preempt once the preemptor's gate write (if this cycle opened one) has landed; a gate
        that could not be written holds the preemption back (the engine decides it again). The
        gate was submitted first to a FIFO pool, so waiting for it cannot deadlock."""
        if gate is not None and not (gate.exception() is None and gate.result()):
            log.warning(
                "preemption held back: the preemption gate was not recorded",
                extra={"victim": preemption.victim, "preemptor": preemption.preemptor},
            )
            return False
        return self._preempt(preemption, now)

    def _preempt(self, preemption: Preemption, now: datetime) -> bool:
        """Evict one victim; False only when the write failed (the engine may pick it again).
        A victim that no longer holds quota or is already evicted needs nothing: True."""
        try:
            written = self._write(
                preemption.victim,
                lambda wl: preemption_patch(
                    wl,
                    uid=preemption.victim_uid,
                    reason=preemption.reason,
                    message=preemption.message,
                    now=now,
                ),
                kind="preemption",
                recheck=_may_hide_our_reservation,
            )
        except ApiError as err:
            log.warning("preemption write failed", extra={"victim": preemption.victim, "error": str(err)})
            return False
        if written is None:
            return True
        m.PREEMPTED_TOTAL.labels(preemption.preemptor_cluster_queue, preemption.reason).inc()
        m.EVICTED_TOTAL.labels(
            preemption.victim_cluster_queue,
            C.REASON_PREEMPTED,
            preemption.reason,
            wv.priority_class_name(written),
        ).inc()
        preemptor = self._informers["workloads"].store.get(preemption.preemptor)
        if preemptor is not None:
            self._events.emit(
                preemptor,
                EventSpec(
                    EVENT_NORMAL,
                    C.EVENT_PREEMPTED_WORKLOAD,
                    f"Preempted {preemption.victim}: {preemption.message}",
                ),
            )
        log.info(
            "preempted",
            extra={
                "victim": preemption.victim,
                "preemptor": preemption.preemptor,
                "reason": preemption.reason,
            },
        )
        return True

    def _observe(self, engine: Engine, result: CycleResult) -> None:
        outcome = "success" if result.admitted_anything else "inadmissible"
        if result.heads_tried or result.admitted_anything:
            m.ADMISSION_ATTEMPTS.labels(outcome).inc()
            m.ADMISSION_ATTEMPT_DURATION.labels(outcome).observe(result.duration_seconds)
        now = time.monotonic()
        if now - self._metrics_at < METRICS_INTERVAL_SECONDS:
            return
        self._metrics_at = now
        for name, pending_queue in engine.queues.items():
            parked = pending_queue.parked_count()
            m.PENDING_WORKLOADS.labels(name, "active").set(len(pending_queue) - parked)
            m.PENDING_WORKLOADS.labels(name, "inadmissible").set(parked)
