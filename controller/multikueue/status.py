"""What the dispatch loop last saw of a manager Workload's workers, for ``explain``.

The dispatch loop (:mod:`.workload`) records, on every pass over a Workload with a MultiKueue
check, the facts it acted on: which workers the check's MultiKueueConfig lists, whether each is
active, nominated, holds our copy, and whether that copy reserved quota or was admitted there;
which worker won (``status.clusterName``) and whether the Job was created on it. The visibility
API's ``explain`` (docs/design/visibility.md) shows that record: it is the controller's own state,
not a second reading of the workers, so the answer says why the controller does what it does.
The record lives in memory and is dropped when the Workload leaves MultiKueue's hands (deleted,
finished, evicted); a Workload not yet looked at since this replica became leader has none.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class WorkerState:
    """One worker as the last pass saw it. ``copy`` is ``None`` when the worker could not be read
    (inactive); ``job`` is ``None`` until a winner exists (no Job is created before)."""

    name: str
    active: bool
    nominated: bool
    copy: bool | None
    quota_reserved: bool = False
    admitted: bool = False
    job: bool | None = None


@dataclass(frozen=True, slots=True)
class DispatchState:
    check: str
    dispatcher: str  # AllAtOnce, Incremental, External
    cluster_name: str  # the worker that runs it ("" while none won)
    workers: tuple[WorkerState, ...]
    observed_at: str  # when the pass ran (RFC 3339)


def _worker_phrase(w: WorkerState) -> str:
    if not w.active:
        return f"{w.name} is inactive" + (" (nominated)" if w.nominated else "")
    if w.copy is None or not w.copy:
        return f"{w.name} has no copy" + ("" if w.nominated else " (not nominated)")
    if w.admitted:
        return f"{w.name} admitted its copy"
    if w.quota_reserved:
        return f"{w.name} reserved quota for its copy"
    return f"{w.name} holds a pending copy"


def sentence(state: DispatchState) -> str:
    """One line for ``explain``'s suggestion."""
    if state.cluster_name:
        winner = next((w for w in state.workers if w.name == state.cluster_name), None)
        if winner is not None and not winner.active:
            return (f"MultiKueue dispatched it to {state.cluster_name}, which is inactive: it is requeued if the "
                    "worker stays away longer than workerLostTimeout")
        job = "its Job runs there" if winner is None or winner.job else "its Job is being created there"
        return f"MultiKueue dispatched it to {state.cluster_name}; {job}"
    if not state.workers:
        return f"MultiKueue check {state.check}: its MultiKueueConfig lists no workers"
    phrases = "; ".join(_worker_phrase(w) for w in state.workers)
    nominated = [w.name for w in state.workers if w.nominated]
    if not nominated:
        return f"MultiKueue ({state.dispatcher}) has nominated no worker yet: {phrases}"
    return (f"MultiKueue ({state.dispatcher}) nominated {', '.join(nominated)}: {phrases}; the first nominated "
            "worker to reserve quota for its copy runs it")


def to_dict(state: DispatchState) -> dict[str, Any]:
    """The ``multiKueue`` section of a ``WorkloadExplanation``."""
    return {
        "admissionCheck": state.check,
        "dispatcher": state.dispatcher,
        "clusterName": state.cluster_name,
        "observedAt": state.observed_at,
        "workers": [
            {"name": w.name, "active": w.active, "nominated": w.nominated, "copy": w.copy,
             "quotaReserved": w.quota_reserved, "admitted": w.admitted}
            | ({"job": w.job} if w.job is not None else {})
            for w in state.workers
        ],
    }  # fmt: skip


class DispatchStates:
    """The last record per manager Workload key (thread-safe: the loop's workers write, the
    visibility server's threads read)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[str, DispatchState] = {}

    def record(self, key: str, state: DispatchState) -> None:
        with self._lock:
            self._states[key] = state

    def forget(self, key: str) -> None:
        with self._lock:
            self._states.pop(key, None)

    def get(self, key: str) -> DispatchState | None:
        with self._lock:
            return self._states.get(key)
