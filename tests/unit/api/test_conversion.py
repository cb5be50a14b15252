"""Round trips between v1beta1 and v1beta2 over generated objects of every kind (pykueue.api.conversion).

Objects are drawn from each version's own generated schema (the CRD the apiserver serves), so every
field of every kind is exercised, including the ones one version lacks; the pod template of a
podSet is a fixed small one (its schema is core/v1's and passes through unchanged). A round trip
must give back the very object, annotations included: nothing lost, nothing added.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykueue.api import constants as c
from pykueue.api.conversion import CONVERSION_DATA_ANNOTATION, ConversionError, convert, convert_shared
from pykueue.api.generate import crd
from pykueue.api.schema import KINDS

MAX_DEPTH = 7
_TEMPLATE = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
_WORDS = st.sampled_from(["a", "b", "spot", "on-demand", "x.y", "1", ""])


def _strategy(schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if schema.get("x-kubernetes-int-or-string") or "anyOf" in schema:
        return st.one_of(st.integers(0, 5), st.sampled_from(["1", "10%", "500m"]))
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties")
        if depth >= MAX_DEPTH:
            return st.just({})
        if props:
            optional = {
                name: (st.just(_TEMPLATE) if name == "template" else _strategy(child, depth + 1))
                for name, child in props.items()
            }
            return st.fixed_dictionaries({}, optional=optional)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            return st.dictionaries(_WORDS, _strategy(extra, depth + 1), max_size=2)
        return st.dictionaries(_WORDS, st.integers(0, 3), max_size=2)
    if kind == "array":
        if depth >= MAX_DEPTH:
            return st.just([])
        return st.lists(_strategy(schema["items"], depth + 1), max_size=2)
    if kind == "integer":
        return st.integers(0, 4)
    if kind == "number":
        return st.floats(0, 4, allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if schema.get("format") == "date-time":
        return st.sampled_from(["2026-01-01T00:00:00Z", "2026-02-03T04:05:06Z"])
    return _WORDS


@cache
def _objects(kind: str, version: str) -> st.SearchStrategy[dict[str, Any]]:
    served = next(v for v in crd(KINDS[kind])["spec"]["versions"] if v["name"] == version)
    props = served["schema"]["openAPIV3Schema"]["properties"]
    body = {name: _strategy(schema, 0) for name, schema in props.items() if name not in ("apiVersion", "kind", "metadata")}
    metadata = st.fixed_dictionaries(
        {"name": st.just("obj")},
        # Empty annotations are no annotations (the apiserver drops them as Go's omitempty does).
        optional={"annotations": st.dictionaries(st.sampled_from(["a", "b/c"]), _WORDS, min_size=1, max_size=2)},
    )
    return st.fixed_dictionaries(
        {"apiVersion": st.just(f"{c.GROUP}/{version}"), "kind": st.just(kind), "metadata": metadata},
        optional=body,
    )


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(("start", "other"), [("v1beta1", "v1beta2"), ("v1beta2", "v1beta1")])
def test_every_object_round_trips(kind: str, start: str, other: str) -> None:
    @SETTINGS
    @given(_objects(kind, start))
    def round_trip(obj: dict[str, Any]) -> None:
        before = json.dumps(obj, sort_keys=True)
        there = convert(obj, other)
        assert there["apiVersion"] == f"{c.GROUP}/{other}"
        assert json.dumps(obj, sort_keys=True) == before, "convert modified its input"
        assert convert(there, start) == obj
        assert there["metadata"]["name"] == obj["metadata"]["name"]

    round_trip()


def _containers(value: Any) -> list[Any]:
    """Every object and list inside ``value``, ``value`` included."""
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in _containers(v))]
    if isinstance(value, list):
        return [value, *(c for v in value for c in _containers(v))]
    return []


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(("start", "other"), [("v1beta1", "v1beta2"), ("v1beta2", "v1beta1")])
def test_the_shared_conversion_gives_the_same_result_and_leaves_its_input_alone(kind: str, start: str, other: str) -> None:
    """convert_shared (the client's and the webhook's path) edits copy-on-write: the same object as
    convert, the input untouched, also when the input carries a conversion annotation to consume;
    convert's result shares no object or list with its input, so an informer may keep it and a
    caller may edit it."""

    @SETTINGS
    @given(_objects(kind, start))
    def same(obj: dict[str, Any]) -> None:
        for source, target in ((obj, other), (convert(obj, other), start)):
            before = json.dumps(source, sort_keys=True)
            shared = convert_shared(source, target)
            assert json.dumps(source, sort_keys=True) == before, "convert_shared modified its input"
            copied = convert(source, target)
            assert shared == copied
            inside = {id(c) for c in _containers(source)}
            assert not any(id(c) in inside for c in _containers(copied)), "convert's result shares with its input"

    same()


def test_the_shared_conversion_shares_what_it_does_not_rewrite() -> None:
    """The point of convert_shared: a pod template is neither copied nor walked."""
    template = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    wl = {"apiVersion": f"{c.GROUP}/v1beta2", "kind": "Workload", "metadata": {"name": "w"},
          "spec": {"podSets": [{"name": "main", "count": 1, "template": template}], "priorityClassRef": {
              "group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}}}
    stored = convert_shared(wl, "v1beta1")
    assert stored["spec"]["podSets"][0]["template"] is template
    assert stored["spec"] is not wl["spec"]  # rewritten: priorityClassRef → priorityClassName/Source
    assert "priorityClassRef" in wl["spec"]
    assert convert(wl, "v1beta1")["spec"]["podSets"][0]["template"] is not template


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_twice_there_and_back_is_still_the_same(kind: str) -> None:
    """A stored object is converted many times; the annotation must not grow or drift."""

    @SETTINGS
    @given(_objects(kind, "v1beta2"))
    def twice(obj: dict[str, Any]) -> None:
        stored = convert(obj, "v1beta1")
        again = convert(convert(stored, "v1beta2"), "v1beta1")
        assert again == stored

    twice()


def _cq(version: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{c.GROUP}/{version}", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec}


def test_renames_follow_kueue() -> None:
    v2 = convert(_cq("v1beta1", {"cohort": "all"}), "v1beta2")
    assert v2["spec"] == {"cohortName": "all"}
    assert "annotations" not in v2["metadata"]
    lq = {"apiVersion": f"{c.GROUP}/v1beta2", "kind": "LocalQueue", "metadata": {"name": "q"},
          "status": {"flavorsUsage": [{"name": "f", "resources": []}]}}
    assert convert(lq, "v1beta1")["status"] == {"flavorUsage": [{"name": "f", "resources": []}]}


def test_a_workload_priority_class_becomes_a_reference_and_back() -> None:
    wl = {"apiVersion": f"{c.GROUP}/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
          "spec": {"priorityClassName": "high", "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass", "priority": 5}}
    v2 = convert(wl, "v1beta2")
    assert v2["spec"] == {"priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}, "priority": 5}
    assert "annotations" not in v2["metadata"]
    assert convert(v2, "v1beta1") == wl


def test_a_field_v1beta1_lacks_is_kept_in_the_annotation() -> None:
    wl = {"apiVersion": f"{c.GROUP}/v1beta2", "kind": "Workload", "metadata": {"name": "w"},
          "spec": {"preemptionGates": [{"name": "g"}], "queueName": "q"}}
    stored = convert(wl, "v1beta1")
    assert stored["spec"] == {"queueName": "q", "priorityClassSource": ""}  # v1beta1's default
    entries = json.loads(stored["metadata"]["annotations"][CONVERSION_DATA_ANNOTATION])
    assert entries == [{"to": "v1beta2", "path": ["spec", "preemptionGates"], "value": [{"name": "g"}],
                        "guard": ["spec", "preemptionGates"]}]
    assert convert(stored, "v1beta2") == wl


def test_topology_domains_become_one_slice() -> None:
    assignment = {"levels": ["rack", "host"], "domains": [{"values": ["r1", "h1"], "count": 2}, {"values": ["r1", "h2"], "count": 2}]}
    wl = {"apiVersion": f"{c.GROUP}/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
          "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "topologyAssignment": assignment}]}}}
    v2 = convert(wl, "v1beta2")
    got = v2["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert got == {"levels": ["rack", "host"], "slices": [{"domainCount": 2, "podCounts": {"universal": 2},
                   "valuesPerLevel": [{"universal": "r1"}, {"individual": {"roots": ["h1", "h2"]}}]}]}
    assert "annotations" not in v2["metadata"]
    assert convert(v2, "v1beta1") == wl


def test_an_edit_in_the_other_version_wins_over_the_kept_value() -> None:
    """The guard: a Borrow kept for v1beta1 is not restored once v1beta2 changed the field."""
    v1 = _cq("v1beta1", {"flavorFungibility": {"whenCanBorrow": "Borrow"}})
    v2 = convert(v1, "v1beta2")
    assert v2["spec"]["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch"}
    assert convert(v2, "v1beta1") == v1
    v2["spec"]["flavorFungibility"]["whenCanBorrow"] = "TryNextFlavor"
    back = convert(v2, "v1beta1")
    assert back["spec"]["flavorFungibility"] == {"whenCanBorrow": "TryNextFlavor"}
    assert "annotations" not in back["metadata"]


@pytest.mark.parametrize(
    ("obj", "target", "message"),
    [
        ({"apiVersion": "v1", "kind": "ConfigMap"}, "v1beta2", "no apiVersion of the kueue.x-k8s.io group"),
        ({"apiVersion": f"{c.GROUP}/v1alpha1", "kind": "Workload"}, "v1beta2", "is not kueue.x-k8s.io/v1beta1"),
        ({"apiVersion": f"{c.GROUP}/v1beta1", "kind": "Topology"}, "v1beta2", "'Topology' is not"),
        ({"apiVersion": f"{c.GROUP}/v1beta1", "kind": "Workload"}, "v2", "desired version 'v2'"),
        ({"kind": "Workload"}, "v1beta2", "no apiVersion"),
        ({"apiVersion": f"{c.GROUP}/v1beta1", "kind": "Workload", "metadata": "x"}, "v1beta2", "metadata is not"),
    ],
)
def test_what_cannot_be_converted_says_why(obj: dict[str, Any], target: str, message: str) -> None:
    with pytest.raises(ConversionError, match=message):
        convert(obj, target)


def test_an_unreadable_annotation_is_dropped_not_fatal() -> None:
    v1 = _cq("v1beta1", {"cohort": "x"})
    v1["metadata"]["annotations"] = {CONVERSION_DATA_ANNOTATION: "{not json", "keep": "me"}
    v2 = convert(v1, "v1beta2")
    assert v2["metadata"]["annotations"] == {"keep": "me"}
    assert v2["spec"] == {"cohortName": "x"}


def test_a_stored_workload_without_a_class_reads_as_v1beta2_without_an_annotation() -> None:
    """The apiserver defaults v1beta1's priorityClassSource to "" on every stored Workload."""
    stored = {"apiVersion": f"{c.GROUP}/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
              "spec": {"queueName": "q", "priorityClassSource": ""}}
    v2 = convert(stored, "v1beta2")
    assert v2["spec"] == {"queueName": "q"}
    assert "annotations" not in v2["metadata"]
    assert convert(v2, "v1beta1") == stored


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | _WORDS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["spec", "status", "cohort", "domains", "slices", "levels", "priorityClassRef", "clusterSource",
                         "kubeConfig", "podSetAssignments", "topologyAssignment", "admission", "x"]), inner, max_size=3),
    max_leaves=12,
)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_malformed_objects_convert_or_fail_with_a_conversion_error_never_a_crash(kind: str) -> None:
    """The apiserver never sends these (it validated them), but the webhook must not fall over on them."""

    @SETTINGS
    @given(st.fixed_dictionaries({"spec": _JSON, "status": _JSON}), st.sampled_from(["v1beta1", "v1beta2"]))
    def anything(body: dict[str, Any], start: str) -> None:
        obj = {"apiVersion": f"{c.GROUP}/{start}", "kind": kind, "metadata": {"name": "x"}, **body}
        other = "v1beta2" if start == "v1beta1" else "v1beta1"
        before = json.dumps(obj, sort_keys=True)
        try:
            there = convert(obj, other)
        except ConversionError:
            return
        json.dumps(there)
        assert convert_shared(obj, other) == there
        assert json.dumps(obj, sort_keys=True) == before, "convert_shared modified its input"

    anything()


def test_a_v1beta2_queue_written_with_concurrent_admission_keeps_that_spelling() -> None:
    """pykueue's own field written in v1beta2 stays itself across v1beta1 storage, even when Kueue's
    policy could say the same (found by the round-trip property above)."""
    original = _cq("v1beta2", {"concurrentAdmission": {"onSuccess": "RemoveOther"}})
    stored = convert(original, "v1beta1")
    assert stored["spec"]["concurrentAdmission"] == {"onSuccess": "RemoveOther"}
    back = convert(stored, "v1beta2")
    assert back["spec"] == original["spec"]
