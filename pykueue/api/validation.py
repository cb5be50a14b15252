"""Field errors that read like the apiserver's validation messages, and schema validation of objects.

Users meet pykueue's validation in three places: the apiserver (CRD schema and CEL rules), the
webhook (the same schema checked with ``jsonschema`` plus semantic rules) and the controller
configuration loader.  All of them speak through :class:`FieldError` so that a message always
names the field path and the rule the same way ``k8s.io/apimachinery/pkg/util/validation/field``
does, e.g. ``spec.concurrentAdmission.explicitOptions[1].name: Duplicate value: "spot"``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import jsonschema


def format_value(value: Any) -> str:
    """Render a bad value the way apimachinery does: strings quoted, numbers bare.

    Objects and lists are summarised by their type name, as the apiserver does for CEL errors,
    because dumping a whole nested object into a one-line message helps nobody.
    """
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One validation failure: the dotted field path and the apiserver-style message.

    ``path`` uses Kubernetes notation (``spec.resourceGroups[0].flavors[1].name``; map keys as
    ``metadata.labels[app]``).  ``message`` starts with the error type (``Required value``,
    ``Invalid value: ...``, ``Duplicate value: ...``) exactly like the apiserver.
    """

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    # --- constructors mirroring field.Required, field.Invalid, ... ---------------------------
    @classmethod
    def required(cls, path: str, detail: str = "") -> FieldError:
        return cls(path, "Required value" + (f": {detail}" if detail else ""))

    @classmethod
    def invalid(cls, path: str, value: Any, detail: str) -> FieldError:
        return cls(path, f"Invalid value: {format_value(value)}: {detail}")

    @classmethod
    def duplicate(cls, path: str, value: Any) -> FieldError:
        return cls(path, f"Duplicate value: {format_value(value)}")

    @classmethod
    def not_supported(cls, path: str, value: Any, supported: Iterable[Any]) -> FieldError:
        choices = ", ".join(format_value(v) for v in supported)
        return cls(path, f"Unsupported value: {format_value(value)}: supported values: {choices}")

    @classmethod
    def forbidden(cls, path: str, detail: str) -> FieldError:
        return cls(path, f"Forbidden: {detail}")

    @classmethod
    def too_long(cls, path: str, max_length: int) -> FieldError:
        return cls(path, f"Too long: may not be more than {max_length} bytes")

    @classmethod
    def too_many(cls, path: str, actual: int, max_items: int) -> FieldError:
        return cls(path, f"Too many: {actual}: must have at most {max_items} items")

    @classmethod
    def not_found(cls, path: str, value: Any) -> FieldError:
        return cls(path, f"Not found: {format_value(value)}")


def join_path(base: str, child: str | int) -> str:
    """Append a property name (``.name``) or list index (``[3]``) to a field path."""
    if isinstance(child, int):
        return f"{base}[{child}]"
    return f"{base}.{child}" if base else child


def path_of(parts: Sequence[str | int]) -> str:
    """Build a field path from a sequence of property names and list indexes."""
    path = ""
    for part in parts:
        path = join_path(path, part)
    return path


