"""Which workers a manager Workload is nominated to: Kueue's three MultiKueue dispatchers.

The Configuration's ``multiKueue.dispatcherName`` picks one (Kueue's
``apis/config/v1beta1/configuration_types.go``, ``pkg/controller/workloaddispatcher/``):

- ``kueue.x-k8s.io/multikueue-dispatcher-all-at-once`` (the default): every active worker of the
  check's MultiKueueConfig is nominated at once;
- ``kueue.x-k8s.io/multikueue-dispatcher-incremental``: workers are nominated in rounds, up to
  :data:`DEFAULT_STEP` more per round, in the config's order, a new round when the previous one has
  lasted :data:`DEFAULT_ROUND_SECONDS` without a winner; earlier nominations are kept;
- any other name: an **external** dispatcher, another controller, writes
  ``status.nominatedClusterNames``; pykueue only follows it.

In every mode the copies live on exactly the nominated workers (a copy on a worker that is no
longer nominated is deleted), and only a nominated copy can win. The nomination is the
Workload's ``status.nominatedClusterNames``; the Workload webhook accepts a ``clusterName`` only
from it, and the CRD makes the two exclusive, so the nomination is frozen once a worker won.

Pure: the dispatch loop (:mod:`.workload`) reads and writes; the round clocks live in
:class:`IncrementalRounds`, in memory, as Kueue keeps them (a restarted controller starts a new
round at once).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterable
from datetime import datetime

from pykueue.api.config import DISPATCHER_ALL_AT_ONCE, DISPATCHER_INCREMENTAL

DEFAULT_STEP = 3
DEFAULT_ROUND_SECONDS = 300.0


class Mode(enum.Enum):
    ALL_AT_ONCE = "AllAtOnce"
    INCREMENTAL = "Incremental"
    EXTERNAL = "External"


def mode_of(dispatcher_name: str) -> Mode:
    """The dispatcher a ``multiKueue.dispatcherName`` stands for (anything unknown is external)."""
    if dispatcher_name == DISPATCHER_ALL_AT_ONCE:
        return Mode.ALL_AT_ONCE
    if dispatcher_name == DISPATCHER_INCREMENTAL:
        return Mode.INCREMENTAL
    return Mode.EXTERNAL


def next_nominees(nominated: Iterable[str], clusters: Iterable[str], step: int = DEFAULT_STEP) -> list[str]:
    """The workers the next Incremental round adds: up to ``step`` of the config's ``clusters``
    not yet nominated, in the order the MultiKueueConfig lists them (Kueue v0.19's default, its
    ``MultiKueueIncrementalDispatcherRespectConfigOrder`` gate); empty when every worker has been
    nominated. Whether a worker is active does not matter here, as in Kueue: an inactive nominee
    gets its copy once it connects."""
    already = set(nominated)
    remaining = [c for c in dict.fromkeys(clusters) if c not in already]
    return remaining[: max(step, 1)]


def copy_targets(nominated: Iterable[str], clusters: Iterable[str]) -> list[str]:
    """The workers that must hold a copy: the nominated ones the check's config lists (a name
    an external dispatcher nominates outside the config has no client and gets nothing)."""
    listed = set(clusters)
    return [c for c in nominated if c in listed]


class IncrementalRounds:
    """When each workload's current Incremental round started (thread-safe; workers share it)."""

    def __init__(self, round_seconds: float = DEFAULT_ROUND_SECONDS) -> None:
        self.round_seconds = round_seconds
        self._started: dict[str, datetime] = {}
        self._lock = threading.Lock()

    def remaining(self, key: str, now: datetime) -> float | None:
        """Seconds left in ``key``'s round; ``None`` when no round runs or it has ended."""
        with self._lock:
            started = self._started.get(key)
        if started is None:
            return None
        left = self.round_seconds - (now - started).total_seconds()
        return left if left >= 0 else None

    def start(self, key: str, now: datetime) -> None:
        with self._lock:
            self._started[key] = now

    def forget(self, key: str) -> None:
        with self._lock:
            self._started.pop(key, None)
