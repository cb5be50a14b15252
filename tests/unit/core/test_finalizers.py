"""resource-in-use finalizer release for ClusterQueues and ResourceFlavors."""

from __future__ import annotations

from controller.core import finalizers as fin
from tests.builders import ClusterQueueBuilder, ResourceFlavorBuilder, WorkloadBuilder

FINALIZER = "kueue.x-k8s.io/resource-in-use"


def _deleting(obj: dict) -> dict:
    obj["metadata"].update(
        deletionTimestamp="2026-01-01T00:00:00Z", finalizers=[FINALIZER, "other"], resourceVersion="9"
    )
    return obj


def test_cluster_queue_released_only_when_no_workload_holds_quota() -> None:
    cq = _deleting(ClusterQueueBuilder("cq").flavor("f", cpu="1").obj())
    holding = WorkloadBuilder("w").reserved("cq").obj()
    finished = WorkloadBuilder("d").reserved("cq").finished().obj()
    assert not fin.cluster_queue_releasable(cq, [holding, finished])
    assert fin.cluster_queue_releasable(cq, [finished])
    assert fin.release_patch(cq) == {"metadata": {"finalizers": ["other"], "resourceVersion": "9"}}


def test_live_objects_are_never_released() -> None:
    assert not fin.cluster_queue_releasable(ClusterQueueBuilder("cq").obj(), [])
    assert not fin.flavor_releasable(ResourceFlavorBuilder("f").obj(), [])


def test_flavor_released_when_no_cluster_queue_names_it() -> None:
    flavor = _deleting(ResourceFlavorBuilder("f").obj())
    assert not fin.flavor_releasable(flavor, [ClusterQueueBuilder("cq").flavor("f", cpu="1").obj()])
    assert fin.flavor_releasable(flavor, [ClusterQueueBuilder("cq").flavor("g", cpu="1").obj()])


def test_no_patch_without_our_finalizer() -> None:
    assert fin.release_patch(ResourceFlavorBuilder("f").obj()) is None
