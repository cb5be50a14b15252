"""Field-for-field compatibility with Kueue's v1beta1 API (``apis/kueue/v1beta1`` in Kueue), as a table of field paths.

The paths are Kueue's v1beta1 fields as Kueue's v1beta1 Go types declare them (v1beta2 names turned
back into v1beta1: ``cohort`` not ``cohortName``, ``priorityClassName`` and
``priorityClassSource`` not ``priorityClassRef``, LocalQueue ``flavorUsage`` and ``flavors``,
AdmissionCheck ``retryDelayMinutes``, MultiKueueCluster ``kubeConfig``, the
``accumulatedPastExexcutionTimeSeconds`` typo). A Kueue manifest using any of them must be
accepted unchanged, so each must exist in the schema the CRDs are generated from; a field dropped
or misspelled in ``pykueue/api/schemas`` fails here. ``[]`` steps into list items.
"""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api.schema import object_schema

KUEUE_V1BETA1_FIELDS: dict[str, tuple[str, ...]] = {
    "ResourceFlavor": (
        "spec.nodeLabels",
        "spec.nodeTaints[].key",
        "spec.nodeTaints[].value",
        "spec.nodeTaints[].effect",
        "spec.tolerations[].key",
        "spec.tolerations[].operator",
        "spec.tolerations[].value",
        "spec.tolerations[].effect",
        "spec.tolerations[].tolerationSeconds",
        "spec.topologyName",
    ),
    "ClusterQueue": (
        "spec.resourceGroups[].coveredResources",
        "spec.resourceGroups[].flavors[].name",
        "spec.resourceGroups[].flavors[].resources[].name",
        "spec.resourceGroups[].flavors[].resources[].nominalQuota",
        "spec.resourceGroups[].flavors[].resources[].borrowingLimit",
        "spec.resourceGroups[].flavors[].resources[].lendingLimit",
        "spec.cohort",
        "spec.queueingStrategy",
        "spec.namespaceSelector.matchLabels",
        "spec.namespaceSelector.matchExpressions",
        "spec.flavorFungibility.whenCanBorrow",
        "spec.flavorFungibility.whenCanPreempt",
        "spec.flavorFungibility.preference",
        "spec.preemption.reclaimWithinCohort",
        "spec.preemption.borrowWithinCohort.policy",
        "spec.preemption.borrowWithinCohort.maxPriorityThreshold",
        "spec.preemption.withinClusterQueue",
        "spec.admissionChecks",
        "spec.admissionChecksStrategy.admissionChecks[].name",
        "spec.admissionChecksStrategy.admissionChecks[].onFlavors",
        "spec.stopPolicy",
        "spec.fairSharing.weight",
        "spec.admissionScope.admissionMode",
        "status.conditions",
        "status.flavorsReservation[].name",
        "status.flavorsReservation[].resources[].name",
        "status.flavorsReservation[].resources[].total",
        "status.flavorsReservation[].resources[].borrowed",
        "status.flavorsUsage[].resources[].borrowed",
        "status.pendingWorkloads",
        "status.reservingWorkloads",
        "status.admittedWorkloads",
        "status.pendingWorkloadsStatus",
        "status.fairSharing.weightedShare",
    ),
    "Cohort": (
        "spec.parentName",
        "spec.resourceGroups[].flavors[].resources[].nominalQuota",
        "spec.resourceGroups[].flavors[].resources[].borrowingLimit",
        "spec.resourceGroups[].flavors[].resources[].lendingLimit",
        "spec.fairSharing.weight",
        "status.fairSharing.weightedShare",
    ),
    "LocalQueue": (
        "spec.clusterQueue",
        "spec.stopPolicy",
        "spec.fairSharing.weight",
        "status.conditions",
        "status.pendingWorkloads",
        "status.reservingWorkloads",
        "status.admittedWorkloads",
        "status.flavorsReservation[].name",
        "status.flavorsReservation[].resources[].total",
        "status.flavorUsage[].resources[].total",
        "status.flavors[].name",
        "status.flavors[].nodeLabels",
        "status.flavors[].nodeTaints",
        "status.flavors[].topology",
        "status.fairSharing.weightedShare",
        "status.fairSharing.admissionFairSharingStatus.consumedResources",
        "status.fairSharing.admissionFairSharingStatus.lastUpdate",
    ),
    "Workload": (
        "spec.podSets[].name",
        "spec.podSets[].template",
        "spec.podSets[].count",
        "spec.podSets[].minCount",
        "spec.podSets[].topologyRequest.required",
        "spec.podSets[].topologyRequest.preferred",
        "spec.podSets[].topologyRequest.unconstrained",
        "spec.podSets[].topologyRequest.podIndexLabel",
        "spec.podSets[].topologyRequest.subGroupIndexLabel",
        "spec.podSets[].topologyRequest.subGroupCount",
        "spec.podSets[].topologyRequest.podSetGroupName",
        "spec.podSets[].topologyRequest.podSetSliceRequiredTopology",
        "spec.podSets[].topologyRequest.podSetSliceSize",
        "spec.queueName",
        "spec.priorityClassName",
        "spec.priorityClassSource",
        "spec.priority",
        "spec.active",
        "spec.maximumExecutionTimeSeconds",
        "status.conditions",
        "status.admission.clusterQueue",
        "status.admission.podSetAssignments[].name",
        "status.admission.podSetAssignments[].flavors",
        "status.admission.podSetAssignments[].resourceUsage",
        "status.admission.podSetAssignments[].count",
        "status.admission.podSetAssignments[].topologyAssignment",
        "status.admission.podSetAssignments[].delayedTopologyRequest",
        "status.requeueState.count",
        "status.requeueState.requeueAt",
        "status.reclaimablePods[].name",
        "status.reclaimablePods[].count",
        "status.admissionChecks[].name",
        "status.admissionChecks[].state",
        "status.admissionChecks[].lastTransitionTime",
        "status.admissionChecks[].message",
        "status.admissionChecks[].requeueAfterSeconds",
        "status.admissionChecks[].retryCount",
        "status.admissionChecks[].podSetUpdates[].name",
        "status.admissionChecks[].podSetUpdates[].labels",
        "status.admissionChecks[].podSetUpdates[].annotations",
        "status.admissionChecks[].podSetUpdates[].nodeSelector",
        "status.admissionChecks[].podSetUpdates[].tolerations",
        "status.resourceRequests[].name",
        "status.resourceRequests[].resources",
        "status.accumulatedPastExexcutionTimeSeconds",
        "status.schedulingStats.evictions[].reason",
        "status.schedulingStats.evictions[].underlyingCause",
        "status.schedulingStats.evictions[].count",
        "status.nominatedClusterNames",
        "status.clusterName",
        "status.unhealthyNodes[].name",
    ),
    "AdmissionCheck": (
        "spec.controllerName",
        "spec.retryDelayMinutes",
        "spec.parameters.apiGroup",
        "spec.parameters.kind",
        "spec.parameters.name",
        "status.conditions",
    ),
    "WorkloadPriorityClass": ("value", "description"),
    "ProvisioningRequestConfig": (
        "spec.provisioningClassName",
        "spec.parameters",
        "spec.managedResources",
        "spec.retryStrategy.backoffLimitCount",
        "spec.retryStrategy.backoffBaseSeconds",
        "spec.retryStrategy.backoffMaxSeconds",
        "spec.podSetUpdates.nodeSelector[].key",
        "spec.podSetUpdates.nodeSelector[].valueFromProvisioningClassDetail",
        "spec.podSetMergePolicy",
    ),
    "MultiKueueConfig": ("spec.clusters",),
    "MultiKueueCluster": ("spec.kubeConfig.location", "spec.kubeConfig.locationType", "status.conditions"),
}

