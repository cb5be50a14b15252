"""A compiled yes/no check of an object against a structural schema: the fast path of validation.

``jsonschema`` walks the schema for every value, creating a validator object per step; on the
webhook benchmark's ClusterQueue that is about 370 µs of CPU (best case), most of what a
validating request spent in our code. Nearly every object the apiserver sends is valid, and for
a valid object jsonschema produces nothing but the answer "no errors". :func:`compile_accepts`
turns a schema once into nested closures that answer only that question (about 20 µs for the
same object); the caller runs jsonschema only when the answer is "no", to word the errors.

The check is *conservative*: it may reject an object jsonschema would accept (the caller then
asks jsonschema, which finds nothing, so the outcome is the same), but it must never accept an
object jsonschema would reject. Hence it handles exactly the Draft 7 keywords our schemas use,
treats an unfamiliar value (a float where an integer is expected, a non-string enum member, a
``dict`` subclass) as "ask jsonschema", and refuses to compile a schema with any other validation
keyword (:class:`UnsupportedSchema`), in which case the caller keeps using jsonschema alone.

Most schema nodes name one type. Once a value is known to be exactly that type, the keywords of
other types cannot fail, so such a node compiles into one function with no per-keyword calls
(:func:`_typed`). The rest — no type, ``anyOf``, an enum on a non-string type — compose the same
per-type functions, each applied only to values of its type, as jsonschema applies its keywords.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable
from typing import Any

Accepts = Callable[[Any], bool]

# Keywords that never make jsonschema (without a format checker) report an error.
_ANNOTATIONS = frozenset({"description", "default", "format", "title", "example", "examples", "$schema", "$id"})
_STRING_KEYWORDS = ("maxLength", "minLength", "pattern")
_ARRAY_KEYWORDS = ("maxItems", "minItems", "items")
_OBJECT_KEYWORDS = ("maxProperties", "required", "properties", "additionalProperties")
_VALIDATING = frozenset({"type", "enum", "minimum", "anyOf", *_STRING_KEYWORDS, *_ARRAY_KEYWORDS, *_OBJECT_KEYWORDS})


class UnsupportedSchema(ValueError):
    """The schema uses a keyword (or a form of one) the fast check does not implement."""


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


_TYPE_CHECKS: dict[str, Accepts] = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,
    "number": _is_number,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}


def _accept_all(_value: Any) -> bool:
    return True


def compile_accepts(schema: dict[str, Any]) -> Accepts:
    """A predicate that is true only for values jsonschema's Draft 7 validator finds no error in.

    Raises :class:`UnsupportedSchema` when ``schema`` (or a schema below it) uses a keyword or a
    form of one that is not implemented.
    """
    if not isinstance(schema, dict):
        raise UnsupportedSchema(f"schema of type {type(schema).__name__}")
    unknown = [k for k in schema if k not in _VALIDATING and k not in _ANNOTATIONS and not k.startswith("x-")]
    if unknown:
        raise UnsupportedSchema(f"keywords {sorted(unknown)}")
    typed = _typed(schema)
    if typed is not None:
        return typed
    checks: list[Accepts] = []
    if "type" in schema:
        kind = schema["type"]
        if not isinstance(kind, str) or kind not in _TYPE_CHECKS:
            raise UnsupportedSchema(f"type: {kind!r}")
        checks.append(_TYPE_CHECKS[kind])
    if "enum" in schema:
        allowed = _enum_members(schema)
        checks.append(lambda v: type(v) is str and v in allowed)
    floor = _checked_minimum(schema)
    if floor is not None:
        checks.append(_minimum_check(floor))
    # Keywords of one type constrain values of that type only; the typed function also rejects a
    # subclass (a str, list or dict subclass is left to jsonschema).
    for family, keywords, build in (
        (str, _STRING_KEYWORDS, _typed_string),
        (list, _ARRAY_KEYWORDS, _typed_array),
        (dict, _OBJECT_KEYWORDS, _typed_object),
    ):
        if any(k in schema for k in keywords):
            checks.append(_only_for(family, build({k: schema[k] for k in keywords if k in schema})))
    if "anyOf" in schema:
        options = tuple(compile_accepts(option) for option in schema["anyOf"])
        checks.append(lambda v: any(option(v) for option in options))
    return _all_of(checks)


def _only_for(family: type, check: Accepts) -> Accepts:
    return lambda v: not isinstance(v, family) or check(v)


def _all_of(checks: list[Accepts]) -> Accepts:
    if not checks:
        return _accept_all
    if len(checks) == 1:
        return checks[0]
    frozen = tuple(checks)
    return lambda v: all(check(v) for check in frozen)


def _enum_members(schema: dict[str, Any]) -> frozenset[str]:
    members = schema["enum"]
    if not all(type(m) is str for m in members):
        raise UnsupportedSchema("enum with non-string members")
    return frozenset(members)


def _checked_minimum(schema: dict[str, Any]) -> int | float | None:
    floor = schema.get("minimum")
    if floor is not None and not _is_number(floor):
        raise UnsupportedSchema(f"minimum: {floor!r}")
    return floor


def _minimum_check(floor: int | float) -> Accepts:
    def at_least(value: Any) -> bool:
        if type(value) is int or type(value) is float:
            return not value < floor  # NaN passes, as in jsonschema
        # jsonschema compares numbers only: a bool or a string passes "minimum" (type catches it);
        # any other kind of number is left to jsonschema.
        return isinstance(value, bool) or not isinstance(value, numbers.Number)

    return at_least


def _typed(schema: dict[str, Any]) -> Accepts | None:
    """One function for a node that names a single type, or None when it needs the composition."""
    kind = schema.get("type")
    if "anyOf" in schema or ("enum" in schema and kind != "string"):
        return None
    if kind == "string":
        return _typed_string(schema)
    if kind == "integer":
        return _typed_integer(schema)
    if kind == "array":
        return _typed_array(schema)
    if kind == "object":
        return _typed_object(schema)
    return None


def _typed_string(schema: dict[str, Any]) -> Accepts:
    longest = int(schema["maxLength"]) if "maxLength" in schema else None
    shortest = int(schema["minLength"]) if "minLength" in schema else None
    search = re.compile(schema["pattern"]).search if "pattern" in schema else None
    allowed = _enum_members(schema) if "enum" in schema else None

    def string(value: Any) -> bool:
        if type(value) is not str:
            return False
        if longest is not None and len(value) > longest:
            return False
        if shortest is not None and len(value) < shortest:
            return False
        if search is not None and search(value) is None:
            return False
        return allowed is None or value in allowed

    return string


def _typed_integer(schema: dict[str, Any]) -> Accepts:
    floor = _checked_minimum(schema)

    def integer(value: Any) -> bool:
        return type(value) is int and (floor is None or not value < floor)

    return integer


def _typed_array(schema: dict[str, Any]) -> Accepts:
    most = int(schema["maxItems"]) if "maxItems" in schema else None
    fewest = int(schema["minItems"]) if "minItems" in schema else None
    items = schema.get("items", {})
    if not isinstance(items, dict):
        raise UnsupportedSchema("items as a list (tuple validation)")
    item = compile_accepts(items)

    def array(value: Any) -> bool:
        if type(value) is not list:
            return False
        if most is not None and len(value) > most:
            return False
        if fewest is not None and len(value) < fewest:
            return False
        for element in value:  # noqa: SIM110 - all() would build a generator per array, the cost avoided here
            if not item(element):
                return False
        return True

    return array


def _typed_object(schema: dict[str, Any]) -> Accepts:
    most = int(schema["maxProperties"]) if "maxProperties" in schema else None
    required = tuple(schema.get("required", ()))
    properties = {name: compile_accepts(child) for name, child in schema.get("properties", {}).items()}
    extra = schema.get("additionalProperties", True)
    if isinstance(extra, dict):
        extra_check: Accepts | None = compile_accepts(extra)
    elif extra is True:
        extra_check = _accept_all
    elif extra is False:
        extra_check = None
    else:
        raise UnsupportedSchema(f"additionalProperties: {extra!r}")
    lookup = properties.get

    def obj(value: Any) -> bool:
        if type(value) is not dict:
            return False
        if most is not None and len(value) > most:
            return False
        for name in required:
            if name not in value:
                return False
        for name, member in value.items():
            check = lookup(name, extra_check)
            if check is None or not check(member):
                return False
        return True

    return obj
