"""RFC 6902 JSON patch building for mutating hooks.

Mutations are expressed as "set this value at this path of the object"; :class:`PatchBuilder`
turns them into operations that apply to the object *as the apiserver sent it*: a missing parent
map is added first (``add`` to a path whose parent is missing fails), an existing value is
``replace``d, and keys are escaped per RFC 6901 (``/`` → ``~1``, ``~`` → ``~0``) so a label key such
as ``kueue.x-k8s.io/queue-name`` becomes ``/metadata/labels/kueue.x-k8s.io~1queue-name``.

Setting a value that is already there produces no operation, which keeps the hooks idempotent under
``reinvocationPolicy: IfNeeded``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any


def escape_token(token: str) -> str:
    """One RFC 6901 reference token."""
    return token.replace("~", "~0").replace("/", "~1")


def pointer(path: Sequence[str]) -> str:
    return "".join("/" + escape_token(token) for token in path)


class PatchBuilder:
    """Accumulates ``set`` mutations against a private copy of the original object."""

    def __init__(self, original: dict[str, Any]) -> None:
        self._current = copy.deepcopy(original)
        self.operations: list[dict[str, Any]] = []

    @property
    def result(self) -> dict[str, Any]:
        """The object as it will be once the operations are applied."""
        return self._current

    def set(self, path: Sequence[str], value: Any) -> None:
        """Make ``path`` hold ``value``, adding missing parent maps on the way."""
        if not path:
            raise ValueError("cannot replace the whole object")
        node: Any = self._current
        for depth, token in enumerate(path[:-1]):
            child = node.get(token) if isinstance(node, dict) else None
            if not isinstance(child, dict):
                self.operations.append({"op": "add", "path": pointer(path[: depth + 1]), "value": {}})
                node[token] = {}
                child = node[token]
            node = child
        leaf = path[-1]
        if leaf in node:
            if node[leaf] == value:
                return
            self.operations.append({"op": "replace", "path": pointer(path), "value": value})
        else:
            self.operations.append({"op": "add", "path": pointer(path), "value": value})
        node[leaf] = copy.deepcopy(value)


def apply_patch(obj: dict[str, Any], operations: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Apply ``add``/``replace`` operations produced by :class:`PatchBuilder` (for tests and checks)."""
    result = copy.deepcopy(obj)
    for operation in operations:
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in operation["path"].split("/")[1:]]
        node = result
        for token in tokens[:-1]:
            node = node[int(token)] if isinstance(node, list) else node[token]
        leaf = tokens[-1]
        if operation["op"] == "replace" and leaf not in node:
            raise KeyError(f"replace of missing path {operation['path']}")
        if operation["op"] == "add" and isinstance(node, list):
            node.insert(len(node) if leaf == "-" else int(leaf), copy.deepcopy(operation["value"]))
        else:
            node[leaf] = copy.deepcopy(operation["value"])
    return result
