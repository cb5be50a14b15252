"""Reflector: keep a :class:`Store` equal to the server's view of one resource (client-go semantics).

The loop is list → watch → watch → ... from the last resourceVersion seen:

* **List** pages through the collection (consistent read) and *replaces* the store, so objects
  deleted while we were not watching come out as deletes (tombstones).
* **Watch** from the list's resourceVersion with bookmarks; every event, bookmarks included,
  advances the resourceVersion we resume from. The server ends each watch after a random
  ``timeoutSeconds`` in [min, 2*min] (spreading reconnects), and a client-side read timeout
  ends a stream that went silent (a half-open TCP connection would otherwise hang forever).
* **410 Gone** (an ``ERROR`` event or an HTTP 410: the resourceVersion was compacted away) →
  relist. Any other failure → reconnect from the last resourceVersion after jittered backoff
  (0.8 s doubling to 30 s, reset after two healthy minutes).

The reflector only writes the store and hands :class:`Notification` objects to ``emit``; it never
runs handler code, so a slow handler cannot stall the watch (see :mod:`controller.runtime.informer`).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from controller.runtime import metrics
from controller.runtime.store import Obj, Store, object_key
from pykueue.kube.backoff import Backoff
from pykueue.kube.errors import ApiError, ConnectionFailed, Gone, error_from_status
from pykueue.kube.resources import Resource
from pykueue.kube.transport import StreamTimeout

log = logging.getLogger(__name__)

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Transform = Callable[[Obj], Obj]

LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass(frozen=True)
class Notification:
    """What handlers learn: ``obj`` is the new state (for DELETED, the last known state).

    ``tombstone`` marks a delete inferred from a relist: the object vanished while the watch was
    down, so ``obj`` may be older than the object's final state.
    """

    type: EventType
    obj: Obj
    old: Obj | None = None
    tombstone: bool = False


class WatchHandle(Protocol):
    def __iter__(self) -> Iterator[dict[str, Any]]: ...

    def __next__(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


class ListerWatcher(Protocol):
    """The two calls a reflector makes; :class:`pykueue.kube.client.KubeClient` provides both."""

    def list_pages(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
    ) -> Iterator[dict[str, Any]]: ...

    def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        timeout_seconds: int,
        allow_bookmarks: bool = True,
        read_timeout: float,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> WatchHandle: ...


def trim_object(obj: Obj) -> Obj:
    """Drop what no pykueue code reads but costs memory in every cached copy."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED_ANNOTATION in annotations:
            del annotations[LAST_APPLIED_ANNOTATION]
            if not annotations:
                del meta["annotations"]
    return obj