def aggregate_message(errors: Sequence[FieldError]) -> str:
    """The errors as one line, the way Kueue's webhooks word a denial.

    Kueue's validators return ``field.ErrorList.ToAggregate()``, and controller-runtime denies
    with that aggregate's ``Error()`` text: repeated messages dropped, one error shown bare,
    several as ``[a, b]`` (apimachinery's ``pkg/util/errors/errors.go``). There is no
    ``<Kind>.<group> "<name>" is invalid:`` prefix; that is ``apierrors.NewInvalid``'s wording,
    used by the apiserver's own validation, not by a webhook denial (``docs/design/webhook.md``).
    """
    if not errors:
        raise ValueError("aggregate_message needs at least one error")
    unique = list(dict.fromkeys(str(e) for e in errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# --- schema validation ----------------------------------------------------------------------------
# Imported late so that FieldError stays importable without building every schema.

from pykueue.api.dsl import RULES, Schema  # noqa: E402
from pykueue.api.schema import apply_defaults, cached_object_schema  # noqa: E402
from pykueue.api.schema_fastcheck import Accepts, UnsupportedSchema, compile_accepts  # noqa: E402

# Keyed by (kind, version); version None is the kind's own (v1beta1 for Kueue kinds).
_VALIDATORS: dict[tuple[str, str | None], jsonschema.protocols.Validator] = {}
_ACCEPTS: dict[tuple[str, str | None], Accepts] = {}


def _validator(kind: str, version: str | None = None) -> jsonschema.protocols.Validator:
    key = (kind, version)
    if key not in _VALIDATORS:
        _VALIDATORS[key] = jsonschema.Draft7Validator(cached_object_schema(kind, version))
    return _VALIDATORS[key]


def _never_sure(_value: Any) -> bool:
    return False


def _accepts(kind: str, version: str | None = None) -> Accepts:
    """The compiled fast check of ``kind`` in ``version`` (see :mod:`pykueue.api.schema_fastcheck`), built once."""
    key = (kind, version)
    if key not in _ACCEPTS:
        try:
            _ACCEPTS[key] = compile_accepts(cached_object_schema(kind, version))
        except UnsupportedSchema:
            _ACCEPTS[key] = _never_sure  # jsonschema alone, as before
    return _ACCEPTS[key]


def _from_jsonschema(error: jsonschema.ValidationError) -> list[FieldError]:
    """Translate one jsonschema error into apiserver wording."""
    path = path_of(list(error.absolute_path))
    # Set on every error a validator yields; the stubs also allow jsonschema's "unset" sentinel,
    # which only hand-built errors carry.
    rule: Any = error.validator
    limit: Any = error.validator_value
    value: Any = error.instance
    if rule == "required":
        present = value if isinstance(value, dict) else {}
        return [FieldError.required(join_path(path, name)) for name in limit if name not in present]
    if rule == "enum":
        return [FieldError.not_supported(path, value, limit)]
    if rule == "type":
        return [FieldError.invalid(path, value, f"must be of type {limit}")]
    if rule == "anyOf":
        return [FieldError.invalid(path, value, "must be an integer or a quantity string such as 500m or 4Gi")]
    if rule == "pattern":
        return [FieldError.invalid(path, value, f"should match '{limit}'")]
    if rule == "maxLength":
        return [FieldError.too_long(path, limit)]
    if rule == "minLength":
        return [FieldError.invalid(path, value, f"should be at least {limit} chars long")]
    if rule in ("maxItems", "maxProperties"):
        return [FieldError.too_many(path, len(value), limit)]
    if rule == "minItems":
        return [FieldError(path, f"Invalid value: {len(value)}: should have at least {limit} items")]
    if rule == "minimum":
        return [FieldError.invalid(path, value, f"should be greater than or equal to {limit}")]
    if rule == "maximum":
        return [FieldError.invalid(path, value, f"should be less than or equal to {limit}")]
    return [FieldError.invalid(path, value, error.message)]


def _rule_errors(schema: Schema, value: Any, path: str) -> list[FieldError]:
    """Errors of the CEL rules on this node that have a Python twin (transition rules are skipped)."""
    errors: list[FieldError] = []
    for entry in schema.get("x-kubernetes-validations", []):
        rule = RULES.get(entry["rule"])
        if rule is None or rule.check is None:
            continue
        try:
            ok = rule.check(value)
        except (TypeError, AttributeError, KeyError, ValueError):
            continue  # ill-typed input: the type errors already say what is wrong
        if not ok:
            # The apiserver reports a failed CEL rule without the value: "<path>: Invalid value: <message>".
            errors.append(FieldError(path + (entry.get("fieldPath") or ""), f"Invalid value: {rule.message}"))
    return errors


def _list_errors(schema: Schema, items: list[Any], path: str) -> list[FieldError]:
    """Duplicate keys in map lists and duplicate entries in set lists, as the apiserver reports them."""
    errors: list[FieldError] = []
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        seen_values: list[Any] = []
        for i, item in enumerate(items):
            if item in seen_values:
                errors.append(FieldError.duplicate(join_path(path, i), item))
            seen_values.append(item)
    elif list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys", [])
        seen: set[tuple[str, ...] | str] = set()
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            values = [item.get(k) for k in keys]
            # Names (strings) almost always: a tuple of them compares as their JSON would, and
            # costs a tenth of json.dumps; anything else keeps the JSON text as its key.
            key: tuple[str, ...] | str = (
                tuple(cast("list[str]", values)) if all(type(x) is str for x in values) else json.dumps(values)
            )
            if key in seen:
                if len(keys) == 1:
                    errors.append(FieldError.duplicate(join_path(join_path(path, i), keys[0]), item.get(keys[0])))
                else:
                    shown = "{" + ", ".join(f"{k}: {format_value(item.get(k))}" for k in keys) + "}"
                    errors.append(FieldError(join_path(path, i), f"Duplicate value: {shown}"))
            seen.add(key)
    return errors


# (id(schema node), unknown_fields) -> (the node, whether _walk can find anything below it). The
# node is held so its id stays unique; the schemas are the long-lived cached ones.
_WALK_NEEDED: dict[tuple[int, bool], tuple[Schema, bool]] = {}


def _walk_needed(schema: Schema, unknown_fields: bool) -> bool:
    """Whether ``schema`` or a node below it has a CEL twin, a set/map list or (with
    ``unknown_fields``) known properties; most subtrees have none and are skipped whole."""
    key = (id(schema), unknown_fields)
    cached = _WALK_NEEDED.get(key)
    if cached is not None:
        return cached[1]
    props = schema.get("properties", {})
    children = [*props.values(), *(schema.get(k) for k in ("additionalProperties", "items"))]
    needed = (
        bool(schema.get("x-kubernetes-validations"))
        or schema.get("x-kubernetes-list-type") in ("set", "map")
        or (unknown_fields and bool(props) and not schema.get("x-kubernetes-preserve-unknown-fields"))
        or any(_walk_needed(child, unknown_fields) for child in children if isinstance(child, dict))
    )
    _WALK_NEEDED[key] = (schema, needed)
    return needed


def _walk(schema: Schema, value: Any, path: str, unknown_fields: bool) -> list[FieldError]:
    """Checks jsonschema cannot express: CEL twins, list-map keys, unknown fields."""
    if not _walk_needed(schema, unknown_fields):
        return []
    errors = _rule_errors(schema, value, path)
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name, child in props.items():
            if name in value:
                errors += _walk(child, value[name], join_path(path, name), unknown_fields)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, item in value.items():
                errors += _walk(extra, item, f"{path}[{key}]", unknown_fields)
        elif unknown_fields and props and not schema.get("x-kubernetes-preserve-unknown-fields"):
            errors += [
                FieldError(join_path(path, name), f'Invalid value: {format_value(value[name])}: unknown field "{name}"')
                for name in value
                if name not in props
            ]
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        errors += _list_errors(schema, value, path)
        for i, item in enumerate(value):
            errors += _walk(schema["items"], item, join_path(path, i), unknown_fields)
    return errors


def schema_errors(
    kind: str, obj: Any, *, unknown_fields: bool = True, version: str | None = None
) -> list[FieldError]:
    """Everything the apiserver's CRD schema (and the Python twins of its CEL rules) rejects in ``obj``.

    ``version`` picks the schema (the kind's own, ``v1beta1`` for Kueue kinds, when omitted;
    ``v1beta2`` for an object sent in v1beta2), so every path named is the version's own
    (``spec.priorityClassRef`` in v1beta2 where v1beta1 says ``spec.priorityClassName``).
    Defaults are applied first, as the apiserver does before it validates.  With
    ``unknown_fields`` a field the schema does not know is reported (kubectl's strict field
    validation does the same; the apiserver itself would silently prune it).  Never raises on
    malformed input: a non-object is one error.
    """
    if not isinstance(obj, dict):
        return [FieldError.invalid("", obj, "must be of type object")]
    defaulted = apply_defaults(kind, obj, version)
    errors: list[FieldError] = []
    # Most objects are valid: a compiled yes/no check answers those ~20x faster than jsonschema,
    # which then only words the errors of the rest.
    if not _accepts(kind, version)(defaulted):
        for error in sorted(_validator(kind, version).iter_errors(defaulted), key=lambda e: list(map(str, e.absolute_path))):
            errors += _from_jsonschema(error)
    errors += _walk(cached_object_schema(kind, version), defaulted, "", unknown_fields)
    unique: dict[str, FieldError] = {}
    for err in errors:
        unique.setdefault(str(err), err)
    return list(unique.values())
