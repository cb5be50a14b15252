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
from typing import Any


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


def invalid_object_message(kind: str, name: str, errors: Sequence[FieldError], group: str = "kueue.x-k8s.io") -> str:
    """The apiserver's summary line: ``ClusterQueue.kueue.x-k8s.io "cq" is invalid: ...``.

    One error is shown bare, several are shown as ``[a, b]``, as ``apierrors.NewInvalid`` does.
    """
    if not errors:
        raise ValueError("invalid_object_message needs at least one error")
    body = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    return f'{kind}.{group} "{name}" is invalid: {body}'
