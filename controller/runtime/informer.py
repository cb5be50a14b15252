"""Informer: a reflector, its store, and handler threads (client-go's SharedIndexInformer).

Threads per informer: one runs the :class:`Reflector` (list/watch, writes the store); the
handlers share one delivery thread fed by an unbounded queue, and a handler registered with
``own_thread=True`` gets a thread and queue of its own. The reflector hands a notification to
every delivery queue and returns to the socket at once, so handlers can never block the watch,
and a handler that may wait delays nobody when it has its own thread. Contract (as client-go's):

* the store is updated *before* handlers hear about a change, so a handler that reads the store
  sees at least that state;
* one handler gets one object's notifications in order, one at a time; different objects are not
  ordered relative to each other, and intermediate states may be skipped by a relist;
* a handler added after start first receives an ADDED for every cached object (it may see an
  object twice around that moment, never miss one);
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
class _Stop:
    done: threading.Event = field(default_factory=threading.Event)


Delivery = tuple[Notification, tuple[EventHandler, ...]]


class _Listener:
    """A delivery thread with its own unbounded buffer (client-go's processorListener).

    Each item names the handlers it goes to, fixed when it was queued: a handler registered on a
    shared listener later never gets notifications from before its replay of the cache. A slow
    handler delays only the handlers of its own listener; neither the watch nor other listeners
    wait for it.
    """

    def __init__(
        self, store: Store, label: str, resync_period: float | None, handlers: tuple[EventHandler, ...]
    ) -> None:
        self._store = store
        self._label = label
        self._resync_period = resync_period
        # Who the next live notification goes to (replaced, never mutated, under the fan-out lock).
        self.handlers = handlers
        # Those of them that asked for a periodic resync.
        self.resync_handlers: tuple[EventHandler, ...] = handlers if resync_period else ()
        self.pending: queue.SimpleQueue[Delivery | _Stop] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name=f"handler-{label}", daemon=True)

    def _run(self) -> None:
        next_resync = time.monotonic() + self._resync_period if self._resync_period else None
        while True:
            wait = None if next_resync is None else max(0.0, next_resync - time.monotonic())
            try:
                item = self.pending.get(timeout=wait)
            except queue.Empty:
                item = None
            if next_resync is not None and time.monotonic() >= next_resync:
                targets = self.resync_handlers
                if targets:
                    for obj in self._store.list():
                        self._deliver(Notification("MODIFIED", obj, obj), targets)
                next_resync = time.monotonic() + (self._resync_period or 0)
            if item is None:
                continue
            if isinstance(item, _Stop):
                item.done.set()
                return
            self._deliver(*item)

    def _deliver(self, note: Notification, targets: tuple[EventHandler, ...]) -> None:
        for handler in targets:
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
        self._listeners: list[_Listener] = []
        self._shared: _Listener | None = None
        # Held while fanning a notification out and while registering a listener, so a new
        # listener's replay of the cache and the live notifications leave no gap.
        self._fanout_lock = threading.Lock()
        self._resync_period = resync_period
        self._started = False
        metrics.sum_when_scraped(metrics.HANDLER_QUEUE, self._label, self, Informer.handler_backlog)
        self.reflector = Reflector(
            source,
            resource,
            self._store,
            self._fan_out,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            transform=transform,
            read_timeout=read_timeout,
            min_watch_timeout=min_watch_timeout,
            page_size=page_size,
        )
        self._reflector_thread: threading.Thread | None = None

    # --- consumers -----------------------------------------------------------------------------

    @property
    def store(self) -> ReadOnlyStore:
        """Read-only view of the cache. Never modify returned objects."""
        return self._store.reader()

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        self._store.add_indexer(name, func)

    def has_index(self, name: str) -> bool:
        return self._store.has_index(name)

    def add_handler(self, handler: EventHandler, *, resync: bool = False, own_thread: bool = False) -> None:
        """Register ``handler``; it first gets ADDED for whatever is cached at that point.

        ``resync=True`` also delivers every cached object as an update (old is new) each
        resync period, so level-based reconcilers correct drift without calling the API.

        Handlers share one delivery thread per informer: they only enqueue keys, and one thread
        waking per watch event costs far less in Python than one per handler (client-go's
        goroutine per handler is cheap; a thread's wake-up and its turn at the interpreter lock
        are not). ``own_thread=True`` is for a handler that may wait: it gets its own thread and
        buffer, so it delays nobody else.
        """
        with self._fanout_lock:
            if own_thread:
                listener = _Listener(self._store, self._label, self._resync_period if resync else None, (handler,))
                self._listeners.append(listener)
                start = self._started
            else:
                listener, start = self._shared_listener()
                listener.handlers = (*listener.handlers, handler)
                if resync:
                    listener.resync_handlers = (*listener.resync_handlers, handler)
            # The store is written before notifications go out, so every change is either in
            # this snapshot or fanned out after the handler is registered (possibly both: a
            # handler may see an object twice, never miss one).
            only_this: tuple[EventHandler, ...] = (handler,)
            for obj in self._store.list():
                listener.pending.put((Notification("ADDED", obj), only_this))
            if start:
                listener.thread.start()

    def _shared_listener(self) -> tuple[_Listener, bool]:
        """The informer's shared listener (made on first use) and whether to start its thread now."""
        if self._shared is not None:
            return self._shared, False
        self._shared = _Listener(self._store, self._label, self._resync_period, ())
        self._listeners.append(self._shared)
        return self._shared, self._started

    def has_synced(self) -> bool:
        """True once the first list filled the store."""
        return self.reflector.has_synced()

    def handler_backlog(self) -> int:
        """Notifications waiting for this informer's handler threads, all handlers together."""
        with self._fanout_lock:
            return sum(listener.pending.qsize() for listener in self._listeners)

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self.reflector.wait_for_sync(timeout)

    @property
    def started(self) -> bool:
        return self._started

    def alive(self) -> bool:
        """Every thread is running (or the informer was never started)."""
        if not self._started:
            return True
        with self._fanout_lock:
            threads = [listener.thread for listener in self._listeners]
        return all(t.is_alive() for t in [*threads, self._reflector_thread] if t is not None)

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        with self._fanout_lock:
            if self._started:
                raise RuntimeError(f"informer for {self._label} already started")
            self._started = True
            for listener in self._listeners:
                listener.thread.start()
        self._reflector_thread = threading.Thread(
            target=self.reflector.run, name=f"reflector-{self.resource.plural}", daemon=True
        )
        self._reflector_thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching, let handlers finish what is already queued, then stop their threads."""
        self.reflector.stop()
        if self._reflector_thread is not None:
            self._reflector_thread.join(timeout)
        with self._fanout_lock:
            listeners = [listener for listener in self._listeners if listener.thread.is_alive()]
        markers = []
        for listener in listeners:
            marker = _Stop()
            listener.pending.put(marker)
            markers.append(marker)
        deadline = time.monotonic() + timeout
        for marker in markers:
            marker.done.wait(max(0.0, deadline - time.monotonic()))

    def _fan_out(self, note: Notification) -> None:
        with self._fanout_lock:
            for listener in self._listeners:
                listener.pending.put((note, listener.handlers))


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
