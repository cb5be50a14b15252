"""A small DSL that builds structural OpenAPI v3 schemas, the single source of truth of the API.

Each helper returns a plain ``dict`` in exactly the form a CustomResourceDefinition carries it,
so the CRD generator only has to wrap the result, and the webhook can hand the very same dict to
``jsonschema``.  Every helper takes the field's description as its first argument: a field
without a description cannot be written, which keeps ``kubectl explain`` useful.

CEL rules (``x-kubernetes-validations``) can carry a Python twin (:class:`Rule` ``check``) so the
webhook and unit tests enforce the rule the apiserver enforces, without a CEL interpreter.  The
twin is kept in a side table keyed by the CEL text, so the schema itself stays pure JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Schema = dict[str, Any]

# Kubernetes' resource.Quantity pattern, as controller-gen emits it.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# Go's time.ParseDuration syntax restricted to non-negative values ("90s", "1h30m", "0.5h");
# pykueue.api.durations reads the value.
DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"

@dataclass(frozen=True)
class Rule:
    """A CEL validation rule, optionally with a Python predicate that decides the same thing.

    ``check`` receives the value the rule is attached to (CEL's ``self``) and returns True when
    valid.  Transition rules (those using ``oldSelf``) have no Python twin: updates are the
    webhook's business.  ``field_path`` (relative, e.g. ``.removeBelowTargetConfig``) moves the
    reported error to a child field as the apiserver does.
    """

    cel: str
    message: str
    check: Callable[[Any], bool] | None = None
    field_path: str | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        known = RULES.setdefault(self.cel, self)
        if known.message != self.message:
            raise ValueError(f"two different rules share the CEL text {self.cel!r}")

    def to_json(self) -> dict[str, str]:
        out = {"rule": self.cel, "message": self.message}
        if self.field_path:
            out["fieldPath"] = self.field_path
        if self.reason:
            out["reason"] = self.reason
        return out


# CEL text -> Rule, so validation can find the Python twin of a rule it meets in a schema.
RULES: dict[str, Rule] = {}


def _finish(schema: Schema, rules: Sequence[Rule], default: Any, nullable: bool = False) -> Schema:
    if default is not None:
        schema["default"] = default
    if nullable:
        schema["nullable"] = True
    if rules:
        schema["x-kubernetes-validations"] = [r.to_json() for r in rules]
    return schema


def string(
    description: str,
    *,
    enum: Sequence[str] | None = None,
    pattern: str | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    default: str | None = None,
    fmt: str | None = None,
    rules: Sequence[Rule] = (),
) -> Schema:
    """A string field; ``enum`` lists every accepted value."""
    schema: Schema = {"type": "string", "description": description}
    if enum is not None:
        schema["enum"] = list(enum)
    if pattern is not None:
        schema["pattern"] = pattern
    if min_length is not None:
        schema["minLength"] = min_length
    if max_length is not None:
        schema["maxLength"] = max_length
    if fmt is not None:
        schema["format"] = fmt
    return _finish(schema, rules, default)


def name_ref(description: str, *, max_length: int = 253, pattern: str = DNS1123_SUBDOMAIN, **kw: Any) -> Schema:
    """A reference to another object by name (DNS-1123 subdomain unless told otherwise)."""
    return string(description, max_length=max_length, pattern=pattern, **kw)


def integer(
    description: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    default: int | None = None,
    fmt: str = "int32",
    rules: Sequence[Rule] = (),
) -> Schema:
    """An integer field (``int32`` unless ``fmt`` says ``int64``)."""
    schema: Schema = {"type": "integer", "format": fmt, "description": description}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return _finish(schema, rules, default)


def number(description: str, *, minimum: float | None = None, default: float | None = None) -> Schema:
    schema: Schema = {"type": "number", "description": description}
    if minimum is not None:
        schema["minimum"] = minimum
    return _finish(schema, (), default)


def boolean(description: str, *, default: bool | None = None) -> Schema:
    return _finish({"type": "boolean", "description": description}, (), default)


def timestamp(description: str) -> Schema:
    """An RFC 3339 time (metav1.Time)."""
    return {"type": "string", "format": "date-time", "description": description}


def duration(description: str, *, default: str | None = None, rules: Sequence[Rule] = ()) -> Schema:
    """A Go duration string such as ``10m`` or ``1h30m`` (metav1.Duration)."""
    return string(description, pattern=DURATION_PATTERN, default=default, rules=rules)


def quantity(description: str, *, rules: Sequence[Rule] = ()) -> Schema:
    """A resource.Quantity: an integer or a quantity string (``500m``, ``4Gi``)."""
    schema: Schema = {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": True,
        "description": description,
    }
    return _finish(schema, rules, None)


def array(
    description: str,
    items: Schema,
    *,
    min_items: int | None = None,
    max_items: int | None = None,
    list_type: str | None = None,
    map_keys: Sequence[str] | None = None,
    rules: Sequence[Rule] = (),
    default: list[Any] | None = None,
) -> Schema:
    """A list; ``list_type`` is ``atomic``, ``set`` or ``map`` (then ``map_keys`` is required)."""
    if (list_type == "map") != bool(map_keys):
        raise ValueError("map_keys is required exactly when list_type is 'map'")
    schema: Schema = {"type": "array", "description": description, "items": items}
    if min_items is not None:
        schema["minItems"] = min_items
    if max_items is not None:
        schema["maxItems"] = max_items
    if list_type is not None:
        schema["x-kubernetes-list-type"] = list_type
    if map_keys:
        schema["x-kubernetes-list-map-keys"] = list(map_keys)
    return _finish(schema, rules, default)


def obj(
    description: str,
    properties: Mapping[str, Schema],
    *,
    required: Sequence[str] = (),
    rules: Sequence[Rule] = (),
    default: dict[str, Any] | None = None,
    map_type: str | None = None,
) -> Schema:
    """An object with known properties; unknown properties are pruned by the apiserver."""
    missing = [r for r in required if r not in properties]
    if missing:
        raise ValueError(f"required fields {missing} are not properties")
    schema: Schema = {"type": "object", "description": description, "properties": dict(properties)}
    if required:
        schema["required"] = list(required)
    if map_type:
        schema["x-kubernetes-map-type"] = map_type
    return _finish(schema, rules, default)


def map_of(
    description: str, values: Schema, *, max_properties: int | None = None, rules: Sequence[Rule] = ()
) -> Schema:
    """A map from string keys to ``values`` (``map[string]T``)."""
    schema: Schema = {"type": "object", "description": description, "additionalProperties": values}
    if max_properties is not None:
        schema["maxProperties"] = max_properties
    return _finish(schema, rules, None)


def free_form(description: str, properties: Mapping[str, Schema] | None = None) -> Schema:
    """An object whose unknown fields are kept as they are (embedded core types we do not model)."""
    schema: Schema = {"type": "object", "description": description, "x-kubernetes-preserve-unknown-fields": True}
    if properties:
        schema["properties"] = dict(properties)
    return schema


def walk(schema: Schema, visit: Callable[[Schema, tuple[str, ...]], None], path: tuple[str, ...] = ()) -> None:
    """Call ``visit(node, path)`` on every schema node (``[]`` marks list items, ``{}`` map values)."""
    visit(schema, path)
    for name, child in schema.get("properties", {}).items():
        walk(child, visit, (*path, name))
    if isinstance(schema.get("items"), dict):
        walk(schema["items"], visit, (*path, "[]"))
    if isinstance(schema.get("additionalProperties"), dict):
        walk(schema["additionalProperties"], visit, (*path, "{}"))
