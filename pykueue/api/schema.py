"""The registry of kinds and the whole-object schemas built from the per-kind schema modules.

``KINDS`` maps each ``kueue.x-k8s.io`` kind to its :class:`~pykueue.api.kindinfo.KindInfo`
(plural, scope, short names, printer columns, status subresource); ``TEST_KINDS`` holds the
``autoscaling.x-k8s.io`` ProvisioningRequest that only test clusters install.
:func:`object_schema` returns the structural OpenAPI v3 schema of a whole object exactly as the
CRD carries it, and :func:`apply_defaults` applies its defaults the way the apiserver does.
"""

from __future__ import annotations

import copy
from typing import Any

from pykueue.api.dsl import Schema
from pykueue.api.kindinfo import KindInfo
from pykueue.api.schemas import (
    admissioncheck,
    clusterqueue,
    cohort,
    localqueue,
    multikueue,
    priorityclass,
    provisioning,
    provisioningrequest,
    resourceflavor,
    workload,
)
from pykueue.api.schemas.v1beta2 import V1BETA2, v1beta2_schema

KINDS: dict[str, KindInfo] = {
    info.kind: info
    for info in (
        resourceflavor.KIND,
        clusterqueue.KIND,
        cohort.KIND,
        localqueue.KIND,
        workload.KIND,
        admissioncheck.KIND,
        priorityclass.KIND,
        provisioning.KIND,
        multikueue.CONFIG_KIND,
        multikueue.CLUSTER_KIND,
    )
}

TEST_KINDS: dict[str, KindInfo] = {provisioningrequest.KIND.kind: provisioningrequest.KIND}


def kind_info(kind: str) -> KindInfo:
    """The KindInfo of a kueue kind (or the test-only ProvisioningRequest); KeyError otherwise."""
    if kind in KINDS:
        return KINDS[kind]
    if kind in TEST_KINDS:
        return TEST_KINDS[kind]
    raise KeyError(f"unknown kind {kind!r}; known: {', '.join(sorted(KINDS))}")


def build_object_schema(info: KindInfo) -> Schema:
    """The openAPIV3Schema of a kind: apiVersion, kind, metadata and the kind's own fields."""
    properties: dict[str, Schema] = {
        "apiVersion": {
            "type": "string",
            "description": "APIVersion defines the versioned schema of this representation of an object.",
        },
        "kind": {
            "type": "string",
            "description": "Kind is a string value representing the REST resource this object represents.",
        },
        "metadata": {"type": "object"},
    }
    properties.update(info.properties)
    schema: Schema = {"type": "object", "description": info.description, "properties": properties}
    if info.required:
        schema["required"] = list(info.required)
    if info.rules:
        schema["x-kubernetes-validations"] = [r.to_json() for r in info.rules]
    return schema


_SCHEMAS: dict[str, Schema] = {}
_V1BETA2_SCHEMAS: dict[str, Schema] = {}


def object_schema(kind: str) -> Schema:
    """A fresh copy of the whole-object schema of ``kind`` (callers may mutate it)."""
    if kind not in _SCHEMAS:
        _SCHEMAS[kind] = build_object_schema(kind_info(kind))
    return copy.deepcopy(_SCHEMAS[kind])


def cached_object_schema(kind: str, version: str | None = None) -> Schema:
    """The shared whole-object schema of ``kind`` in ``version``; read-only, for hot validation paths.

    ``version`` is the kind's own (``v1beta1`` for Kueue kinds) when omitted; ``v1beta2`` is the
    kind's v1beta2 schema as the CRD serves it (:mod:`pykueue.api.schemas.v1beta2`), for the
    webhook's reviews of objects sent in v1beta2.
    """
    if kind not in _SCHEMAS:
        _SCHEMAS[kind] = build_object_schema(kind_info(kind))
    info = kind_info(kind)
    if version is None or version == info.version:
        return _SCHEMAS[kind]
    if version != V1BETA2 or info.kind not in KINDS:
        raise KeyError(f"{kind} has no schema in version {version!r}")
    if kind not in _V1BETA2_SCHEMAS:
        _V1BETA2_SCHEMAS[kind] = v1beta2_schema(info, _SCHEMAS[kind])
    return _V1BETA2_SCHEMAS[kind]


def _default_into(schema: Schema, value: Any) -> None:
    """Fill defaults below ``value`` in place, top-down like the apiserver's structural defaulting."""
    if isinstance(value, dict):
        for name, child in schema.get("properties", {}).items():
            if name not in value and "default" in child:
                value[name] = copy.deepcopy(child["default"])
            if name in value:
                _default_into(child, value[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for item in value.values():
                _default_into(extra, item)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default_into(schema["items"], item)


def _copy_json(value: Any) -> Any:
    """A deep copy of decoded JSON, about three times faster than ``copy.deepcopy`` (which keeps
    a memo of every object it visits); anything that is not plain JSON goes to ``deepcopy``."""
    kind = type(value)
    if kind is dict:
        return {key: _copy_json(item) for key, item in value.items()}
    if kind is list:
        return [_copy_json(item) for item in value]
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    return copy.deepcopy(value)


def apply_defaults(kind: str, obj: dict[str, Any], version: str | None = None) -> dict[str, Any]:
    """Return a copy of ``obj`` with the schema defaults of ``kind`` in ``version`` applied (the
    input is untouched)."""
    out = _copy_json(obj)
    _default_into(cached_object_schema(kind, version), out)
    return out
