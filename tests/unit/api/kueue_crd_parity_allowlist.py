"""The deliberate differences between pykueue's CRDs and Kueue's published v1beta1 CRDs.

Read by ``test_kueue_crd_parity.py``. Each entry is ``(kind, path, facet)`` as
:class:`tests.crd_parity.Difference` spells it, with a comment saying why the difference is
deliberate. A path ending in ``.*`` covers every difference at or below that path. An entry that
no longer matches any difference fails the test too: the list can only shrink.
"""

from __future__ import annotations

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

