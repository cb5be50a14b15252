"""Static types for the API objects, which stay plain JSON dicts at runtime.

Objects travel between the informers, the engine, the webhook and the API exactly as the
apiserver serves them; converting them to classes and back would cost time and lose unknown
fields.  These TypedDicts give the dicts names and checked keys instead, and a unit test keeps
every TypedDict's keys equal to the schema's properties (:mod:`pykueue.api.schemas`), so the two
cannot drift apart.  Accessors below answer the questions every area asks of these objects.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict, TypeVar, cast

from pykueue.api import constants as c
from pykueue.api.dsl import duration_seconds

Quantity = str | int

# --- shared ---------------------------------------------------------------------------------------


class ObjectMeta(TypedDict, total=False):
    name: str
    namespace: str
    uid: str
    generation: int
    resourceVersion: str
    creationTimestamp: str
    deletionTimestamp: str
    labels: dict[str, str]
    annotations: dict[str, str]
    finalizers: list[str]
    ownerReferences: list[dict[str, Any]]


class Condition(TypedDict, total=False):
    type: str
    status: Literal["True", "False", "Unknown"]
    observedGeneration: int
    lastTransitionTime: str
    reason: str
    message: str


class LabelSelector(TypedDict, total=False):
    matchLabels: dict[str, str]
    matchExpressions: list[dict[str, Any]]


class FairSharing(TypedDict, total=False):
    weight: Quantity


class FairSharingStatus(TypedDict, total=False):
    weightedShare: int
    admissionFairSharingStatus: dict[str, Any]


class ResourceUsage(TypedDict, total=False):
    name: str
    total: Quantity
    borrowed: Quantity


class FlavorUsage(TypedDict, total=False):
    name: str
    resources: list[ResourceUsage]


# --- ResourceFlavor --------------------------------------------------------------------------------


class ResourceFlavorSpec(TypedDict, total=False):
    nodeLabels: dict[str, str]
    nodeTaints: list[dict[str, Any]]
    tolerations: list[dict[str, Any]]
    topologyName: str


class ResourceFlavor(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: ResourceFlavorSpec


# --- ClusterQueue and Cohort ------------------------------------------------------------------------


class ResourceQuota(TypedDict, total=False):
    name: str
    nominalQuota: Quantity
    borrowingLimit: Quantity
    lendingLimit: Quantity


class FlavorQuotas(TypedDict, total=False):
    name: str
    resources: list[ResourceQuota]


class ResourceGroup(TypedDict, total=False):
    coveredResources: list[str]
    flavors: list[FlavorQuotas]


class FallbackRule(TypedDict, total=False):
    name: str
    trigger: str
    timeout: str
    timeoutMinutes: int


class FallbackStrategy(TypedDict, total=False):
    failurePolicy: str
    rules: list[FallbackRule]


class FlavorFungibility(TypedDict, total=False):
    whenCanBorrow: str
    whenCanPreempt: str
    preference: str
    fallbackStrategy: FallbackStrategy


class BorrowWithinCohort(TypedDict, total=False):
    policy: str
    maxPriorityThreshold: int


class ClusterQueuePreemption(TypedDict, total=False):
    reclaimWithinCohort: str
    borrowWithinCohort: BorrowWithinCohort
    withinClusterQueue: str


class ExplicitOption(TypedDict, total=False):
    name: str
    createDelaySeconds: int
    deleteDelaySeconds: int
    allowedResourceFlavors: list[str]


class RemoveBelowTargetConfig(TypedDict, total=False):
    targetResourceFlavor: str


class ConcurrentAdmission(TypedDict, total=False):
    onSuccess: str
    explicitOptions: list[ExplicitOption]
    removeBelowTargetConfig: RemoveBelowTargetConfig


class AdmissionCheckStrategyRule(TypedDict, total=False):
    name: str
    onFlavors: list[str]


class AdmissionChecksStrategy(TypedDict, total=False):
    admissionChecks: list[AdmissionCheckStrategyRule]


class ClusterQueueSpec(TypedDict, total=False):
    resourceGroups: list[ResourceGroup]
    cohort: str
    queueingStrategy: str
    namespaceSelector: LabelSelector
    flavorFungibility: FlavorFungibility
    preemption: ClusterQueuePreemption
    admissionChecks: list[str]
    admissionChecksStrategy: AdmissionChecksStrategy
    stopPolicy: str
    fairSharing: FairSharing
    admissionScope: dict[str, str]
    concurrentAdmission: ConcurrentAdmission


class ClusterQueueStatus(TypedDict, total=False):
    conditions: list[Condition]
    flavorsReservation: list[FlavorUsage]
    flavorsUsage: list[FlavorUsage]
    pendingWorkloads: int
    reservingWorkloads: int
    admittedWorkloads: int
    pendingWorkloadsStatus: dict[str, Any]
    fairSharing: FairSharingStatus


class ClusterQueue(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: ClusterQueueSpec
    status: ClusterQueueStatus


class CohortSpec(TypedDict, total=False):
    parentName: str
    resourceGroups: list[ResourceGroup]
    fairSharing: FairSharing


class CohortStatus(TypedDict, total=False):
    fairSharing: FairSharingStatus


class Cohort(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: CohortSpec
    status: CohortStatus


# --- LocalQueue --------------------------------------------------------------------------------------


class LocalQueueSpec(TypedDict, total=False):
    clusterQueue: str
    stopPolicy: str
    fairSharing: FairSharing


class LocalQueueStatus(TypedDict, total=False):
    conditions: list[Condition]
    pendingWorkloads: int
    reservingWorkloads: int
    admittedWorkloads: int
    flavorsReservation: list[FlavorUsage]
    flavorUsage: list[FlavorUsage]
    flavors: list[dict[str, Any]]
    fairSharing: FairSharingStatus


class LocalQueue(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: LocalQueueSpec
    status: LocalQueueStatus


# --- Workload --------------------------------------------------------------------------------------


class PodSet(TypedDict, total=False):
    name: str
    template: dict[str, Any]
    count: int
    minCount: int
    topologyRequest: dict[str, Any]
    allowedResourceFlavors: list[str]


class WorkloadMode(TypedDict, total=False):
    type: str


class WorkloadSpec(TypedDict, total=False):
    podSets: list[PodSet]
    queueName: str
    priorityClassName: str
    priority: int
    priorityClassSource: str
    active: bool
    maximumExecutionTimeSeconds: int
    workloadMode: WorkloadMode


class PodSetAssignment(TypedDict, total=False):
    name: str
    flavors: dict[str, str]
    resourceUsage: dict[str, Quantity]
    count: int
    topologyAssignment: dict[str, Any]
    delayedTopologyRequest: str


class Admission(TypedDict, total=False):
    clusterQueue: str
    podSetAssignments: list[PodSetAssignment]


class PodSetUpdate(TypedDict, total=False):
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, Any]]


class AdmissionCheckState(TypedDict, total=False):
    name: str
    state: str
    lastTransitionTime: str
    message: str
    requeueAfterSeconds: int
    retryCount: int
    podSetUpdates: list[PodSetUpdate]


class RequeueState(TypedDict, total=False):
    count: int
    requeueAt: str


class OptionStatus(TypedDict, total=False):
    name: str
    resourceFlavors: list[str]
    status: str
    message: str


class FlavorAssignment(TypedDict, total=False):
    resourceFlavor: str
    assignmentTime: str


class WorkloadStatus(TypedDict, total=False):
    conditions: list[Condition]
    admission: Admission
    requeueState: RequeueState
    reclaimablePods: list[dict[str, Any]]
    admissionChecks: list[AdmissionCheckState]
    resourceRequests: list[dict[str, Any]]
    accumulatedPastExexcutionTimeSeconds: int
    schedulingStats: dict[str, Any]
    nominatedClusterNames: list[str]
    clusterName: str
    unhealthyNodes: list[dict[str, Any]]
    options: list[OptionStatus]
    flavorAssignmentHistory: list[FlavorAssignment]


class Workload(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: WorkloadSpec
    status: WorkloadStatus


# --- AdmissionCheck, priority, provisioning, MultiKueue --------------------------------------------


class AdmissionCheckParameters(TypedDict, total=False):
    apiGroup: str
    kind: str
    name: str


class AdmissionCheckSpec(TypedDict, total=False):
    controllerName: str
    retryDelayMinutes: int
    parameters: AdmissionCheckParameters


class AdmissionCheckStatus(TypedDict, total=False):
    conditions: list[Condition]


class AdmissionCheck(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: AdmissionCheckSpec
    status: AdmissionCheckStatus


class WorkloadPriorityClass(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    value: int
    description: str


class RetryStrategy(TypedDict, total=False):
    backoffLimitCount: int
    backoffBaseSeconds: int
    backoffMaxSeconds: int


class ProvisioningRequestConfigSpec(TypedDict, total=False):
    provisioningClassName: str
    parameters: dict[str, str]
    managedResources: list[str]
    retryStrategy: RetryStrategy
    podSetUpdates: dict[str, Any]
    podSetMergePolicy: str


class ProvisioningRequestConfig(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: ProvisioningRequestConfigSpec


class MultiKueueConfigSpec(TypedDict, total=False):
    clusters: list[str]


class MultiKueueConfig(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: MultiKueueConfigSpec


class KubeConfig(TypedDict, total=False):
    location: str
    locationType: Literal["Secret", "Path"]


class MultiKueueClusterSpec(TypedDict, total=False):
    kubeConfig: KubeConfig


class MultiKueueClusterStatus(TypedDict, total=False):
    conditions: list[Condition]


class MultiKueueCluster(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: MultiKueueClusterSpec
    status: MultiKueueClusterStatus


# Kind name -> TypedDict of the whole object.
OBJECT_TYPES: dict[str, type] = {
    "ResourceFlavor": ResourceFlavor,
    "ClusterQueue": ClusterQueue,
    "Cohort": Cohort,
    "LocalQueue": LocalQueue,
    "Workload": Workload,
    "AdmissionCheck": AdmissionCheck,
    "WorkloadPriorityClass": WorkloadPriorityClass,
    "ProvisioningRequestConfig": ProvisioningRequestConfig,
    "MultiKueueConfig": MultiKueueConfig,
    "MultiKueueCluster": MultiKueueCluster,
}

# --- accessors -----------------------------------------------------------------------------------

T = TypeVar("T")


class WrongKind(TypeError):
    """An object handed to a typed view is not of the expected kind."""


def as_kind(obj: dict[str, Any], typ: type[T]) -> T:
    """View ``obj`` as the TypedDict ``typ`` after checking its ``kind`` (no copy is made)."""
    expected = typ.__name__
    if not isinstance(obj, dict) or obj.get("kind") != expected:
        got = obj.get("kind") if isinstance(obj, dict) else type(obj).__name__
        raise WrongKind(f"expected a {expected}, got {got!r}")
    return cast(T, obj)


def object_key(obj: dict[str, Any]) -> str:
    """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones (informer keys)."""
    meta = obj.get("metadata", {})
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else meta.get("name", "")


def find_condition(obj: dict[str, Any], type_: str) -> Condition | None:
    for cond in obj.get("status", {}).get("conditions", []) or []:
        if cond.get("type") == type_:
            return cast(Condition, cond)
    return None


def condition_is_true(obj: dict[str, Any], type_: str) -> bool:
    cond = find_condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


def cluster_queue_flavors(cq: ClusterQueue | Cohort) -> list[str]:
    """Flavor names of all resource groups, in the order the scheduler tries them."""
    return [f["name"] for group in cq.get("spec", {}).get("resourceGroups", []) for f in group.get("flavors", [])]


def cluster_queue_checks(cq: ClusterQueue) -> dict[str, list[str]]:
    """Admission check name -> flavors it applies to (empty list: all), from either v1beta1 form."""
    spec = cq.get("spec", {})
    checks: dict[str, list[str]] = {name: [] for name in spec.get("admissionChecks", [])}
    for rule in spec.get("admissionChecksStrategy", {}).get("admissionChecks", []):
        checks[rule["name"]] = list(rule.get("onFlavors", []))
    return checks


def fallback_rules(cq: ClusterQueue) -> list[FallbackRule]:
    return list(cq.get("spec", {}).get("flavorFungibility", {}).get("fallbackStrategy", {}).get("rules", []))


def fallback_timeout_seconds(rule: FallbackRule) -> float | None:
    """The rule's timeout in seconds (from ``timeout`` or ``timeoutMinutes``), None when it has none."""
    if "timeoutMinutes" in rule:
        return float(rule["timeoutMinutes"]) * 60
    if "timeout" in rule:
        return duration_seconds(rule["timeout"])
    return None


def workload_mode(wl: Workload) -> str:
    return wl.get("spec", {}).get("workloadMode", {}).get("type", c.WORKLOAD_MODE_DEFAULT)


def workload_is_active(wl: Workload) -> bool:
    return wl.get("spec", {}).get("active", True) is not False


def holds_quota_reservation(wl: Workload) -> bool:
    return condition_is_true(cast(dict[str, Any], wl), c.COND_QUOTA_RESERVED)


def is_admitted(wl: Workload) -> bool:
    return condition_is_true(cast(dict[str, Any], wl), c.COND_ADMITTED)


def is_finished(wl: Workload) -> bool:
    return condition_is_true(cast(dict[str, Any], wl), c.COND_FINISHED)
