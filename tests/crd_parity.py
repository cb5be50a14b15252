"""Compare two CustomResourceDefinitions fact by fact: the engine of the Kueue schema parity test.

A *difference* is ``(kind, path, facet)`` plus the two values. ``path`` is the field path with
``[]`` stepping into list items and ``{}`` into map values (``spec.podSets[].template``); ``facet``
is the schema keyword that differs (``type``, ``enum``, ``x-kubernetes-list-type``, ...), or
``presence`` when the field exists on one side only (its subtree is then not walked: one
difference per missing field), or ``crd.<fact>`` for facts of the CRD itself and of the version (printer columns,
short names, categories, scope, subresources, and the version's served/storage/deprecated flags). Descriptions are ignored: they are prose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Keywords compared as plain values.
SCALAR_FACETS = (
    "type",
    "format",
    "default",
    "maxItems",
    "minItems",
    "maxLength",
    "minLength",
    "maxProperties",
    "minProperties",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "pattern",
    "nullable",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
)
# Keywords whose order carries no meaning, compared as sets.
SET_FACETS = ("enum", "required")

MISSING = "<absent>"


@dataclass(frozen=True)
class Difference:
    kind: str
    path: str
    facet: str
    pykueue: Any
    kueue: Any

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.path, self.facet)

    def __str__(self) -> str:
        return f"{self.kind} {self.path or '<root>'} [{self.facet}]: pykueue={self.pykueue!r} kueue={self.kueue!r}"


def _rules(schema: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((r.get("rule", ""), r.get("message", r.get("messageExpression", ""))) for r in schema.get("x-kubernetes-validations", []))


def _child(path: str, step: str) -> str:
    if step in ("[]", "{}"):
        return path + step
    return f"{path}.{step}" if path else step


def compare_schemas(kind: str, ours: dict[str, Any], theirs: dict[str, Any], path: str = "") -> list[Difference]:
    """Every difference between two structural schemas, walking properties, items and map values."""
    out: list[Difference] = []
    for facet in SCALAR_FACETS:
        a, b = ours.get(facet, MISSING), theirs.get(facet, MISSING)
        if a != b:
            out.append(Difference(kind, path, facet, a, b))
    for facet in SET_FACETS:
        a, b = ours.get(facet), theirs.get(facet)
        if a is None and b is None:
            continue
        if a is None or b is None or set(map(str, a)) != set(map(str, b)):
            out.append(Difference(kind, path, facet, sorted(a, key=str) if a else MISSING, sorted(b, key=str) if b else MISSING))
    if _rules(ours) != _rules(theirs):
        ra, rb = set(_rules(ours)), set(_rules(theirs))
        out.append(Difference(kind, path, "x-kubernetes-validations", sorted(ra - rb), sorted(rb - ra)))
    props_a, props_b = ours.get("properties", {}), theirs.get("properties", {})
    for name in sorted(set(props_a) | set(props_b)):
        sub = _child(path, name)
        if name not in props_b:
            out.append(Difference(kind, sub, "presence", "present", MISSING))
        elif name not in props_a:
            out.append(Difference(kind, sub, "presence", MISSING, "present"))
        else:
            out.extend(compare_schemas(kind, props_a[name], props_b[name], sub))
    for keyword, step in (("items", "[]"), ("additionalProperties", "{}")):
        a, b = ours.get(keyword), theirs.get(keyword)
        if isinstance(a, dict) and isinstance(b, dict):
            out.extend(compare_schemas(kind, a, b, _child(path, step)))
        elif a != b:
            out.append(Difference(kind, _child(path, step), "presence", "present" if a is not None else MISSING, "present" if b is not None else MISSING))
    return out


def _version(crd: dict[str, Any], name: str) -> dict[str, Any]:
    for version in crd["spec"]["versions"]:
        if version["name"] == name:
            return version
    raise KeyError(f"{crd['spec']['names']['kind']} has no version {name}")


def _columns(version: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (c["name"], c["type"], c["jsonPath"], c.get("priority", 0), c.get("format", ""))
        for c in version.get("additionalPrinterColumns", [])
    ]


def compare_crds(ours: dict[str, Any], theirs: dict[str, Any], version: str = "v1beta1") -> list[Difference]:
    """Every difference between two CRDs of the same kind at ``version``."""
    kind = theirs["spec"]["names"]["kind"]
    va, vb = _version(ours, version), _version(theirs, version)
    out: list[Difference] = []
    facts = {
        "crd.scope": (ours["spec"]["scope"], theirs["spec"]["scope"]),
        "crd.shortNames": (sorted(ours["spec"]["names"].get("shortNames", [])), sorted(theirs["spec"]["names"].get("shortNames", []))),
        "crd.categories": (sorted(ours["spec"]["names"].get("categories", [])), sorted(theirs["spec"]["names"].get("categories", []))),
        "crd.subresources": (va.get("subresources", {}), vb.get("subresources", {})),
        "crd.printerColumns": (_columns(va), _columns(vb)),
        "crd.selectableFields": (va.get("selectableFields", []), vb.get("selectableFields", [])),
        "crd.served": (va.get("served"), vb.get("served")),
        "crd.storage": (va.get("storage"), vb.get("storage")),
        "crd.deprecated": (va.get("deprecated", False), vb.get("deprecated", False)),
        "crd.deprecationWarning": (va.get("deprecationWarning"), vb.get("deprecationWarning")),
    }
    for facet, (a, b) in facts.items():
        if a != b:
            out.append(Difference(kind, "", facet, a, b))
    out.extend(compare_schemas(kind, va["schema"]["openAPIV3Schema"], vb["schema"]["openAPIV3Schema"]))
    return out
