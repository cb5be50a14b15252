"""The deliberate differences between pykueue's CRDs and Kueue's published v1beta1 CRDs.

Read by ``test_kueue_crd_parity.py``. Each entry is ``(kind, path, facet)`` as
:class:`tests.crd_parity.Difference` spells it, with a comment saying why the difference is
deliberate. A path ending in ``.*`` covers every difference at or below that path. An entry that
no longer matches any difference fails the test too: the list can only shrink.
"""

from __future__ import annotations

from pykueue.api.constants import STORAGE_VERSION

# Kinds Kueue serves and pykueue does not.
MISSING_KINDS: dict[str, str] = {
    # Topology-aware scheduling's Topology objects are not served (docs/limitations.md).
    "Topology": "topology-aware scheduling is not implemented",
}

ALLOWED: list[tuple[str, str, str]] = [
    # pykueue's Concurrent Admission policy (docs/design/concurrent-admission.md).
    ("ClusterQueue", "spec.concurrentAdmission", "presence"),
    # pykueue's ResourceFlavor fallbacks (docs/design/api.md).
    ("ClusterQueue", "spec.flavorFungibility.fallbackStrategy", "presence"),
    # Concurrent Admission: the flavors an option workload may be assigned.
    ("Workload", "spec.podSets[].allowedResourceFlavors", "presence"),
    # Concurrent Admission: Default, Parent or Option workload.
    ("Workload", "spec.workloadMode", "presence"),
    # Concurrent Admission: the state of each option of a parent workload.
    ("Workload", "status.options", "presence"),
    # ResourceFlavor fallbacks: when each flavor was last assigned.
    ("Workload", "status.flavorAssignmentHistory", "presence"),
    # Kueue writes ^(?i)[a-z]...; Python's re (the webhook validates with the same schema) rejects
    # a flag after ^, so the case-insensitivity is spelled out. Both accept the same strings.
    ("AdmissionCheck", "spec.parameters.kind", "pattern"),
]


# Kinds whose etcd storage version differs from Kueue's (Kueue stores v1beta2). Empty since
# pykueue stores v1beta2 too (pykueue.api.constants.STORAGE_VERSION, docs/design/api-versions.md);
# switching storage back to v1beta1 would list every kind here.
_STORED_IN_V1BETA1: tuple[str, ...] = () if STORAGE_VERSION == "v1beta2" else (
    "AdmissionCheck",
    "ClusterQueue",
    "Cohort",
    "LocalQueue",
    "MultiKueueCluster",
    "MultiKueueConfig",
    "ProvisioningRequestConfig",
    "ResourceFlavor",
    "Workload",
    "WorkloadPriorityClass",
)

ALLOWED += [(kind, "", "crd.storage") for kind in _STORED_IN_V1BETA1]

# The deliberate differences from Kueue's v1beta2 schemas. pykueue's extensions are served in both
# versions, with the same schema.
ALLOWED_V1BETA2: list[tuple[str, str, str]] = [
    ("ClusterQueue", "spec.concurrentAdmission", "presence"),
    ("ClusterQueue", "spec.flavorFungibility.fallbackStrategy", "presence"),
    ("Workload", "spec.podSets[].allowedResourceFlavors", "presence"),
    ("Workload", "spec.workloadMode", "presence"),
    ("Workload", "status.options", "presence"),
    ("Workload", "status.flavorAssignmentHistory", "presence"),
    # Kueue's concurrentAdmissionPolicy and pykueue's concurrentAdmission are two spellings of one
    # policy (pykueue/api/concurrent_policy.py); a ClusterQueue may set one of them.
    ("ClusterQueue", "spec", "x-kubernetes-validations"),
    # ... and every policy the schema accepts has a concurrentAdmission it maps to.
    ("ClusterQueue", "spec.concurrentAdmissionPolicy.migration", "x-kubernetes-validations"),
    # The same pattern spelling as in v1beta1 (above).
    ("AdmissionCheck", "spec.parameters.kind", "pattern"),
] + [(kind, "", "crd.storage") for kind in _STORED_IN_V1BETA1]

ALLOWED_BY_VERSION: dict[str, list[tuple[str, str, str]]] = {"v1beta1": ALLOWED, "v1beta2": ALLOWED_V1BETA2}
