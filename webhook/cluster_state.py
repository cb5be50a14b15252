"""Read-only view of the cluster objects the Job hooks consult, with a small TTL cache.

The Job hooks need a handful of objects (the namespace's labels, a LocalQueue, its ClusterQueue and
that queue's cohort). The apiserver's webhook timeout is 10 s by default and every Job create goes
through here, so reads are cached for a few seconds per gunicorn worker instead of running an
informer per worker process (an informer per worker would hold a watch per process and warm up on every restart): objects that are missing are
cached for a shorter time so a LocalQueue created just before a Job is seen at once.

:class:`ClusterState` is the interface the rules use; :class:`KubeClusterState` implements it with
``pykueue.kube.client`` (the only module that talks to the API). Unit tests pass a dict-backed fake.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from pykueue.kube import resources as r
from pykueue.kube.client import KubeClient
from pykueue.kube.errors import Forbidden

log = logging.getLogger("pykueue.webhook.cluster_state")

Obj = dict[str, Any]


class ClusterState(Protocol):
    def namespace(self, name: str) -> Obj | None: ...

    def local_queue(self, namespace: str, name: str) -> Obj | None: ...

    def cluster_queue(self, name: str) -> Obj | None: ...

    def cluster_queues(self) -> list[Obj]: ...

    def cohort(self, name: str) -> Obj | None: ...

    def job(self, namespace: str, name: str) -> Obj | None: ...

    def workload_priority_class(self, name: str) -> Obj | None: ...

    def admission_check(self, name: str) -> Obj | None: ...


class TTLCache:
    """Values by key for ``ttl`` seconds (``negative_ttl`` for ``None``), shared by a worker's threads."""

    def __init__(self, ttl: float, negative_ttl: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._negative_ttl = negative_ttl
        self._clock = clock
        self._entries: dict[tuple[str, ...], tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get_or_load(self, key: tuple[str, ...], load: Callable[[], Any]) -> Any:
        now = self._clock()
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None and entry[0] > now:
            return entry[1]
        value = load()
        lifetime = self._ttl if value is not None else self._negative_ttl
        with self._lock:
            self._entries[key] = (now + lifetime, value)
        return value


class KubeClusterState:
    """:class:`ClusterState` over a :class:`KubeClient`, created lazily (after gunicorn forks)."""

    def __init__(
        self,
        client_factory: Callable[[], KubeClient],
        *,
        ttl: float = 5.0,
        negative_ttl: float = 1.0,
    ) -> None:
        self._client_factory = client_factory
        self._client: KubeClient | None = None
        self._client_lock = threading.Lock()
        self._cache = TTLCache(ttl, negative_ttl)

    @property
    def client(self) -> KubeClient:
        with self._client_lock:
            if self._client is None:
                self._client = self._client_factory()
            return self._client

    def _get(self, res: r.Resource, name: str, namespace: str | None = None) -> Obj | None:
        key = (res.plural, namespace or "", name)
        return self._cache.get_or_load(key, lambda: self.client.get(res, name, namespace))

    def namespace(self, name: str) -> Obj | None:
        return self._get(r.NAMESPACES, name)

    def local_queue(self, namespace: str, name: str) -> Obj | None:
        return self._get(r.LOCAL_QUEUES, name, namespace)

    def cluster_queue(self, name: str) -> Obj | None:
        return self._get(r.CLUSTER_QUEUES, name)

    def cluster_queues(self) -> list[Obj]:
        def load() -> list[Obj]:
            items, _ = self.client.list_all(r.CLUSTER_QUEUES)
            return items

        return self._cache.get_or_load(("clusterqueues", "", "*"), load)

    def cohort(self, name: str) -> Obj | None:
        return self._get(r.COHORTS, name)

    def job(self, namespace: str, name: str) -> Obj | None:
        return self._get(r.JOBS, name, namespace)

    # The two reads below serve optional defaulting steps (default priority class, MultiKueue's
    # managedBy). Without RBAC for them the step is skipped and logged, rather than every Job
    # create in the cluster being denied.
    def workload_priority_class(self, name: str) -> Obj | None:
        return self._optional(r.WORKLOAD_PRIORITY_CLASSES, name)

    def admission_check(self, name: str) -> Obj | None:
        return self._optional(r.ADMISSION_CHECKS, name)

    def _optional(self, res: r.Resource, name: str) -> Obj | None:
        try:
            return self._get(res, name)
        except Forbidden:
            log.error("the webhook may not read %s; skipping the defaulting that needs them", res, exc_info=True)
            return None
