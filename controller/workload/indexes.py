"""Secondary indexes the core controllers add to the shared informers.

They turn "this LocalQueue/ClusterQueue/priority class changed" into the workloads to look at
without scanning every workload.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

from controller.runtime.store import IndexFunc, StoreReader
from controller.workload import view as wv


class InformerLike(Protocol):
    """What the core controllers use of an informer (the runtime's ``Informer``, or a test fake)."""

    @property
    def store(self) -> StoreReader: ...

    def add_indexer(self, name: str, func: IndexFunc) -> None: ...

    def add_handler(self, handler: Any, *, resync: bool = False) -> None: ...


class ApiClient(Protocol):
    """What the core controllers use of :class:`pykueue.kube.client.KubeClient`."""

    def get(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any] | None: ...

    def patch(
        self, res: Any, name: str, patch: Any, namespace: str | None = None, **kw: Any
    ) -> dict[str, Any]: ...

    def patch_status(
        self, res: Any, name: str, patch: Any, namespace: str | None = None, **kw: Any
    ) -> dict[str, Any]: ...


WORKLOAD_BY_QUEUE = "core/by-local-queue"  # "namespace/localqueue"
WORKLOAD_BY_ADMITTED_CQ = "core/by-admitted-cluster-queue"  # cluster queue name
WORKLOAD_BY_PRIORITY_CLASS = "core/by-priority-class"  # priority class name
LOCAL_QUEUE_BY_CQ = "core/by-cluster-queue"  # cluster queue name


def workload_by_queue(obj: dict[str, Any]) -> list[str]:
    queue = wv.queue_name(obj)
    return [f"{wv.namespace(obj)}/{queue}"] if queue else []


def workload_by_admitted_cq(obj: dict[str, Any]) -> list[str]:
    cq = wv.admitted_cluster_queue(obj)
    return [cq] if cq else []


def workload_by_priority_class(obj: dict[str, Any]) -> list[str]:
    name = wv.priority_class_name(obj)
    return [name] if name else []


def local_queue_by_cq(obj: dict[str, Any]) -> list[str]:
    cq = wv.spec(obj).get("clusterQueue")
    return [cq] if isinstance(cq, str) and cq else []


def add_workload_indexes(informer: InformerLike) -> None:
    """Idempotent: a second controller sharing the informer may call it again."""
    for name, func in (
        (WORKLOAD_BY_QUEUE, workload_by_queue),
        (WORKLOAD_BY_ADMITTED_CQ, workload_by_admitted_cq),
        (WORKLOAD_BY_PRIORITY_CLASS, workload_by_priority_class),
    ):
        with contextlib.suppress(KeyError, ValueError):
            informer.add_indexer(name, func)


def add_local_queue_indexes(informer: InformerLike) -> None:
    with contextlib.suppress(KeyError, ValueError):
        informer.add_indexer(LOCAL_QUEUE_BY_CQ, local_queue_by_cq)


def cached_keys(informer: InformerLike) -> list[str]:
    """Every key in an informer's cache (a snapshot list, safe to iterate while it changes)."""
    keys: list[str] = informer.store.keys()
    return keys
