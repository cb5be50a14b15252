"""Read-your-own-writes over the informer cache, for the scheduler's status writes.

The scheduler builds every status patch from the cached Workload and guards it with that
version's ``resourceVersion``. When the cache has not yet delivered our *own* previous write (a
pending reason written a moment ago, the reservation a preemption now has to undo), the patch is
built on a stale version: a 409, a GET and a second patch, three requests instead of one
(about one conflict per fourteen workloads in the scheduler baseline before this).

A guarded patch that succeeded was based on version B and produced version W, and nothing came
between them. So while the cache still shows B, W is the newest version anyone can know of, and
the next write is built on it. As soon as the cache shows anything other than B (our echo, or
something newer), the cache is trusted again and the entry is dropped. No ordering of
resourceVersions is assumed: only equality with B is ever tested.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from controller.workload import view as wv


class OwnWrites:
    """Thread-safe: written by the write pool, read by it, pruned by the informer's handler."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._written: dict[str, tuple[str, dict[str, Any]]] = {}  # key -> (based on rv, written)

    def __len__(self) -> int:
        with self._lock:
            return len(self._written)

    def record(self, key: str, based_on: Mapping[str, Any], written: dict[str, Any]) -> None:
        """Our guarded patch on ``based_on`` succeeded and returned ``written``."""
        based_on_rv = wv.resource_version(based_on)
        if based_on_rv and wv.resource_version(written):
            with self._lock:
                self._written[key] = (based_on_rv, written)

    def current(self, key: str, cached: dict[str, Any] | None) -> dict[str, Any] | None:
        """``cached``, or our own newer write when the cache still shows the version it replaced."""
        if cached is None:
            return None
        with self._lock:
            entry = self._written.get(key)
            if entry is None:
                return cached
            if wv.resource_version(cached) == entry[0]:
                return entry[1]
            del self._written[key]  # the cache has moved on: our echo or something newer
            return cached

    def observed(self, key: str, obj: Mapping[str, Any] | None) -> None:
        """The informer delivered ``obj`` (None: deleted) for ``key``: forget our write once the
        cache has moved past the version it replaced."""
        with self._lock:
            entry = self._written.get(key)
            if entry is not None and (obj is None or wv.resource_version(obj) != entry[0]):
                del self._written[key]

    def clear(self) -> None:
        with self._lock:
            self._written.clear()
