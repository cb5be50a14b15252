"""LocalQueue (namespaced): where users in a namespace submit jobs, pointing at a ClusterQueue."""

from __future__ import annotations

from pykueue.api.dsl import Rule, array, integer, map_of, name_ref, obj, string
from pykueue.api.kindinfo import KindInfo, PrinterColumn
from pykueue.api.schemas.clusterqueue import flavor_usage
from pykueue.api.schemas.common import (
    FAIR_SHARING,
    FAIR_SHARING_STATUS,
    STOP_POLICY,
    TAINT,
    cluster_queue_ref,
    conditions,
    flavor_ref,
    resource_name,
)

SPEC = obj(
    "The ClusterQueue this LocalQueue submits to.",
    {
        "clusterQueue": cluster_queue_ref(
            "The ClusterQueue that admits the workloads of this LocalQueue. Immutable."
        )
        | {"x-kubernetes-validations": [Rule("self == oldSelf", "field is immutable").to_json()]},
        "stopPolicy": STOP_POLICY,
        "fairSharing": FAIR_SHARING,
    },
)

STATUS = obj(
    "The observed state of the LocalQueue.",
    {
        "conditions": conditions("Conditions of the LocalQueue; Active tells whether it accepts workloads."),
        "pendingWorkloads": integer("Number of this queue's workloads waiting for admission."),
        "reservingWorkloads": integer("Number of this queue's workloads holding a quota reservation."),
        "admittedWorkloads": integer("Number of this queue's admitted, unfinished workloads."),
        "flavorsReservation": flavor_usage("Quota reserved by this queue's workloads, per flavor.", borrowed=False),
        "flavorUsage": flavor_usage("Quota used by this queue's admitted workloads, per flavor.", borrowed=False),
        "flavors": array(
            "Deprecated: the flavors of the ClusterQueue, with their node labels and taints.",
            obj(
                "A flavor available to this queue.",
                {
                    "name": flavor_ref("Name of the flavor."),
                    "nodeLabels": map_of("Labels of the flavor's nodes.", string("Label value."), max_properties=8)
                    | {"x-kubernetes-map-type": "atomic"},
                    "nodeTaints": array("Taints of the flavor's nodes.", TAINT, max_items=8, list_type="atomic"),
                    "resources": array(
                        "The resources this flavor has quota for in the ClusterQueue.",
                        resource_name("A resource name."),
                        max_items=64,
                        list_type="set",
                    ),
                    "topology": obj(
                        "The Topology of the flavor, for topology-aware scheduling.",
                        {
                            "name": name_ref("Name of the Topology."),
                            "levels": array(
                                "The node labels of the topology levels, from the widest to the narrowest.",
                                string("A node label key."),
                                min_items=1,
                                max_items=16,
                                list_type="atomic",
                            ),
                        },
                        required=["name", "levels"],
                    ),
                },
                required=["name"],
            ),
            max_items=64,
            list_type="map",
            map_keys=["name"],
        ),
        "fairSharing": FAIR_SHARING_STATUS,
    },
)

KIND = KindInfo(
    kind="LocalQueue",
    plural="localqueues",
    description="LocalQueue is the Schema for the localQueues API: the namespaced queue users "
    "name in the kueue.x-k8s.io/queue-name label of their jobs.",
    properties={"spec": SPEC, "status": STATUS},
    namespaced=True,
    short_names=("queue", "queues", "lq"),
    status_subresource=True,
    printer_columns=(
        PrinterColumn("ClusterQueue", ".spec.clusterQueue", description="Backing ClusterQueue"),
        PrinterColumn("Pending Workloads", ".status.pendingWorkloads", type="integer",
                      description="Number of pending workloads"),
        PrinterColumn("Admitted Workloads", ".status.admittedWorkloads", type="integer",
                      description="Number of admitted workloads that haven't finished yet."),
    ),
)
