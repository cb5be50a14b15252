"""Garbage collection of orphans on workers, every ``gcInterval``.

A remote Workload or Job carrying this manager's origin label whose Workload is gone from the
manager (deleted while the worker was unreachable, or while this controller was down) is
deleted, as Kueue's ``multikueuecluster.go`` does from its garbage-collection loop. Workloads of
another origin (another manager sharing the worker) are never touched.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from controller.runtime.informer import Informer
from controller.runtime.periodic import PeriodicRunnable
from pykueue.api import constants as C
from pykueue.kube import resources as R
from pykueue.kube.errors import ApiError

from .clusters import Registry
from .workload import delete_remote

log = logging.getLogger(__name__)


def orphans(remote_keys: list[tuple[str, str]], local_exists: Callable[[str], bool]) -> list[tuple[str, str]]:
    """The (namespace, name) pairs of remote objects whose manager Workload no longer exists."""
    return [(ns, name) for ns, name in remote_keys if not local_exists(f"{ns}/{name}")]


class GarbageCollector(PeriodicRunnable):
    """A leader-only thread running :meth:`collect` every ``interval`` seconds (0 disables it)."""

    name = "multikueue-garbage-collector"

    def __init__(self, workloads: Informer, registry: Registry, *, origin: str, interval: float) -> None:
        super().__init__(interval, join_timeout=10)
        self.workloads = workloads
        self.registry = registry
        self.origin = origin

    def tick(self) -> int:
        return self.collect()

    def collect(self) -> int:
        """One sweep over every active worker; the number of orphans deleted."""
        deleted = 0
        selector = f"{C.MULTIKUEUE_ORIGIN_LABEL}={self.origin}"
        for cluster in self.registry.names():
            client = self.registry.active_client(cluster)
            if client is None:
                continue
            try:
                keys = set()
                for res in (R.WORKLOADS, R.JOBS):
                    for item in client.list(res, label_selector=selector).get("items") or []:
                        meta = item.get("metadata") or {}
                        name = meta.get("name") if res is R.WORKLOADS else (meta.get("labels") or {}).get(
                            C.PREBUILT_WORKLOAD_LABEL)  # fmt: skip
                        if name:
                            keys.add((str(meta.get("namespace")), str(name)))
                for namespace, name in orphans(sorted(keys), lambda k: self.workloads.store.get(k) is not None):
                    delete_remote(client, namespace, name, self.origin)
                    deleted += 1
                    log.info("deleted orphan", extra={"multiKueueCluster": cluster, "workload": f"{namespace}/{name}"})
            except ApiError as err:
                log.info("garbage collection failed", extra={"multiKueueCluster": cluster, "error": str(err)})
        return deleted
