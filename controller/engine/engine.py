"""The Engine facade: object events in, admission decisions out. See the package docstring.

The engine is the coordinator of two parts, as Kueue's scheduler is of its cache and queue
manager: the :class:`QuotaCache` (``quota_cache.py``: ClusterQueues, cohorts, usage, flavors,
the workloads holding quota) and the :class:`QueueManager` (``queue_manager.py``: pending
queues, LocalQueues, backoff, batched requeues, pending reasons). It owns the workload records
both read, turns each informer event into calls on the parts, moves a workload between them when
it starts or stops holding quota, and runs the cycle (``cycle.py``) over them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from pykueue.api import constants as c
from pykueue.api.config import AdmissionFairSharing
from pykueue.api.objects import namespaced_key

from . import gcpolicy, quota
from .afs import AfsLedger
from .arrivals import Arrivals
from .cycle import run_cycle
from .explain import Explanation, explain
from .fairshare import weighted_share
from .parse import (
    admission_check_active,
    admission_check_controller,
    object_name,
    parse_afs_consumed,
    parse_cluster_queue,
    parse_cohort,
    parse_local_queue,
    parse_resource_flavor,
    parse_workload,
)
from .queue_manager import QueueManager
from .queues import PendingQueue
from .quota_cache import QuotaCache
from .records import AdmissionInfo, ClusterQueueSpec, FlavorResource, ObjectKey, WorkloadInfo
from .results import CycleResult, Eviction
from .visibility import PendingWorkload, QueueSnapshot


def _may_change_outcome(old: WorkloadInfo | None, new: WorkloadInfo) -> bool:
    """Whether an update of a pending workload deserves a new attempt even if its shape class is
    parked: its spec, priority, queue timestamp or option settings changed."""
    return old is not None and (
        old.generation != new.generation
        or old.priority != new.priority
        or old.queue_ts != new.queue_ts
        or old.option != new.option
    )


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
        fair_sharing: tuple[str, ...] | None = None,
        admission_fair_sharing: AdmissionFairSharing | None = None,
        preemption_grace_seconds: float = 0.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``requeuing_timestamp``: ``waitForPodsReady.requeuingStrategy.timestamp`` — where a
        workload evicted by the PodsReady timeout goes in its queue: ``Eviction`` (Kueue's
        default: ordered by the eviction time, i.e. to the back) or ``Creation``.

        ``settle_gc``: once the engine holds 1,000 or more workloads (after a large initial load,
        or when the backlog has grown that far), the next :meth:`schedule` applies
        :func:`controller.engine.gcpolicy.settle` (freeze what is alive, raise CPython's
        young-generation threshold; process-wide, once per engine).

        ``fair_sharing``: None keeps fair sharing off; otherwise it is on, with these preemption
        strategies (``fairSharing.preemptionStrategies``; docs/design/fair-sharing.md).

        ``admission_fair_sharing``: the Configuration's ``admissionFairSharing`` section (None:
        absent, off). With it, ClusterQueues whose admissionMode is
        ``UsageBasedAdmissionFairSharing`` order their workloads by LocalQueue usage first
        (``controller.engine.afs``). ``clock``: epoch seconds, for the LocalQueues' decay clocks
        outside ``schedule(now)``."""
        if heads_per_cluster_queue < 1:
            raise ValueError("heads_per_cluster_queue must be at least 1")
        if requeuing_timestamp not in (c.REQUEUE_BY_EVICTION, c.REQUEUE_BY_CREATION):
            raise ValueError(
                f"requeuing_timestamp: Unsupported value: {requeuing_timestamp!r}: "
                f'supported values: "{c.REQUEUE_BY_EVICTION}", "{c.REQUEUE_BY_CREATION}"'
            )
        self.heads_per_cluster_queue = heads_per_cluster_queue
        self._requeue_by_creation = requeuing_timestamp == c.REQUEUE_BY_CREATION
        self._settle_gc = settle_gc  # still to be done: cleared once settled

        self.workloads: dict[ObjectKey, WorkloadInfo] = {}  # every tracked workload, both parts read it
        self.cache = QuotaCache(self.workloads)
        self.queue_manager = QueueManager(self.cache, self.workloads, requeue_batch_seconds)
        self.cache.listener = self.queue_manager
        if fair_sharing is not None:
            # Kueue's parseStrategies: no list means both, S2-a then S2-b.
            self.cache.preemptor.fair_strategies = tuple(fair_sharing) or (
                "LessThanOrEqualToFinalShare",
                "LessThanInitialShare",
            )
        if preemption_grace_seconds < 0:
            raise ValueError("preemption_grace_seconds must not be negative")
        self.cache.preemptor.preemption_grace = preemption_grace_seconds
        self._clock = clock
        self.afs: AfsLedger | None = None
        if admission_fair_sharing is not None:
            self.afs = AfsLedger(
                admission_fair_sharing.usage_half_life_time,
                admission_fair_sharing.usage_sampling_interval,
                admission_fair_sharing.resource_weights,
            )
            self.queue_manager.afs = self.cache.afs = self.afs
            self.cache.preemptor.afs_usage = self.afs.usage
        self.priority_classes: dict[tuple[str, str], int] = {}  # (source, name) -> value
        self._arrivals = Arrivals()
        self._unadmitted_version: dict[ObjectKey, WorkloadInfo] = {}  # newest event while assumed

    def weighted_shares(self) -> tuple[dict[str, tuple[int, str]], dict[str, int]]:
        """Fair sharing: every ClusterQueue's (rounded weighted share, its cohort) and every
        Cohort's rounded weighted share, read off the quota forest (O(queues x flavor/resources))."""
        forest = self.cache.forest
        queues = {
            name: (weighted_share(node), node.parent.name if node.parent is not None else "")
            for name, node in forest.cluster_queues.items()
        }
        return queues, {name: weighted_share(node) for name, node in forest.cohorts.items()}

    # --- the parts' state under the names callers have always used ---------------------------------
    @property
    def requeue_batch_seconds(self) -> float:
        return self.queue_manager.requeue_batch_seconds

    @requeue_batch_seconds.setter
    def requeue_batch_seconds(self, seconds: float) -> None:
        self.queue_manager.requeue_batch_seconds = seconds

    @property
    def cluster_queues(self) -> dict[str, ClusterQueueSpec]:
        return self.cache.cluster_queues

    @property
    def forest(self) -> quota.QuotaForest:
        """The quota forest, rebuilt first if ClusterQueues or Cohorts changed since the last read."""
        return self.cache.forest

    @property
    def inactive(self) -> dict[str, tuple[str, str]]:
        """ClusterQueue -> (reason, message) for every queue that cannot admit, as of the last
        forest rebuild (``is_active`` rebuilds first)."""
        return self.cache.inactive

    @property
    def admitted(self) -> dict[str, dict[ObjectKey, WorkloadInfo]]:
        """ClusterQueue -> the workloads holding its quota."""
        return self.cache.admitted

    @property
    def queues(self) -> dict[str, PendingQueue]:
        """ClusterQueue -> its pending queue."""
        return self.queue_manager.queues

    # ============================================================================================
    # ClusterQueue / Cohort / ResourceFlavor / AdmissionCheck
    # ============================================================================================
    def upsert_cluster_queue(self, obj: Mapping[str, Any]) -> None:
        spec = parse_cluster_queue(obj)
        if not spec.name:
            return
        if self.cache.cluster_queues.get(spec.name) == spec:
            return  # a status-only update (our own status writes come back here): nothing to do
        old = self.cache.set_cluster_queue(spec)
        # The namespace selector or the queue's existence may change where its workloads belong.
        self.queue_manager.cluster_queue_set(
            spec.name,
            spec.strict_fifo,
            old is None or old.namespace_selector != spec.namespace_selector,
            spec.admission_fair_sharing,
        )
        self.cache.drain_cluster_queue(spec.name)

    def delete_cluster_queue(self, name: str) -> None:
        if self.cache.remove_cluster_queue(name):
            self.queue_manager.cluster_queue_removed(name)

    def upsert_cohort(self, obj: Mapping[str, Any]) -> None:
        self.cache.set_cohort(parse_cohort(obj))

    def delete_cohort(self, name: str) -> None:
        self.cache.remove_cohort(name)

    def upsert_resource_flavor(self, obj: Mapping[str, Any]) -> None:
        self.cache.set_flavor(parse_resource_flavor(obj))

    def delete_resource_flavor(self, name: str) -> None:
        self.cache.remove_flavor(name)

    def upsert_admission_check(self, obj: Mapping[str, Any]) -> None:
        self.cache.set_admission_check(object_name(obj), admission_check_active(obj), admission_check_controller(obj))

    def delete_admission_check(self, name: str) -> None:
        self.cache.remove_admission_check(name)

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

    def _resolve_priority(self, info: WorkloadInfo) -> None:
        if info.has_priority or not info.priority_class:
            return
        source = info.priority_class_source or WORKLOAD_PRIORITY_CLASS_SOURCE
        value = self.priority_classes.get((source, info.priority_class))
        if value is not None:
            info.priority = value

    # --- LocalQueue and namespaces -------------------------------------------------------------------
    def upsert_local_queue(self, obj: Mapping[str, Any]) -> None:
        lq = parse_local_queue(obj)
        if not lq.name or not lq.namespace:
            return
        if self.afs is not None:
            # A new entry starts from the persisted status (Kueue's initializeAfsIfNeeded); a
            # weight change re-ranks the LocalQueue at the next head.
            self.afs.track(lq.key, lq.cluster_queue, lq.fair_weight, self._clock(), parse_afs_consumed(obj))
        if self.queue_manager.set_local_queue(lq):
            self.cache.drain_local_queue(lq)

    def delete_local_queue(self, namespace: str, name: str) -> None:
        key = namespaced_key(namespace, name)
        self.queue_manager.remove_local_queue(key)
        if self.afs is not None:
            self.afs.forget(key)

    def set_namespace(self, name: str, labels: Mapping[str, str] | None) -> None:
        """Feed a namespace's labels (ClusterQueue namespaceSelector is evaluated against them)."""
        self.queue_manager.set_namespace(name, dict(labels or {}))

    def delete_namespace(self, name: str) -> None:
        self.queue_manager.remove_namespace(name)

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
        info.arrival = self._arrivals.of(info)
        self.cache.options.saw(info)
        if info.is_parent:
            # Concurrent admission: a parent is scheduled through its options only.
            self._forget(key)
            return
        self._resolve_priority(info)
        if info.pending_reason is not None:
            self.queue_manager.saw_reason(key, info.pending_reason)
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
        if info.admission is not None:
            before = old.admission if old is not None and old.uid == info.uid else None
            info.admission.visible_since = self._visible_since(info.admission, before)
        if info.finished or (info.admission is None and (not info.active or info.deleting)):
            if info.finished:
                self._arrivals.forget(key)  # it will never be queued again
            self._forget(key)
            return
        self.workloads[key] = info
        if old is not None:
            self.queue_manager.unindex(old)  # its LocalQueue may have changed
            if self.afs is not None and old.local_queue_key != info.local_queue_key:
                self.afs.drop_penalty(old.local_queue_key, key)  # settles by its current queue only
        if info.admission is not None:
            self._hold_quota(info, old)
        else:
            self.cache.release(key, old)
            self.queue_manager.route(info, fresh=_may_change_outcome(old, info))

    def _visible_since(self, admission: AdmissionInfo, before: AdmissionInfo | None) -> float:
        """When the reservation ``admission`` (``before``: the same workload's previous record of
        it, if any) became visible to the rest of the cluster: its preemption
        grace counts from there. A job cannot start before its Workload's admission is in the
        API, and at a busy client budget our own reservation write lands seconds after the
        engine decided it; a grace counted from the decision could end before the job ran at
        all. So our reservation is visible when its echo arrives (the engine's clock then); one
        this engine did not make (another leader's, one read at start-up, a new reservation
        by another writer) from its reservation time."""
        if before is None:
            return admission.reserved_at
        if before.assumed:
            return max(before.visible_since, self._clock())
        return before.visible_since if before.reserved_at == admission.reserved_at else admission.reserved_at

    def delete_workload(self, namespace: str, name: str) -> None:
        key = namespaced_key(namespace, name)
        self._arrivals.forget(key)
        self._forget(key)

    @contextmanager
    def initial_load(self) -> Iterator[None]:
        """Wrap the feeding of the informer caches into a fresh engine (start-up, new leader).

        The order in which a cache hands its objects over says nothing about when they were
        created, so workloads first seen inside this block get arrival 0 and tie-break by UID
        among themselves; every workload observed later is numbered in arrival order (after
        them, which is also true). See ``controller.engine.arrivals``.
        """
        with self._arrivals.unknown():
            yield

    def confirm(self, key: ObjectKey) -> None:
        """The admission write for ``key`` succeeded (its echo will arrive through the informer)."""
        info = self.workloads.get(key)
        if info is not None and info.admission is not None and info.admission.assumed:
            info.admission.write_confirmed = True

    def rollback(self, key: ObjectKey) -> None:
        """The admission write for ``key`` failed: drop the assumption and requeue it at once."""
        info = self.workloads.get(key)
        if info is None or info.admission is None or not info.admission.assumed or info.admission.write_confirmed:
            return
        self.cache.release(key, info)
        if self.afs is not None:
            self.afs.drop_penalty(info.local_queue_key, key)  # the reservation never happened
        latest = self._unadmitted_version.pop(key, None)
        if latest is not None:
            info = self.workloads[key] = latest
        else:
            info.admission = None
        self.queue_manager.route(info, fresh=True)

    def eviction_failed(self, eviction: Eviction) -> None:
        """The write of a HoldAndDrain ``eviction`` failed: emit it again with the next cycle while
        the workload still holds quota (otherwise it would stay admitted in a draining queue)."""
        self.cache.eviction_failed(eviction)

    def preemption_failed(self, victim: ObjectKey) -> None:
        """The eviction write for ``victim`` failed: it may be chosen as a victim again."""
        self.cache.being_evicted.pop(victim, None)

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
        queue_manager = self.queue_manager
        self.cache.ensure_forest()
        queue_manager.release_backoff(now)
        queue_manager.flush_requeues(now)
        result.evictions = self.cache.take_evictions()
        if self.afs is not None:
            result.afs_sampled = self.afs.sample_due(now)
        run_cycle(self.cache, queue_manager, self, self.heads_per_cluster_queue, now, result)
        queue_manager.emit_noted_reasons(result)
        result.duration_seconds = time.perf_counter() - start
        return result

    def next_timer(self) -> float | None:
        """When the engine's own timers next fire (a backoff ends or a batched requeue is due),
        as seconds since the epoch; None when nothing is waiting on time. A requeue marked but
        not yet seen by a cycle is due at the next ``schedule()`` call plus the batch period; that
        call starts its clock, so a loop that sleeps until this time never misses it."""
        due = self.queue_manager.next_timer()
        grace = self.cache.preemptor.grace_ends
        if grace is not None:
            due = grace if due is None else min(due, grace)
        sample = self.afs.next_due() if self.afs is not None else None
        if sample is None:
            return due
        return sample if due is None else min(due, sample)

    # --- holding quota: the moves between the two parts (the cycle's ``Holdings``) ---------------
    def assume(self, info: WorkloadInfo, cluster_queue: str, usage: dict[FlavorResource, int], now: float,
               admitted: bool) -> None:
        """Reserve quota for a popped workload before its API write (assume-then-write)."""
        self.cache.assume(info, cluster_queue, usage, now, admitted)
        self.queue_manager.admitted(info)
        if self.afs is not None and self.cache.cluster_queues[cluster_queue].admission_fair_sharing:
            # Kueue's entry penalty: charged at reservation, folded into consumed usage once the
            # workload is Admitted, so the next head of this ClusterQueue already sees it.
            self.afs.push_penalty(info.local_queue_key, info.key, usage, now)

    def displace(self, holder: WorkloadInfo) -> None:
        """Count a sibling option's quota as free while deciding whether a migration would fit
        (always undone by :meth:`restore` within the same decision)."""
        self.cache.release(holder.key, holder, requeue_tree=False)

    def restore(self, holder: WorkloadInfo) -> None:
        """Undo :meth:`displace`."""
        if holder.admission is not None:
            self._hold_quota(holder, None)

    def _hold_quota(self, info: WorkloadInfo, old: WorkloadInfo | None) -> None:
        """``info`` holds quota: it leaves the queue manager and is booked in the quota cache."""
        self.cache.ensure_forest()  # before touching usage: a rebuild re-derives it from holders
        key = info.key
        queue_manager = self.queue_manager
        if queue_manager.is_placed(key):
            queue_manager.unplace(key)
            queue_manager.unindex(info)
        if self.cache.hold(info, old):
            queue_manager.last_reason.pop(key, None)
        if self.afs is not None:
            self._afs_settle(info, old)
        self.cache.drain_workload(info, queue_manager.local_queues.get(info.local_queue_key))

    def _afs_settle(self, info: WorkloadInfo, old: WorkloadInfo | None) -> None:
        """Kueue settles on every transition into Admitted, in a ClusterQueue with admission fair
        sharing: the LocalQueue's consumed usage is decayed up to now and the entry penalty folded
        in. Our own assumption coming back Admitted is such a transition too (its penalty is
        still recorded)."""
        afs = self.afs
        admission = info.admission
        if afs is None or admission is None or not admission.admitted:
            return
        spec = self.cache.cluster_queues.get(admission.cluster_queue)
        if spec is None or not spec.admission_fair_sharing:
            return
        was_admitted = old is not None and old.admission is not None and old.admission.admitted
        if afs.has_penalty(info.local_queue_key, info.key) or (old is not None and not was_admitted):
            afs.settle(info.local_queue_key, info.key, self._clock())

    def _forget(self, key: ObjectKey) -> None:
        info = self.workloads.pop(key, None)
        if info is None:
            return
        if self.afs is not None:
            self.afs.drop_penalty(info.local_queue_key, key)
        self.cache.options.forgot(info)
        self.cache.release(key, info)
        self.queue_manager.forget(info)
        self._unadmitted_version.pop(key, None)
        self.cache.being_evicted.pop(key, None)

    # ============================================================================================
    # Read-only views (metrics, visibility, tests)
    # ============================================================================================
    def admitted_workload(self, key: ObjectKey) -> WorkloadInfo | None:
        """The record of ``key`` if it holds quota (admitted, reserved or assumed)."""
        return self.cache.admitted_workload(key)

    def is_active(self, cluster_queue: str) -> bool:
        return self.cache.is_active(cluster_queue)

    def pending_count(self, cluster_queue: str) -> int:
        """Pending workloads of the ClusterQueue's LocalQueues (queued, parked or backing off)."""
        return self.queue_manager.pending_count(cluster_queue)

    def pending_in_local_queue(self, lq_key: ObjectKey) -> int:
        return self.queue_manager.pending_in_local_queue(lq_key)

    def last_pending_reason(self, key: ObjectKey) -> tuple[str, str]:
        """The QuotaReserved=False (reason, message) last seen on or emitted for ``key``."""
        return self.queue_manager.last_reason.get(key, ("", ""))

    def pending_workloads(
        self, cluster_queue: str, *, offset: int = 0, limit: int | None = None
    ) -> list[PendingWorkload]:
        """Queued workloads of ``cluster_queue`` in scheduling order (visibility; not for the cycle)."""
        return self.queue_manager.pending_workloads(cluster_queue, offset=offset, limit=limit)

    def explain(self, key: ObjectKey, blocked_by: Sequence[ObjectKey] = ()) -> Explanation:
        """Why ``key`` is pending and what would admit it: a dry run of the cycle's nomination
        (``controller.engine.explain``); changes nothing. ``blocked_by``: the workloads whose
        pods the scheduler loop waits for before it admits anything (blockAdmission)."""
        return explain(self.cache, self.queue_manager, self.workloads, self, key, blocked_by, now=self._clock())

    def pending_snapshot(self, cluster_queue: str) -> QueueSnapshot | None:
        """Copy ``cluster_queue``'s pending workloads for ordering on another thread (the
        visibility API); None when the engine has no such ClusterQueue."""
        return self.queue_manager.snapshot(cluster_queue)

    def cluster_queue_of(self, namespace: str, local_queue: str) -> str | None:
        """The ClusterQueue a LocalQueue points at, if the engine knows the LocalQueue."""
        return self.queue_manager.cluster_queue_of(namespaced_key(namespace, local_queue))
