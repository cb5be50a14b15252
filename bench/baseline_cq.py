"""ClusterQueue utilisation the way Kueue's scheduler benchmark computes it.

Our headline utilisation (:mod:`bench.baseline_report`) integrates each workload's own admitted
time. Kueue's published 55.9 % comes from a different instrument: its runner's recorder watches
the ClusterQueues and, per ClusterQueue, integrates the CPU usage the *ClusterQueue status*
reports between consecutive status events. The two differ on purpose:

* the status usage includes quota borrowed from the cohort and the time workloads hold quota
  after they were preempted (until their reservation is cleared), so it is not capped at
  nominal the way a per-workload view of "nominal x wall" reads;
* the time base is the ClusterQueue event window (first to last status event of the class),
  not our wall (first create sent to last Finished).

To compare with Kueue's anchor, the benchmark therefore records both. This module is the
recorder side: :class:`ClusterQueueRecorder` turns ClusterQueue watch events into per-queue
integrals, and :func:`class_summaries` reduces them per ClusterQueue class exactly as Kueue's
``CQGroupSummary`` does (usage summed, nominal quota summed, window from the earliest first
event to the latest last event). Kueue truncates times to whole milliseconds and the average to
whole milli-CPU; we keep fractions, which moves the percentage by far less than its last digit.

Kueue stops recording once generation is done and no active ClusterQueue reports pending or
reserving workloads; :meth:`ClusterQueueRecorder.observe` does the same (later events, such as
status rewrites while the run's objects are deleted, no longer extend the window).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pykueue.api import constants as C
from pykueue.api.quantity import QuantityError, parse_quantity

from .baseline_shape import CLASS_LABEL

# The class of a ClusterQueue without the class label (the baseline's 30 queues are one class).
DEFAULT_CQ_CLASS = "all"


@dataclass(frozen=True)
class ClusterQueueEvent:
    """What Kueue's recorder reads from one watched version of a ClusterQueue."""

    name: str
    class_name: str
    usage_mcpu: int  # status.flavorsUsage[0].resources[0].total
    nominal_mcpu: int  # spec.resourceGroups[0].flavors[0].resources[0].nominalQuota
    pending: int
    reserving: int
    active: bool


@dataclass
class ClusterQueueState:
    """One ClusterQueue's integral so far; times are the recorder clock's seconds."""

    first_event_at: float
    last_event_at: float
    last: ClusterQueueEvent
    used_mcpu_s: float = 0.0
    max_usage_mcpu: int = 0
    events: int = 1


