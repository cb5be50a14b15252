"""Arrival numbers: the order in which the engine first observed each workload.

``metadata.creationTimestamp`` has one-second resolution; ordered by it alone, workloads
submitted in the same second would tie-break by UID, i.e. at random. The arrival number sits
between the queue timestamp and the UID in ``WorkloadInfo.order_key`` and keeps FIFO order among
equals (Kueue's heap compares creation timestamps with nanosecond resolution).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager

from .records import ObjectKey, WorkloadInfo


class Arrivals:
    """Each workload's arrival number, assigned at its first upsert and kept across updates."""

    def __init__(self) -> None:
        self._numbers: dict[ObjectKey, tuple[str, int]] = {}  # key -> (uid, arrival number)
        self._next = itertools.count(1)
        self._unknown = False

    @contextmanager
    def unknown(self) -> Iterator[None]:
        """Workloads first seen inside this block (an informer cache handed over at start-up) get
        arrival 0 and tie-break by UID among themselves: the order a cache lists its objects in
        says nothing about when they were created."""
        self._unknown = True
        try:
            yield
        finally:
            self._unknown = False

    def of(self, info: WorkloadInfo) -> int:
        """The arrival number of ``info``. An option of concurrent admission takes its parent's
        number (its siblings then keep their preference order, ``order_tiebreak``). An object
        recreated under the same name (another UID) is a new arrival. O(1): one dict look-up."""
        if info.option is not None:
            key, uid = info.option.parent, ""
        else:
            key, uid = info.key, info.uid
        known = self._numbers.get(key)
        if known is not None and (not uid or known[0] in (uid, "")):
            if uid and not known[0]:
                self._numbers[key] = (uid, known[1])  # the parent arrives after its options
            return known[1]
        number = 0 if self._unknown else next(self._next)
        self._numbers[key] = (uid, number)
        return number

    def forget(self, key: ObjectKey) -> None:
        """``key`` will never be queued again (finished or deleted)."""
        self._numbers.pop(key, None)
