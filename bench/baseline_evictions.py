"""The baseline driver's part of an eviction, for a controller that leaves it to the job's owner.

A preempted Workload keeps its quota reservation until whoever runs its job has stopped it:
Kueue sets ``Evicted=True`` and waits for the job integration to clear the reservation. The
baseline's Workloads are standalone (no Job behind them), so in Kueue's scheduler performance
test its runner plays that part: on ``Evicted=True`` it clears the reservation itself —
``QuotaReserved=False`` (reason ``Pending``), ``status.admission`` gone and ``Admitted`` synced
to ``False`` (``NoReservation``) — and the workload goes back to its queue
(``test/performance/scheduler/runner/controller/controller.go`` and
``pkg/workload.UnsetQuotaReservationWithCondition`` in Kueue v0.14).

pykueue's workload controller completes a standalone workload's eviction itself
(``controller/workload/decisions.py``), so only the ``kueue@<version>`` variant uses this;
without it a run under Kueue ends with every preempted workload still holding its quota.

The write is a merge patch of the status carrying the watched ``resourceVersion`` (the
apiserver answers Conflict if the controller wrote in between); on Conflict the workload is
read again and, if it is still evicted with a reservation, patched from that version.

A version offered while that workload's release is in flight is kept, the newest only, and
looked at once the release is done, so an eviction that comes back in the meantime is not lost.
As a safety net, :meth:`EvictionCompleter.resync` offers every workload the driver's informer
holds (the run does so every progress tick, as client-go's resync period would); releases it
starts are counted apart (``resynced``), so a missed event shows in the figures instead of
stalling the run.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from pykueue.kube.errors import ApiError, Conflict, NotFound
from pykueue.kube.resources import WORKLOADS

log = logging.getLogger("bench.baseline")

Key = tuple[str, str]  # namespace, name
MAX_ATTEMPTS = 5


def _conditions(obj: dict[str, Any]) -> list[dict[str, Any]]:
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    return [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []


def _true(obj: dict[str, Any], type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in _conditions(obj))


def needs_release(obj: dict[str, Any]) -> bool:
    """Evicted and still holding its reservation (not yet finished)."""
    return _true(obj, "Evicted") and _true(obj, "QuotaReserved") and not _true(obj, "Finished")


def release_patch(obj: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The merge patch that ends the reservation of ``obj`` as Kueue's runner does: the
    conditions list with ``QuotaReserved`` and ``Admitted`` set False (other conditions kept as
    they are), the admission removed, guarded by the object's resourceVersion."""
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    generation = (obj.get("metadata") or {}).get("generation")
    replacements = {
        "QuotaReserved": ("Pending", "Evicted by the benchmark's runner"),
        "Admitted": ("NoReservation", "The workload has no reservation"),
    }
    conditions = []
    for cond in _conditions(obj):
        replacement = replacements.pop(str(cond.get("type")), None)
        if replacement is None or cond.get("status") == "False":
            conditions.append(cond)
            continue
        reason, message = replacement
        updated = {**cond, "status": "False", "reason": reason, "message": message, "lastTransitionTime": stamp}
        if generation is not None:
            updated["observedGeneration"] = generation
        conditions.append(updated)
    return {
        "metadata": {"resourceVersion": (obj.get("metadata") or {}).get("resourceVersion")},
        "status": {"conditions": conditions, "admission": None},
    }


class EvictionCompleter:
    """Clears the reservation of every evicted workload it is offered (see the module docstring);
    at most one write per workload in flight. Thread-safe: :meth:`offer` is called from the
    informer's dispatch thread."""

    def __init__(self, client: Any, concurrency: int) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._in_flight: set[Key] = set()
        # The newest version offered while the workload's release was in flight.
        self._again: dict[Key, dict[str, Any]] = {}
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="bench-evict")
        self.completed = 0
        self.errors = 0
        self.resynced = 0

    def offer(self, obj: dict[str, Any]) -> None:
        """A watched version of a workload; released in the background if it needs it."""
        self._start(obj)

    def _start(self, obj: dict[str, Any]) -> bool:
        """Release ``obj`` in the background if it needs it; True when this started a release."""
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        with self._lock:
            if key in self._in_flight:
                self._again[key] = obj
                return False
            if not needs_release(obj):
                return False
            self._in_flight.add(key)
        self._pool.submit(self._release, key, obj)
        return True

    def resync(self, objects: list[dict[str, Any]]) -> int:
        """Offer every workload again (see the module docstring); the releases this started."""
        started = sum(1 for obj in objects if self._start(obj))
        with self._lock:
            self.resynced += started
        return started

    def in_flight(self) -> int:
        """Releases submitted and not yet done."""
        with self._lock:
            return len(self._in_flight)

    def stop(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _release(self, key: Key, obj: dict[str, Any]) -> None:
        try:
            for _ in range(MAX_ATTEMPTS):
                try:
                    self._client.patch_status(
                        WORKLOADS, key[1], release_patch(obj, datetime.now(UTC)), key[0], patch_type="merge"
                    )
                except Conflict:
                    fresh = self._client.get(WORKLOADS, key[1], key[0])
                    if fresh is None or not needs_release(fresh):
                        return
                    obj = fresh
                    continue
                with self._lock:
                    self.completed += 1
                return
            with self._lock:
                self.errors += 1
            log.warning("releasing evicted %s/%s: still conflicting after %d attempts", *key, MAX_ATTEMPTS)
        except NotFound:
            pass
        except ApiError as err:
            with self._lock:
                self.errors += 1
            log.warning("releasing evicted %s/%s failed: %s", key[0], key[1], err)
        finally:
            self._done(key)

    def _done(self, key: Key) -> None:
        """The release of ``key`` ended: release again if a version offered meanwhile needs it."""
        with self._lock:
            latest = self._again.pop(key, None)
            if latest is None or not needs_release(latest):
                self._in_flight.discard(key)
                return
        try:
            self._pool.submit(self._release, key, latest)
        except RuntimeError:  # stopped: the run is over
            with self._lock:
                self._in_flight.discard(key)
