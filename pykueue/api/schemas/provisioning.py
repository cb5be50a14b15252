"""ProvisioningRequestConfig (cluster-scoped): parameters of the ProvisioningRequest admission check (``docs/design/provisioning.md``; ``controller/provisioning/config.py`` reads it)."""

from __future__ import annotations

from pykueue.api.dsl import DNS1123_SUBDOMAIN, array, integer, map_of, obj, string
from pykueue.api.kindinfo import KindInfo
from pykueue.api.schemas.common import resource_name

QUALIFIED_NAME = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"

RETRY_STRATEGY = obj(
    "How failed or expired ProvisioningRequests are retried. Unset means 3 retries with a 60s base "
    "and an 1800s cap; backoffLimitCount 0 disables retries.",
    {
        "backoffLimitCount": integer(
            "How many times a failed request is retried before the check is Rejected and the "
            "workload deactivated.",
            default=3,
        ),
        "backoffBaseSeconds": integer(
            "Base of the exponential backoff between retries (about base*2^(n-1) seconds).",
            default=60,
        ),
        "backoffMaxSeconds": integer("Upper bound of the backoff between retries.", default=1800),
    },
    default={"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800},
)

SPEC = obj(
    "What the ProvisioningRequests created for a workload look like.",
    {
        "provisioningClassName": string(
            "The provisioning class copied into each ProvisioningRequest, e.g. "
            "check-capacity.autoscaling.x-k8s.io.",
            max_length=253,
            pattern=DNS1123_SUBDOMAIN,
        ),
        "parameters": map_of(
            "Parameters copied into each ProvisioningRequest (workload annotations prefixed "
            "provreq.kueue.x-k8s.io/ are added to them).",
            string("Parameter value.", max_length=255),
            max_properties=100,
        ),
        "managedResources": array(
            "Resources managed by the autoscaler. Empty means all; otherwise only pod sets requesting "
            "one of them are included, and a workload requesting none passes the check at once.",
            resource_name("A resource name."),
            max_items=100,
            list_type="set",
        ),
        "retryStrategy": RETRY_STRATEGY,
        "podSetUpdates": obj(
            "Updates applied to the admitted pod sets from the provisioned request's details.",
            {
                "nodeSelector": array(
                    "Node selector entries whose values come from the request's "
                    "status.provisioningClassDetails.",
                    obj(
                        "One node selector entry.",
                        {
                            "key": string("The node selector key.", min_length=1, max_length=317,
                                          pattern=QUALIFIED_NAME),
                            "valueFromProvisioningClassDetail": string(
                                "The key of status.provisioningClassDetails whose value is used.",
                                min_length=1,
                                max_length=32768,
                            ),
                        },
                        required=["key", "valueFromProvisioningClassDetail"],
                    ),
                    max_items=8,
                ),
            },
        ),
        "podSetMergePolicy": string(
            "Merge pod sets before sending them to the autoscaler: IdenticalPodTemplates (deep-equal "
            "templates) or IdenticalWorkloadSchedulingRequirements (same requests, selectors, "
            "tolerations and affinity).",
            enum=["IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements"],
        ),
    },
    required=["provisioningClassName"],
)

KIND = KindInfo(
    kind="ProvisioningRequestConfig",
    plural="provisioningrequestconfigs",
    description="ProvisioningRequestConfig is the Schema for the provisioningrequestconfig API: the "
    "parameters of a kueue.x-k8s.io/provisioning-request admission check.",
    properties={"spec": SPEC},
    short_names=("prc",),
)
