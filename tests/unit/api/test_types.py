"""The TypedDicts name exactly the schema's fields, and the accessors read objects correctly."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import types
from pykueue.api.schema import object_schema

# TypedDict -> (kind, path of the schema node it describes; "[]" steps into list items)
TYPED_NODES: list[tuple[type, str, tuple[str, ...]]] = [
    (types.ResourceFlavorSpec, "ResourceFlavor", ("spec",)),
    (types.ClusterQueueSpec, "ClusterQueue", ("spec",)),
    (types.ClusterQueueStatus, "ClusterQueue", ("status",)),
    (types.ResourceGroup, "ClusterQueue", ("spec", "resourceGroups", "[]")),
    (types.FlavorQuotas, "ClusterQueue", ("spec", "resourceGroups", "[]", "flavors", "[]")),
    (types.ResourceQuota, "ClusterQueue", ("spec", "resourceGroups", "[]", "flavors", "[]", "resources", "[]")),
    (types.FlavorFungibility, "ClusterQueue", ("spec", "flavorFungibility")),
    (types.FallbackStrategy, "ClusterQueue", ("spec", "flavorFungibility", "fallbackStrategy")),
    (types.FallbackRule, "ClusterQueue", ("spec", "flavorFungibility", "fallbackStrategy", "rules", "[]")),
    (types.ClusterQueuePreemption, "ClusterQueue", ("spec", "preemption")),
    (types.ConcurrentAdmission, "ClusterQueue", ("spec", "concurrentAdmission")),
    (types.ExplicitOption, "ClusterQueue", ("spec", "concurrentAdmission", "explicitOptions", "[]")),
    (types.CohortSpec, "Cohort", ("spec",)),
    (types.LocalQueueSpec, "LocalQueue", ("spec",)),
    (types.LocalQueueStatus, "LocalQueue", ("status",)),
    (types.WorkloadSpec, "Workload", ("spec",)),
    (types.PodSet, "Workload", ("spec", "podSets", "[]")),
    (types.WorkloadStatus, "Workload", ("status",)),
    (types.Admission, "Workload", ("status", "admission")),
    (types.PodSetAssignment, "Workload", ("status", "admission", "podSetAssignments", "[]")),
    (types.AdmissionCheckState, "Workload", ("status", "admissionChecks", "[]")),
    (types.PodSetUpdate, "Workload", ("status", "admissionChecks", "[]", "podSetUpdates", "[]")),
    (types.OptionStatus, "Workload", ("status", "options", "[]")),
    (types.FlavorAssignment, "Workload", ("status", "flavorAssignmentHistory", "[]")),
    (types.AdmissionCheckSpec, "AdmissionCheck", ("spec",)),
    (types.ProvisioningRequestConfigSpec, "ProvisioningRequestConfig", ("spec",)),
    (types.RetryStrategy, "ProvisioningRequestConfig", ("spec", "retryStrategy")),
    (types.MultiKueueConfigSpec, "MultiKueueConfig", ("spec",)),
    (types.MultiKueueClusterSpec, "MultiKueueCluster", ("spec",)),
    (types.KubeConfig, "MultiKueueCluster", ("spec", "kubeConfig")),
    (types.Condition, "Workload", ("status", "conditions", "[]")),
]


def _node(kind: str, path: tuple[str, ...]) -> dict[str, Any]:
    node = object_schema(kind)
    for step in path:
        node = node["items"] if step == "[]" else node["properties"][step]
    return node


@pytest.mark.parametrize(("typ", "kind", "path"), TYPED_NODES, ids=[t.__name__ for t, _, _ in TYPED_NODES])
def test_typed_dict_keys_match_schema(typ: type, kind: str, path: tuple[str, ...]) -> None:
    assert set(typ.__annotations__) == set(_node(kind, path)["properties"])


@pytest.mark.parametrize("kind", sorted(types.OBJECT_TYPES))
def test_object_types_cover_top_level_fields(kind: str) -> None:
    typ = types.OBJECT_TYPES[kind]
    assert typ.__name__ == kind
    assert set(object_schema(kind)["properties"]) == set(typ.__annotations__)


def test_as_kind_checks_the_kind() -> None:
    cq = {"kind": "ClusterQueue", "metadata": {"name": "a"}}
    assert types.as_kind(cq, types.ClusterQueue) is cq
    with pytest.raises(types.WrongKind, match="expected a Workload, got 'ClusterQueue'"):
        types.as_kind(cq, types.Workload)
    with pytest.raises(types.WrongKind):
        types.as_kind(None, types.Workload)  # type: ignore[arg-type]


def test_accessors() -> None:
    cq: types.ClusterQueue = {
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {
            "resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [{"name": "a", "resources": []}, {"name": "b", "resources": []}]},
                {"coveredResources": ["gpu"], "flavors": [{"name": "g", "resources": []}]},
            ],
            "admissionChecks": ["prov"],
            "flavorFungibility": {"fallbackStrategy": {"rules": [
                {"name": "a", "timeout": "1h30m"}, {"name": "b", "timeoutMinutes": 2}, {"name": "*", "trigger": "AdmissionCheckRejected"},
            ]}},
        },
    }
    assert types.cluster_queue_flavors(cq) == ["a", "b", "g"]
    assert types.cluster_queue_checks(cq) == {"prov": []}
    rules = types.fallback_rules(cq)
    assert [types.fallback_timeout_seconds(r) for r in rules] == [5400.0, 120.0, None]
    assert types.object_key(cq) == "cq"

    wl: types.Workload = {"kind": "Workload", "metadata": {"name": "w", "namespace": "ns"}, "spec": {}, "status": {
        "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "False"}]}}
    assert types.object_key(wl) == "ns/w"
    assert types.holds_quota_reservation(wl)
    assert not types.is_admitted(wl)
    assert not types.is_finished(wl)
    assert types.workload_is_active(wl)
    assert types.workload_mode(wl) == "Default"
    wl["spec"] = {"active": False, "workloadMode": {"type": "Parent"}}
    assert not types.workload_is_active(wl)
    assert types.workload_mode(wl) == "Parent"
