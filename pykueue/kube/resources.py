"""Descriptors for every resource type pykueue reads or writes.

A :class:`Resource` is all the client needs to build a REST path, so adding a kind (including a
CRD) never needs a generated API class. The names of the Kueue kinds come from
:mod:`pykueue.api.constants` so the group and version are spelled in exactly one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from pykueue.api.constants import AUTOSCALING_GROUP, GROUP, VERSION


@dataclass(frozen=True, slots=True)
class Resource:
    """One REST resource: ``group`` is ``""`` for the core API."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` field of objects of this resource (``v1`` or ``group/version``)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def base_path(self) -> str:
        """``/api/v1`` for the core group, ``/apis/<group>/<version>`` otherwise."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The REST path of the collection (no name) or of one object.

        A namespaced resource without a namespace yields the all-namespaces collection path,
        which is what list and watch want; naming one object of a namespaced resource without a
        namespace is a programming error and raises ``ValueError`` rather than silently hitting
        the wrong URL.
        """
        parts = [self.base_path]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        elif self.namespaced and name is not None:
            raise ValueError(f"{self.kind} is namespaced: a namespace is required to address {name!r}")
        parts.append(self.plural)
        if name is not None:
            if not name:
                raise ValueError(f"{self.kind}: metadata.name must not be empty")
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


# --- core and built-in kinds -----------------------------------------------------------------
PODS = Resource("", "v1", "pods", "Pod", True)
NODES = Resource("", "v1", "nodes", "Node", False)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
SECRETS = Resource("", "v1", "secrets", "Secret", True)
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
EVENTS = Resource("", "v1", "events", "Event", True)
POD_TEMPLATES = Resource("", "v1", "podtemplates", "PodTemplate", True)
LIMIT_RANGES = Resource("", "v1", "limitranges", "LimitRange", True)
JOBS = Resource("batch", "v1", "jobs", "Job", True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False)
MUTATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False
)
VALIDATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    False,
)
TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False)
SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False
)
VISIBILITY_CLUSTER_QUEUES = Resource("visibility.kueue.x-k8s.io", "v1beta1", "clusterqueues", "ClusterQueue", False)
VISIBILITY_LOCAL_QUEUES = Resource("visibility.kueue.x-k8s.io", "v1beta1", "localqueues", "LocalQueue", True)
VISIBILITY_WORKLOADS = Resource("visibility.kueue.x-k8s.io", "v1beta1", "workloads", "Workload", True)
API_SERVICES = Resource("apiregistration.k8s.io", "v1", "apiservices", "APIService", False)
SERVICES = Resource("", "v1", "services", "Service", True)
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount", True)
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
)
CUSTOM_RESOURCE_DEFINITIONS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)

# --- Kueue kinds (kueue.x-k8s.io/v1beta1) ------------------------------------------------------
CLUSTER_QUEUES = Resource(GROUP, VERSION, "clusterqueues", "ClusterQueue", False)
LOCAL_QUEUES = Resource(GROUP, VERSION, "localqueues", "LocalQueue", True)
WORKLOADS = Resource(GROUP, VERSION, "workloads", "Workload", True)
RESOURCE_FLAVORS = Resource(GROUP, VERSION, "resourceflavors", "ResourceFlavor", False)
ADMISSION_CHECKS = Resource(GROUP, VERSION, "admissionchecks", "AdmissionCheck", False)
WORKLOAD_PRIORITY_CLASSES = Resource(GROUP, VERSION, "workloadpriorityclasses", "WorkloadPriorityClass", False)
COHORTS = Resource(GROUP, VERSION, "cohorts", "Cohort", False)
PROVISIONING_REQUEST_CONFIGS = Resource(
    GROUP, VERSION, "provisioningrequestconfigs", "ProvisioningRequestConfig", False
)
MULTIKUEUE_CONFIGS = Resource(GROUP, VERSION, "multikueueconfigs", "MultiKueueConfig", False)
MULTIKUEUE_CLUSTERS = Resource(GROUP, VERSION, "multikueueclusters", "MultiKueueCluster", False)

# --- cluster-autoscaler's ProvisioningRequest ----------------------------------------------------
PROVISIONING_REQUESTS = Resource(AUTOSCALING_GROUP, "v1", "provisioningrequests", "ProvisioningRequest", True)

ALL_RESOURCES: tuple[Resource, ...] = (
    PODS,
    NODES,
    NAMESPACES,
    SECRETS,
    CONFIG_MAPS,
    EVENTS,
    POD_TEMPLATES,
    LIMIT_RANGES,
    JOBS,
    LEASES,
    PRIORITY_CLASSES,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    CUSTOM_RESOURCE_DEFINITIONS,
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    WORKLOADS,
    RESOURCE_FLAVORS,
    ADMISSION_CHECKS,
    WORKLOAD_PRIORITY_CLASSES,
    COHORTS,
    PROVISIONING_REQUEST_CONFIGS,
    MULTIKUEUE_CONFIGS,
    MULTIKUEUE_CLUSTERS,
    PROVISIONING_REQUESTS,
)
