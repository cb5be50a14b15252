"""In-memory stand-ins for the API client and informers, for the core controllers' unit tests.

:class:`FakeApi` keeps objects by (plural, key), applies JSON merge patches with the apiserver's
resourceVersion precondition (409 on mismatch), and mirrors every write into the matching
:class:`FakeInformer` store the way a watch would (``lag=True`` holds that back, to test stale
caches). Failures can be injected per call.
"""

from __future__ import annotations

import copy
from typing import Any

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
        self.patches: list[tuple[str, str, dict[str, Any]]] = []
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
        obj = self.objects.get((res.plural, f"{namespace}/{name}" if namespace else name))
        return copy.deepcopy(obj) if obj is not None else None

    def patch(
        self, res: Any, name: str, patch: dict[str, Any], namespace: str | None = None, **_: Any
    ) -> dict[str, Any]:
        if self.failures:
            raise self.failures.pop(0)
        key = f"{namespace}/{name}" if namespace else name
        current = self.objects.get((res.plural, key))
        if current is None:
            raise NotFound(404, "NotFound", key)
        wanted = (patch.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != current["metadata"]["resourceVersion"]:
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
