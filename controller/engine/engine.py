"""The Engine facade: object events in, admission decisions out. See the package docstring."""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pykueue.api import constants as c
from pykueue.api.labelselectors import matches_compiled
from pykueue.api.objects import namespaced_key

from . import gcpolicy, quota
from .activity import cluster_queue_problems, inactive_reason
from .cycle import run_cycle
from .options import OptionBook, admission_blocker
from .parse import (
    admission_check_active,
    admission_check_controller,
    object_name,
    parse_cluster_queue,
    parse_cohort,
    parse_local_queue,
    parse_resource_flavor,
    parse_workload,
)
from .preemption import Preemptor
from .queues import PendingQueue
from .records import (
    AdmissionInfo,
    ClusterQueueSpec,
    CohortSpec,
    FlavorInfo,
    FlavorResource,
    LocalQueueInfo,
    ObjectKey,
    WorkloadInfo,
)
from .results import CycleResult, Eviction, PendingReason
from .visibility import PendingWorkload, pending_workloads


def _may_change_outcome(old: WorkloadInfo | None, new: WorkloadInfo) -> bool:
    """Whether an update of a pending workload deserves a new attempt even if its shape class is
    parked: its spec, priority, queue timestamp or option settings changed."""
    return old is not None and (
        old.generation != new.generation
        or old.priority != new.priority
        or old.queue_ts != new.queue_ts
        or old.option != new.option
    )


# Where a tracked workload currently is.
_QUEUED = "queued"  # in its ClusterQueue's pending queue (schedulable, maybe parked)
_WAITING = "waiting"  # its LocalQueue/ClusterQueue is missing or stopped, or its namespace does not match
_BACKOFF = "backoff"  # requeueState.requeueAt is in the future
_HELD = "held"  # not schedulable until the object changes (Requeued=False, check Retry, invalid...)
_ADMITTED = "admitted"  # holds quota (admitted, reserved or assumed)

WORKLOAD_PRIORITY_CLASS_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
POD_PRIORITY_CLASS_SOURCE = "scheduling.k8s.io/priorityclass"


