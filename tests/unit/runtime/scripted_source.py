"""A scripted list/watch source for reflector and informer tests (no API server)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pykueue.kube.resources import Resource

Obj = dict[str, Any]


def cm(name: str, rv: str, ns: str = "ns", uid: str | None = None, **data: str) -> Obj:
    """A ConfigMap as a list item (no apiVersion/kind, like the apiserver's lists)."""
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": rv, "uid": uid or f"uid-{name}"}, "data": data}


def event(kind: str, obj: Obj) -> dict[str, Any]:
    return {"type": kind, "object": obj}


def bookmark(rv: str) -> dict[str, Any]:
    return {"type": "BOOKMARK", "object": {"kind": "ConfigMap", "metadata": {"resourceVersion": rv}}}


def expired() -> dict[str, Any]:
    return {
        "type": "ERROR",
        "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version: 5 (90)"},
    }


class Block:
    """A watch step that blocks until the stream is closed (an open, silent connection)."""


@dataclass
class Gate:
    """A watch step that holds the stream until ``opened`` is set, then the script goes on."""

    opened: threading.Event = field(default_factory=threading.Event)


class ScriptedWatch:
    def __init__(self, steps: list[Any]) -> None:
        self._steps = iter(steps)
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        step = next(self._steps)
        while isinstance(step, Gate):
            step.opened.wait(10)
            step = next(self._steps)
        if isinstance(step, Block):
            self.closed.wait(10)
            raise StopIteration
        if isinstance(step, BaseException):
            raise step
        return step

    def close(self) -> None:
        self.closed.set()


@dataclass
class ListCall:
    limit: int | None
    continue_token: str | None


@dataclass
class WatchCall:
    resource_version: str
    timeout_seconds: int
    allow_bookmarks: bool
    read_timeout: float


@dataclass
class ScriptedSource:
    """Each list() pops a page (dict) or raises an exception; each watch() pops a step list or
    raises. When the watch script is exhausted, ``on_exhausted`` runs (tests pass reflector.stop)
    and an empty watch is returned."""

    lists: list[Any]
    watches: list[Any]
    on_exhausted: Any = None
    list_calls: list[ListCall] = field(default_factory=list)
    watch_calls: list[WatchCall] = field(default_factory=list)
    opened: list[ScriptedWatch] = field(default_factory=list)

    def list(self, res: Resource, namespace=None, *, label_selector=None, field_selector=None, limit=None,
             continue_token=None, resource_version=None) -> dict[str, Any]:
        self.list_calls.append(ListCall(limit, continue_token))
        if not self.lists:
            raise AssertionError("unexpected list call")
        answer = self.lists.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def list_pages(self, res: Resource, namespace=None, *, label_selector=None, field_selector=None,
                   limit=None) -> Iterator[dict[str, Any]]:
        """The scripted answers page after page, each asked for with the previous one's token."""
        token = None
        while True:
            page = self.list(res, namespace, label_selector=label_selector, field_selector=field_selector,
                             limit=limit, continue_token=token)
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    def watch(self, res: Resource, namespace=None, *, resource_version, timeout_seconds, allow_bookmarks=True,
              read_timeout, label_selector=None, field_selector=None) -> ScriptedWatch:
        self.watch_calls.append(WatchCall(resource_version, timeout_seconds, allow_bookmarks, read_timeout))
        if not self.watches:
            if self.on_exhausted:
                self.on_exhausted()
            watch = ScriptedWatch([])
        else:
            answer = self.watches.pop(0)
            if isinstance(answer, BaseException):
                raise answer
            watch = ScriptedWatch(answer)
        self.opened.append(watch)
        return watch


def page(items: list[Obj], rv: str, continue_token: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if continue_token:
        meta["continue"] = continue_token
    return {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": meta, "items": items}
