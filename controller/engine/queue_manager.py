"""The queue manager: where every pending workload is, and which ones the cycle may try.

Kueue's ``pkg/queue`` (queue manager) in the engine's terms: one :class:`PendingQueue` per
ClusterQueue (a heap per shape class, parked classes standing for Kueue's inadmissible
workloads; ``queues.py``), LocalQueues and which pending workloads each holds, namespace labels
for the ClusterQueues' ``namespaceSelector``, the backoff heap (``requeueState.requeueAt``),
the per-cohort-tree requeue batching (Kueue's ``QueueInadmissibleWorkloads`` after a 1 s batch
period) and the ``QuotaReserved=False`` reasons of pending workloads: the last one each shows,
and those to emit with the next cycle.

A pending workload is in exactly one place: queued in its ClusterQueue (maybe parked), waiting
for its LocalQueue/ClusterQueue or a namespace match, backing off, or held until the object
changes. A workload that holds quota is in none: it belongs to the quota cache, which this part
reads (specs, activity, cohort trees, holders) but never changes.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Mapping

from pykueue.api import constants as c
from pykueue.api.labelselectors import matches_compiled

from .afs import AfsLedger
from .afs_queue import AfsPendingQueue
from .options import admission_blocker
from .queues import PendingQueue
from .quota_cache import QuotaCache
from .records import LocalQueueInfo, ObjectKey, WorkloadInfo
from .results import CycleResult, PendingReason
from .visibility import PendingWorkload, QueueSnapshot, pending_workloads, snapshot

# Where a pending workload is.
_QUEUED = "queued"  # in its ClusterQueue's pending queue (schedulable, maybe parked)
_WAITING = "waiting"  # its LocalQueue/ClusterQueue is missing or stopped, or its namespace does not match
_BACKOFF = "backoff"  # requeueState.requeueAt is in the future
_HELD = "held"  # not schedulable until the object changes (Requeued=False, check Retry, invalid...)


class QueueManager:
    """Pending queues per ClusterQueue, LocalQueue membership, backoff, batched requeues."""

    def __init__(
        self, cache: QuotaCache, workloads: Mapping[ObjectKey, WorkloadInfo], requeue_batch_seconds: float
    ) -> None:
        """``workloads``: every tracked workload record by key (the engine's), read only."""
        self._cache = cache
        self._workloads = workloads
        self.requeue_batch_seconds = requeue_batch_seconds

        self.queues: dict[str, PendingQueue] = {}
        self.local_queues: dict[ObjectKey, LocalQueueInfo] = {}
        self.namespaces: dict[str, dict[str, str]] = {}
        self._location: dict[ObjectKey, tuple[str, str]] = {}
        self._pending_by_lq: dict[ObjectKey, set[ObjectKey]] = {}
        self._lqs_by_cq: dict[str, set[ObjectKey]] = {}
        self._backoff: list[tuple[float, int, ObjectKey]] = []
        self._backoff_seq = 0
        self._dirty_roots: dict[str, float | None] = {}  # root -> first cycle time that saw it

        self.last_reason: dict[ObjectKey, tuple[str, str]] = {}
        self._reasons_to_emit: dict[ObjectKey, tuple[str, str]] = {}
        # Admission fair sharing (the Configuration's admissionFairSharing); None: off, and every
        # ClusterQueue orders its workloads the usual way whatever its admissionScope says.
        self.afs: AfsLedger | None = None

    # --- ClusterQueues, LocalQueues, namespaces ----------------------------------------------------
    def cluster_queue_set(self, name: str, strict_fifo: bool, selector_changed: bool,
                          admission_fair_sharing: bool = False) -> None:
        """A ClusterQueue appeared or changed: create or re-file its queue and, if it is new or its
        namespaceSelector changed, re-decide where its LocalQueues' pending workloads belong.
        ``admission_fair_sharing``: its admissionMode orders by LocalQueue usage (honoured only
        with the ledger on); switching it re-files the queue's workloads (rare: a spec change)."""
        queue = self.queues.get(name)
        fair = admission_fair_sharing and self.afs is not None
        if queue is None or fair != isinstance(queue, AfsPendingQueue):
            fresh = self._new_queue(name, strict_fifo, fair)
            if queue is not None:
                for info in list(queue.workloads()):
                    fresh.push(info)
            self.queues[name] = fresh
        else:
            queue.set_strict_fifo(strict_fifo)
        if selector_changed:
            self._reroute_cluster_queue(name)

    def _new_queue(self, name: str, strict_fifo: bool, fair: bool) -> PendingQueue:
        if fair and self.afs is not None:
            return AfsPendingQueue(name, strict_fifo, self.afs.usage)
        return PendingQueue(name, strict_fifo)

    def cluster_queue_removed(self, name: str) -> None:
        self._reroute_cluster_queue(name)
        self.queues.pop(name, None)

    def set_local_queue(self, lq: LocalQueueInfo) -> bool:
        """Store ``lq`` and re-route its pending workloads; False when nothing changed."""
        old = self.local_queues.get(lq.key)
        if old == lq:
            return False  # status-only update
        self.local_queues[lq.key] = lq
        if old is not None and old.cluster_queue != lq.cluster_queue:
            self._lqs_by_cq.get(old.cluster_queue, set()).discard(lq.key)
        self._lqs_by_cq.setdefault(lq.cluster_queue, set()).add(lq.key)
        self._reroute_local_queue(lq.key)
        return True

    def remove_local_queue(self, key: ObjectKey) -> None:
        lq = self.local_queues.pop(key, None)
        if lq is None:
            return
        self._lqs_by_cq.get(lq.cluster_queue, set()).discard(key)
        self._reroute_local_queue(key)

    def set_namespace(self, name: str, labels: dict[str, str]) -> None:
        if self.namespaces.get(name) == labels:
            return
        self.namespaces[name] = labels
        for lq_key in [k for k in self.local_queues if k.startswith(name + "/")]:
            self._reroute_local_queue(lq_key)

    def remove_namespace(self, name: str) -> None:
        self.namespaces.pop(name, None)

    # --- routing pending workloads -------------------------------------------------------------------
    def is_placed(self, key: ObjectKey) -> bool:
        return key in self._location

    def unplace(self, key: ObjectKey) -> None:
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

    def unindex(self, info: WorkloadInfo) -> None:
        """``info`` no longer counts as pending in its LocalQueue."""
        members = self._pending_by_lq.get(info.local_queue_key)
        if members is not None:
            members.discard(info.key)

    def forget(self, info: WorkloadInfo) -> None:
        """``info`` is gone or holds quota: no place, no LocalQueue membership, no reasons."""
        key = info.key
        self.unplace(key)
        self.unindex(info)
        self.last_reason.pop(key, None)
        self._reasons_to_emit.pop(key, None)

    def route(self, info: WorkloadInfo, fresh: bool = False) -> None:
        """Decide where a pending workload belongs and put it there (``fresh``: see ``requeue``)."""
        key = info.key
        self.unplace(key)
        self._pending_by_lq.setdefault(info.local_queue_key, set()).add(key)
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
        cluster_queues = self._cache.cluster_queues
        lq = self.local_queues.get(info.local_queue_key)
        problem: tuple[str, str] | None = None
        if lq is None:
            problem = (c.REASON_MISCONFIGURED, f"LocalQueue {info.queue_name} doesn't exist")
        elif lq.stop_policy != c.STOP_POLICY_NONE:
            problem = (c.REASON_SUSPENDED, f"LocalQueue {lq.name} is stopped")
        elif lq.cluster_queue not in cluster_queues:
            problem = (c.REASON_MISCONFIGURED, f"ClusterQueue {lq.cluster_queue} doesn't exist")
        elif not matches_compiled(
            cluster_queues[lq.cluster_queue].namespace_selector, self.namespaces.get(info.namespace, {})
        ):
            problem = (c.REASON_INADMISSIBLE, "Workload namespace doesn't match ClusterQueue selector")
        if problem is not None or lq is None:
            self._location[key] = (_WAITING, "")
            if problem is not None:
                self._reasons_to_emit[key] = problem
            return
        blocker = admission_blocker(info, cluster_queues[lq.cluster_queue])
        if blocker is not None:
            self._location[key] = (_WAITING, "")
            if blocker:
                self._reasons_to_emit[key] = (c.REASON_PENDING, blocker)
            return
        self.requeue(info, lq.cluster_queue, fresh=fresh)
        inactive = self._cache.inactive.get(lq.cluster_queue)
        if inactive is not None:
            reason = c.REASON_SUSPENDED if inactive[0] == c.REASON_CQ_STOPPED else c.REASON_INADMISSIBLE
            verb = "is stopped" if inactive[0] == c.REASON_CQ_STOPPED else "is inactive"
            self._reasons_to_emit[key] = (reason, f"ClusterQueue {lq.cluster_queue} {verb}")

    def requeue(self, info: WorkloadInfo, cluster_queue: str, *, fresh: bool = False) -> None:
        """Put a workload into its queue; ``fresh``: try it again even if its class is parked."""
        self.queues[cluster_queue].push(info, escape_parked=fresh)
        self._location[info.key] = (_QUEUED, cluster_queue)

    def admitted(self, info: WorkloadInfo) -> None:
        """The popped head ``info`` now holds quota (assumed): it is no longer pending."""
        key = info.key
        self._location.pop(key, None)
        self.unindex(info)
        self.last_reason.pop(key, None)

    def _reroute_local_queue(self, lq_key: ObjectKey) -> None:
        for key in list(self._pending_by_lq.get(lq_key, ())):
            info = self._workloads.get(key)
            where = self._location.get(key)
            if info is not None and where is not None and where[0] in (_QUEUED, _WAITING):
                self.unplace(key)
                self._place(info)

    def _reroute_cluster_queue(self, name: str) -> None:
        """Re-decide every pending workload of the queue's LocalQueues (rare: the queue appeared,
        disappeared or changed its namespaceSelector)."""
        for lq_key in list(self._lqs_by_cq.get(name, ())):
            self._reroute_local_queue(lq_key)

    def release_backoff(self, now: float) -> None:
        """Queue the workloads whose ``requeueAt`` has passed."""
        heap = self._backoff
        while heap and heap[0][0] <= now:
            _, seq, key = heapq.heappop(heap)
            if self._location.get(key) == (_BACKOFF, str(seq)):
                self._location.pop(key)
                self._place(self._workloads[key], fresh=True)

    # --- requeue triggers (the quota cache's listener) ------------------------------------------------
    def tree_changed(self, root: str) -> None:
        """Quota was freed or the configuration changed in cohort tree ``root``: requeue its parked
        workloads once the batch period has passed (``flush_requeues``)."""
        self._dirty_roots.setdefault(root, None)

    def turned_inactive(self, cluster_queue: str, inactive: tuple[str, str]) -> None:
        """Tell the queue's pending workloads why it no longer admits."""
        queue = self.queues.get(cluster_queue)
        if queue is None:
            return
        stopped = inactive[0] == c.REASON_CQ_STOPPED
        for info in queue.workloads():
            self._reasons_to_emit[info.key] = (
                c.REASON_SUSPENDED if stopped else c.REASON_INADMISSIBLE,
                f"ClusterQueue {cluster_queue} {'is stopped' if stopped else 'is inactive'}",
            )

    def flush_requeues(self, now: float) -> None:
        """Move parked workloads back for every cohort tree whose batch period has passed."""
        due = []
        for root, first_seen in self._dirty_roots.items():
            if first_seen is None:
                first_seen = self._dirty_roots[root] = now
            if now - first_seen >= self.requeue_batch_seconds:
                due.append(root)
        for root in due:
            del self._dirty_roots[root]
            for name in self._cache.forest.members.get(root, ()):
                queue = self.queues.get(name)
                if queue is not None:
                    queue.requeue_parked()

    def next_timer(self) -> float | None:
        """When a backoff ends or a batched requeue is due (see ``Engine.next_timer``)."""
        candidates: list[float] = []
        heap = self._backoff
        while heap and self._location.get(heap[0][2]) != (_BACKOFF, str(heap[0][1])):
            heapq.heappop(heap)  # stale record: the workload moved on
        if heap:
            candidates.append(heap[0][0])
        for root, first_seen in self._dirty_roots.items():
            if not any(
                (queue := self.queues.get(name)) is not None and queue.has_parked()
                for name in self._cache.forest.members.get(root, ())
            ):
                continue  # nothing parked in that tree: the requeue would move nothing
            candidates.append(time.time() if first_seen is None else first_seen + self.requeue_batch_seconds)
        return min(candidates) if candidates else None

    # --- pending reasons ---------------------------------------------------------------------------------
    def saw_reason(self, key: ObjectKey, reason: tuple[str, str]) -> None:
        """The object shows ``reason`` (QuotaReserved=False) already."""
        self.last_reason[key] = reason

    def emit_reason(self, result: CycleResult, key: ObjectKey, reason: str, message: str) -> None:
        """Add a pending reason to ``result`` unless it is what the workload already shows."""
        if key not in self._workloads or self._cache.holds(key):
            return
        if self.last_reason.get(key) != (reason, message):
            self.last_reason[key] = (reason, message)
            result.pending.append(PendingReason(key, reason, message))

    def emit_noted_reasons(self, result: CycleResult) -> None:
        """Add the reasons noted since the last cycle (routing, inactive queues) to ``result``."""
        for key, (reason, message) in self._reasons_to_emit.items():
            self.emit_reason(result, key, reason, message)
        self._reasons_to_emit.clear()

    # --- read-only views -------------------------------------------------------------------------------
    def pending_count(self, cluster_queue: str) -> int:
        """Pending workloads of the ClusterQueue's LocalQueues (queued, parked or backing off)."""
        return sum(len(self._pending_by_lq.get(lq, ())) for lq in self._lqs_by_cq.get(cluster_queue, ()))

    def pending_in_local_queue(self, lq_key: ObjectKey) -> int:
        return len(self._pending_by_lq.get(lq_key, ()))

    def pending_workloads(
        self, cluster_queue: str, *, offset: int = 0, limit: int | None = None
    ) -> list[PendingWorkload]:
        """Queued workloads of ``cluster_queue`` in scheduling order (visibility; not for the cycle)."""
        queue = self.queues.get(cluster_queue)
        if queue is None:
            return []
        return pending_workloads(
            queue,
            lambda key: self.last_reason.get(key, ("", "")),
            offset=offset,
            limit=limit,
            backing_off=self._backing_off(cluster_queue),
        )

    def snapshot(self, cluster_queue: str) -> QueueSnapshot | None:
        """Copy ``cluster_queue``'s pending workloads for a reader on another thread (None when
        the engine has no such ClusterQueue); see ``controller.engine.visibility``."""
        queue = self.queues.get(cluster_queue)
        if queue is None:
            return None
        return snapshot(queue, self._backing_off(cluster_queue), self.last_reason)

    def cluster_queue_of(self, lq_key: ObjectKey) -> str | None:
        """The ClusterQueue a LocalQueue points at, if the engine knows the LocalQueue."""
        lq = self.local_queues.get(lq_key)
        return lq.cluster_queue if lq is not None else None

    def _backing_off(self, cluster_queue: str) -> list[WorkloadInfo]:
        """Workloads of ``cluster_queue``'s LocalQueues waiting for their ``requeueAt`` (the backoff
        heap is small: only workloads evicted by a timeout or a rejected check are there)."""
        result = []
        for _, seq, key in self._backoff:
            info = self._workloads.get(key)
            if info is None or self._location.get(key) != (_BACKOFF, str(seq)):
                continue
            lq = self.local_queues.get(info.local_queue_key)
            if lq is not None and lq.cluster_queue == cluster_queue:
                result.append(info)
        return result
