"""The hot-path shortcuts in schema_errors change nothing it reports.

Three shortcuts serve the webhook's validating path: subtrees with nothing for the CEL-twin and
list-key walk are skipped, map-list keys made only of strings are compared as tuples, and defaults
are applied to a JSON-specific copy. Each is compared here against the plain computation on values
generated from every served kind's own schema.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykueue.api import schema as schema_module
from pykueue.api import validation
from pykueue.api.schema import apply_defaults, cached_object_schema
from tests.unit.webhook.test_schema_fastcheck import KINDS, _paths, _replaced, instances, wrong_values


def _messages(kind: str, obj: Any, unknown_fields: bool) -> list[str]:
    return [str(error) for error in validation.schema_errors(kind, obj, unknown_fields=unknown_fields)]


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_skipping_subtrees_reports_the_same_errors(kind: str, data: st.DataObject) -> None:
    obj = data.draw(instances(cached_object_schema(kind), near_miss=True))
    if data.draw(st.booleans()):
        obj = _replaced(obj, data.draw(st.sampled_from(_paths(obj))), data.draw(wrong_values))
    unknown_fields = data.draw(st.booleans())
    shortcut = _messages(kind, obj, unknown_fields)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(validation, "_walk_needed", lambda _schema, _unknown: True)
        patched.setattr(schema_module, "_copy_json", copy.deepcopy)
        assert shortcut == _messages(kind, obj, unknown_fields)


def _flavors(*names: Any) -> dict[str, Any]:
    return {"spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": name, "resources": [{"name": "cpu", "nominalQuota": "1"}]} for name in names
    ]}]}}


@pytest.mark.parametrize(
    "names,duplicate_at",
    [
        (("a", "b", "a"), [2]),
        (("a", "b"), []),
        ((1, 1), [1]),  # non-string keys keep their JSON text as the key
        ((1, "1"), []),  # 1 and "1" are different JSON values, never duplicates
        ((True, 1), []),
    ],
)
def test_map_list_duplicates_compare_json_values(names: tuple[Any, ...], duplicate_at: list[int]) -> None:
    errors = validation.schema_errors("ClusterQueue", _flavors(*names), unknown_fields=False)
    duplicates = [e.path for e in errors if e.message.startswith("Duplicate value")]
    assert duplicates == [f"spec.resourceGroups[0].flavors[{i}].name" for i in duplicate_at]


def test_defaults_go_onto_a_copy() -> None:
    obj = {"spec": {"resourceGroups": []}, "metadata": {"labels": {"a": "b"}}}
    snapshot = copy.deepcopy(obj)
    defaulted = apply_defaults("ClusterQueue", obj)
    assert obj == snapshot
    defaulted["metadata"]["labels"]["a"] = "changed"
    assert obj["metadata"]["labels"]["a"] == "b"
