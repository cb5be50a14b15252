"""JSON patches: escaped pointers, parents created, idempotent; applying them yields the intended object."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.patch import PatchBuilder, apply_patch, pointer

keys = st.text(alphabet="ab/~.-", min_size=1, max_size=6)
values = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
objects = st.recursive(values, lambda inner: st.dictionaries(keys, inner, max_size=3), max_leaves=10).filter(
    lambda v: isinstance(v, dict)
)


def test_pointer_escapes_slash_and_tilde() -> None:
    assert pointer(["metadata", "labels", "kueue.x-k8s.io/queue-name"]) == "/metadata/labels/kueue.x-k8s.io~1queue-name"
    assert pointer(["a~b"]) == "/a~0b"


def test_missing_parents_are_added_first() -> None:
    builder = PatchBuilder({"spec": {}})
    builder.set(["metadata", "labels", "x/y"], "v")
    assert builder.operations == [
        {"op": "add", "path": "/metadata", "value": {}},
        {"op": "add", "path": "/metadata/labels", "value": {}},
        {"op": "add", "path": "/metadata/labels/x~1y", "value": "v"},
    ]


@settings(max_examples=300, deadline=None)
@given(original=objects, writes=st.lists(st.tuples(st.lists(keys, min_size=1, max_size=3), values), max_size=4))
def test_patch_reproduces_the_intended_object_and_is_idempotent(
    original: dict[str, Any], writes: list[tuple[list[str], Any]]
) -> None:
    snapshot = copy.deepcopy(original)
    builder = PatchBuilder(original)
    for path, value in writes:
        builder.set(path, value)
    assert original == snapshot  # copy-on-write: the object as sent is never written
    assert apply_patch(original, builder.operations) == builder.result
    again = PatchBuilder(builder.result)
    for path, value in leaves(builder.result):
        again.set(path, value)  # writing what is already there
    assert again.operations == []


def leaves(obj: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[list[str], Any]]:
    found: list[tuple[list[str], Any]] = []
    for key, value in obj.items():
        if isinstance(value, dict) and value:
            found += leaves(value, (*prefix, key))
        else:
            found.append(([*prefix, key], value))
    return found


def test_only_the_maps_on_a_written_path_are_copied() -> None:
    original = {"metadata": {"labels": {"a": "1"}, "annotations": {"b": "2"}}, "spec": {"template": {"x": 1}}}
    builder = PatchBuilder(original)
    builder.set(["metadata", "labels", "c"], "3")
    assert original["metadata"]["labels"] == {"a": "1"}
    assert builder.result["metadata"]["labels"] == {"a": "1", "c": "3"}
    assert builder.result["spec"] is original["spec"]  # untouched parts are shared, not copied
    assert builder.result["metadata"]["annotations"] is original["metadata"]["annotations"]
    builder.set(["metadata", "labels", "d"], "4")  # a second write reuses the copy
    assert builder.operations == [
        {"op": "add", "path": "/metadata/labels/c", "value": "3"},
        {"op": "add", "path": "/metadata/labels/d", "value": "4"},
    ]
    assert original["metadata"]["labels"] == {"a": "1"}
