"""The committed CRDs are exactly what the Python source of truth generates, and they are useful."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import generate
from pykueue.api.constants import STORAGE_VERSION
from pykueue.api.dsl import walk
from pykueue.api.schema import KINDS, TEST_KINDS, object_schema

SPEC_KINDS = {
    "ResourceFlavor", "ClusterQueue", "LocalQueue", "Workload", "AdmissionCheck",
    "WorkloadPriorityClass", "Cohort", "ProvisioningRequestConfig", "MultiKueueConfig", "MultiKueueCluster",
}


def test_committed_yaml_is_not_stale() -> None:
    stale = generate.stale_files(generate.expected_files())
    assert stale == [], f"run `make generate`: stale {stale}"


def test_check_mode_detects_a_changed_file(tmp_path: Any) -> None:
    crd_dir, test_dir = tmp_path / "crds", tmp_path / "test"
    assert generate.main(["--crd-dir", str(crd_dir), "--test-dir", str(test_dir)]) == 0
    assert generate.main(["--check", "--crd-dir", str(crd_dir), "--test-dir", str(test_dir)]) == 0
    victim = crd_dir / "kueue.x-k8s.io_clusterqueues.yaml"
    victim.write_text(victim.read_text().replace("cohort", "cohortName", 1))
    assert generate.main(["--check", "--crd-dir", str(crd_dir), "--test-dir", str(test_dir)]) == 1


def test_every_spec_kind_is_registered() -> None:
    assert set(KINDS) == SPEC_KINDS


@pytest.mark.parametrize("kind", sorted(SPEC_KINDS | set(TEST_KINDS)))
def test_every_field_has_a_description(kind: str) -> None:
    """Except inside the pod template: it is generated from Kubernetes' OpenAPI without its
    descriptions (hack/gen_podtemplate_schema.py says why); the template field itself has one."""
    missing: list[str] = []
    generated = ("spec", "podSets", "[]", "template")

    def visit(node: dict[str, Any], path: tuple[str, ...]) -> None:
        if kind == "Workload" and path[: len(generated)] == generated and len(path) > len(generated):
            return
        if path and path[-1] not in ("[]", "{}") and path[0] not in ("metadata",) and not node.get("description"):
            missing.append(".".join(path))

    walk(object_schema(kind), visit)
    assert missing == []


@pytest.mark.parametrize("kind", sorted(SPEC_KINDS | set(TEST_KINDS)))
def test_list_map_keys_are_required_or_defaulted(kind: str) -> None:
    """The apiserver rejects a CRD whose map-list keys may be absent; catch it without a cluster."""
    bad: list[str] = []

    def visit(node: dict[str, Any], path: tuple[str, ...]) -> None:
        for key in node.get("x-kubernetes-list-map-keys", []):
            item = node["items"]
            if key not in item.get("required", []) and "default" not in item["properties"][key]:
                bad.append(f"{'.'.join(path)}[{key}]")

    walk(object_schema(kind), visit)
    assert bad == []


def test_names_scope_and_columns_match_kueue_v1beta1() -> None:
    cq = generate.crd(KINDS["ClusterQueue"])
    version = cq["spec"]["versions"][0]
    assert cq["spec"]["scope"] == "Cluster"
    assert cq["spec"]["names"]["shortNames"] == ["cq"]
    assert version["name"] == "v1beta1" and version["served"]
    assert [v["name"] for v in cq["spec"]["versions"] if v["storage"]] == [STORAGE_VERSION]
    assert version["subresources"] == {"status": {}}
    cohort_column = version["additionalPrinterColumns"][0]
    assert (cohort_column["name"], cohort_column["jsonPath"]) == ("Cohort", ".spec.cohort")

    lq = generate.crd(KINDS["LocalQueue"])
    assert lq["spec"]["scope"] == "Namespaced"
    assert set(lq["spec"]["names"]["shortNames"]) >= {"lq", "queue"}

    wl = generate.crd(KINDS["Workload"])
    assert set(wl["spec"]["names"]["shortNames"]) == {"kwl", "kueueworkload", "kueueworkloads"}
    assert [c["name"] for c in wl["spec"]["versions"][0]["additionalPrinterColumns"]] == [
        "Queue", "Reserved in", "Admitted", "Finished", "Age",
    ]
    rf = generate.crd(KINDS["ResourceFlavor"])
    assert "subresources" not in rf["spec"]["versions"][0]
    assert "rf" in rf["spec"]["names"]["shortNames"]


def test_seed_fields_are_in_the_schemas() -> None:
    cq = object_schema("ClusterQueue")["properties"]["spec"]["properties"]
    assert cq["concurrentAdmission"]["properties"]["onSuccess"]["enum"] == [
        "RemoveOther", "RemoveLower", "RemoveBelowTarget",
    ]
    assert cq["concurrentAdmission"]["required"] == ["onSuccess"]
    rules = cq["flavorFungibility"]["properties"]["fallbackStrategy"]["properties"]["rules"]
    assert rules["x-kubernetes-list-map-keys"] == ["name", "trigger"]
    wl = object_schema("Workload")["properties"]
    assert "allowedResourceFlavors" in wl["spec"]["properties"]["podSets"]["items"]["properties"]
    history = wl["status"]["properties"]["flavorAssignmentHistory"]
    assert history["x-kubernetes-list-map-keys"] == ["resourceFlavor"]
    assert {"options", "nominatedClusterNames", "clusterName"} <= set(wl["status"]["properties"])
