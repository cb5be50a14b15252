"""A preemption candidate: an admitted workload that evicting could free quota from, shared by
the classical search (``preemption``) and the fair sharing one (``fair_preemption``)."""

from __future__ import annotations

from dataclasses import dataclass

from pykueue.api import constants as c

from . import quota
from .records import FlavorResource, WorkloadInfo


@dataclass(slots=True)
class Candidate:
    info: WorkloadInfo
    cluster_queue: str
    node: quota.QuotaNode
    same_queue: bool
    reason: str = c.REASON_IN_CLUSTER_QUEUE
    # Cross-queue candidates: the Cohort the candidate's queue shares with the preemptor's, and
    # whether it may only be taken while the preemptor stays within its nominal quota.
    lca: quota.QuotaNode | None = None
    without_borrowing_only: bool = False

def uses_any(info: WorkloadInfo, frs: set[FlavorResource]) -> bool:
    """Whether ``info`` holds quota of one of ``frs`` (asked of every admitted workload of the
    queues a preemption search walks, hence the set operation rather than a generator)."""
    admission = info.admission
    if admission is None:
        return False
    return not admission.usage.keys().isdisjoint(frs)
