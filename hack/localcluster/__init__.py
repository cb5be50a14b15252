"""A real local Kubernetes cluster for development and e2e tests.

``python -m hack.localcluster up|down|status [--name N]``; from Python::

    from hack.localcluster import LocalCluster
    cluster = LocalCluster("my-area").up()
    cluster.kubectl("get", "nodes")
    cluster.down()
"""

from .cluster import DEFAULT_CLUSTER_NAME, LocalCluster, default_cluster_name
from .errors import (
    ComponentFailedError,
    KubectlError,
    LocalClusterError,
    PrerequisiteError,
    UnsupportedOperationError,
)
from .external import ExistingCluster
from .nodes import DEFAULT_CAPACITY, SIMULATED_NODE_LABEL

SIM_RUN_SECONDS_ANNOTATION = "pykueue.dev/sim-run-seconds"

__all__ = [
    "DEFAULT_CAPACITY",
    "DEFAULT_CLUSTER_NAME",
    "SIMULATED_NODE_LABEL",
    "SIM_RUN_SECONDS_ANNOTATION",
    "ComponentFailedError",
    "ExistingCluster",
    "KubectlError",
    "LocalCluster",
    "LocalClusterError",
    "PrerequisiteError",
    "UnsupportedOperationError",
    "default_cluster_name",
]
