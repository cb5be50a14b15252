"""The value objects a workload decision produces: what to write, which Events, when to look again.

A :class:`WorkloadPlan` is data only; :mod:`controller.workload.patches` turns it into one status
merge patch (and, for deactivation, one spec patch), so the decision logic never touches the API.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

EVENT_NORMAL: Final = "Normal"
EVENT_WARNING: Final = "Warning"


class _Unset:
    """Marker for "leave this status field alone" (``None`` means "clear it")."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = _Unset()


@dataclass(frozen=True, slots=True)
class ConditionSpec:
    """A condition to set; observedGeneration and lastTransitionTime are filled when applied."""

    type: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class EventSpec:
    type: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Eviction:
    """Why a workload lost (or is losing) its quota, for metrics and the eviction Event."""

    cluster_queue: str
    reason: str
    underlying_cause: str = ""


@dataclass(slots=True)
class WorkloadPlan:
    """Everything one reconcile wants to change on a Workload."""

    set_conditions: list[ConditionSpec] = field(default_factory=list)
    remove_conditions: list[str] = field(default_factory=list)
    admission: Any = UNSET
    admission_checks: Any = UNSET
    requeue_state: Any = UNSET
    # status.accumulatedPastExexcutionTimeSeconds (v1beta1 keeps Kueue's typo in the field name)
    accumulated_execution_seconds: Any = UNSET
    deactivate: bool = False
    events: list[EventSpec] = field(default_factory=list)
    requeue_after: float | None = None
    eviction: Eviction | None = None
    newly_admitted: bool = False
    # status.flavorAssignmentHistory (ResourceFlavor fallbacks, docs/design/fallbacks.md)
    flavor_assignment_history: Any = UNSET
    # The fallback trigger record to write to the annotation C.FLAVOR_FALLBACK_TRIGGERS_ANNOTATION
    # (flavor -> trigger; empty: remove it), only when it changes. Metadata, not status: written
    # after the status patch, best effort (docs/design/fallbacks.md "Which trigger ended each flavor").
    flavor_fallback_triggers: Any = UNSET
    # (ClusterQueue, flavor, trigger) of every flavor that fell back, for the metric
    fallbacks: list[tuple[str, str, str]] = field(default_factory=list)

    def has_status_changes(self) -> bool:
        return bool(
            self.set_conditions
            or self.remove_conditions
            or self.admission is not UNSET
            or self.admission_checks is not UNSET
            or self.requeue_state is not UNSET
            or self.accumulated_execution_seconds is not UNSET
            or self.flavor_assignment_history is not UNSET
        )

    def is_noop(self) -> bool:
        return not (
            self.has_status_changes()
            or self.deactivate
            or self.events
            or self.flavor_fallback_triggers is not UNSET
        )

    def wake_in(self, seconds: float) -> None:
        """Ask to be reconciled again after ``seconds`` (keeps the earliest request)."""
        seconds = max(0.0, seconds)
        if self.requeue_after is None or seconds < self.requeue_after:
            self.requeue_after = seconds
