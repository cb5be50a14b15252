"""Pending workloads of a ClusterQueue in scheduling order, with positions and last reason.

The data behind Kueue's visibility API (``pendingworkloads``) and a future "why is my workload
pending" command. Computed on request in O(n log n) for the queue asked about; never used by the
scheduling cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .queues import PendingQueue
from .records import ObjectKey


@dataclass(frozen=True, slots=True)
class PendingWorkload:
    workload: ObjectKey
    local_queue: str
    priority: int
    position_in_cluster_queue: int  # 0-based, in the order the scheduler considers them
    position_in_local_queue: int
    parked: bool  # inadmissible until a requeue (BestEffortFIFO), not tried every cycle
    reason: str  # last QuotaReserved=False reason the engine saw or emitted ("" if none)
    message: str


def pending_workloads(
    queue: PendingQueue,
    last_reason: Callable[[ObjectKey], tuple[str, str]],
    *,
    offset: int = 0,
    limit: int | None = None,
) -> list[PendingWorkload]:
    """Workloads of ``queue`` ordered by priority then queue timestamp (parked ones included, as
    Kueue lists its inadmissible workloads too), each with ``last_reason(key)``; ``offset`` and
    ``limit`` page."""
    ordered = sorted(queue.workloads(), key=lambda info: info.order_key)
    per_local_queue: dict[str, int] = {}
    result: list[PendingWorkload] = []
    for position, info in enumerate(ordered):
        lq_position = per_local_queue.get(info.queue_name, 0)
        per_local_queue[info.queue_name] = lq_position + 1
        if position < offset or (limit is not None and len(result) >= limit):
            continue
        reason, message = last_reason(info.key)
        result.append(
            PendingWorkload(
                workload=info.key,
                local_queue=info.queue_name,
                priority=info.priority,
                position_in_cluster_queue=position,
                position_in_local_queue=lq_position,
                parked=queue.is_parked(info),
                reason=reason,
                message=message,
            )
        )
    return result
