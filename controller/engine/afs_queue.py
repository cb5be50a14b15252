"""The pending queue of a ClusterQueue with admission fair sharing (``UsageBasedAdmissionFairSharing``).

Kueue v0.19 orders such a queue's workloads by their LocalQueue's usage first (lower first), and
only then by its usual order: the sticky preemptor, priority, queue timestamp, UID
(``queueOrderingFunc`` in ``pkg/cache/queue/cluster_queue.go``). Usage is the same for every
workload of a LocalQueue, so the order within a LocalQueue never changes with it: this queue keeps
one ordinary :class:`PendingQueue` per LocalQueue (shape classes, parking and all) and picks the
head among their heads by ``(usage, not sticky, order key)``. A usage change therefore re-orders
nothing stored; the next ``head()`` reads it. Cost per head: O(LocalQueues with pending work of
this ClusterQueue), never O(workloads).

Parking stays per LocalQueue: a failed head parks its shape in its own LocalQueue only (Kueue's
inadmissible map spans the ClusterQueue); a workload of the same shape in another LocalQueue is
then tried once and parked in turn, which costs a try, not a wrong answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .queues import PendingQueue
from .records import ObjectKey, WorkloadInfo


class AfsPendingQueue(PendingQueue):
    """A :class:`PendingQueue` to its callers (every public method is overridden; the base
    class's own heaps stay empty); ``usage_of(lq_key)`` reads the ledger."""

    def __init__(self, name: str, strict_fifo: bool, usage_of: Callable[[ObjectKey], float]) -> None:
        self._usage_of = usage_of
        self._subs: dict[ObjectKey, PendingQueue] = {}  # LocalQueue -> its workloads
        self._lq_of: dict[ObjectKey, ObjectKey] = {}  # workload -> LocalQueue, for queued ones
        self._sticky: ObjectKey | None = None
        super().__init__(name, strict_fifo)

    # --- sticky (the preemptor keeps the head of its LocalQueue) ----------------------------------
    @property
    def sticky(self) -> ObjectKey | None:
        key = self._sticky
        if key is None:
            return None
        sub = self._subs.get(self._lq_of.get(key, ""))
        if sub is None or sub.sticky != key:
            self._sticky = None  # popped or removed since: PendingQueue clears its own
        return self._sticky

    @sticky.setter
    def sticky(self, key: ObjectKey | None) -> None:
        old = self._sticky
        if old is not None:
            sub = self._subs.get(self._lq_of.get(old, ""))
            if sub is not None and sub.sticky == old:
                sub.sticky = None
        self._sticky = key
        if key is not None:
            sub = self._subs.get(self._lq_of.get(key, ""))
            if sub is not None:
                sub.sticky = key

    # --- size and membership ----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._lq_of)

    def __contains__(self, key: object) -> bool:
        return key in self._lq_of

    def get(self, key: ObjectKey) -> WorkloadInfo | None:
        sub = self._subs.get(self._lq_of.get(key, ""))
        return sub.get(key) if sub is not None else None

    def workloads(self) -> Iterator[WorkloadInfo]:
        for sub in list(self._subs.values()):
            yield from sub.workloads()

    def set_strict_fifo(self, strict_fifo: bool) -> None:
        self.strict_fifo = strict_fifo
        for sub in self._subs.values():
            sub.set_strict_fifo(strict_fifo)

    # --- heap maintenance -------------------------------------------------------------------------
    def push(self, info: WorkloadInfo, *, escape_parked: bool = False) -> None:
        key = info.key
        lq = info.local_queue_key
        old_lq = self._lq_of.get(key)
        if old_lq is not None and old_lq != lq:
            self.remove(key)
        sub = self._subs.get(lq)
        if sub is None:
            sub = self._subs[lq] = PendingQueue(self.name, self.strict_fifo)
        sub.push(info, escape_parked=escape_parked)
        self._lq_of[key] = lq

    def remove(self, key: ObjectKey) -> WorkloadInfo | None:
        lq = self._lq_of.pop(key, None)
        if lq is None:
            return None
        sub = self._subs.get(lq)
        if sub is None:
            return None
        info = sub.remove(key)
        self._drop_if_empty(lq, sub)
        return info

    def _drop_if_empty(self, lq: ObjectKey, sub: PendingQueue) -> None:
        # An empty sub-queue keeps nothing worth keeping once no pop is awaiting its push back.
        if not len(sub) and not sub.has_parked():
            del self._subs[lq]

    def _best(self) -> tuple[ObjectKey, WorkloadInfo] | None:
        best: tuple[float, bool, tuple[int, float, int, str]] | None = None
        chosen: tuple[ObjectKey, WorkloadInfo] | None = None
        usage_of = self._usage_of
        for lq, sub in self._subs.items():
            info = sub.head()
            if info is None:
                continue
            rank = (usage_of(lq), sub.sticky != info.key, info.order_key)
            if best is None or rank < best:
                best, chosen = rank, (lq, info)
        return chosen

    def head(self) -> WorkloadInfo | None:
        """The head of the LocalQueue with the lowest usage (ties: sticky, then the usual order)."""
        chosen = self._best()
        return chosen[1] if chosen is not None else None

    def pop(self) -> WorkloadInfo | None:
        chosen = self._best()
        if chosen is None:
            return None
        lq, info = chosen
        self._subs[lq].pop()
        self._lq_of.pop(info.key, None)
        return info

    # --- parking ------------------------------------------------------------------------------------
    def park_shape_of(self, info: WorkloadInfo) -> None:
        sub = self._subs.get(self._lq_of.get(info.key, info.local_queue_key))
        if sub is not None:
            sub.park_shape_of(info)

    def local_queue_usage(self) -> dict[ObjectKey, float] | None:
        usage_of = self._usage_of
        return {lq: usage_of(lq) for lq in self._subs}

    def snapshot(self) -> tuple[list[tuple[int, int, WorkloadInfo]], frozenset[int]]:
        entries: list[tuple[int, int, WorkloadInfo]] = []
        parked: set[int] = set()
        for sub in self._subs.values():
            sub_entries, sub_parked = sub.snapshot()
            entries.extend(sub_entries)
            parked |= sub_parked
        return entries, frozenset(parked)

    def is_parked(self, info: WorkloadInfo) -> bool:
        sub = self._subs.get(self._lq_of.get(info.key, info.local_queue_key))
        return sub is not None and sub.is_parked(info)

    def requeue_parked(self) -> int:
        moved = 0
        for lq, sub in list(self._subs.items()):
            moved += sub.requeue_parked()
            self._drop_if_empty(lq, sub)
        return moved

    def has_parked(self) -> bool:
        return any(sub.has_parked() for sub in self._subs.values())

    def parked_count(self) -> int:
        return sum(sub.parked_count() for sub in self._subs.values())
