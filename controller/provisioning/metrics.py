"""Prometheus metrics of the ProvisioningRequest check (Kueue exports none for it; hence the
pykueue_ prefix)."""

from __future__ import annotations

from prometheus_client import Counter

REQUESTS_CREATED = Counter(
    "pykueue_provisioning_requests_created_total",
    "ProvisioningRequests created, per admission check.",
    ["admission_check"],
)
REQUESTS_DELETED = Counter(
    "pykueue_provisioning_requests_deleted_total",
    "ProvisioningRequests deleted, by cause: workload (finished, evicted or deactivated) or "
    "superseded (an older attempt, or out of sync with its config).",
    ["cause"],
)
CHECK_OUTCOMES = Counter(
    "pykueue_provisioning_check_transitions_total",
    "Admission check state changes written by the provisioning controller, by new state.",
    ["admission_check", "state"],
)
