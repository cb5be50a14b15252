"""In-memory stand-ins for the API client and informers, for the core controllers' unit tests.

:class:`FakeApi` keeps objects by (plural, key), applies JSON merge patches with the apiserver's
resourceVersion precondition (409 on mismatch), and mirrors every write into the matching
:class:`FakeInformer` store the way a watch would (``lag=True`` holds that back, to test stale
caches). Failures can be injected per call.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

from controller.core.engine_reads import EngineReads
from controller.runtime.store import Store, object_key
from pykueue.kube.errors import ApiError, Conflict, NotFound


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class FakeInformer:
    def __init__(self, *objects: dict[str, Any]) -> None:
        self.store = Store()
        self.handlers: list[Any] = []
        for obj in objects:
            self.store.upsert(obj)

    def add_indexer(self, name: str, func: Any) -> None:
        self.store.add_indexer(name, func)

    def add_handler(self, handler: Any, resync: bool = False) -> None:
        self.handlers.append(handler)


class FakeApi:
    def __init__(self, informers: dict[str, FakeInformer]) -> None:
        self.informers = informers
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.rv = 100
        self.failures: list[ApiError] = []
        # Failures for writes to one object ("namespace/name"), in order, before ``failures``.
        self.failures_for: dict[str, list[ApiError]] = {}
        self.patches: list[tuple[str, str, dict[str, Any]]] = []
        self.gets = 0
        self.conflicts = 0
        self.lag = False
        for plural, informer in informers.items():
            for obj in informer.store.list():
                self._stamp(obj)
                self.objects[(plural, object_key(obj))] = obj

    def _stamp(self, obj: dict[str, Any]) -> None:
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)

    def put(self, plural: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace, as another client would (bumps resourceVersion, updates the cache)."""
        obj = copy.deepcopy(obj)
        self._stamp(obj)
        self.objects[(plural, object_key(obj))] = obj
        self.informers[plural].store.upsert(copy.deepcopy(obj))
        return obj

    def get(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        self.gets += 1
        obj = self.objects.get((res.plural, f"{namespace}/{name}" if namespace else name))
        return copy.deepcopy(obj) if obj is not None else None

    def patch(
        self, res: Any, name: str, patch: dict[str, Any], namespace: str | None = None, **_: Any
    ) -> dict[str, Any]:
        key = f"{namespace}/{name}" if namespace else name
        if self.failures_for.get(key):
            raise self.failures_for[key].pop(0)
        if self.failures:
            raise self.failures.pop(0)
        current = self.objects.get((res.plural, key))
        if current is None:
            raise NotFound(404, "NotFound", key)
        wanted = (patch.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != current["metadata"]["resourceVersion"]:
            self.conflicts += 1
            raise Conflict(409, "Conflict", "the object has been modified")
        self.patches.append((res.plural, key, patch))
        updated = merge_patch(current, patch)
        self._stamp(updated)
        self.objects[(res.plural, key)] = updated
        if not self.lag:
            self.informers[res.plural].store.upsert(copy.deepcopy(updated))
        return copy.deepcopy(updated)

    def patch_status(
        self, res: Any, name: str, patch: dict[str, Any], namespace: str | None = None, **kw: Any
    ) -> dict[str, Any]:
        return self.patch(res, name, patch, namespace, **kw)

    def sync_informers(self) -> None:
        """Deliver every write the (lagging) caches have not seen yet."""
        for (plural, _), obj in self.objects.items():
            self.informers[plural].store.upsert(copy.deepcopy(obj))


class WriteGate:
    """Wraps a :class:`FakeApi` so that status writes can be held in flight and released one by one.

    While :meth:`hold` is on, each ``patch_status`` waits at the gate, either before it reaches the
    API (``after=False``: nothing written yet) or after the write landed and its watch echo reached
    the cache (``after=True``: only the caller's completion is held back). Everything else passes
    straight through to the wrapped API. ``only(name, patch)`` narrows which writes are held
    (e.g. reservations, not pending reasons).
    """

    def __init__(self, api: FakeApi) -> None:
        self.api = api
        self._cond = threading.Condition()
        self._holding = False
        self._after = False
        self._permits = 0
        self._only: Callable[[str, dict[str, Any]], bool] | None = None
        self.arrived = 0  # writes that reached the gate while holding

    def __getattr__(self, name: str) -> Any:
        return getattr(self.api, name)

    def hold(self, *, after: bool = False, only: Callable[[str, dict[str, Any]], bool] | None = None) -> None:
        with self._cond:
            self._holding, self._after, self._permits, self.arrived = True, after, 0, 0
            self._only = only

    def release(self, count: int = 1) -> None:
        with self._cond:
            self._permits += count
            self._cond.notify_all()

    def open(self) -> None:
        with self._cond:
            self._holding = False
            self._cond.notify_all()

    def wait_arrived(self, count: int, timeout: float = 5.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self.arrived >= count, timeout)

    def _pass_gate(self, name: str, patch: dict[str, Any]) -> None:
        with self._cond:
            if not self._holding or (self._only is not None and not self._only(name, patch)):
                return
            self.arrived += 1
            self._cond.notify_all()
            self._cond.wait_for(lambda: not self._holding or self._permits > 0, 10)
            if self._holding and self._permits > 0:
                self._permits -= 1

    def patch_status(
        self, res: Any, name: str, patch: dict[str, Any], namespace: str | None = None, **kw: Any
    ) -> dict[str, Any]:
        if self._after:
            written = self.api.patch_status(res, name, patch, namespace, **kw)
            self._pass_gate(name, patch)
            return written
        self._pass_gate(name, patch)
        return self.api.patch_status(res, name, patch, namespace, **kw)


def immediate_reads(engine: Any) -> EngineReads:
    """Engine reads answered at once on the caller's thread, as the scheduler loop would answer
    them between two cycles (for the periodic status writers' tests)."""
    reads = EngineReads(lambda: None)
    reads.open()

    def submit(read: Any, timeout: float = 5.0) -> Any:
        return read(engine)

    reads.submit = submit  # type: ignore[method-assign]
    return reads
