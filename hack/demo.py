"""`make demo`: show the local cluster and what pykueue adds to it.

The demo is a list of steps, each a function taking the running LocalCluster and printing what
it shows. The cluster step comes first; steps that start pykueue and submit jobs are appended
to `STEPS` by the areas that build those parts.

Run with ``python -m hack.demo`` after ``python -m hack.localcluster up`` (``make demo`` does
both); the cluster name comes from ``$PYKUEUE_CLUSTER_NAME`` like everywhere else.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from hack.demo_jobs import queue_jobs, start_pykueue
from hack.demo_provisioning import provision_job
from hack.localcluster import LocalCluster, LocalClusterError, default_cluster_name
from pykueue.api.constants import GROUP

DemoStep = Callable[[LocalCluster], None]


def section(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 76 - len(title)), flush=True)


def show(cluster: LocalCluster, *kubectl_args: str) -> None:
    """Print the command and its output, the way a person would type it."""
    print(f"$ kubectl {' '.join(kubectl_args)}", flush=True)
    result = cluster.kubectl(*kubectl_args, check=False)
    print((result.stdout or result.stderr).rstrip(), flush=True)


def show_cluster(cluster: LocalCluster) -> None:
    section(f"Local cluster {cluster.name!r}")
    print(f"API server: {cluster.server}\nkubeconfig: {cluster.kubeconfig}")
    show(cluster, "version")
    section("Simulated nodes (kwok)")
    show(cluster, "get", "nodes", "-L", "instance-type")
    section(f"Kueue API ({GROUP})")
    show(cluster, "api-resources", f"--api-group={GROUP}")


STEPS: list[DemoStep] = [show_cluster, start_pykueue, queue_jobs, provision_job]


def main() -> int:
    try:
        cluster = LocalCluster(default_cluster_name())
        if not cluster.is_healthy():
            cluster.up()
        for step in STEPS:
            step(cluster)
    except LocalClusterError as err:
        print(f"demo: {err}", file=sys.stderr)
        return 1
    section("Try it yourself")
    print(f"export KUBECONFIG={cluster.kubeconfig}\n"
          f"kubectl get clusterqueues,localqueues,workloads -A\n"
          f"make cluster-down   # stops pykueue and this cluster's processes, nothing else")
    return 0


if __name__ == "__main__":
    sys.exit(main())
