"""What one scheduling cycle decided, for the controller to write through the API."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .records import ObjectKey


@dataclass(frozen=True, slots=True)
class Reservation:
    """Quota reserved for a workload; already *assumed* in the engine's cache.

    The controller patches ``status.admission`` (and ``QuotaReserved=True``; also ``Admitted=True``
    when ``admission_checks`` is empty) and then calls ``Engine.confirm(key)`` or, if the write
    failed, ``Engine.rollback(key)``.
    """

    workload: ObjectKey
    uid: str
    cluster_queue: str
    admission: dict[str, Any]  # Kueue's shape: {clusterQueue, podSetAssignments: [...]}
    admission_checks: tuple[str, ...]  # AdmissionCheckStates to add as Pending
    borrowing: bool
    message: str  # QuotaReserved=True message ("Quota reserved in ClusterQueue <cq>")
    # The ClusterQueue has a fallback strategy: the reservation also records the assigned flavors'
    # assignment time in status.flavorAssignmentHistory (docs/design/fallbacks.md).
    record_flavor_history: bool = False


@dataclass(frozen=True, slots=True)
class Preemption:
    """Evict ``victim`` (Evicted=True reason Preempted, Preempted=True with ``reason``)."""

    victim: ObjectKey
    victim_uid: str
    victim_cluster_queue: str
    preemptor: ObjectKey
    preemptor_cluster_queue: str
    reason: str  # InClusterQueue | InCohortReclamation | InCohortReclaimWhileBorrowing | InCohortFairSharing
    message: str


@dataclass(frozen=True, slots=True)
class PendingReason:
    """Set ``QuotaReserved=False`` with this reason and message (emitted only when it changed)."""

    workload: ObjectKey
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Eviction:
    """Evict an admitted workload for a reason other than preemption (stopPolicy HoldAndDrain)."""

    workload: ObjectKey
    reason: str  # ClusterQueueStopped | LocalQueueStopped
    message: str


@dataclass(slots=True)
class CycleResult:
    reservations: list[Reservation] = field(default_factory=list)
    preemptions: list[Preemption] = field(default_factory=list)
    pending: list[PendingReason] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    heads_tried: int = 0
    duration_seconds: float = 0.0
    # Admission fair sharing: LocalQueues whose usage was sampled in this cycle (their
    # status.fairSharing.admissionFairSharingStatus is due a write).
    afs_sampled: list[str] = field(default_factory=list)

    @property
    def admitted_anything(self) -> bool:
        """Kueue keeps cycling at once after a productive cycle and backs off otherwise."""
        return bool(self.reservations or self.preemptions)
