"""In-memory stand-ins for the informers and clients the MultiKueue controllers use."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from pykueue.kube import resources as R
from pykueue.kube.errors import AlreadyExists, ConnectionFailed, NotFound

Obj = dict[str, Any]


class FakeStore:
    def __init__(self, *objs: Obj) -> None:
        self.items: dict[str, Obj] = {}
        self.indexers: dict[str, Callable[[Obj], list[str]]] = {}
        for obj in objs:
            self.put(obj)

    def put(self, obj: Obj) -> None:
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        self.items[key] = obj

    def get(self, key: str) -> Obj | None:
        return self.items.get(key)

    def list(self) -> list[Obj]:
        return list(self.items.values())

    def index_keys(self, index: str, value: str) -> list[str]:
        return [key for key, obj in self.items.items() if value in self.indexers[index](obj)]


class FakeInformer:
    def __init__(self, *objs: Obj) -> None:
        self.store = FakeStore(*objs)
        self.handlers: list[Any] = []

    def add_handler(self, handler: Any) -> None:
        self.handlers.append(handler)

    def add_indexer(self, name: str, func: Callable[[Obj], list[str]]) -> None:
        self.store.indexers[name] = func

    def has_index(self, name: str) -> bool:
        return name in self.store.indexers


class FakeClient:
    """A cluster's API: objects by (plural, namespace, name); ``down`` makes every call fail."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.down = False
        self.patches: list[tuple[str, str, Any]] = []
        self.rv = 0

    def _check(self) -> None:
        if self.down:
            raise ConnectionFailed("connection refused")

    def put(self, res: R.Resource, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.objects[(res.plural, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = obj
        return obj

    def get(self, res: R.Resource, name: str, namespace: str | None = None) -> Obj | None:
        self._check()
        return copy.deepcopy(self.objects.get((res.plural, namespace or "", name)))

    def of(self, res: R.Resource) -> list[Obj]:
        return [o for (p, _, _), o in self.objects.items() if p == res.plural]

    def list(self, res: R.Resource, namespace: str | None = None, **kw: Any) -> Obj:
        self._check()
        selector = dict(part.split("=", 1) for part in (kw.get("label_selector") or "").split(",") if part)
        items = [
            o
            for o in self.of(res)
            if (namespace is None or o["metadata"].get("namespace") == namespace)
            and all((o["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
        ]
        return {"items": copy.deepcopy(items)}

    def create(self, res: R.Resource, obj: Obj, namespace: str | None = None) -> Obj:
        self._check()
        key = (res.plural, namespace or "", obj["metadata"]["name"])
        if key in self.objects:
            raise AlreadyExists(409, "AlreadyExists", obj["metadata"]["name"])
        return self.put(res, obj)

    def delete(self, res: R.Resource, name: str, namespace: str | None = None, **kw: Any) -> bool:
        self._check()
        if self.objects.pop((res.plural, namespace or "", name), None) is None:
            raise NotFound(404, "NotFound", name)
        return True

    def patch_status(self, res: R.Resource, name: str, patch: Any, namespace: str | None = None, **kw: Any) -> Obj:
        self._check()
        self.patches.append((res.plural, name, patch))
        current = self.objects.get((res.plural, namespace or "", name))
        if current is None:
            raise NotFound(404, "NotFound", name)
        status = current.setdefault("status", {})
        for key, value in patch.get("status", {}).items():
            if value is None:
                status.pop(key, None)
            else:
                status[key] = value
        return current

    def close(self) -> None:
        pass
