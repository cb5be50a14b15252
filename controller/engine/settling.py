"""Arrival settling: a cohort's new workloads are queued together, so a burst meets priority order.

Kueue orders a ClusterQueue's heads by priority, and a cycle orders its entries by borrowing and
priority, but only among the workloads already queued when the cycle starts. A burst of creates
reaches the engine one watch event at a time, a few milliseconds apart, and pykueue runs a cycle
whenever something changes, so the first workloads of a burst are decided before the rest are
seen: a queue's small and medium workloads created together with its large one are admitted (the
medium one by borrowing a neighbour's idle nominal quota) before the large one arrives, and the
large one then reclaims that quota by evicting them. In the scheduler baseline's shape this was
most of pykueue's evictions that Kueue does not make (``docs/performance.md``, "Evictions in
memory"). Kueue's own cycles are long enough, while workloads wait (it writes each inadmissible
head's status inside the cycle), that such creates gather between two of them.

Here the gathering is explicit and bounded. A workload first seen pending is not queued at once:
it waits with the other new arrivals of its cohort tree (a ClusterQueue without a cohort is its own
tree) until that tree has seen no new arrival for ``quiet_seconds``, or at most ``max_seconds``
after the first of them, and then they are all queued in one step, so the next cycle orders them
together. Per tree, because quota is shared per tree: arrivals to another tree cannot take this
tree's quota, and workloads already queued (requeued, backing off, parked) are never held, so a
queue keeps admitting what it already had. The cost is that admission of a new workload is
``quiet_seconds`` later on an idle cluster and at most ``max_seconds`` later under a steady stream.

Time is the engine's cycle clock: an arrival is stamped by the first :meth:`release` after it
(the scheduler loop runs one right after feeding events), so this part needs no clock of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .records import ObjectKey

# Clock readings are floats summed from steps: a window due at exactly ``quiet_seconds`` must not
# miss its cycle by a rounding error and wait for the next timer.
_EPSILON = 1e-6


@dataclass(slots=True)
class _Window:
    first: float | None = None  # cycle time that first saw an arrival of this window
    last: float | None = None  # cycle time that saw the newest one
    keys: dict[ObjectKey, None] = field(default_factory=dict)  # in arrival order


class ArrivalSettling:
    """New arrivals per cohort tree, released together once the tree is quiet (see module doc)."""

    def __init__(self, quiet_seconds: float, max_seconds: float) -> None:
        if quiet_seconds < 0 or max_seconds < quiet_seconds:
            raise ValueError("arrival settling needs 0 <= quiet_seconds <= max_seconds")
        self.quiet_seconds = quiet_seconds
        self.max_seconds = max_seconds
        self._windows: dict[str, _Window] = {}
        self._tree_of: dict[ObjectKey, str] = {}
        self._unstamped: set[str] = set()  # trees with arrivals no release has seen yet

    @property
    def enabled(self) -> bool:
        return self.max_seconds > 0

    def __contains__(self, key: ObjectKey) -> bool:
        return key in self._tree_of

    def __len__(self) -> int:
        return len(self._tree_of)

    def held(self) -> list[ObjectKey]:
        """Every workload held now."""
        return list(self._tree_of)

    def hold(self, key: ObjectKey, tree: str) -> None:
        """``key`` arrived in cohort tree ``tree``: hold it until the tree settles."""
        self.drop(key)
        window = self._windows.get(tree)
        if window is None:
            window = self._windows[tree] = _Window()
        window.keys[key] = None
        self._tree_of[key] = tree
        self._unstamped.add(tree)

    def drop(self, key: ObjectKey) -> None:
        """``key`` is no longer waiting here (updated, deleted, or placed another way)."""
        tree = self._tree_of.pop(key, None)
        if tree is None:
            return
        window = self._windows[tree]
        window.keys.pop(key, None)
        if not window.keys:
            del self._windows[tree]
            self._unstamped.discard(tree)

    def release(self, now: float) -> list[ObjectKey]:
        """Stamp the arrivals seen since the last call and return, in arrival order, the held
        workloads of every tree that is now settled (quiet long enough, or held long enough)."""
        for tree in self._unstamped:
            window = self._windows[tree]
            if window.first is None:
                window.first = now
            window.last = now
        self._unstamped.clear()
        released: list[ObjectKey] = []
        for tree, window in list(self._windows.items()):
            assert window.first is not None and window.last is not None
            if now - window.last >= self.quiet_seconds - _EPSILON or now - window.first >= self.max_seconds - _EPSILON:
                del self._windows[tree]
                for key in window.keys:
                    del self._tree_of[key]
                released.extend(window.keys)
        return released

    def next_due(self, now: float) -> float | None:
        """When the next tree settles (``now`` if an arrival still needs its stamp); None when
        nothing is held."""
        if self._unstamped:
            return now
        due = [
            min(w.last + self.quiet_seconds, w.first + self.max_seconds)
            for w in self._windows.values()
            if w.first is not None and w.last is not None
        ]
        return min(due) if due else None