class Engine:
    """Pure in-memory admission engine. Not thread-safe: drive it from one thread."""

    def __init__(
        self,
        *,
        heads_per_cluster_queue: int = 8,
        requeue_batch_seconds: float = 1.0,
        requeuing_timestamp: str = c.REQUEUE_BY_EVICTION,
        settle_gc: bool = True,
    ) -> None:
        """``requeuing_timestamp``: ``waitForPodsReady.requeuingStrategy.timestamp`` — where a
        workload evicted by the PodsReady timeout goes in its queue: ``Eviction`` (Kueue's
        default: ordered by the eviction time, i.e. to the back) or ``Creation``.

        ``settle_gc``: once the engine holds 1,000 or more workloads (after a large initial load,
        or when the backlog has grown that far), the next :meth:`schedule` applies
        :func:`controller.engine.gcpolicy.settle` (freeze what is alive, raise CPython's
        young-generation threshold; process-wide, once per engine)."""
        if heads_per_cluster_queue < 1:
            raise ValueError("heads_per_cluster_queue must be at least 1")
        if requeuing_timestamp not in (c.REQUEUE_BY_EVICTION, c.REQUEUE_BY_CREATION):
            raise ValueError(
                f"requeuing_timestamp: Unsupported value: {requeuing_timestamp!r}: "
                f'supported values: "{c.REQUEUE_BY_EVICTION}", "{c.REQUEUE_BY_CREATION}"'
            )
        self.heads_per_cluster_queue = heads_per_cluster_queue
        self.requeue_batch_seconds = requeue_batch_seconds
        self._requeue_by_creation = requeuing_timestamp == c.REQUEUE_BY_CREATION
        self._settle_gc = settle_gc  # still to be done: cleared once settled

        self.cluster_queues: dict[str, ClusterQueueSpec] = {}
        self.cohorts: dict[str, CohortSpec] = {}
        self.flavors: dict[str, FlavorInfo] = {}
        self.checks: dict[str, bool] = {}  # AdmissionCheck name -> Active
        self.check_controllers: dict[str, str] = {}  # AdmissionCheck name -> spec.controllerName
        self.priority_classes: dict[tuple[str, str], int] = {}  # (source, name) -> value
        self.local_queues: dict[ObjectKey, LocalQueueInfo] = {}
        self.namespaces: dict[str, dict[str, str]] = {}
        # The quota forest is rebuilt lazily: topology changes (ClusterQueues, Cohorts) only mark
        # it stale, and the next read rebuilds it once. Registering 1,000 queues at start-up then
        # costs one rebuild instead of 1,000.
        self._forest = quota.QuotaForest()
        self._forest_stale = False
        self.queues: dict[str, PendingQueue] = {}
        self.inactive: dict[str, tuple[str, str]] = {}  # ClusterQueue -> (reason, message)

        self.workloads: dict[ObjectKey, WorkloadInfo] = {}
        self.admitted: dict[str, dict[ObjectKey, WorkloadInfo]] = {}
        self._location: dict[ObjectKey, tuple[str, str]] = {}
        self._pending_by_lq: dict[ObjectKey, set[ObjectKey]] = {}
        self._lqs_by_cq: dict[str, set[ObjectKey]] = {}
        self._backoff: list[tuple[float, int, ObjectKey]] = []
        self._backoff_seq = 0
        self.being_evicted: dict[ObjectKey, ObjectKey] = {}  # victim -> preemptor (expectations)
        self._drained: set[ObjectKey] = set()  # HoldAndDrain evictions already emitted

        self._unadmitted_version: dict[ObjectKey, WorkloadInfo] = {}  # newest event while assumed
        # FIFO among equal (priority, timestamp): key -> (uid, arrival number), see _arrival_of.
        self._arrivals: dict[ObjectKey, tuple[str, int]] = {}
        self._arrival_numbers = itertools.count(1)
        self._arrival_unknown = False
        self._last_reason: dict[ObjectKey, tuple[str, str]] = {}
        self._reasons_to_emit: dict[ObjectKey, tuple[str, str]] = {}
        self._evictions_to_emit: list[Eviction] = []
        self._dirty_roots: dict[str, float | None] = {}  # root -> first cycle time that saw it

        self.preemptor = Preemptor(self._forest, self.cluster_queues, self.admitted, self.being_evicted)
        self.options = OptionBook()  # concurrent admission: which option of a parent holds quota

    # ============================================================================================
    # ClusterQueue / Cohort / ResourceFlavor / AdmissionCheck
    # ============================================================================================
    def upsert_cluster_queue(self, obj: Mapping[str, Any]) -> None:
        spec = parse_cluster_queue(obj)
        if not spec.name:
            return
        old = self.cluster_queues.get(spec.name)
        if old == spec:
            return  # a status-only update (our own status writes come back here): nothing to do
        self.cluster_queues[spec.name] = spec
        self.admitted.setdefault(spec.name, {})
        queue = self.queues.get(spec.name)
        if queue is None:
            self.queues[spec.name] = PendingQueue(spec.name, spec.strict_fifo)
        else:
            queue.set_strict_fifo(spec.strict_fifo)
        if old is None or old.cohort != spec.cohort or old.groups != spec.groups:
            self._forest_stale = True  # the rebuild refreshes activity and requeues every tree
        else:
            self._refresh_activity(spec.name)
            self._mark_dirty(self.forest.root_of[spec.name])
        # The namespace selector or the queue's existence may change where its workloads belong.
        if old is None or old.namespace_selector != spec.namespace_selector:
            self._reroute_cluster_queue(spec.name)
        self._drain_if_needed(spec.name)

    def delete_cluster_queue(self, name: str) -> None:
        if self.cluster_queues.pop(name, None) is None:
            return
        self._forest_stale = True
        self.inactive.pop(name, None)
        self._reroute_cluster_queue(name)
        self.queues.pop(name, None)

    def upsert_cohort(self, obj: Mapping[str, Any]) -> None:
        spec = parse_cohort(obj)
        if not spec.name or self.cohorts.get(spec.name) == spec:
            return
        self.cohorts[spec.name] = spec
        self._topology_changed()

    def delete_cohort(self, name: str) -> None:
        if self.cohorts.pop(name, None) is not None:
            self._topology_changed()

    def upsert_resource_flavor(self, obj: Mapping[str, Any]) -> None:
        flavor = parse_resource_flavor(obj)
        if not flavor.name or self.flavors.get(flavor.name) == flavor:
            return
        self.flavors[flavor.name] = flavor
        self._flavor_or_check_changed(lambda spec: flavor.name in spec.flavor_names)

    def delete_resource_flavor(self, name: str) -> None:
        if self.flavors.pop(name, None) is not None:
            self._flavor_or_check_changed(lambda spec: name in spec.flavor_names)

    def upsert_admission_check(self, obj: Mapping[str, Any]) -> None:
        name = object_name(obj)
        active = admission_check_active(obj)
        controller = admission_check_controller(obj)
        if not name or (self.checks.get(name) == active and self.check_controllers.get(name) == controller):
            return
        self.checks[name] = active
        self.check_controllers[name] = controller
        self._flavor_or_check_changed(lambda spec: any(rule.name == name for rule in spec.checks))

    def delete_admission_check(self, name: str) -> None:
        self.check_controllers.pop(name, None)
        if self.checks.pop(name, None) is not None:
            self._flavor_or_check_changed(lambda spec: any(rule.name == name for rule in spec.checks))

    # --- priority classes --------------------------------------------------------------------------
    def upsert_priority_class(self, obj: Mapping[str, Any]) -> None:
        """Accepts a WorkloadPriorityClass (kueue.x-k8s.io) or a PriorityClass (scheduling.k8s.io)."""
        name = object_name(obj)
        value = obj.get("value")
        if not name or isinstance(value, bool) or not isinstance(value, int):
            return
        self.priority_classes[(self._priority_source(obj), name)] = value

    def delete_priority_class(self, name: str, *, kind: str = "WorkloadPriorityClass") -> None:
        source = WORKLOAD_PRIORITY_CLASS_SOURCE if kind == "WorkloadPriorityClass" else POD_PRIORITY_CLASS_SOURCE
        self.priority_classes.pop((source, name), None)

    @staticmethod
    def _priority_source(obj: Mapping[str, Any]) -> str:
        if obj.get("kind") == "PriorityClass" or str(obj.get("apiVersion", "")).startswith("scheduling.k8s.io"):
            return POD_PRIORITY_CLASS_SOURCE
        return WORKLOAD_PRIORITY_CLASS_SOURCE

    def priority_value(self, name: str, source: str = WORKLOAD_PRIORITY_CLASS_SOURCE) -> int | None:
        """The value of a known priority class, for the controller filling ``spec.priority``."""
        return self.priority_classes.get((source, name))

    # --- LocalQueue and namespaces -------------------------------------------------------------------
    def upsert_local_queue(self, obj: Mapping[str, Any]) -> None:
        lq = parse_local_queue(obj)
        if not lq.name or not lq.namespace:
            return
        old = self.local_queues.get(lq.key)
        if old == lq:
            return  # status-only update
        self.local_queues[lq.key] = lq
        if old is not None and old.cluster_queue != lq.cluster_queue:
            self._lqs_by_cq.get(old.cluster_queue, set()).discard(lq.key)
        self._lqs_by_cq.setdefault(lq.cluster_queue, set()).add(lq.key)
        self._reroute_local_queue(lq.key)
        if lq.stop_policy == c.STOP_POLICY_HOLD_AND_DRAIN:
            for info in list(self.admitted.get(lq.cluster_queue, {}).values()):
                if info.namespace == lq.namespace and info.queue_name == lq.name:
                    self._emit_drain(info, c.REASON_LOCAL_QUEUE_STOPPED, "The LocalQueue is stopped")

    def delete_local_queue(self, namespace: str, name: str) -> None:
        key = namespaced_key(namespace, name)
        lq = self.local_queues.pop(key, None)
        if lq is None:
            return
        self._lqs_by_cq.get(lq.cluster_queue, set()).discard(key)
        self._reroute_local_queue(key)

    def set_namespace(self, name: str, labels: Mapping[str, str] | None) -> None:
        """Feed a namespace's labels (ClusterQueue namespaceSelector is evaluated against them)."""
        new = dict(labels or {})
        if self.namespaces.get(name) == new:
            return
        self.namespaces[name] = new
        for lq_key in [k for k in self.local_queues if k.startswith(name + "/")]:
            self._reroute_local_queue(lq_key)

    def delete_namespace(self, name: str) -> None:
        self.namespaces.pop(name, None)

    # ============================================================================================
    # Workloads
    # ============================================================================================
    def upsert_workload(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            return
        namespace, name = meta.get("namespace"), meta.get("name")
        if not isinstance(namespace, str) or not isinstance(name, str) or not namespace or not name:
            return
        old = self.workloads.get(namespaced_key(namespace, name))
        info = parse_workload(obj, old, pods_ready_requeue_by_creation=self._requeue_by_creation)
        key = info.key
        info.arrival = self._arrival_of(info)
        if info.is_parent:
            # Concurrent admission: a parent is scheduled through its options only.
            self._forget(key)
            return
        self._resolve_priority(info)
        if info.pending_reason is not None:
            self._last_reason[key] = info.pending_reason
        if (
            old is not None
            and old.admission is not None
            and old.admission.assumed
            and info.admission is None
            and info.uid == old.uid
        ):
            # An event from before our own admission write: keep the assumption until the
            # reservation comes back or the controller rolls it back; remember this version so
            # a rollback requeues the workload as it is now.
            if info.finished or not info.active or info.deleting:
                self._forget(key)
            else:
                self._unadmitted_version[key] = info
            return
        self._unadmitted_version.pop(key, None)
        if info.finished or (info.admission is None and (not info.active or info.deleting)):
            if info.finished:
                self._arrivals.pop(key, None)  # it will never be queued again
            self._forget(key)
            return
        self.workloads[key] = info
        if old is not None:
            self._unindex_pending(old)  # its LocalQueue may have changed
        if info.admission is not None:
            self._hold_quota(info, old)
        else:
            self._release_quota(key, old)
            self._route(info, fresh=_may_change_outcome(old, info))

    def delete_workload(self, namespace: str, name: str) -> None:
        key = namespaced_key(namespace, name)
        self._arrivals.pop(key, None)
        self._forget(key)

    @contextmanager
    def initial_load(self) -> Iterator[None]:
        """Wrap the feeding of the informer caches into a fresh engine (start-up, new leader).

        The order in which a cache hands its objects over says nothing about when they were
        created, so workloads first seen inside this block get arrival 0 and tie-break by UID
        among themselves; every workload observed later is numbered in arrival order (after
        them, which is also true).
        """
        self._arrival_unknown = True
        try:
            yield
        finally:
            self._arrival_unknown = False

    def _arrival_of(self, info: WorkloadInfo) -> int:
        """The arrival number of ``info``: assigned at the first upsert and kept across updates.

        ``metadata.creationTimestamp`` has one-second resolution; without this, workloads
        submitted in the same second would be ordered by UID, i.e. at random. An option of
        concurrent admission takes its parent's number (its siblings then keep their preference
        order, ``order_tiebreak``). An object recreated under the same name (another UID) is a
        new arrival. O(1): one dict look-up per upsert.
        """
        if info.option is not None:
            key, uid = info.option.parent, ""
        else:
            key, uid = info.key, info.uid
        known = self._arrivals.get(key)
        if known is not None and (not uid or known[0] in (uid, "")):
            if uid and not known[0]:
                self._arrivals[key] = (uid, known[1])  # the parent arrives after its options
            return known[1]
        number = 0 if self._arrival_unknown else next(self._arrival_numbers)
        self._arrivals[key] = (uid, number)
        return number

    def confirm(self, key: ObjectKey) -> None:
        """The admission write for ``key`` succeeded (its echo will arrive through the informer)."""
        self.options.displaced.pop(key, None)
        info = self.workloads.get(key)
        if info is not None and info.admission is not None and info.admission.assumed:
            info.admission.write_confirmed = True

    def rollback(self, key: ObjectKey) -> None:
        """The admission write for ``key`` failed: drop the assumption and requeue it at once."""
        info = self.workloads.get(key)
        if info is None or info.admission is None or not info.admission.assumed or info.admission.write_confirmed:
            return
        self._release_quota(key, info)
        latest = self._unadmitted_version.pop(key, None)
        if latest is not None:
            info = self.workloads[key] = latest
        else:
            info.admission = None
        self._route(info, fresh=True)
        displaced = self.options.displaced.pop(key, None)
        if displaced is not None and self.workloads.get(displaced.key) is displaced:
            self.restore(displaced)  # the migration did not happen: the sibling keeps its quota

    def eviction_failed(self, eviction: Eviction) -> None:
        """The write of a HoldAndDrain ``eviction`` failed: emit it again with the next cycle while
        the workload still holds quota (otherwise it would stay admitted in a draining queue)."""
        if self.admitted_workload(eviction.workload) is not None:
            self._evictions_to_emit.append(eviction)

    def preemption_failed(self, victim: ObjectKey) -> None:
        """The eviction write for ``victim`` failed: it may be chosen as a victim again."""
        self.being_evicted.pop(victim, None)

    # ============================================================================================
    # Scheduling
    # ============================================================================================
    def schedule(self, now: float | None = None) -> CycleResult:
        """Run one scheduling cycle; see ``controller.engine.cycle``."""
        if self._settle_gc and len(self.workloads) >= gcpolicy.MIN_WORKLOADS:
            # CPython's cyclic GC was the one per-decision cost that grew with the backlog.
            self._settle_gc = not gcpolicy.settle(len(self.workloads))
        start = time.perf_counter()
        now = time.time() if now is None else now
        result = CycleResult()
        self._ensure_forest()
        self._release_backoff(now)
        self._flush_requeues(now)
        result.evictions, self._evictions_to_emit = self._evictions_to_emit, []
        run_cycle(self, now, result)
        for key, (reason, message) in self._reasons_to_emit.items():
            self.emit_reason(result, key, reason, message)
        self._reasons_to_emit.clear()
        result.duration_seconds = time.perf_counter() - start
        return result

    def next_timer(self) -> float | None:
        """When the engine's own timers next fire (a backoff ends or a batched requeue is due),
        as seconds since the epoch; None when nothing is waiting on time. A requeue marked but
        not yet seen by a cycle is due at the next ``schedule()`` call plus the batch period; that
        call starts its clock, so a loop that sleeps until this time never misses it."""
        candidates: list[float] = []
        heap = self._backoff
        while heap and self._location.get(heap[0][2]) != (_BACKOFF, str(heap[0][1])):
            heapq.heappop(heap)  # stale record: the workload moved on
        if heap:
            candidates.append(heap[0][0])
        for root, first_seen in self._dirty_roots.items():
            if not any(
                (queue := self.queues.get(name)) is not None and queue.has_parked()
                for name in self.forest.members.get(root, ())
            ):
                continue  # nothing parked in that tree: the requeue would move nothing
            candidates.append(time.time() if first_seen is None else first_seen + self.requeue_batch_seconds)
        return min(candidates) if candidates else None

    def emit_reason(self, result: CycleResult, key: ObjectKey, reason: str, message: str) -> None:
        """Add a pending reason to ``result`` unless it is what the workload already shows."""
        if key not in self.workloads or self._location.get(key, ("",))[0] == _ADMITTED:
            return
        if self._last_reason.get(key) != (reason, message):
            self._last_reason[key] = (reason, message)
            result.pending.append(PendingReason(key, reason, message))

    def requeue(self, info: WorkloadInfo, cluster_queue: str, *, fresh: bool = False) -> None:
        """Put a workload into its queue; ``fresh``: try it again even if its class is parked."""
        self.queues[cluster_queue].push(info, escape_parked=fresh)
        self._location[info.key] = (_QUEUED, cluster_queue)

    def assume(self, info: WorkloadInfo, cluster_queue: str, usage: dict[FlavorResource, int], now: float,
               admitted: bool) -> None:
        """Reserve quota for a popped workload before its API write (assume-then-write)."""
        info.admission = AdmissionInfo(cluster_queue, usage, admitted, reserved_at=now, assumed=True)
        quota.add_usage(self.forest.cluster_queues[cluster_queue], usage)
        self.admitted[cluster_queue][info.key] = info
        self.options.held(info)
        self._location[info.key] = (_ADMITTED, cluster_queue)
        self._unindex_pending(info)
        self._last_reason.pop(info.key, None)

    # ============================================================================================
    # Read-only views (metrics, visibility, tests)
    # ============================================================================================
    def admitted_workload(self, key: ObjectKey) -> WorkloadInfo | None:
        """The record of ``key`` if it holds quota (admitted, reserved or assumed)."""
        where = self._location.get(key)
        return self.workloads.get(key) if where is not None and where[0] == _ADMITTED else None

    def displace(self, holder: WorkloadInfo) -> None:
        """Release a sibling option's quota for a migration decided in this cycle (its eviction
        is written before the preferred option's reservation; :meth:`rollback` restores it)."""
        self._release_quota(holder.key, holder, requeue_tree=False)

    def restore(self, holder: WorkloadInfo) -> None:
        """Undo :meth:`displace` when the migration did not go ahead."""
        if holder.admission is not None:
            self._hold_quota(holder, None)

    def is_active(self, cluster_queue: str) -> bool:
        self._ensure_forest()  # a pending rebuild refreshes Active states
        return cluster_queue in self.cluster_queues and cluster_queue not in self.inactive

    def pending_count(self, cluster_queue: str) -> int:
        """Pending workloads of the ClusterQueue's LocalQueues (queued, parked or backing off)."""
        return sum(len(self._pending_by_lq.get(lq, ())) for lq in self._lqs_by_cq.get(cluster_queue, ()))

    def pending_in_local_queue(self, lq_key: ObjectKey) -> int:
        return len(self._pending_by_lq.get(lq_key, ()))

    def last_pending_reason(self, key: ObjectKey) -> tuple[str, str]:
        """The QuotaReserved=False (reason, message) last seen on or emitted for ``key``."""
        return self._last_reason.get(key, ("", ""))

    def pending_workloads(
        self, cluster_queue: str, *, offset: int = 0, limit: int | None = None
    ) -> list[PendingWorkload]:
        """Queued workloads of ``cluster_queue`` in scheduling order (visibility; not for the cycle)."""
        return pending_workloads(self, cluster_queue, offset=offset, limit=limit)

    # ============================================================================================
    # Internals: routing pending workloads
    # ============================================================================================
    def _resolve_priority(self, info: WorkloadInfo) -> None:
        if info.has_priority or not info.priority_class:
            return
        source = info.priority_class_source or WORKLOAD_PRIORITY_CLASS_SOURCE
        value = self.priority_classes.get((source, info.priority_class))
        if value is not None:
            info.priority = value

    def _unplace(self, key: ObjectKey) -> None:
        """Remove a pending workload from wherever it is parked or queued."""
        where = self._location.pop(key, None)
        if where is None:
            return
        kind, place = where
        if kind == _QUEUED:
            queue = self.queues.get(place)
            if queue is not None:
                queue.remove(key)
        # _WAITING/_HELD need nothing; _BACKOFF records are dropped lazily.

    def _index_pending(self, info: WorkloadInfo) -> None:
        self._pending_by_lq.setdefault(info.local_queue_key, set()).add(info.key)

    def _unindex_pending(self, info: WorkloadInfo) -> None:
        members = self._pending_by_lq.get(info.local_queue_key)
        if members is not None:
            members.discard(info.key)

    def _route(self, info: WorkloadInfo, fresh: bool = False) -> None:
        """Decide where a pending workload belongs and put it there (``fresh``: see ``requeue``)."""
        key = info.key
        self._unplace(key)
        self._index_pending(info)
        if info.invalid:
            self._location[key] = (_HELD, "")
            self._reasons_to_emit[key] = (c.REASON_INADMISSIBLE, info.invalid)
            return
        if info.gated:
            self._location[key] = (_HELD, "")
            return
        if info.requeued_false or info.blocked_by_checks:
            self._location[key] = (_HELD, "")
            return
        if info.requeue_at is not None:
            self._backoff_seq += 1
            heapq.heappush(self._backoff, (info.requeue_at, self._backoff_seq, key))
            self._location[key] = (_BACKOFF, str(self._backoff_seq))
            return
        self._place(info, fresh)

    def _place(self, info: WorkloadInfo, fresh: bool = False) -> None:
        """Queue a schedulable workload in its ClusterQueue, or park it waiting for its queues."""
        key = info.key
        lq = self.local_queues.get(info.local_queue_key)
        problem: tuple[str, str] | None = None
        if lq is None:
            problem = (c.REASON_MISCONFIGURED, f"LocalQueue {info.queue_name} doesn't exist")
        elif lq.stop_policy != c.STOP_POLICY_NONE:
            problem = (c.REASON_SUSPENDED, f"LocalQueue {lq.name} is stopped")
        elif lq.cluster_queue not in self.cluster_queues:
            problem = (c.REASON_MISCONFIGURED, f"ClusterQueue {lq.cluster_queue} doesn't exist")
        elif not matches_compiled(
            self.cluster_queues[lq.cluster_queue].namespace_selector, self.namespaces.get(info.namespace, {})
        ):
            problem = (c.REASON_INADMISSIBLE, "Workload namespace doesn't match ClusterQueue selector")
        if problem is not None or lq is None:
            self._location[key] = (_WAITING, "")
            if problem is not None:
                self._reasons_to_emit[key] = problem
            return
        blocker = admission_blocker(info, self.cluster_queues[lq.cluster_queue])
        if blocker is not None:
            self._location[key] = (_WAITING, "")
            if blocker:
                self._reasons_to_emit[key] = (c.REASON_PENDING, blocker)
            return
        self.requeue(info, lq.cluster_queue, fresh=fresh)
        inactive = self.inactive.get(lq.cluster_queue)
        if inactive is not None:
            reason = c.REASON_SUSPENDED if inactive[0] == c.REASON_CQ_STOPPED else c.REASON_INADMISSIBLE
            verb = "is stopped" if inactive[0] == c.REASON_CQ_STOPPED else "is inactive"
            self._reasons_to_emit[key] = (reason, f"ClusterQueue {lq.cluster_queue} {verb}")

    def _reroute_local_queue(self, lq_key: ObjectKey) -> None:
        for key in list(self._pending_by_lq.get(lq_key, ())):
            info = self.workloads.get(key)
            where = self._location.get(key)
            if info is not None and where is not None and where[0] in (_QUEUED, _WAITING):
                self._unplace(key)
                self._place(info)

    def _reroute_cluster_queue(self, name: str) -> None:
        """Re-decide every pending workload of the queue's LocalQueues (rare: the queue appeared,
        disappeared or changed its namespaceSelector)."""
        for lq_key in list(self._lqs_by_cq.get(name, ())):
            self._reroute_local_queue(lq_key)

    def _release_backoff(self, now: float) -> None:
        heap = self._backoff
        while heap and heap[0][0] <= now:
            _, seq, key = heapq.heappop(heap)
            if self._location.get(key) == (_BACKOFF, str(seq)):
                self._location.pop(key)
                info = self.workloads[key]
                self._place(info, fresh=True)

    # ============================================================================================
    # Internals: quota held by workloads
    # ============================================================================================
    def _hold_quota(self, info: WorkloadInfo, old: WorkloadInfo | None) -> None:
        self._ensure_forest()  # before touching usage: a rebuild re-derives it from holders
        key = info.key
        where = self._location.get(key)
        if where is not None and where[0] != _ADMITTED:
            self._unplace(key)
            self._unindex_pending(info)
        assert info.admission is not None
        cq = info.admission.cluster_queue
        self.options.held(info)
        if (
            old is not None
            and old.admission is not None
            and old.admission.cluster_queue == cq
            and old.admission.usage == info.admission.usage
            and key in self.admitted.get(cq, {})
        ):
            # Same reservation seen again (e.g. our own write coming back): swap the record only.
            self.admitted[cq][key] = info
            self._location[key] = (_ADMITTED, cq)
            if info.evicted:
                self.being_evicted.pop(key, None)
            self._drain_workload(info)
            return
        self._release_quota(key, old, requeue_tree=False)
        self.admitted.setdefault(cq, {})[key] = info
        node = self.forest.cluster_queues.get(cq)
        if node is not None:
            quota.add_usage(node, info.admission.usage)
        self._location[key] = (_ADMITTED, cq)
        self._last_reason.pop(key, None)
        if info.evicted:
            self.being_evicted.pop(key, None)
        self._drain_workload(info)

    def _release_quota(self, key: ObjectKey, old: WorkloadInfo | None, requeue_tree: bool = True) -> None:
        """Give back the quota ``old`` held, if any; freed quota is a requeue trigger."""
        if old is None or old.admission is None:
            return
        self._ensure_forest()  # before touching usage: a rebuild re-derives it from holders
        cq = old.admission.cluster_queue
        members = self.admitted.get(cq)
        if members is None or members.pop(key, None) is None:
            return
        self.options.released(old)
        node = self.forest.cluster_queues.get(cq)
        if node is not None:
            quota.remove_usage(node, old.admission.usage)
            if requeue_tree:
                self._mark_dirty(self.forest.root_of[cq])
        if self._location.get(key, ("",))[0] == _ADMITTED:
            del self._location[key]
        self.being_evicted.pop(key, None)
        self._drained.discard(key)

    def _forget(self, key: ObjectKey) -> None:
        info = self.workloads.pop(key, None)
        if info is None:
            return
        self._release_quota(key, info)
        self._unplace(key)
        self._unindex_pending(info)
        self._last_reason.pop(key, None)
        self._reasons_to_emit.pop(key, None)
        self._unadmitted_version.pop(key, None)
        self.being_evicted.pop(key, None)

    # ============================================================================================
    # Internals: requeue triggers and topology
    # ============================================================================================
    def _mark_dirty(self, root: str) -> None:
        self._dirty_roots.setdefault(root, None)

    def _flush_requeues(self, now: float) -> None:
        """Move parked workloads back for every cohort tree whose batch period has passed."""
        due = []
        for root, first_seen in self._dirty_roots.items():
            if first_seen is None:
                first_seen = self._dirty_roots[root] = now
            if now - first_seen >= self.requeue_batch_seconds:
                due.append(root)
        for root in due:
            del self._dirty_roots[root]
            for name in self.forest.members.get(root, ()):
                queue = self.queues.get(name)
                if queue is not None:
                    queue.requeue_parked()

    @property
    def forest(self) -> quota.QuotaForest:
        """The quota forest, rebuilt first if ClusterQueues or Cohorts changed since the last read."""
        self._ensure_forest()
        return self._forest

    def _ensure_forest(self) -> None:
        if self._forest_stale:
            self._forest_stale = False
            self._rebuild_forest()

    def _rebuild_forest(self) -> None:
        """Rebuild the forest after a topology change; every tree gets a requeue (its quota may
        have grown) and every queue's Active state is re-evaluated (cohort cycles)."""
        forest = self._forest
        forest.rebuild(self.cluster_queues, self.cohorts)
        # Usage is re-derived from the workloads that hold quota, so it is always exact.
        for name, node in forest.cluster_queues.items():
            node.usage = {}
            for info in self.admitted.get(name, {}).values():
                if info.admission is not None:
                    for fr, amount in info.admission.usage.items():
                        node.usage[fr] = node.usage.get(fr, 0) + amount
        for root_name in forest.members:
            kind, _, name = root_name.partition(":")
            root = forest.cohorts[name] if kind == "cohort" else forest.cluster_queues[name]
            forest._compute_usage(root)
            self._mark_dirty(root_name)
        for name in self.cluster_queues:
            self._refresh_activity(name)

    def _topology_changed(self) -> None:
        self._forest_stale = True

    def _flavor_or_check_changed(self, affects: Any) -> None:
        for name, spec in self.cluster_queues.items():
            if affects(spec):
                self._refresh_activity(name)
                self._mark_dirty(self.forest.root_of[name])

    def _refresh_activity(self, name: str) -> None:
        """Re-evaluate whether the queue can admit (``controller.engine.activity``, the same rule
        as its ``Active`` condition); a queue turning inactive tells its pending workloads why."""
        spec = self.cluster_queues[name]
        problems = cluster_queue_problems(
            spec,
            terminating=spec.terminating,
            flavors=self.flavors,
            checks_active=self.checks,
            check_controllers=self.check_controllers,
            in_cohort_cycle=name in self.forest.in_cycle,
        )
        inactive = inactive_reason(problems)
        if inactive is None:
            self.inactive.pop(name, None)
            return
        was_active = name not in self.inactive
        self.inactive[name] = inactive
        queue = self.queues.get(name)
        if was_active and queue is not None:
            stopped = inactive[0] == c.REASON_CQ_STOPPED
            for info in queue.workloads():
                self._reasons_to_emit[info.key] = (
                    c.REASON_SUSPENDED if stopped else c.REASON_INADMISSIBLE,
                    f"ClusterQueue {name} {'is stopped' if stopped else 'is inactive'}",
                )

    # --- stopPolicy HoldAndDrain ------------------------------------------------------------------
    def _drain_if_needed(self, name: str) -> None:
        if self.cluster_queues[name].stop_policy == c.STOP_POLICY_HOLD_AND_DRAIN:
            for info in list(self.admitted.get(name, {}).values()):
                self._emit_drain(info, c.REASON_CLUSTER_QUEUE_STOPPED, "The ClusterQueue is stopped")

    def _drain_workload(self, info: WorkloadInfo) -> None:
        assert info.admission is not None
        spec = self.cluster_queues.get(info.admission.cluster_queue)
        if spec is not None and spec.stop_policy == c.STOP_POLICY_HOLD_AND_DRAIN:
            self._emit_drain(info, c.REASON_CLUSTER_QUEUE_STOPPED, "The ClusterQueue is stopped")
            return
        lq = self.local_queues.get(info.local_queue_key)
        if lq is not None and lq.stop_policy == c.STOP_POLICY_HOLD_AND_DRAIN:
            self._emit_drain(info, c.REASON_LOCAL_QUEUE_STOPPED, "The LocalQueue is stopped")

    def _emit_drain(self, info: WorkloadInfo, reason: str, message: str) -> None:
        if info.evicted or info.key in self._drained:
            return
        self._drained.add(info.key)
        self._evictions_to_emit.append(Eviction(info.key, reason, message))
