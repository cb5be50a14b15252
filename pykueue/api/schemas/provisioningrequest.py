"""ProvisioningRequest (``autoscaling.x-k8s.io/v1``, namespaced), for test clusters only.

The cluster-autoscaler owns this API; pykueue creates requests for its ProvisioningRequest
admission check (``controller/provisioning/``).  Test clusters have no autoscaler, so they
install this CRD and ``hack/autoscaler_sim.py`` (or a test) plays the autoscaler by setting the
request's conditions.  The chart does not ship it.
"""

from __future__ import annotations

from pykueue.api.constants import AUTOSCALING_GROUP
from pykueue.api.dsl import DNS1123_SUBDOMAIN, array, integer, map_of, obj, string
from pykueue.api.kindinfo import KindInfo
from pykueue.api.schemas.common import conditions

SPEC = obj(
    "The capacity requested: pod sets referring to PodTemplates, and the provisioning class.",
    {
        "podSets": array(
            "The pods the capacity is for. Immutable.",
            obj(
                "A group of identical pods.",
                {
                    "podTemplateRef": obj(
                        "The PodTemplate (in the request's namespace) the pods are created from.",
                        {"name": string("Name of the PodTemplate.", max_length=253, pattern=DNS1123_SUBDOMAIN)},
                        required=["name"],
                    ),
                    "count": integer("Number of pods.", minimum=1),
                },
                required=["podTemplateRef", "count"],
            ),
            min_items=1,
            max_items=32,
            list_type="atomic",
        ),
        "provisioningClassName": string(
            "The provisioning mode, e.g. check-capacity.autoscaling.x-k8s.io.",
            min_length=1,
            max_length=253,
            pattern=DNS1123_SUBDOMAIN,
        ),
        "parameters": map_of(
            "Class-specific parameters.", string("Parameter value.", max_length=255), max_properties=100
        ),
    },
    required=["podSets", "provisioningClassName"],
)

STATUS = obj(
    "The state of the request, set by the autoscaler.",
    {
        "conditions": conditions("Accepted, Provisioned, Failed, BookingExpired and CapacityRevoked."),
        "provisioningClassDetails": map_of(
            "Class-specific details of the provisioned capacity (used by podSetUpdates.nodeSelector).",
            string("Detail value.", max_length=32768),
        ),
    },
)

KIND = KindInfo(
    kind="ProvisioningRequest",
    plural="provisioningrequests",
    description="ProvisioningRequest asks the cluster-autoscaler for capacity for a set of pods.",
    properties={"spec": SPEC, "status": STATUS},
    required=("spec",),
    namespaced=True,
    short_names=("provreq", "provreqs"),
    status_subresource=True,
    group=AUTOSCALING_GROUP,
    version="v1",
)
