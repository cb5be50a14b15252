"""Tolerant accessors for API objects as JSON, and their informer keys.

Both programs see objects exactly as the API serves them, including hand-written ones with missing
or wrongly typed fields; reading a field through these accessors yields an empty value of the
expected type instead of an exception, so a strange object can never crash a reconcile loop or
turn a user's typo into an internal-error denial.

Two accessors for objects, because callers differ in what they may do with the result:
:func:`mapping_or_empty` for read-only code (any ``Mapping`` passes), :func:`dict_or_empty` for
code that needs a ``dict`` (to hand to ``json`` or ``jsonschema``, or to build patches from). Neither
copies: they return ``value`` itself, or a fresh empty container.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def mapping_or_empty(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one (read-only use).

    A ``dict`` (what JSON decoding yields) is recognised before the ``Mapping`` test, which goes
    through the ABC machinery and costs several times more: the engine parses every Workload
    update with this."""
    if isinstance(value, dict):
        return value
    return value if value is not None and isinstance(value, Mapping) else {}


def dict_or_empty(value: Any) -> dict[str, Any]:
    """``value`` if it is a ``dict``, else ``{}``."""
    return value if isinstance(value, dict) else {}


def list_or_empty(value: Any) -> list[Any]:
    """``value`` if it is a list, else ``[]`` (a hand-written object may put anything anywhere)."""
    return value if isinstance(value, list) else []


def namespaced_key(namespace: str, name: str) -> str:
    """``namespace/name``: how the engine addresses workloads and LocalQueues."""
    return f"{namespace}/{name}"


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects (client-go's
    ``MetaNamespaceKeyFunc``, the informers' store key)."""
    meta = mapping_or_empty(obj.get("metadata"))
    name = meta.get("name") or ""
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name)