def _field(obj: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """``obj[name]`` when it is a mapping, else an empty mapping."""
    value = obj.get(name)
    return value if isinstance(value, Mapping) else {}


def _first(value: Any) -> Mapping[str, Any]:
    """``value[0]`` when ``value`` is a non-empty list of mappings, else an empty mapping."""
    if isinstance(value, list) and value and isinstance(value[0], Mapping):
        return value[0]
    return {}


def _milli_cpu(value: Any) -> int:
    """A quantity in milli-units; anything unparsable counts as zero (never crash a run)."""
    if value is None:
        return 0
    try:
        return parse_quantity(value, "cpu")
    except (QuantityError, TypeError, ValueError):
        return 0


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def read_event(obj: Mapping[str, Any]) -> ClusterQueueEvent:
    """The recorder's view of one ClusterQueue object (first flavor, first resource, as Kueue)."""
    meta = _field(obj, "metadata")
    spec = _field(obj, "spec")
    status = _field(obj, "status")
    labels = _field(meta, "labels")
    conditions = status.get("conditions")
    usage = _first(_first(status.get("flavorsUsage")).get("resources")).get("total")
    nominal = _first(_first(_first(spec.get("resourceGroups")).get("flavors")).get("resources")).get("nominalQuota")
    active = any(
        isinstance(cond, Mapping) and cond.get("type") == C.COND_ACTIVE and cond.get("status") == "True"
        for cond in (conditions if isinstance(conditions, list) else [])
    )
    return ClusterQueueEvent(
        name=str(meta.get("name", "")),
        class_name=str(labels.get(CLASS_LABEL) or DEFAULT_CQ_CLASS),
        usage_mcpu=_milli_cpu(usage),
        nominal_mcpu=_milli_cpu(nominal),
        pending=_count(status.get("pendingWorkloads")),
        reserving=_count(status.get("reservingWorkloads")),
        active=active,
    )


class ClusterQueueRecorder:
    """Integrates ClusterQueue status usage over watch events; thread-safe.

    ``generation_done`` is set by the load generator once every create was sent; from then on
    the first event after which no active ClusterQueue has pending or reserving workloads ends
    the recording (:attr:`done` is set), as Kueue's recorder ends its run.
    """

    def __init__(
        self, generation_done: threading.Event | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.queues: dict[str, ClusterQueueState] = {}
        self.done = threading.Event()
        self._generation_done = generation_done or threading.Event()
        self._clock = clock
        self._lock = threading.Lock()

    def observe(self, obj: Mapping[str, Any]) -> None:
        """Apply one watched version of a ClusterQueue (add or update)."""
        now = self._clock()
        event = read_event(obj)
        with self._lock:
            if self.done.is_set():
                return
            state = self.queues.get(event.name)
            if state is None:
                self.queues[event.name] = ClusterQueueState(now, now, event, max_usage_mcpu=event.usage_mcpu)
            else:
                # Kueue: the previous event's usage held from the previous event until this one.
                state.used_mcpu_s += state.last.usage_mcpu * max(0.0, now - state.last_event_at)
                state.last, state.last_event_at = event, now
                state.max_usage_mcpu = max(state.max_usage_mcpu, event.usage_mcpu)
                state.events += 1
            if self._generation_done.is_set() and not self._expect_more_events():
                self.done.set()

    def _expect_more_events(self) -> bool:
        return any((s.last.pending > 0 or s.last.reserving > 0) and s.last.active for s in self.queues.values())

    def snapshot(self) -> dict[str, ClusterQueueState]:
        with self._lock:
            return {
                name: ClusterQueueState(s.first_event_at, s.last_event_at, s.last, s.used_mcpu_s,
                                        s.max_usage_mcpu, s.events)
                for name, s in self.queues.items()
            }


def class_summaries(queues: Mapping[str, ClusterQueueState]) -> dict[str, dict[str, Any]]:
    """Per ClusterQueue class, Kueue's ``CQGroupSummary`` and the utilisation derived from it:
    ``average usage = used ÷ window`` and ``utilisation = average usage ÷ summed nominal``."""
    groups: dict[str, list[ClusterQueueState]] = {}
    for state in queues.values():
        groups.setdefault(state.last.class_name, []).append(state)
    summaries: dict[str, dict[str, Any]] = {}
    for class_name, states in sorted(groups.items()):
        used = sum(s.used_mcpu_s for s in states)
        nominal = sum(s.last.nominal_mcpu for s in states)
        window = max(s.last_event_at for s in states) - min(s.first_event_at for s in states)
        average = used / window if window > 0 else None
        utilisation = 100.0 * average / nominal if average is not None and nominal > 0 else None
        summaries[class_name] = {
            "cluster_queues": len(states),
            "status_events": sum(s.events for s in states),
            "cpu_used_mcpu_s": round(used, 1),
            "nominal_quota_mcpu": nominal,
            "window_s": round(window, 3),
            "average_usage_mcpu": None if average is None else round(average, 1),
            "max_usage_mcpu": max(s.max_usage_mcpu for s in states),
            "utilisation_pct": None if utilisation is None else round(utilisation, 1),
        }
    return summaries


def overall_utilisation_pct(summaries: Mapping[str, Mapping[str, Any]]) -> float | None:
    """The single figure to print beside Kueue's anchor: the class's utilisation when there is
    one class (the baseline), else usage-weighted over classes (None when nothing was seen)."""
    if len(summaries) == 1:
        (only,) = summaries.values()
        value = only.get("utilisation_pct")
        return float(value) if isinstance(value, int | float) else None
    averages = [s for s in summaries.values() if isinstance(s.get("average_usage_mcpu"), int | float)]
    nominal = sum(s["nominal_quota_mcpu"] for s in averages)
    if not averages or nominal <= 0:
        return None
    return round(100.0 * sum(s["average_usage_mcpu"] for s in averages) / nominal, 1)
