"""The v1beta2 schemas are the v1beta1 schemas with the edits of ``pykueue.api.schemas.v1beta2``.

Parity with Kueue's v1beta2 is ``test_kueue_crd_parity.py``; here: both versions come out of one
generator, pykueue's extensions are the very same schema in both, and every edit finds its field
(a renamed v1beta1 field would otherwise make the edit fail silently at the wrong place).
"""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import constants as c
from pykueue.api.generate import crd
from pykueue.api.schema import KINDS, build_object_schema
from pykueue.api.schemas.v1beta2 import CHANGES, Drop, Facets, Put, Rename, v1beta2_schema


def _versions(kind: str) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in crd(KINDS[kind])["spec"]["versions"]}


def _at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    node = schema
    for step in path.split("."):
        many = step.endswith("[]")
        node = node["properties"][step.rstrip("[]")]
        if many:
            node = node["items"]
    return node


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_is_served_in_both_versions_and_stored_in_one(kind: str) -> None:
    versions = _versions(kind)
    assert sorted(versions) == ["v1beta1", "v1beta2"]
    assert all(v["served"] for v in versions.values())
    assert [name for name, v in versions.items() if v["storage"]] == [c.STORAGE_VERSION]
    assert versions["v1beta2"].get("deprecated") is None
    if kind == "MultiKueueConfig":
        assert "deprecated" not in versions["v1beta1"]
    else:
        assert versions["v1beta1"]["deprecated"] is True
        assert versions["v1beta1"]["deprecationWarning"] == "This version is deprecated. Use v1beta2 instead."


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("ClusterQueue", "spec.concurrentAdmission"),
        ("ClusterQueue", "spec.flavorFungibility.fallbackStrategy"),
        ("Workload", "spec.podSets[].allowedResourceFlavors"),
        ("Workload", "spec.workloadMode"),
        ("Workload", "status.options"),
        ("Workload", "status.flavorAssignmentHistory"),
    ],
)
def test_pykueue_extensions_are_the_same_in_both_versions(kind: str, path: str) -> None:
    versions = _versions(kind)
    one, two = (versions[v]["schema"]["openAPIV3Schema"] for v in ("v1beta1", "v1beta2"))
    assert _at(one, path) == _at(two, path)


def test_renames_keep_the_schema_and_moves_keep_the_field() -> None:
    cq = _versions("ClusterQueue")
    one, two = (cq[v]["schema"]["openAPIV3Schema"] for v in ("v1beta1", "v1beta2"))
    assert _at(one, "spec.cohort") == _at(two, "spec.cohortName")
    assert "cohort" not in two["properties"]["spec"]["properties"]
    assert cq["v1beta2"]["additionalPrinterColumns"][0]["jsonPath"] == ".spec.cohortName"
    mkc = _versions("MultiKueueCluster")
    assert _at(mkc["v1beta1"]["schema"]["openAPIV3Schema"], "spec.clusterProfileRef") == _at(
        mkc["v1beta2"]["schema"]["openAPIV3Schema"], "spec.clusterSource.clusterProfileRef"
    )


@pytest.mark.parametrize("kind", sorted(CHANGES))
def test_every_edit_applies_to_an_existing_field(kind: str) -> None:
    v1beta1 = build_object_schema(KINDS[kind])
    v1beta2_schema(KINDS[kind], v1beta1)  # raises KeyError when a path is gone
    for edit in CHANGES[kind].edits:
        if isinstance(edit, (Drop, Rename)):
            head, _, name = edit.path.rpartition(".")
            parent = _at(v1beta1, head) if head else v1beta1
            assert name in parent["properties"] or kind == "MultiKueueCluster", edit
        assert isinstance(edit, (Drop, Put, Rename, Facets))


def test_the_v1beta1_schema_is_left_untouched() -> None:
    before = build_object_schema(KINDS["Workload"])
    snapshot = repr(before)
    v1beta2_schema(KINDS["Workload"], before)
    assert repr(before) == snapshot
