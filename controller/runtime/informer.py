"""Informer: a reflector, its store, and a handler thread (client-go's SharedIndexInformer).

Threads per informer: one runs the :class:`Reflector` (list/watch, writes the store), one runs the
handlers. The reflector pushes notifications onto an unbounded queue and returns to the socket at
once, so handlers can never block the watch. Contract (as client-go's):

* the store is updated *before* handlers hear about a change, so a handler that reads the store
  sees at least that state;
* one handler gets one object's notifications in order, one at a time; different objects are not
  ordered relative to each other, and intermediate states may be skipped by a relist;
* a handler added after start first receives an ADDED for every cached object;
* handlers should only enqueue keys (see :func:`enqueue_keys`); exceptions they raise are logged
  and counted, never propagated.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

from controller.runtime import metrics
from controller.runtime.reflector import ListerWatcher, Notification, Reflector, Transform
from controller.runtime.store import IndexFunc, Obj, ReadOnlyStore, Store, object_key
from controller.runtime.workqueue import WorkQueue
from pykueue.kube.resources import Resource

log = logging.getLogger(__name__)


class EventHandler(Protocol):
    def on_add(self, obj: Obj) -> None: ...

    def on_update(self, old: Obj, new: Obj) -> None: ...

    def on_delete(self, obj: Obj) -> None: ...


@dataclass
class FuncHandler:
    """An :class:`EventHandler` from plain functions; missing ones do nothing."""

    add: Callable[[Obj], None] | None = None
    update: Callable[[Obj, Obj], None] | None = None
    delete: Callable[[Obj], None] | None = None

    def on_add(self, obj: Obj) -> None:
        if self.add:
            self.add(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if self.update:
            self.update(old, new)

    def on_delete(self, obj: Obj) -> None:
        if self.delete:
            self.delete(obj)


def enqueue_keys(work: WorkQueue[Any], key_of: Callable[[Obj], Hashable | None] = object_key) -> FuncHandler:
    """The usual handler: put the changed object's key (or a derived key) on a work queue."""

    def put(obj: Obj) -> None:
        key = key_of(obj)
        if key is not None:
            work.add(key)

    return FuncHandler(add=put, update=lambda _old, new: put(new), delete=put)


@dataclass
class _Registration:
    handler: EventHandler
    resync: bool
    active: bool = False  # becomes true when its replay of the cache has been delivered


@dataclass
class _Replay:
    registration: _Registration


@dataclass
class _Stop:
    done: threading.Event = field(default_factory=threading.Event)


