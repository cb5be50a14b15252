"""AdmissionCheck (cluster-scoped): a gate, run by some controller, that workloads must pass."""

from __future__ import annotations

from pykueue.api.dsl import DNS1123_LABEL, DNS1123_SUBDOMAIN, Rule, integer, obj, string
from pykueue.api.kindinfo import KindInfo
from pykueue.api.schemas.common import conditions

SPEC = obj(
    "The controller that runs the check and its parameters.",
    {
        "controllerName": string(
            "The controller that evaluates this check, e.g. kueue.x-k8s.io/provisioning-request or "
            "kueue.x-k8s.io/multikueue. Immutable.",
            rules=[Rule("self == oldSelf", "field is immutable")],
        ),
        "retryDelayMinutes": integer(
            "Deprecated and ignored: how long to keep the workload suspended after a Retry.",
            fmt="int64",
            default=15,
        ),
        "parameters": obj(
            "The object holding the check's configuration, e.g. a ProvisioningRequestConfig or a "
            "MultiKueueConfig.",
            {
                "apiGroup": string("API group of the parameters object.", max_length=253, pattern=DNS1123_SUBDOMAIN),
                # Kueue writes this pattern as ``^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$``; Python's re module
                # (the webhook validates with the same schema) rejects a flag after ``^``, so the
                # case-insensitivity is spelled out. Both accept the same strings.
                "kind": string(
                    "Kind of the parameters object.", max_length=63, pattern=r"^[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?$"
                ),
                "name": string("Name of the parameters object.", max_length=63, pattern=DNS1123_LABEL),
            },
            required=["apiGroup", "kind", "name"],
        ),
    },
    required=["controllerName"],
)

STATUS = obj(
    "The observed state of the admission check.",
    {"conditions": conditions("Conditions of the check; its controller sets Active.")},
)

KIND = KindInfo(
    kind="AdmissionCheck",
    plural="admissionchecks",
    description="AdmissionCheck is the Schema for the admissionchecks API: a condition, evaluated by "
    "a controller, that a workload must meet before it is admitted.",
    properties={"spec": SPEC, "status": STATUS},
    short_names=("ac",),
    status_subresource=True,
)
