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
    """Accumulates ``set`` mutations against a copy-on-write view of the original object.

    Only the maps on the paths being set are copied (the original is never written): a mutating
    hook sets one to four values, and copying the whole object first cost a deep copy of every
    Job and ClusterQueue sent to a mutating hook.
    """

    def __init__(self, original: dict[str, Any]) -> None:
        self._current: dict[str, Any] = dict(original)
        # Maps this builder made or copied, by id, and so may write. Holding them keeps their ids
        # from being reused while the builder lives; every other map belongs to the original.
        self._owned: dict[int, dict[str, Any]] = {id(self._current): self._current}
        self.operations: list[dict[str, Any]] = []

    @property
    def result(self) -> dict[str, Any]:
        """The object as it will be once the operations are applied (shares unchanged parts with
        the original: read it, do not modify it)."""
        return self._current

    def _own(self, node: dict[str, Any]) -> dict[str, Any]:
        self._owned[id(node)] = node
        return node

    def set(self, path: Sequence[str], value: Any) -> None:
        """Make ``path`` hold ``value``, adding missing parent maps on the way."""
        if not path:
            raise ValueError("cannot replace the whole object")
        node: dict[str, Any] = self._current
        for depth, token in enumerate(path[:-1]):
            child = node.get(token)
            if not isinstance(child, dict):
                self.operations.append({"op": "add", "path": pointer(path[: depth + 1]), "value": {}})
                child = node[token] = self._own({})
            elif id(child) not in self._owned:
                child = node[token] = self._own(dict(child))
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
