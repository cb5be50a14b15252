"""A compiled yes/no check of an object against a structural schema: the fast path of validation.

``jsonschema`` walks the schema for every value, creating a validator object per step; on a
ClusterQueue with a few flavors that is about 1 ms of CPU, three quarters of what the webhook
spends on a validating request. Nearly every object the apiserver sends is valid, and for a valid
object jsonschema produces nothing but the answer "no errors". :func:`compile_accepts` turns a
schema once into nested closures that answer only that question, about ten times faster; the
caller runs jsonschema only when the answer is "no", to word the errors.

The check is *conservative*: it may reject an object jsonschema would accept (the caller then
asks jsonschema, which finds nothing, so the outcome is the same), but it must never accept an
object jsonschema would reject. Hence it handles exactly the Draft 7 keywords our schemas use,
treats an unfamiliar value (a float where an integer is expected, a non-string enum member, a
``dict`` subclass) as "ask jsonschema", and refuses to compile a schema with any other validation
keyword (:class:`UnsupportedSchema`), in which case the caller keeps using jsonschema alone.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable
from typing import Any

Accepts = Callable[[Any], bool]

# Keywords that never make jsonschema (without a format checker) report an error.
_ANNOTATIONS = frozenset({"description", "default", "format", "title", "example", "examples", "$schema", "$id"})
_VALIDATING = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "pattern",
    "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minimum", "anyOf",
})


class UnsupportedSchema(ValueError):
    """The schema uses a keyword (or a form of one) the fast check does not implement."""


def _is_integer(value: Any) -> bool:
    return type(value) is int


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


_TYPE_CHECKS: dict[str, Accepts] = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}


def _accept_all(_value: Any) -> bool:
    return True


def _string_checks(schema: dict[str, Any]) -> list[Accepts]:
    """maxLength, minLength and pattern: they constrain strings and pass any other value."""
    checks: list[Accepts] = []
    if "maxLength" in schema:
        longest = int(schema["maxLength"])
        checks.append(lambda v: not isinstance(v, str) or len(v) <= longest)
    if "minLength" in schema:
        shortest = int(schema["minLength"])
        checks.append(lambda v: not isinstance(v, str) or len(v) >= shortest)
    if "pattern" in schema:
        search = re.compile(schema["pattern"]).search
        checks.append(lambda v: not isinstance(v, str) or search(v) is not None)
    return checks


def _array_checks(schema: dict[str, Any]) -> list[Accepts]:
    checks: list[Accepts] = []
    if "maxItems" in schema:
        most = int(schema["maxItems"])
        checks.append(lambda v: not isinstance(v, list) or len(v) <= most)
    if "minItems" in schema:
        fewest = int(schema["minItems"])
        checks.append(lambda v: not isinstance(v, list) or len(v) >= fewest)
    if "items" in schema:
        if not isinstance(schema["items"], dict):
            raise UnsupportedSchema("items as a list (tuple validation)")
        item = compile_accepts(schema["items"])
        # A non-list passes "items" in jsonschema; anything but an exact list is left to it.
        checks.append(lambda v: type(v) is list and all(item(x) for x in v) if isinstance(v, list) else True)
    return checks


def _object_checks(schema: dict[str, Any]) -> list[Accepts]:
    checks: list[Accepts] = []
    if "maxProperties" in schema:
        most = int(schema["maxProperties"])
        checks.append(lambda v: not isinstance(v, dict) or len(v) <= most)
    if "required" in schema:
        required = tuple(schema["required"])
        checks.append(lambda v: not isinstance(v, dict) or all(name in v for name in required))
    properties = {name: compile_accepts(child) for name, child in schema.get("properties", {}).items()}
    extra = schema.get("additionalProperties", True)
    if extra is True and not properties:
        return checks
    if isinstance(extra, dict):
        extra_check: Accepts | None = compile_accepts(extra)
    elif extra is True:
        extra_check = _accept_all
    elif extra is False:
        extra_check = None
    else:
        raise UnsupportedSchema(f"additionalProperties: {extra!r}")

    def members(value: Any) -> bool:
        if not isinstance(value, dict):
            return True  # properties/additionalProperties only constrain objects
        if type(value) is not dict:
            return False  # a dict subclass: let jsonschema decide
        for name, member in value.items():
            check = properties.get(name, extra_check)
            if check is None or not check(member):
                return False
        return True

    checks.append(members)
    return checks


def _enum_members(schema: dict[str, Any]) -> frozenset[str]:
    members = schema["enum"]
    if not all(type(m) is str for m in members):
        raise UnsupportedSchema("enum with non-string members")
    return frozenset(members)


def _enum_check(schema: dict[str, Any]) -> Accepts:
    allowed = _enum_members(schema)
    return lambda v: type(v) is str and v in allowed


def _minimum_check(schema: dict[str, Any]) -> Accepts:
    floor = schema["minimum"]
    if not _is_number(floor):
        raise UnsupportedSchema(f"minimum: {floor!r}")

    def at_least(value: Any) -> bool:
        if type(value) is int or type(value) is float:
            return not value < floor  # NaN passes, as in jsonschema
        # jsonschema compares numbers only: a bool or a string passes "minimum" (type catches it);
        # any other kind of number is left to jsonschema.
        return isinstance(value, bool) or not isinstance(value, numbers.Number)

    return at_least


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
        checks.append(_enum_check(schema))
    if "minimum" in schema:
        checks.append(_minimum_check(schema))
    checks += _string_checks(schema) + _array_checks(schema) + _object_checks(schema)
    if "anyOf" in schema:
        options = tuple(compile_accepts(option) for option in schema["anyOf"])
        checks.append(lambda v: any(option(v) for option in options))
    return _all_of(checks)


def _all_of(checks: list[Accepts]) -> Accepts:
    """One predicate for a node's checks, without a loop for the common one- and two-check nodes."""
    if not checks:
        return _accept_all
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)
    frozen = tuple(checks)
    return lambda v: all(check(v) for check in frozen)


# --- one closure per typed node ---------------------------------------------------------------
# Most schema nodes name one type. Once the value is known to be exactly that type, the keywords
# of other types cannot fail, so the node's checks fold into a single function with no per-check
# calls; this halves the time of the generic composition above. Nodes with anyOf, or an enum on a
# non-string type, keep the generic path.


def _typed(schema: dict[str, Any]) -> Accepts | None:
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
    floor = schema.get("minimum")
    if floor is not None and not _is_number(floor):
        raise UnsupportedSchema(f"minimum: {floor!r}")

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
