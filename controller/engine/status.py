"""ClusterQueue and LocalQueue status figures computed from the engine's state.

Called when the controller refreshes a queue's status (rate-limited by the controller), never in
the scheduling cycle; the cost is O(workloads holding quota in that queue).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pykueue.api import constants as c
from pykueue.api.quantity import format_quantity

from .records import FlavorResource, WorkloadInfo, object_key

if TYPE_CHECKING:
    from .engine import Engine


@dataclass(slots=True)
class ClusterQueueStatus:
    active: bool
    reason: str  # Active condition reason (Ready, Stopped, FlavorNotFound, ...)
    message: str
    pending_workloads: int
    reserving_workloads: int
    admitted_workloads: int
    flavors_reservation: list[dict[str, Any]] = field(default_factory=list)
    flavors_usage: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class LocalQueueStatus:
    active: bool
    reason: str  # Ready | Stopped | ClusterQueueDoesNotExist | ClusterQueueIsInactive
    message: str
    pending_workloads: int
    reserving_workloads: int
    admitted_workloads: int
    flavors_reservation: list[dict[str, Any]] = field(default_factory=list)
    flavors_usage: list[dict[str, Any]] = field(default_factory=list)


def _sum_usage(workloads: list[WorkloadInfo], admitted_only: bool) -> dict[FlavorResource, int]:
    total: dict[FlavorResource, int] = {}
    for info in workloads:
        admission = info.admission
        if admission is None or (admitted_only and not admission.admitted):
            continue
        for fr, amount in admission.usage.items():
            total[fr] = total.get(fr, 0) + amount
    return total


def _flavor_list(
    engine: Engine, cluster_queue: str, usage: dict[FlavorResource, int], with_borrowed: bool
) -> list[dict[str, Any]]:
    """Kueue lists every flavor/resource of the queue's spec, in spec order, zeros included."""
    spec = engine.cluster_queues.get(cluster_queue)
    if spec is None:
        return []
    result = []
    for group in spec.groups:
        for fq in group.flavors:
            resources = []
            for resource in group.covered:
                total = usage.get((fq.name, resource), 0)
                entry: dict[str, Any] = {"name": resource, "total": format_quantity(total, resource)}
                if with_borrowed:
                    nominal = fq.quotas[resource].nominal if resource in fq.quotas else 0
                    entry["borrowed"] = format_quantity(max(0, total - nominal), resource)
                resources.append(entry)
            result.append({"name": fq.name, "resources": resources})
    return result


def cluster_queue_status(engine: Engine, name: str) -> ClusterQueueStatus | None:
    if name not in engine.cluster_queues:
        return None
    holders = list(engine.admitted.get(name, {}).values())
    inactive = engine.inactive.get(name)
    return ClusterQueueStatus(
        active=inactive is None,
        reason=inactive[0] if inactive else c.REASON_READY,
        message=inactive[1] if inactive else "Can admit new workloads",
        pending_workloads=engine.pending_count(name),
        reserving_workloads=len(holders),
        admitted_workloads=sum(1 for w in holders if w.admission is not None and w.admission.admitted),
        flavors_reservation=_flavor_list(engine, name, _sum_usage(holders, False), True),
        flavors_usage=_flavor_list(engine, name, _sum_usage(holders, True), True),
    )


def local_queue_status(engine: Engine, namespace: str, name: str) -> LocalQueueStatus | None:
    lq = engine.local_queues.get(object_key(namespace, name))
    if lq is None:
        return None
    holders = [
        w for w in engine.admitted.get(lq.cluster_queue, {}).values() if w.namespace == namespace and w.queue_name == name
    ]
    if lq.stop_policy != c.STOP_POLICY_NONE:
        active, reason, message = False, c.REASON_CQ_STOPPED, "LocalQueue is stopped"
    elif lq.cluster_queue not in engine.cluster_queues:
        active, reason, message = False, c.REASON_CLUSTER_QUEUE_DOES_NOT_EXIST, "Can't submit new workloads to clusterQueue"
    elif not engine.is_active(lq.cluster_queue):
        active, reason, message = False, c.REASON_CLUSTER_QUEUE_IS_INACTIVE, "Can't submit new workloads to clusterQueue"
    else:
        active, reason, message = True, c.REASON_READY, "Can submit new workloads to localQueue"
    return LocalQueueStatus(
        active=active,
        reason=reason,
        message=message,
        pending_workloads=engine.pending_in_local_queue(lq.key),
        reserving_workloads=len(holders),
        admitted_workloads=sum(1 for w in holders if w.admission is not None and w.admission.admitted),
        flavors_reservation=_flavor_list(engine, lq.cluster_queue, _sum_usage(holders, False), False),
        flavors_usage=_flavor_list(engine, lq.cluster_queue, _sum_usage(holders, True), False),
    )
