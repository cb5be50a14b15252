"""Watches on every connected worker, feeding the dispatch loop's queue.

Kueue keeps a watch per worker on the remote Workloads and on the remote objects of each job
integration (``multikueuecluster.go``: ``remoteClient.startWatcher``) and maps every remote event
to the manager's Workload of the same name. pykueue does the same for Workloads and batch Jobs
with this manager's origin label: a remote Workload ``ns/name`` wakes the manager's ``ns/name``;
a remote Job wakes the Workload its ``kueue.x-k8s.io/prebuilt-workload-name`` label names.

The watches follow the worker's client: :meth:`RemoteWatches.connected` (the cluster controller
calls it on every successful probe) starts them on a new or rebuilt client, and
:meth:`RemoteWatches.disconnected` stops them when the worker turns inactive or goes away. A
reconnect lists everything again, so every Workload with a remote object is looked at once more;
the dispatch loop also resyncs each Workload in flight slowly (``Settings.resync_interval``) as a
safety net, and polls fast (``Settings.poll_interval``) a Workload any of whose workers has no
synced watch.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.runtime.informer import FuncHandler, Informer
from pykueue.api import constants as C
from pykueue.kube import resources as R

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Enqueue = Callable[[str], None]
InformerFactory = Callable[..., Informer]


def workload_key_of_remote(resource: R.Resource, obj: Obj) -> str | None:
    """The manager Workload a remote object belongs to (``None``: not one of ours)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    if resource == R.JOBS:
        name = (meta.get("labels") or {}).get(C.PREBUILT_WORKLOAD_LABEL)
        return f"{namespace}/{name}" if name else None
    return f"{namespace}/{meta.get('name')}" if meta.get("name") else None


class NoCache:
    """The answer of :meth:`RemoteWatches.cached` when only a live read can tell."""


NO_CACHE = NoCache()


@dataclass
class _Watch:
    client: Any
    informers: list[Informer]

    def synced(self) -> bool:
        return all(i.has_synced() for i in self.informers)


class RemoteWatches:
    """One Workload watch and one Job watch per connected worker (thread-safe)."""

    def __init__(self, origin: str, *, informer_factory: InformerFactory = Informer) -> None:
        self._selector = f"{C.MULTIKUEUE_ORIGIN_LABEL}={origin}"
        self._factory = informer_factory
        self._lock = threading.Lock()
        self._watches: dict[str, _Watch] = {}
        self._enqueue: Enqueue | None = None

    def feed(self, enqueue: Enqueue) -> None:
        """Where remote events go (the dispatch loop's queue)."""
        self._enqueue = enqueue

    def connected(self, cluster: str, client: Any) -> None:
        """The worker answers with ``client``: watch it, unless already watched through it."""
        with self._lock:
            current = self._watches.get(cluster)
            if current is not None and current.client is client:
                return
            stale = self._watches.pop(cluster, None)
            fresh = _Watch(client, [self._informer(client, res) for res in (R.WORKLOADS, R.JOBS)])
            self._watches[cluster] = fresh
        if stale is not None:
            _stop_later(cluster, stale)
        for informer in fresh.informers:
            informer.start()
        log.info("watching worker", extra={"multiKueueCluster": cluster})

    def disconnected(self, cluster: str) -> None:
        """The worker is inactive or gone: stop its watches (a reconnect starts new ones)."""
        with self._lock:
            stale = self._watches.pop(cluster, None)
        if stale is not None:
            _stop_later(cluster, stale)

    def synced(self, cluster: str) -> bool:
        """Whether ``cluster``'s watches are running and have listed once (its events arrive)."""
        with self._lock:
            watch = self._watches.get(cluster)
        return watch is not None and watch.synced()

    def cached(self, cluster: str, client: Any, resource: R.Resource, namespace: str, name: str) -> Obj | NoCache | None:
        """The watched copy of a remote object (``None``: the worker has none of ours), or
        :data:`NO_CACHE` when the worker is not watched through ``client`` or has not listed
        yet. Never modify the returned object: it is the cache's."""
        with self._lock:
            watch = self._watches.get(cluster)
        if watch is None or watch.client is not client or not watch.synced():
            return NO_CACHE
        informer = watch.informers[0 if resource == R.WORKLOADS else 1]
        return informer.store.get(f"{namespace}/{name}")

    def stop(self) -> None:
        with self._lock:
            watches, self._watches = self._watches, {}
        for cluster, watch in watches.items():
            _stop_later(cluster, watch)

    def _informer(self, client: Any, resource: R.Resource) -> Informer:
        informer = self._factory(client, resource, label_selector=self._selector, read_timeout=60.0)

        def wake(obj: Obj) -> None:
            key = workload_key_of_remote(resource, obj)
            if key is not None and self._enqueue is not None:
                self._enqueue(key)

        informer.add_handler(FuncHandler(add=wake, update=lambda _old, new: wake(new), delete=wake))
        return informer


def _stop_later(cluster: str, watch: _Watch) -> None:
    """Stop a worker's informers off the caller's thread: a reflector blocked on a dead
    worker's socket may take its read timeout to notice."""

    def stop() -> None:
        for informer in watch.informers:
            informer.stop()

    threading.Thread(target=stop, name=f"multikueue-unwatch-{cluster}", daemon=True).start()
