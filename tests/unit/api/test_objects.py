"""``pykueue.api.objects``: tolerant accessors and informer keys."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest

from controller.workload.view import workload_mode
from pykueue.api.objects import dict_or_empty, list_or_empty, mapping_or_empty, namespaced_key, object_key


def test_accessors_return_the_value_itself_not_a_copy() -> None:
    value: dict[str, Any] = {"a": 1}
    items: list[Any] = [1]
    assert mapping_or_empty(value) is value
    assert dict_or_empty(value) is value
    assert list_or_empty(items) is items


@pytest.mark.parametrize("bad", [None, "x", 3, [1], ("a",)])
def test_wrong_types_read_as_empty(bad: Any) -> None:
    assert mapping_or_empty(bad) == {}
    assert dict_or_empty(bad) == {}
    if not isinstance(bad, list):
        assert list_or_empty(bad) == []


def test_a_read_only_mapping_is_a_mapping_but_not_a_dict() -> None:
    proxy: Mapping[str, Any] = MappingProxyType({"a": 1})
    assert mapping_or_empty(proxy) is proxy
    assert dict_or_empty(proxy) == {}


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        ({"metadata": {"name": "w", "namespace": "ns"}}, "ns/w"),
        ({"metadata": {"name": "cq"}}, "cq"),
        ({"metadata": {"name": "cq", "namespace": ""}}, "cq"),
        ({"metadata": {}}, ""),
        ({}, ""),
        ({"metadata": ["not", "a", "dict"]}, ""),
    ],
)
def test_object_key_is_meta_namespace_key(obj: dict[str, Any], key: str) -> None:
    assert object_key(obj) == key


def test_namespaced_key() -> None:
    assert namespaced_key("ns", "lq") == "ns/lq"


@pytest.mark.parametrize(
    ("spec", "mode"),
    [
        ({}, "Default"),
        ({"workloadMode": {"type": "Parent"}}, "Parent"),
        ({"workloadMode": {"type": "ResourceFlavorOption"}}, "ResourceFlavorOption"),
        ({"workloadMode": {"type": ""}}, "Default"),
        ({"workloadMode": {"type": 3}}, "Default"),
        ({"workloadMode": "Parent"}, "Default"),
    ],
)
def test_workload_mode_defaults_when_absent_or_malformed(spec: dict[str, Any], mode: str) -> None:
    assert workload_mode({"spec": spec}) == mode
