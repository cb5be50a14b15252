"""The compiled schema check never accepts what jsonschema rejects, and accepts valid objects.

The webhook's validation answers "valid" from ``pykueue.api.schema_fastcheck`` without asking
jsonschema, so the one property that matters is soundness: accepted ⇒ jsonschema finds no error.
Hypothesis generates values from each served kind's own schema (mostly near-valid, with wrong
types, boundary lengths, out-of-enum strings and unknown keys mixed in) and compares the two.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.webhook_load import cluster_queue
from pykueue.api.schema import apply_defaults, cached_object_schema
from pykueue.api.schema_fastcheck import UnsupportedSchema, compile_accepts
from pykueue.api.validation import _accepts, _never_sure, schema_errors
from tests.builders import (
    AdmissionCheckBuilder,
    ClusterQueueBuilder,
    CohortBuilder,
    LocalQueueBuilder,
    ResourceFlavorBuilder,
    SeedClusterQueueBuilder,
    WorkloadBuilder,
)
from webhook.registry import HOOKS

KINDS = sorted({hook.kind for hook in HOOKS if hook.group == "kueue.x-k8s.io"})
# The hooks check each object against its own version's schema (v1beta1 is the kinds' own, None).
VERSIONS = [None, "v1beta2"]

wrong_values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=8),
    st.just([]), st.just({}), st.just(["x"]), st.just({"unknownField": 1}), st.just(1.0),
)


def _string(schema: dict[str, Any], near_miss: bool) -> st.SearchStrategy[str]:
    if "enum" in schema:
        right: st.SearchStrategy[str] = st.sampled_from(schema["enum"])
    elif "pattern" in schema:
        right = st.from_regex(schema["pattern"], fullmatch=True).filter(lambda s: len(s) < 300)
    else:
        right = st.text(max_size=6)
    if not near_miss:
        return right
    misses = [st.text(max_size=6)]
    if "maxLength" in schema:
        longest = schema["maxLength"]
        misses.append(st.sampled_from(["a" * longest, "a" * (longest + 1)]))
    return st.one_of(right, *misses)


def _integer(schema: dict[str, Any], near_miss: bool) -> st.SearchStrategy[int]:
    low = int(schema.get("minimum", -5))
    right = st.integers(low, low + 100)
    return st.one_of(st.sampled_from([low - 1, low]), right) if near_miss else right


def instances(schema: dict[str, Any], depth: int = 0, near_miss: bool = False) -> st.SearchStrategy[Any]:
    """Values for ``schema``; with ``near_miss`` some are just outside it (length, minimum, enum)."""
    if "anyOf" in schema:
        return st.one_of([instances(option, depth, near_miss) for option in schema["anyOf"]])
    kind = schema.get("type")
    if kind == "string":
        return _string(schema, near_miss)
    if kind == "integer":
        return _integer(schema, near_miss)
    if kind == "number":
        return _integer(schema, near_miss) | st.floats(allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        most = min(schema.get("maxItems", 3), 3) + (1 if near_miss else 0)
        return st.lists(instances(schema.get("items", {}), depth + 1, near_miss), max_size=most if depth < 6 else 0)
    if kind == "object":
        if depth >= 6:
            return st.just({})
        properties = schema.get("properties", {})
        required = {name: instances(properties.get(name, {}), depth + 1, near_miss) for name in schema.get("required", [])}
        optional = {name: instances(child, depth + 1, near_miss)
                    for name, child in properties.items() if name not in required}
        base = st.fixed_dictionaries(required, optional=optional)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            extras = st.dictionaries(st.text(max_size=5), instances(extra, depth + 1, near_miss), max_size=2)
            return st.tuples(base, extras).map(lambda parts: {**parts[1], **parts[0]})
        return base
    return wrong_values


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value, as the keys and indexes leading to it."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replaced(value[head], rest, new)}
    return [_replaced(child, rest, new) if index == head else child for index, child in enumerate(value)]


def _jsonschema_errors(kind: str, value: Any, version: str | None = None) -> list[str]:
    schema = cached_object_schema(kind, version)
    return [error.message for error in jsonschema.Draft7Validator(schema).iter_errors(value)]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", KINDS)
def test_every_served_kind_compiles(kind: str, version: str | None) -> None:
    """A kind that falls back to jsonschema alone would silently lose the speed-up."""
    assert _accepts(kind, version) is not _never_sure


@pytest.mark.parametrize(
    "kind,obj",
    [
        ("ClusterQueue", cluster_queue()),
        ("ClusterQueue", ClusterQueueBuilder("cq").flavor("default", cpu="10").obj()),
        ("ClusterQueue", SeedClusterQueueBuilder("seed").obj()),
        ("ResourceFlavor", ResourceFlavorBuilder("rf").obj()),
        ("LocalQueue", LocalQueueBuilder("lq", "ns", "cq").obj()),
        ("Cohort", CohortBuilder("co").parent("root").flavor("on-demand", cpu="8").obj()),
        ("AdmissionCheck", AdmissionCheckBuilder("ac").obj()),
        ("Workload", WorkloadBuilder("wl", "ns").queue("lq").podset(count=2, cpu="1").obj()),
    ],
)
def test_valid_objects_take_the_fast_path(kind: str, obj: dict[str, Any]) -> None:
    defaulted = apply_defaults(kind, obj)
    assert _jsonschema_errors(kind, defaulted) == []
    assert _accepts(kind)(defaulted)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_accepted_means_jsonschema_finds_no_error(kind: str, version: str | None, data: st.DataObject) -> None:
    obj = data.draw(instances(cached_object_schema(kind, version), near_miss=data.draw(st.booleans())))
    if data.draw(st.booleans()):  # one value somewhere replaced by something of the wrong shape
        path = data.draw(st.sampled_from(_paths(obj)))
        obj = _replaced(obj, path, data.draw(wrong_values))
    if _accepts(kind, version)(obj):
        assert _jsonschema_errors(kind, obj, version) == []


@pytest.mark.parametrize(
    "schema,value",
    [
        ({"type": "integer"}, True),
        ({"type": "integer", "minimum": 0}, -1),
        ({"type": "string", "maxLength": 3}, "abcd"),
        ({"type": "string", "pattern": "^[a-z]+$"}, "A"),
        ({"type": "string", "enum": ["a"]}, "b"),
        ({"type": "array", "maxItems": 1}, [1, 2]),
        ({"type": "array", "items": {"type": "string"}}, [1]),
        ({"type": "object", "required": ["a"]}, {}),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}, {"b": 1}),
        ({"type": "object", "additionalProperties": {"type": "string"}}, {"b": 1}),
        ({"type": "object", "maxProperties": 1}, {"a": 1, "b": 2}),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, 1.5),
        # Untyped nodes: each type's keywords still apply to values of that type.
        ({"maxLength": 3}, "abcd"),
        ({"required": ["a"]}, {}),
        ({"items": {"type": "string"}}, [1]),
        ({"enum": ["a"]}, "b"),
        ({"minimum": 0}, -0.5),
    ],
)
def test_each_keyword_rejects_what_jsonschema_rejects(schema: dict[str, Any], value: Any) -> None:
    assert list(jsonschema.Draft7Validator(schema).iter_errors(value))
    assert not compile_accepts(schema)(value)


def test_unfamiliar_values_are_left_to_jsonschema() -> None:
    # jsonschema accepts 1.0 as an integer; the fast check is not sure and says no, never the reverse.
    assert not compile_accepts({"type": "integer"})(1.0)
    assert compile_accepts({"minimum": 0})("not a number")  # minimum constrains numbers only
    # Keywords of one type leave values of another type alone, as in jsonschema.
    assert compile_accepts({"maxLength": 3, "maxItems": 1, "required": ["a"]})(12345)
    assert not compile_accepts({"maxLength": 3})(type("Text", (str,), {})("ab"))  # a str subclass: ask jsonschema


@pytest.mark.parametrize("schema", [{"oneOf": [{}]}, {"type": ["string", "null"]}, {"items": [{}]}, {"enum": [1]}])
def test_unsupported_keywords_refuse_to_compile(schema: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedSchema):
        compile_accepts(schema)


def test_schema_errors_still_word_every_error() -> None:
    cq = cluster_queue()
    cq["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "Not_A_Name"
    cq["spec"]["queueingStrategy"] = "Sometimes"
    messages = [str(error) for error in schema_errors("ClusterQueue", cq, unknown_fields=False)]
    assert any(m.startswith("spec.queueingStrategy: Unsupported value: \"Sometimes\"") for m in messages), messages
    assert any(m.startswith("spec.resourceGroups[0].flavors[0].name: Invalid value: \"Not_A_Name\"")
               for m in messages), messages