class Informer:
    """Keeps a local, indexed copy of one resource and tells handlers about changes."""

    def __init__(
        self,
        source: ListerWatcher,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: dict[str, IndexFunc] | None = None,
        transform: Transform | None = None,
        resync_period: float | None = None,
        read_timeout: float = 90.0,
        min_watch_timeout: int = 300,
        page_size: int = 500,
    ) -> None:
        self.resource = resource
        self._store = Store(indexers)
        self._label = str(resource)
        self._notifications: queue.SimpleQueue[Notification | _Replay | _Stop] = queue.SimpleQueue()
        self._registrations: list[_Registration] = []
        self._registrations_lock = threading.Lock()
        self._resync_period = resync_period
        self.reflector = Reflector(
            source,
            resource,
            self._store,
            self._notifications.put,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            transform=transform,
            read_timeout=read_timeout,
            min_watch_timeout=min_watch_timeout,
            page_size=page_size,
        )
        self._reflector_thread: threading.Thread | None = None
        self._dispatch_thread: threading.Thread | None = None

    # --- consumers -----------------------------------------------------------------------------

    @property
    def store(self) -> ReadOnlyStore:
        """Read-only view of the cache. Never modify returned objects."""
        return self._store.reader()

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        self._store.add_indexer(name, func)

    def has_index(self, name: str) -> bool:
        return self._store.has_index(name)

    def add_handler(self, handler: EventHandler, *, resync: bool = False) -> None:
        """Register ``handler``; it first gets ADDED for whatever is cached at that point.

        ``resync=True`` also delivers every cached object as an update (old is new) each
        resync period, so level-based reconcilers correct drift without calling the API.
        """
        registration = _Registration(handler, resync)
        with self._registrations_lock:
            self._registrations.append(registration)
        self._notifications.put(_Replay(registration))

    def has_synced(self) -> bool:
        """True once the first list filled the store."""
        return self.reflector.has_synced()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self.reflector.wait_for_sync(timeout)

    @property
    def started(self) -> bool:
        return self._reflector_thread is not None

    def alive(self) -> bool:
        """Both threads are running (or the informer was never started)."""
        threads = [t for t in (self._reflector_thread, self._dispatch_thread) if t is not None]
        return all(t.is_alive() for t in threads)

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        if self._reflector_thread is not None:
            raise RuntimeError(f"informer for {self._label} already started")
        self._dispatch_thread = threading.Thread(
            target=self._dispatch_loop, name=f"handlers-{self.resource.plural}", daemon=True
        )
        self._reflector_thread = threading.Thread(
            target=self.reflector.run, name=f"reflector-{self.resource.plural}", daemon=True
        )
        self._dispatch_thread.start()
        self._reflector_thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching, deliver what is already queued, then stop the handler thread."""
        self.reflector.stop()
        if self._reflector_thread is not None:
            self._reflector_thread.join(timeout)
        if self._dispatch_thread is not None and self._dispatch_thread.is_alive():
            marker = _Stop()
            self._notifications.put(marker)
            marker.done.wait(timeout)

    # --- the handler thread ----------------------------------------------------------------------

    def _dispatch_loop(self) -> None:
        next_resync = time.monotonic() + self._resync_period if self._resync_period else None
        while True:
            wait = None if next_resync is None else max(0.0, next_resync - time.monotonic())
            try:
                item = self._notifications.get(timeout=wait)
            except queue.Empty:
                item = None
            if next_resync is not None and time.monotonic() >= next_resync:
                self._resync()
                next_resync = time.monotonic() + (self._resync_period or 0)
            if item is None:
                continue
            metrics.HANDLER_QUEUE.labels(self._label).set(self._notifications.qsize())
            if isinstance(item, _Stop):
                item.done.set()
                return
            if isinstance(item, _Replay):
                self._replay(item.registration)
                continue
            with self._registrations_lock:
                targets = [r for r in self._registrations if r.active]
            for registration in targets:
                self._deliver(registration.handler, item)

    def _replay(self, registration: _Registration) -> None:
        # Everything already in the store (including changes whose notifications are still
        # queued behind this marker) is delivered as ADDED; later notifications are delivered
        # normally because the registration is active from here on.
        for obj in self._store.list():
            self._deliver(registration.handler, Notification("ADDED", obj))
        registration.active = True

    def _resync(self) -> None:
        with self._registrations_lock:
            targets = [r for r in self._registrations if r.active and r.resync]
        if not targets:
            return
        for obj in self._store.list():
            for registration in targets:
                self._deliver(registration.handler, Notification("MODIFIED", obj, obj))

    def _deliver(self, handler: EventHandler, note: Notification) -> None:
        try:
            if note.type == "ADDED":
                handler.on_add(note.obj)
            elif note.type == "MODIFIED":
                handler.on_update(note.old if note.old is not None else note.obj, note.obj)
            else:
                handler.on_delete(note.obj)
        except Exception:
            metrics.HANDLER_ERRORS.labels(self._label).inc()
            log.exception(
                "event handler failed",
                extra={"resource": self._label, "key": object_key(note.obj), "event": note.type},
            )


class InformerSet:
    """One informer per (resource, namespace, selectors), shared by every consumer in the process.

    Sharing matters: two reconcilers that both need Workloads read one cache fed by one watch.
    """

    def __init__(self, source: ListerWatcher, **defaults: Any) -> None:
        self._source = source
        self._defaults = defaults
        self._informers: dict[tuple[Resource, str | None, str | None, str | None], Informer] = {}
        self._options: dict[tuple[Resource, str | None, str | None, str | None], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._started = False

    def get(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        **options: Any,
    ) -> Informer:
        """The shared informer, created on first use (and started if the set already runs).

        Later callers may pass ``indexers`` (added if missing); any other option must match what
        the informer was created with, since one cache cannot be trimmed two ways.
        """
        key = (resource, namespace, label_selector, field_selector)
        with self._lock:
            informer = self._informers.get(key)
            if informer is not None:
                extra_indexers = options.pop("indexers", None) or {}
                created_with = self._options[key]
                conflicting = sorted(k for k, v in options.items() if created_with.get(k) != v)
                if conflicting:
                    raise ValueError(
                        f"the shared informer for {resource} already exists with other {', '.join(conflicting)}"
                    )
                for name, func in extra_indexers.items():
                    if not informer.has_index(name):
                        informer.add_indexer(name, func)
            else:
                self._options[key] = {k: v for k, v in options.items() if k != "indexers"}
                informer = Informer(
                    self._source,
                    resource,
                    namespace=namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    **{**self._defaults, **options},
                )
                self._informers[key] = informer
                if self._started:
                    informer.start()
            return informer

    def informers(self) -> list[Informer]:
        with self._lock:
            return list(self._informers.values())

    def start(self) -> None:
        with self._lock:
            self._started = True
            pending = list(self._informers.values())
        for informer in pending:
            if not informer.started:
                informer.start()

    def has_synced(self) -> bool:
        return all(informer.has_synced() for informer in self.informers())

    def wait_for_sync(self, timeout: float | None = None, stop: threading.Event | None = None) -> bool:
        """Wait until every informer synced; False on timeout or when ``stop`` is set."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for informer in self.informers():
            while not informer.wait_for_sync(0.2):
                if stop is not None and stop.is_set():
                    return False
                if deadline is not None and time.monotonic() >= deadline:
                    return False
        return True

    def alive(self) -> bool:
        return all(informer.alive() for informer in self.informers())

    def stop(self, timeout: float = 5.0) -> None:
        for informer in self.informers():
            informer.reflector.stop()
        for informer in self.informers():
            informer.stop(timeout)
