"""Schema validation reports bad objects with apiserver-style field paths and messages."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api.schema import apply_defaults, object_schema
from pykueue.api.validation import schema_errors


def cq(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [
                    {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "4"}]},
                    {"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": 2}]},
                ],
            }
        ],
    }
    base.update(spec)
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": base}


def wl(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "queueName": "lq",
        "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}],
    }
    base.update(spec)
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"}, "spec": base,
    }


def with_quota(value: Any) -> dict[str, Any]:
    obj = cq()
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = value
    return obj


NQ = "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"

CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("malformed quantity", "ClusterQueue", with_quota("4 cores"), f'{NQ}: Invalid value: "4 cores": should match'),
    ("boolean quantity", "ClusterQueue", with_quota(True), f"{NQ}: Invalid value: true: must be an integer or a quantity"),
    ("unknown onSuccess", "ClusterQueue", cq(concurrentAdmission={"onSuccess": "RemoveAll"}),
     'spec.concurrentAdmission.onSuccess: Unsupported value: "RemoveAll": supported values: "RemoveOther", '
     '"RemoveLower", "RemoveBelowTarget"'),
    ("missing onSuccess", "ClusterQueue", cq(concurrentAdmission={}), "spec.concurrentAdmission.onSuccess: Required value"),
    ("option name not a DNS label", "ClusterQueue",
     cq(concurrentAdmission={"onSuccess": "RemoveOther", "explicitOptions": [
         {"name": "Spot_1", "allowedResourceFlavors": ["spot"]}]}),
     'spec.concurrentAdmission.explicitOptions[0].name: Invalid value: "Spot_1": should match'),
    ("empty allowedResourceFlavors", "ClusterQueue",
     cq(concurrentAdmission={"onSuccess": "RemoveOther", "explicitOptions": [
         {"name": "a", "allowedResourceFlavors": []}]}),
     "spec.concurrentAdmission.explicitOptions[0].allowedResourceFlavors: Invalid value: 0: should have at least 1 items"),
    ("RemoveBelowTarget without config", "ClusterQueue", cq(concurrentAdmission={"onSuccess": "RemoveBelowTarget"}),
     "spec.concurrentAdmission: Invalid value: removeBelowTargetConfig is required when onSuccess is "
     "RemoveBelowTarget and forbidden otherwise"),
    ("wrong fallback trigger", "ClusterQueue",
     cq(flavorFungibility={"fallbackStrategy": {"rules": [{"name": "spot", "trigger": "Timeout"}]}}),
     'spec.flavorFungibility.fallbackStrategy.rules[0].trigger: Unsupported value: "Timeout": supported values: '
     '"TimeoutForPodsReadyExceeded", "AdmissionCheckRejected"'),
    ("wrong failurePolicy", "ClusterQueue",
     cq(flavorFungibility={"fallbackStrategy": {"failurePolicy": "Give up"}}),
     'spec.flavorFungibility.fallbackStrategy.failurePolicy: Unsupported value: "Give up"'),
    ("both timeouts", "ClusterQueue",
     cq(flavorFungibility={"fallbackStrategy": {"rules": [{"name": "spot", "timeout": "5m", "timeoutMinutes": 5}]}}),
     "spec.flavorFungibility.fallbackStrategy.rules[0]: Invalid value: timeout and timeoutMinutes are mutually exclusive"),
    ("zero timeout", "ClusterQueue",
     cq(flavorFungibility={"fallbackStrategy": {"rules": [{"name": "spot", "timeout": "0m"}]}}),
     "spec.flavorFungibility.fallbackStrategy.rules[0].timeout: Invalid value: timeout must be positive"),
    ("zero timeoutMinutes", "ClusterQueue",
     cq(flavorFungibility={"fallbackStrategy": {"rules": [{"name": "spot", "timeoutMinutes": 0}]}}),
     "spec.flavorFungibility.fallbackStrategy.rules[0].timeoutMinutes: Invalid value: 0: should be greater than or equal to 1"),
    ("timeout not a duration", "ClusterQueue",
     cq(flavorFungibility={"fallbackStrategy": {"rules": [{"name": "spot", "timeout": "ten minutes"}]}}),
     'spec.flavorFungibility.fallbackStrategy.rules[0].timeout: Invalid value: "ten minutes": should match'),
    ("two rules for one (flavor, trigger)", "ClusterQueue",
     cq(flavorFungibility={"fallbackStrategy": {"rules": [{"name": "spot", "timeout": "5m"}, {"name": "spot", "timeoutMinutes": 3}]}}),
     'spec.flavorFungibility.fallbackStrategy.rules[1]: Duplicate value: {name: "spot", trigger: "TimeoutForPodsReadyExceeded"}'),
    ("borrowingLimit without cohort", "ClusterQueue",
     cq(resourceGroups=[{"coveredResources": ["cpu"], "flavors": [
         {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "4", "borrowingLimit": "1"}]}]}]),
     "spec: Invalid value: borrowingLimit must be nil when cohort is empty"),
    ("fewer resources than covered", "ClusterQueue",
     cq(resourceGroups=[{"coveredResources": ["cpu", "memory"], "flavors": [
         {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]),
     "spec.resourceGroups[0]: Invalid value: flavors must have the same number of resources as the coveredResources"),
    ("duplicate flavor in group", "ClusterQueue",
     cq(resourceGroups=[{"coveredResources": ["cpu"], "flavors": [
         {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "4"}]},
         {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]),
     'spec.resourceGroups[0].flavors[1].name: Duplicate value: "spot"'),
    ("preemption contradiction", "ClusterQueue",
     cq(preemption={"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}),
     "spec.preemption: Invalid value: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"),
    ("preference without TryNextFlavor", "ClusterQueue",
     cq(flavorFungibility={"preference": "BorrowingOverPreemption"}),
     "spec.flavorFungibility: Invalid value: preference can only be set when both"),
    ("unknown fungibility value", "ClusterQueue", cq(flavorFungibility={"whenCanBorrow": "Never"}),
     'spec.flavorFungibility.whenCanBorrow: Unsupported value: "Never"'),
    ("whenCanBorrow Preempt", "ClusterQueue", cq(flavorFungibility={"whenCanBorrow": "Preempt"}),
     'spec.flavorFungibility.whenCanBorrow: Unsupported value: "Preempt"'),
    ("too many resource groups", "ClusterQueue", cq(resourceGroups=[cq()["spec"]["resourceGroups"][0]] * 17),
     "spec.resourceGroups: Too many: 17: must have at most 16 items"),
    ("unknown field", "ClusterQueue", cq(cohortName="x"), 'spec.cohortName: Invalid value: "x": unknown field "cohortName"'),
    ("flavor topology without node labels", "ResourceFlavor",
     {"kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {"topologyName": "default"}},
     "spec: Invalid value: at least one nodeLabel is required when topology is set"),
    ("flavor taint without effect", "ResourceFlavor",
     {"kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {"nodeTaints": [{"key": "k"}]}},
     "spec.nodeTaints[0].effect: Required value"),
    ("toleration Exists with value", "ResourceFlavor",
     {"kind": "ResourceFlavor", "metadata": {"name": "rf"},
      "spec": {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}},
     "spec.tolerations: Invalid value: a value must be empty when 'operator' is 'Exists'"),
    ("too many node labels", "ResourceFlavor",
     {"kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {"nodeLabels": {f"k{i}": "v" for i in range(9)}}},
     "spec.nodeLabels: Too many: 9: must have at most 8 items"),
    ("multikueue clusters not unique", "MultiKueueConfig",
     {"kind": "MultiKueueConfig", "metadata": {"name": "mk"}, "spec": {"clusters": ["a", "a"]}},
     'spec.clusters[1]: Duplicate value: "a"'),
    ("unknown locationType", "MultiKueueCluster",
     {"kind": "MultiKueueCluster", "metadata": {"name": "c"}, "spec": {"kubeConfig": {"location": "s", "locationType": "URL"}}},
     'spec.kubeConfig.locationType: Unsupported value: "URL": supported values: "Secret", "Path"'),
    ("unknown merge policy", "ProvisioningRequestConfig",
     {"kind": "ProvisioningRequestConfig", "metadata": {"name": "p"},
      "spec": {"provisioningClassName": "c", "podSetMergePolicy": "Merge"}},
     'spec.podSetMergePolicy: Unsupported value: "Merge"'),
    ("admission check without controller", "AdmissionCheck",
     {"kind": "AdmissionCheck", "metadata": {"name": "a"}, "spec": {}}, "spec.controllerName: Required value"),
    ("priority class without value", "WorkloadPriorityClass",
     {"kind": "WorkloadPriorityClass", "metadata": {"name": "p"}}, "value: Required value"),
    ("local queue stop policy", "LocalQueue",
     {"kind": "LocalQueue", "metadata": {"name": "q", "namespace": "n"}, "spec": {"clusterQueue": "cq", "stopPolicy": "Pause"}},
     'spec.stopPolicy: Unsupported value: "Pause": supported values: "None", "Hold", "HoldAndDrain"'),
    ("workload without podSets", "Workload", wl(podSets=[]), "spec.podSets: Invalid value: 0: should have at least 1 items"),
    ("workload podSet without template", "Workload", wl(podSets=[{"name": "main", "count": 1}]),
     "spec.podSets[0].template: Required value"),
    ("negative count", "Workload",
     wl(podSets=[{"name": "main", "count": -1, "template": {"spec": {"containers": [{}]}}}]),
     "spec.podSets[0].count: Invalid value: -1: should be greater than or equal to 0"),
    ("minCount above count", "Workload",
     wl(podSets=[{"name": "main", "count": 2, "minCount": 3, "template": {"spec": {"containers": [{}]}}}]),
     "spec.podSets[0]: Invalid value: minCount should be positive and less or equal to count"),
    ("unknown workloadMode", "Workload", wl(workloadMode={"type": "Child"}),
     'spec.workloadMode.type: Unsupported value: "Child": supported values: "Default", "ResourceFlavorOption", "Parent"'),
    ("duplicate allowedResourceFlavors", "Workload",
     wl(podSets=[{"name": "main", "count": 1, "allowedResourceFlavors": ["spot", "spot"],
                  "template": {"spec": {"containers": [{}]}}}]),
     'spec.podSets[0].allowedResourceFlavors[1]: Duplicate value: "spot"'),
    ("podSet name not a DNS label", "Workload",
     wl(podSets=[{"name": "Main", "count": 1, "template": {"spec": {"containers": [{}]}}}]),
     'spec.podSets[0].name: Invalid value: "Main": should match'),
    ("priorityClassName without priority", "Workload", wl(priorityClassName="high"),
     "spec: Invalid value: priority should not be nil when priorityClassName is set"),
    ("wrong priorityClassSource", "Workload", wl(priorityClassSource="k8s"),
     'spec.priorityClassSource: Unsupported value: "k8s"'),
]


@pytest.mark.parametrize(("kind", "obj", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_invalid_objects_are_reported_with_field_paths(kind: str, obj: dict[str, Any], expected: str) -> None:
    errors = [str(e) for e in schema_errors(kind, obj)]
    assert any(e.startswith(expected) for e in errors), errors


def workload_status(**status: Any) -> dict[str, Any]:
    obj = wl()
    obj["status"] = status
    return obj


STATUS_CASES = [
    ("clusterName with nominated clusters",
     workload_status(clusterName="east", nominatedClusterNames=["east", "west"]),
     "status: Invalid value: clusterName and nominatedClusterNames are mutually exclusive"),
    ("duplicate flavor in history",
     workload_status(flavorAssignmentHistory=[{"resourceFlavor": "spot"}, {"resourceFlavor": "spot"}]),
     'status.flavorAssignmentHistory[1].resourceFlavor: Duplicate value: "spot"'),
    ("unknown option status", workload_status(options=[{"name": "o", "status": "Running"}]),
     'status.options[0].status: Unsupported value: "Running"'),
    ("assignments do not match podSets",
     workload_status(
         conditions=[{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "",
                      "lastTransitionTime": "2026-01-01T00:00:00Z"}],
         admission={"clusterQueue": "cq", "podSetAssignments": []}),
     "Invalid value: podSetAssignments must have the same number of podSets as the spec"),
    ("condition reason not CamelCase",
     workload_status(conditions=[{"type": "Admitted", "status": "True", "reason": "not ok", "message": "",
                                  "lastTransitionTime": "2026-01-01T00:00:00Z"}]),
     'status.conditions[0].reason: Invalid value: "not ok": should match'),
]


@pytest.mark.parametrize(("obj", "expected"), [c[1:] for c in STATUS_CASES], ids=[c[0] for c in STATUS_CASES])
def test_invalid_workload_status(obj: dict[str, Any], expected: str) -> None:
    errors = [str(e) for e in schema_errors("Workload", obj)]
    assert any(e.startswith(expected) for e in errors), errors


def test_valid_objects_have_no_errors() -> None:
    assert schema_errors("ClusterQueue", cq()) == []
    assert schema_errors("Workload", wl()) == []


# Kueue's CRDs accept these (its webhook, like pykueue's, denies most of them: negative quotas,
# limits without a cohort, both admission check forms), so the CRD schema accepts them too.
ACCEPTED_LIKE_KUEUE = [
    ("negative quantity string", "ClusterQueue", with_quota("-1")),
    ("negative integer quota", "ClusterQueue", with_quota(-2)),
    ("both admission check forms", "ClusterQueue",
     cq(admissionChecks=["a"], admissionChecksStrategy={"admissionChecks": [{"name": "a"}]})),
    ("cohort lendingLimit without parent", "Cohort",
     {"kind": "Cohort", "metadata": {"name": "co"}, "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
         {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "4", "lendingLimit": "1"}]}]}]}}),
    ("negative retry limit", "ProvisioningRequestConfig",
     {"kind": "ProvisioningRequestConfig", "metadata": {"name": "p"},
      "spec": {"provisioningClassName": "c", "retryStrategy": {"backoffLimitCount": -1}}}),
    ("whenCanPreempt Preempt", "ClusterQueue", cq(flavorFungibility={"whenCanPreempt": "Preempt"})),
]


@pytest.mark.parametrize(("kind", "obj"), [c[1:] for c in ACCEPTED_LIKE_KUEUE], ids=[c[0] for c in ACCEPTED_LIKE_KUEUE])
def test_what_kueues_crd_accepts_the_schema_accepts(kind: str, obj: dict[str, Any]) -> None:
    assert schema_errors(kind, obj) == []


@pytest.mark.parametrize("junk", [None, 3, "text", [], {"spec": "nope"}, {"spec": {"resourceGroups": [None, 1]}}])
def test_malformed_input_never_raises(junk: Any) -> None:
    errors = schema_errors("ClusterQueue", junk)
    assert errors, "malformed input must produce at least one error"


def test_defaults_are_applied_top_down_without_touching_the_input() -> None:
    obj = cq()
    defaulted = apply_defaults("ClusterQueue", obj)
    assert "preemption" not in obj["spec"]
    spec = defaulted["spec"]
    assert spec["queueingStrategy"] == "BestEffortFIFO"
    assert spec["stopPolicy"] == "None"
    assert spec["preemption"] == {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "Never"},
                                  "withinClusterQueue": "Never"}
    assert spec["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
    workload = apply_defaults("Workload", wl(podSets=[{"template": {"spec": {"containers": [{}]}}}]))
    assert workload["spec"]["podSets"][0]["name"] == "main"
    assert workload["spec"]["podSets"][0]["count"] == 1
    assert workload["spec"]["active"] is True


def test_object_schema_is_a_private_copy() -> None:
    first = object_schema("Workload")
    first["properties"].clear()
    assert object_schema("Workload")["properties"]