class Reflector:
    """Runs in its own thread (:meth:`run`); stop it with :meth:`stop` from any thread."""

    def __init__(
        self,
        source: ListerWatcher,
        resource: Resource,
        store: Store,
        emit: Callable[[Notification], None],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Transform | None = None,
        page_size: int = 500,
        min_watch_timeout: int = 300,
        read_timeout: float = 90.0,
        backoff: Backoff | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.source = source
        self.resource = resource
        self.store = store
        self._emit = emit
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self._transform = transform
        self.page_size = page_size
        self.min_watch_timeout = min_watch_timeout
        self.read_timeout = read_timeout
        self._backoff = backoff or Backoff()
        self._rng = rng or random.Random()
        self._label = str(resource)
        # The watch-event counter's child per event type, looked up once instead of per event.
        self._event_counters: dict[Any, Any] = {}
        metrics.sum_when_scraped(metrics.CACHED_OBJECTS, self._label, store, len)
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._must_list = True
        self._last_rv = ""
        self._stream: WatchHandle | None = None
        self._stream_lock = threading.Lock()

    # --- state readers ---------------------------------------------------------------------

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion the next watch resumes from."""
        return self._last_rv

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    # --- lifecycle -------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask :meth:`run` to return and unblock a watch that is waiting for bytes."""
        self._stop.set()
        with self._stream_lock:
            stream = self._stream
        if stream is not None:
            stream.close()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def run(self) -> None:
        """List and watch until :meth:`stop`; never raises (every failure is retried)."""
        while not self._stop.is_set():
            try:
                if self._must_list:
                    self._list_and_replace()
                self._watch_once()
            except Gone as exc:
                self._expired(str(exc))
            except StreamTimeout as exc:
                # A quiet resource with no bookmarks looks the same as a dead connection; resuming
                # from the last resourceVersion is cheap either way, so re-watch at once.
                metrics.WATCH_RESTARTS.labels(self._label, "stalled").inc()
                log.info("watch stalled; re-watching", extra=self._log_fields(error=str(exc)))
            except ConnectionFailed as exc:
                self._failed("disconnected", exc)
            except ApiError as exc:
                if _too_large_resource_version(exc):
                    # This apiserver has not caught up with the revision we resume from (another
                    # replica behind a load balancer served our list): relist from it.
                    self._must_list = True
                self._failed("error", exc)
            except Exception as exc:  # a bug must not kill the informer silently
                log.exception("reflector failure", extra=self._log_fields())
                self._failed("error", exc)

    # --- list ----------------------------------------------------------------------------------

    def _list_and_replace(self) -> None:
        started = time.monotonic()
        if self._synced.is_set():
            metrics.RELISTS.labels(self._label, "expired").inc()
        try:
            items, resource_version = self._list_pages(self.page_size)
        except Gone:
            # The continue token expired between pages (the listing took longer than etcd keeps
            # history): take the whole collection in one consistent request instead.
            items, resource_version = self._list_pages(None)
        prepared = [self._prepare(item) for item in items]
        changes = self.store.replace(prepared)
        self._last_rv = resource_version
        self._must_list = False
        metrics.LIST_DURATION.labels(self._label).observe(time.monotonic() - started)
        for change in changes:
            if change.new is None:
                assert change.old is not None
                self._emit(Notification("DELETED", change.old, change.old, tombstone=True))
            elif change.old is None:
                self._emit(Notification("ADDED", change.new))
            else:
                self._emit_update(change.old, change.new)
        if not self._synced.is_set():
            self._synced.set()
            metrics.SYNCED.labels(self._label).set(1)
        log.info(
            "listed",
            extra=self._log_fields(objects=len(prepared), changes=len(changes), seconds=round(time.monotonic() - started, 3)),
        )

    def _list_pages(self, page_size: int | None) -> tuple[list[Obj], str]:
        items: list[Obj] = []
        pages = self.source.list_pages(
            self.resource,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=page_size,
        )
        try:
            for page in pages:
                items.extend(page.get("items") or [])
                meta = page.get("metadata") or {}
                if not meta.get("continue"):
                    return items, str(meta.get("resourceVersion") or "")
                if self._stop.is_set():
                    raise ConnectionFailed("stopped while listing")
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                close()
        raise ConnectionFailed("the list ended without a last page")

    # --- watch ---------------------------------------------------------------------------------

    def _watch_once(self) -> None:
        timeout = int(self.min_watch_timeout * (1 + self._rng.random()))
        stream = self.source.watch(
            self.resource,
            self.namespace,
            resource_version=self._last_rv,
            timeout_seconds=timeout,
            allow_bookmarks=True,
            read_timeout=self.read_timeout,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
        )
        with self._stream_lock:
            self._stream = stream
        try:
            if self._stop.is_set():
                return
            for event in stream:
                if self._stop.is_set():
                    return
                self._handle_event(event)
        finally:
            with self._stream_lock:
                self._stream = None
            stream.close()
        if not self._stop.is_set():
            metrics.WATCH_RESTARTS.labels(self._label, "timeout").inc()

    def _handle_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            raise ConnectionFailed(f"watch event without an object: {str(event)[:200]}")
        counter = self._event_counters.get(kind)
        if counter is None:
            counter = self._event_counters[kind] = metrics.WATCH_EVENTS.labels(self._label, str(kind))
        counter.inc()
        if kind == "ERROR":
            raise error_from_status(obj)
        resource_version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if kind == "BOOKMARK":
            # Bookmarks carry only a resourceVersion: remember it so a reconnect after a long
            # quiet period does not start from a compacted revision.
            if resource_version:
                self._last_rv = resource_version
            return
        if kind in ("ADDED", "MODIFIED"):
            fresh = self._prepare(obj)
            old = self.store.upsert(fresh)
            if old is None:
                self._emit(Notification("ADDED", fresh))
            else:
                self._emit_update(old, fresh)
        elif kind == "DELETED":
            fresh = self._prepare(obj)
            old = self.store.delete(object_key(fresh))
            self._emit(Notification("DELETED", fresh, old))
        else:
            log.warning("ignoring unknown watch event type", extra=self._log_fields(type=str(kind)))
            return
        if resource_version:
            self._last_rv = resource_version

    # --- helpers -------------------------------------------------------------------------------

    def _emit_update(self, old: Obj, new: Obj) -> None:
        old_uid = (old.get("metadata") or {}).get("uid")
        new_uid = (new.get("metadata") or {}).get("uid")
        if old_uid and new_uid and old_uid != new_uid:
            # Deleted and re-created under the same name while we were not looking: two events,
            # so handlers tracking per-UID state (expectations, finalizers) clean up correctly.
            self._emit(Notification("DELETED", old, old, tombstone=True))
            self._emit(Notification("ADDED", new))
        else:
            self._emit(Notification("MODIFIED", new, old))

    def _prepare(self, obj: Obj) -> Obj:
        # List items of built-in kinds come without apiVersion/kind; Events and owner references
        # built from cached objects need them, so fill them in once here.
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        obj = trim_object(obj)
        if self._transform is not None:
            obj = self._transform(obj)
        return obj

    def _expired(self, message: str) -> None:
        self._must_list = True
        metrics.WATCH_RESTARTS.labels(self._label, "expired").inc()
        log.info("resourceVersion expired; relisting", extra=self._log_fields(error=message))

    def _failed(self, reason: str, exc: BaseException) -> None:
        metrics.WATCH_RESTARTS.labels(self._label, reason).inc()
        delay = self._backoff.next_delay()
        log.warning(
            "list/watch failed; retrying",
            extra=self._log_fields(reason=reason, error=str(exc), retry_in=round(delay, 2)),
        )
        self._stop.wait(delay)

    def _log_fields(self, **extra: Any) -> dict[str, Any]:
        fields: dict[str, Any] = {"resource": self._label, "resourceVersion": self._last_rv}
        if self.namespace:
            fields["namespace"] = self.namespace
        fields.update(extra)
        return fields


def _too_large_resource_version(error: ApiError) -> bool:
    """client-go's ``IsTooLargeResourceVersionError``: a 504 whose cause is ResourceVersionTooLarge."""
    return any(cause.get("reason") == "ResourceVersionTooLarge" for cause in error.causes) or (
        "Too large resource version" in error.message
    )
