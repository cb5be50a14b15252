"""MultiKueueConfig and MultiKueueCluster (cluster-scoped): worker clusters for MultiKueue."""

from __future__ import annotations

from pykueue.api.dsl import array, obj, string
from pykueue.api.kindinfo import AGE_COLUMN, KindInfo, PrinterColumn
from pykueue.api.schemas.common import conditions

CONFIG_SPEC = obj(
    "The worker clusters of a MultiKueue admission check.",
    {
        "clusters": array(
            "Names of MultiKueueClusters the workloads are dispatched to, most preferred first.",
            string("Name of a MultiKueueCluster."),
            min_items=1,
            max_items=20,
            list_type="set",
        ),
    },
    required=["clusters"],
)

CONFIG_KIND = KindInfo(
    kind="MultiKueueConfig",
    plural="multikueueconfigs",
    description="MultiKueueConfig is the Schema for the multikueue API: the parameters of a "
    "kueue.x-k8s.io/multikueue admission check.",
    properties={"spec": CONFIG_SPEC},
    short_names=("mkconf",),
)

CLUSTER_SPEC = obj(
    "How to connect to the worker cluster.",
    {
        "kubeConfig": obj(
            "Where the worker's kubeconfig is. Kubeconfigs with exec plugins, token files or insecure "
            "TLS are rejected.",
            {
                "location": string(
                    "Name of a Secret (key kubeconfig) in the pykueue namespace, or an absolute path "
                    "on the controller's file system.",
                ),
                "locationType": string(
                    "Secret (default) or Path.", enum=["Secret", "Path"], default="Secret"
                ),
            },
            required=["location", "locationType"],
        ),
        "clusterProfileRef": obj(
            "A ClusterProfile (sigs.k8s.io/cluster-inventory-api) naming the worker cluster. "
            "Accepted for compatibility with Kueue; pykueue connects through kubeConfig only.",
            {"name": string("Name of the ClusterProfile.", min_length=1, max_length=256)},
            required=["name"],
        ),
    },
    required=["kubeConfig"],
)

CLUSTER_STATUS = obj(
    "The observed state of the connection.",
    {"conditions": conditions("Conditions of the cluster; Active is True while connected.")},
)

CLUSTER_KIND = KindInfo(
    kind="MultiKueueCluster",
    plural="multikueueclusters",
    description="MultiKueueCluster is the Schema for the multikueue API: one worker cluster and "
    "how to reach it.",
    properties={"spec": CLUSTER_SPEC, "status": CLUSTER_STATUS},
    short_names=("mkc",),
    status_subresource=True,
    printer_columns=(
        PrinterColumn("Connected", ".status.conditions[?(@.type=='Active')].status",
                      description="MultiKueueCluster is connected"),
        AGE_COLUMN,
    ),
)
