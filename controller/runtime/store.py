"""A thread-safe object cache with secondary indexes (client-go's ThreadSafeStore + Indexer).

The reflector thread is the only writer; reconcilers and the admission engine read from many
threads. Every read takes the lock once and returns a snapshot (a new list), so one query never
sees half of an update. Objects are shared, not copied: consumers get a :class:`StoreReader`
without write methods and must treat the dicts as immutable (``copy.deepcopy`` before editing a
patch body). Tests can turn on :attr:`Store.detect_mutations` to catch violations.
"""

from __future__ import annotations

import builtins
import copy
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from pykueue.api.objects import object_key

Obj = dict[str, Any]
IndexFunc = Callable[[Obj], list[str]]

NAMESPACE_INDEX = "namespace"


def split_key(key: str) -> tuple[str | None, str]:
    """Inverse of :func:`object_key`: ``(namespace or None, name)``."""
    namespace, sep, name = key.partition("/")
    return (namespace, name) if sep else (None, namespace)


def namespace_index(obj: Obj) -> list[str]:
    namespace = (obj.get("metadata") or {}).get("namespace")
    return [namespace] if namespace else []


def label_index(label: str) -> IndexFunc:
    """Index objects by the value of one label (e.g. ``kueue.x-k8s.io/queue-name``)."""

    def index(obj: Obj) -> list[str]:
        value = ((obj.get("metadata") or {}).get("labels") or {}).get(label)
        return [value] if value else []

    return index


def owner_uid_index(obj: Obj) -> list[str]:
    """Index objects by the UIDs of their owners (find a Job's Workload, a Workload's Pods)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return [str(ref["uid"]) for ref in refs if isinstance(ref, dict) and ref.get("uid")]


@dataclass(frozen=True)
class Change:
    """One difference applied by :meth:`Store.replace`: ``old`` is None for adds, ``new`` for deletes."""

    key: str
    old: Obj | None
    new: Obj | None


class StoreReader(Protocol):
    """The read-only face of a store handed to consumers."""

    def get(self, key: str) -> Obj | None: ...

    def get_by_name(self, name: str, namespace: str | None = None) -> Obj | None: ...

    def list(self) -> list[Obj]: ...

    def keys(self) -> builtins.list[str]: ...

    def by_index(self, index_name: str, value: str) -> builtins.list[Obj]: ...

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]: ...

    def __len__(self) -> int: ...


class ReadOnlyStore:
    """Wraps a :class:`Store` exposing only its reads, so consumers cannot write to the cache."""

    __slots__ = ("_store",)

    def __init__(self, store: Store) -> None:
        self._store = store

    def get(self, key: str) -> Obj | None:
        return self._store.get(key)

    def get_by_name(self, name: str, namespace: str | None = None) -> Obj | None:
        return self._store.get_by_name(name, namespace)

    def list(self) -> list[Obj]:
        return self._store.list()

    def keys(self) -> builtins.list[str]:
        return self._store.keys()

    def by_index(self, index_name: str, value: str) -> builtins.list[Obj]:
        return self._store.by_index(index_name, value)

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        return self._store.index_keys(index_name, value)

    def __len__(self) -> int:
        return len(self._store)


class MutationDetected(AssertionError):
    """A consumer changed a cached object in place."""


class Store:
    """Objects by key plus any number of named indexes, behind one lock."""

    def __init__(self, indexers: dict[str, IndexFunc] | None = None, *, detect_mutations: bool = False) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: namespace_index, **(indexers or {})}
        # index name -> indexed value -> keys
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}
        self.detect_mutations = detect_mutations
        self._pristine: dict[str, Obj] = {}

    # --- writes (reflector only) -------------------------------------------------------------

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        """Add an index, computing it for objects already cached."""
        with self._lock:
            if name in self._indexers:
                raise ValueError(f"index {name!r} already exists")
            self._indexers[name] = func
            self._indices[name] = {}
            for key, obj in self._items.items():
                self._index_one(name, key, obj)

    def has_index(self, name: str) -> bool:
        with self._lock:
            return name in self._indexers

    def upsert(self, obj: Obj) -> Obj | None:
        """Insert or replace one object; returns the previous version (None if new)."""
        key = object_key(obj)
        with self._lock:
            old = self._items.get(key)
            if old is not None:
                self._unindex(key, old)
            self._items[key] = obj
            self._index(key, obj)
            self._remember(key, obj)
            return old

    def delete(self, key: str) -> Obj | None:
        """Remove one object by key; returns it (None if it was not cached)."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._unindex(key, old)
            self._pristine.pop(key, None)
            return old

    def replace(self, objects: Iterable[Obj]) -> list[Change]:
        """Make the cache exactly ``objects`` (a relist) and report what changed.

        Keys that vanished come back as deletes carrying the last known object, which is how a
        watch that missed deletions (410 Gone, a long disconnect) still tells handlers about them.
        Objects whose resourceVersion did not change are not reported.
        """
        fresh = {object_key(obj): obj for obj in objects}
        changes: list[Change] = []
        with self._lock:
            for key in [k for k in self._items if k not in fresh]:
                changes.append(Change(key, self.delete(key), None))
            for key, obj in fresh.items():
                old = self._items.get(key)
                if old is not None and _resource_version(old) == _resource_version(obj) and _uid(old) == _uid(obj):
                    continue
                self.upsert(obj)
                changes.append(Change(key, old, obj))
        return changes

    # --- reads -------------------------------------------------------------------------------

    def get(self, key: str) -> Obj | None:
        with self._lock:
            return self._items.get(key)

    def get_by_name(self, name: str, namespace: str | None = None) -> Obj | None:
        return self.get(f"{namespace}/{name}" if namespace else name)

    def list(self) -> list[Obj]:
        with self._lock:
            return list(self._items.values())

    def keys(self) -> builtins.list[str]:
        with self._lock:
            return list(self._items)

    def by_index(self, index_name: str, value: str) -> builtins.list[Obj]:
        with self._lock:
            return [self._items[k] for k in sorted(self._index_values(index_name, value))]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        with self._lock:
            return sorted(self._index_values(index_name, value))

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def reader(self) -> ReadOnlyStore:
        return ReadOnlyStore(self)

    def check_mutations(self) -> None:
        """Raise :class:`MutationDetected` if any cached object differs from what was stored."""
        with self._lock:
            for key, pristine in self._pristine.items():
                if self._items.get(key) != pristine:
                    raise MutationDetected(f"cached object {key} was modified in place")

    # --- internals -----------------------------------------------------------------------------

    def _index_values(self, index_name: str, value: str) -> set[str]:
        if index_name not in self._indices:
            raise KeyError(f"no index named {index_name!r} (known: {sorted(self._indices)})")
        return self._indices[index_name].get(value, set())

    def _remember(self, key: str, obj: Obj) -> None:
        if self.detect_mutations:
            self._pristine[key] = copy.deepcopy(obj)

    def _index(self, key: str, obj: Obj) -> None:
        for name in self._indexers:
            self._index_one(name, key, obj)

    def _index_one(self, name: str, key: str, obj: Obj) -> None:
        for value in self._indexers[name](obj):
            self._indices[name].setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: Obj) -> None:
        for name, func in self._indexers.items():
            bucket = self._indices[name]
            for value in func(obj):
                keys = bucket.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del bucket[value]


def _resource_version(obj: Obj) -> str | None:
    return (obj.get("metadata") or {}).get("resourceVersion")


def _uid(obj: Obj) -> str | None:
    return (obj.get("metadata") or {}).get("uid")
