"""Release of the ``kueue.x-k8s.io/resource-in-use`` finalizer on ClusterQueues and ResourceFlavors.

The webhook adds the finalizer at creation so that deleting a queue or flavor that quota
accounting still depends on waits until it is no longer used (Kueue's ``pkg/controller/core/clusterqueue_controller.go`` and ``resourceflavor_controller.go``): a ClusterQueue is
released once no unfinished workload holds a reservation in it, a ResourceFlavor once no
ClusterQueue names it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from controller.core.queue_status import nominal_quotas
from controller.workload import view as wv
from pykueue.api.constants import RESOURCE_IN_USE_FINALIZER


def finalizers(obj: Mapping[str, Any]) -> list[str]:
    return [f for f in wv.as_list(wv.meta(obj).get("finalizers")) if isinstance(f, str)]


def release_patch(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """Merge patch dropping our finalizer (guarded by resourceVersion), or None if not held."""
    current = finalizers(obj)
    if RESOURCE_IN_USE_FINALIZER not in current:
        return None
    patch: dict[str, Any] = {
        "metadata": {"finalizers": [f for f in current if f != RESOURCE_IN_USE_FINALIZER]}
    }
    rv = wv.meta(obj).get("resourceVersion")
    if rv:
        patch["metadata"]["resourceVersion"] = rv
    return patch


def cluster_queue_releasable(cq: Mapping[str, Any], reserving: Iterable[Mapping[str, Any]]) -> bool:
    """Being deleted, and no unfinished workload holds quota in it."""
    if not wv.meta(cq).get("deletionTimestamp"):
        return False
    return not any(wv.has_reservation(wl) and not wv.is_finished(wl) for wl in reserving)


def flavor_releasable(flavor: Mapping[str, Any], cluster_queues: Iterable[Mapping[str, Any]]) -> bool:
    """Being deleted, and no ClusterQueue names it in its resource groups."""
    if not wv.meta(flavor).get("deletionTimestamp"):
        return False
    name = wv.name(flavor)
    return not any(name in nominal_quotas(wv.spec(cq)) for cq in cluster_queues)