CASES = [(kind, path) for kind, paths in KUEUE_V1BETA1_FIELDS.items() for path in paths]


def resolve(schema: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The schema node at ``path`` (``a.b[].c``), or None where a step is missing.

    Below a node that preserves unknown fields (the deprecated LocalQueue ``status.flavors``
    items) every field is accepted as it is, so the path resolves to that node.
    """
    node: dict[str, Any] | None = schema
    for step in path.split("."):
        in_list = step.endswith("[]")
        name = step.removesuffix("[]")
        parent = node or {}
        node = (parent.get("properties") or {}).get(name)
        if node is None:
            return parent if parent.get("x-kubernetes-preserve-unknown-fields") else None
        if in_list:
            node = node.get("items")
    return node


@pytest.mark.parametrize(("kind", "path"), CASES, ids=[f"{k}.{p}" for k, p in CASES])
def test_kueue_v1beta1_field_exists(kind: str, path: str) -> None:
    assert resolve(object_schema(kind), path) is not None, f"{kind} has no {path}"


def test_the_table_covers_every_kind() -> None:
    from pykueue.api.schema import KINDS

    assert set(KUEUE_V1BETA1_FIELDS) == set(KINDS)


def test_resolve_finds_misses() -> None:
    """The resolver itself can fail, so the table above is not vacuous."""
    schema = object_schema("ClusterQueue")
    assert resolve(schema, "spec.resourceGroups[].flavors[].name") is not None
    assert resolve(schema, "spec.cohortName") is None
    assert resolve(schema, "spec.resourceGroups[].nominalQuota") is None
    local_queue = object_schema("LocalQueue")
    assert resolve(local_queue, "status.flavors[].nodeLabels") is not None, "kept as unknown fields"
    assert resolve(local_queue, "status.flavorsUsage") is None, "v1beta2 spelling"
