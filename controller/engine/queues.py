"""Per-ClusterQueue pending queues.

A ClusterQueue's pending workloads are ordered by priority (higher first), then queue-order
timestamp (older first), then arrival as the engine observed it, then UID
(``WorkloadInfo.order_key``). Kueue keeps one heap plus an "inadmissible" map and, with
scheduling-equivalence hashing, moves every workload with the failing head's shape into that map.
Both the bulk move and the later requeue cost O(pending) there.

Here the grouping is structural instead: each queue holds one heap per *shape class* (workloads
with the same requests and placement constraints, see ``parse._shape_of``) and a small heap of
class heads. Parking a class after its head failed, and requeueing every parked class when quota
frees up, cost O(number of classes), not O(number of workloads); popping the next head costs
O(log n). Within a class, a workload behind a failed head has equal or lower priority and a later
timestamp, so it cannot fit or preempt where the head could not; parking it is what Kueue's hashing
does too.

StrictFIFO queues put every workload in one class that is never parked: a head that does not fit
stays the head and blocks the queue.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator

from .records import ObjectKey, OrderKey, WorkloadInfo

_STRICT_CLASS = 0
_entry_ids = itertools.count(1)


class _ShapeClass:
    __slots__ = ("heap", "version")

    def __init__(self) -> None:
        self.heap: list[tuple[OrderKey, int, ObjectKey]] = []
        self.version = 0


class PendingQueue:
    """Pending workloads of one ClusterQueue."""

    def __init__(self, name: str, strict_fifo: bool) -> None:
        self.name = name
        self.strict_fifo = strict_fifo
        self.sticky: ObjectKey | None = None  # a preemptor keeps the head until it is admitted
        self._reset()

    def _reset(self) -> None:
        self._classes: dict[int, _ShapeClass] = {}
        self._class_heap: list[tuple[OrderKey, int, int]] = []  # (head key, version, shape)
        self._entries: dict[ObjectKey, tuple[int, int, WorkloadInfo]] = {}  # key -> (entry id, shape, info)
        self._parked: set[int] = set()
        self._class_sizes: dict[int, int] = {}  # shape -> live workloads (heaps keep stale records)

    # --- size and membership ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: ObjectKey) -> WorkloadInfo | None:
        entry = self._entries.get(key)
        return entry[2] if entry is not None else None

    def workloads(self) -> Iterator[WorkloadInfo]:
        for _, _, info in self._entries.values():
            yield info

    def set_strict_fifo(self, strict_fifo: bool) -> None:
        """Switching strategy re-files every workload (rare: a ClusterQueue spec change)."""
        if strict_fifo == self.strict_fifo:
            return
        infos = [info for _, _, info in self._entries.values()]
        self.strict_fifo = strict_fifo
        self._reset()
        for info in infos:
            self.push(info)

    # --- heap maintenance --------------------------------------------------------------------------
    def _shape(self, info: WorkloadInfo) -> int:
        return _STRICT_CLASS if self.strict_fifo else info.shape

    def _class_head(self, shape: int) -> tuple[OrderKey, ObjectKey] | None:
        cls = self._classes.get(shape)
        if cls is None:
            return None
        heap = cls.heap
        while heap:
            sort_key, entry_id, key = heap[0]
            entry = self._entries.get(key)
            if entry is not None and entry[0] == entry_id:
                return sort_key, key
            heapq.heappop(heap)
        del self._classes[shape]
        return None

    def _announce(self, shape: int) -> None:
        """Record a class's current head in the class heap (older records become stale)."""
        if shape in self._parked:
            return
        head = self._class_head(shape)
        if head is None:
            return
        cls = self._classes[shape]
        cls.version += 1
        heapq.heappush(self._class_heap, (head[0], cls.version, shape))

    def push(self, info: WorkloadInfo, *, escape_parked: bool = False) -> None:
        """Add or replace a workload (an update re-files it with its new priority/timestamp).

        ``escape_parked``: the workload changed in a way that may change its outcome (its spec,
        priority, queue timestamp) or comes back from a backoff or a failed write. If its class
        is parked it gets a class of its own, so it is tried again without unparking the others
        (Kueue moves such a workload out of its inadmissible map). A new workload does not
        escape: it joins its parked class, as Kueue sends new arrivals of a failing shape
        straight to the inadmissible map.
        """
        shape = self._shape(info)
        if escape_parked and shape in self._parked:
            shape = hash((shape, info.key))
        entry_id = next(_entry_ids)
        old = self._entries.get(info.key)
        self._entries[info.key] = (entry_id, shape, info)
        if old is not None:
            self._shrink(old[1])
        self._class_sizes[shape] = self._class_sizes.get(shape, 0) + 1
        cls = self._classes.get(shape)
        if cls is None:
            cls = self._classes[shape] = _ShapeClass()
        heapq.heappush(cls.heap, (info.order_key, entry_id, info.key))
        if old is not None and old[1] != shape:
            self._announce(old[1])
        self._announce(shape)

    def remove(self, key: ObjectKey) -> WorkloadInfo | None:
        entry = self._entries.pop(key, None)
        if self.sticky == key:
            self.sticky = None
        if entry is None:
            return None
        self._shrink(entry[1])
        # The stale heap record is dropped lazily when it reaches the top.
        return entry[2]

    def _shrink(self, shape: int) -> None:
        size = self._class_sizes[shape] - 1
        if size:
            self._class_sizes[shape] = size
        else:
            del self._class_sizes[shape]

    def head(self) -> WorkloadInfo | None:
        """The next workload to try, without removing it."""
        if self.sticky is not None:
            entry = self._entries.get(self.sticky)
            if entry is not None:
                return entry[2]
            self.sticky = None
        heap = self._class_heap
        while heap:
            sort_key, version, shape = heap[0]
            cls = self._classes.get(shape)
            if cls is None or cls.version != version or shape in self._parked:
                heapq.heappop(heap)
                continue
            head = self._class_head(shape)
            if head is None:
                heapq.heappop(heap)
                continue
            if head[0] != sort_key:  # the head was removed or replaced since it was announced
                heapq.heappop(heap)
                self._announce(shape)
                continue
            return self._entries[head[1]][2]
        return None

    def pop(self) -> WorkloadInfo | None:
        info = self.head()
        if info is not None:
            shape = self._entries[info.key][1]
            self.remove(info.key)
            self._announce(shape)
        return info

    # --- parking (BestEffortFIFO inadmissible workloads) ---------------------------------------------
    def park_shape_of(self, info: WorkloadInfo) -> None:
        """Park the class of ``info`` (which must be in the queue) until the next requeue."""
        if self.strict_fifo:
            return
        entry = self._entries.get(info.key)
        self._parked.add(entry[1] if entry is not None else info.shape)

    def is_parked(self, info: WorkloadInfo) -> bool:
        entry = self._entries.get(info.key)
        return not self.strict_fifo and (entry[1] if entry is not None else info.shape) in self._parked

    def requeue_parked(self) -> int:
        """Bring every parked class back to the active queue; returns how many classes moved."""
        moved = len(self._parked)
        parked, self._parked = self._parked, set()
        for shape in parked:
            self._announce(shape)
        return moved

    def has_parked(self) -> bool:
        return bool(self._parked)

    def parked_count(self) -> int:
        """How many workloads are parked (Kueue's "inadmissible"), in O(parked classes)."""
        return sum(self._class_sizes.get(shape, 0) for shape in self._parked)
