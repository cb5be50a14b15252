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
from typing import Final

from .records import ObjectKey, WorkloadInfo

_STRICT_CLASS = 0
_entry_ids = itertools.count(1)

# A heap record: the workload's order key flattened (-priority, queue timestamp, arrival,
# tiebreak), then its entry id (tells a live record from a stale one) and key. Flat, because
# comparing nested tuples costs twice as much and the heap compares O(log n) records per push/pop.
_Record = tuple[int, float, int, str, int, ObjectKey]
# Final, so that indexing a record with them has the field's type, not the union of all fields.
_ENTRY_ID: Final = 4
_KEY: Final = 5


def _record(info: WorkloadInfo, entry_id: int) -> _Record:
    return (*info.order_key, entry_id, info.key)


class _ShapeClass:
    __slots__ = ("heap", "listed", "version")

    def __init__(self) -> None:
        self.heap: list[_Record] = []
        self.version = 0
        # A record of the current version is in the queue's class heap. True for every class with
        # workloads that is not parked; a push into a listed class whose head does not change
        # then needs no class-heap record.
        self.listed = False


class PendingQueue:
    """Pending workloads of one ClusterQueue."""

    def __init__(self, name: str, strict_fifo: bool) -> None:
        self.name = name
        self.strict_fifo = strict_fifo
        self.sticky: ObjectKey | None = None  # a preemptor keeps the head until it is admitted
        self._reset()

    def _reset(self) -> None:
        self._classes: dict[int, _ShapeClass] = {}
        self._class_heap: list[tuple[_Record, int, int]] = []  # (class head's record, version, shape)
        self._entries: dict[ObjectKey, tuple[int, int, WorkloadInfo]] = {}  # key -> (entry id, shape, info)
        self._parked: set[int] = set()
        self._class_sizes: dict[int, int] = {}  # shape -> live workloads (heaps keep stale records)
        # The last popped workload whose record was still the top of its class heap: (key, shape,
        # record). The cycle pops a head and, when it does not fit, pushes it straight back; the
        # record is then revived instead of popped and pushed again (see ``push``).
        self._popped: tuple[ObjectKey, int, _Record] | None = None

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

    def _class_top(self, shape: int) -> _Record | None:
        """The live record at the top of a class's heap (stale records above it are dropped)."""
        cls = self._classes.get(shape)
        if cls is None:
            return None
        heap = cls.heap
        entries = self._entries
        while heap:
            record = heap[0]
            entry = entries.get(record[_KEY])
            if entry is not None and entry[0] == record[_ENTRY_ID]:
                return record
            heapq.heappop(heap)
        del self._classes[shape]
        return None

    def _announce(self, shape: int) -> None:
        """Record a class's current head in the class heap (older records become stale)."""
        if shape in self._parked:
            return
        top = self._class_top(shape)
        if top is None:
            return
        cls = self._classes[shape]
        cls.version += 1
        cls.listed = True
        heapq.heappush(self._class_heap, (top, cls.version, shape))

    def push(self, info: WorkloadInfo, *, escape_parked: bool = False) -> None:
        """Add or replace a workload (an update re-files it with its new priority/timestamp).

        ``escape_parked``: the workload changed in a way that may change its outcome (its spec,
        priority, queue timestamp) or comes back from a backoff or a failed write. If its class
        is parked it gets a class of its own, so it is tried again without unparking the others
        (Kueue moves such a workload out of its inadmissible map). A new workload does not
        escape: it joins its parked class, as Kueue sends new arrivals of a failing shape
        straight to the inadmissible map — unless its priority is higher than that class's
        head's: it may then preempt where the head could not, so it gets a class of its own.

        Cost: a head popped by the cycle and pushed back unchanged revives its record, which is
        still the top of its class heap (O(1)); otherwise one heap push, O(log n), plus a
        class-heap record only if the workload becomes its class's head.
        """
        shape = self._shape(info)
        key = info.key
        if shape in self._parked and (
            escape_parked or (key not in self._entries and self._outranks_parked(info, shape))
        ):
            shape = hash((shape, key))
        old = self._entries.get(key)
        popped = self._popped
        if popped is not None and popped[0] == key:
            self._popped = None
            if old is None and popped[1] == shape and self._revive(info, shape, popped[2]):
                return
        entry_id = next(_entry_ids)
        self._entries[key] = (entry_id, shape, info)
        if old is not None:
            self._shrink(old[1])  # its old record is stale now; its class heals lazily in head()
        self._class_sizes[shape] = self._class_sizes.get(shape, 0) + 1
        cls = self._classes.get(shape)
        if cls is None:
            cls = self._classes[shape] = _ShapeClass()
        record = _record(info, entry_id)
        heapq.heappush(cls.heap, record)
        if not cls.listed or cls.heap[0] is record:
            self._announce(shape)

    def _outranks_parked(self, info: WorkloadInfo, shape: int) -> bool:
        """Whether ``info`` has a higher priority than the head of its parked class."""
        top = self._class_top(shape)
        return top is not None and -info.priority < top[0]

    def _revive(self, info: WorkloadInfo, shape: int, record: _Record) -> bool:
        """Make a just-popped workload's record live again if it is still its class's top and
        the workload's order is unchanged (the same position a fresh record would take)."""
        cls = self._classes.get(shape)
        if cls is None or not cls.heap or cls.heap[0] is not record or record[:_ENTRY_ID] != info.order_key:
            return False
        self._entries[info.key] = (record[_ENTRY_ID], shape, info)
        self._class_sizes[shape] = self._class_sizes.get(shape, 0) + 1
        if not cls.listed:
            self._announce(shape)
        return True

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
        """The next workload to try, without removing it.

        Class-heap records are checked against their class when they reach the top: a record of
        an older version, of a parked class, or whose class head has changed since it was
        announced is dropped (and the class announced again with its current head).
        """
        if self.sticky is not None:
            entry = self._entries.get(self.sticky)
            if entry is not None:
                return entry[2]
            self.sticky = None
        heap = self._class_heap
        while heap:
            record, version, shape = heap[0]
            cls = self._classes.get(shape)
            if cls is None or cls.version != version:
                heapq.heappop(heap)
                continue
            if shape in self._parked:
                heapq.heappop(heap)
                cls.listed = False  # requeue_parked announces it again
                continue
            top = self._class_top(shape)
            if top is None:
                heapq.heappop(heap)
                continue
            if top is not record:  # the head was removed or replaced since it was announced
                heapq.heappop(heap)
                cls.listed = False
                self._announce(shape)
                continue
            return self._entries[top[_KEY]][2]
        return None

    def pop(self) -> WorkloadInfo | None:
        """Remove and return the head. Its records stay in the heaps: dropped lazily by the next
        ``head`` if it is admitted, revived by ``push`` if the cycle puts it back."""
        info = self.head()
        if info is None:
            return None
        key = info.key
        entry_id, shape, _ = self._entries.pop(key)
        self._shrink(shape)
        if self.sticky == key:
            self.sticky = None
        cls = self._classes.get(shape)
        top = cls.heap[0] if cls is not None and cls.heap else None
        if top is not None and top[_KEY] == key and top[_ENTRY_ID] == entry_id:
            self._popped = (key, shape, top)
        else:
            self._popped = None  # a sticky head need not be its class's top
        return info

    # --- parking (BestEffortFIFO inadmissible workloads) ---------------------------------------------
    def park_shape_of(self, info: WorkloadInfo) -> None:
        """Park the class of ``info`` (which must be in the queue) until the next requeue."""
        if self.strict_fifo:
            return
        entry = self._entries.get(info.key)
        self._parked.add(entry[1] if entry is not None else info.shape)

    def local_queue_usage(self) -> dict[ObjectKey, float] | None:
        """Admission fair sharing: each LocalQueue's usage, which orders before everything else
        (``afs_queue.AfsPendingQueue``); None for a queue that does not order by it."""
        return None

    def snapshot(self) -> tuple[list[tuple[int, int, WorkloadInfo]], frozenset[int]]:
        """The (entry id, shape, info) entries and the parked classes, copied for a reader on
        another thread (controller.engine.visibility); C-level copies, no ordering."""
        return list(self._entries.values()), frozenset(self._parked)

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
