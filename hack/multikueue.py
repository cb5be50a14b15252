"""A MultiKueue setup on this machine: one manager and two workers, each a full local cluster.

Each cluster (:class:`hack.localcluster.LocalCluster`: its own etcd, apiserver, controller
manager, scheduler and kwok nodes) runs its own pykueue webhook and controller
(:mod:`hack.run_pykueue`). The workers' admin kubeconfigs (certificates embedded, so they are
self-contained) are stored on the manager as Secrets with key ``kubeconfig`` in pykueue's
namespace, and a MultiKueueCluster names each one. Two workers, not more: every cluster costs a
control plane and the machine is small.

    python -m hack.multikueue up|down|status [--prefix mk]

``make multikueue-up`` / ``make multikueue-down`` run it with the default prefix;
``hack/demo_multikueue.py`` then shows a Job submitted to the manager running on a worker.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hack import run_pykueue
from hack.localcluster import LocalCluster, LocalClusterError

DEFAULT_PREFIX = "mk"
WORKERS = ("worker1", "worker2")
PYKUEUE_NAMESPACE = run_pykueue.WEBHOOK_NAMESPACE


@dataclass(frozen=True)
class Setup:
    manager: LocalCluster
    workers: dict[str, LocalCluster]


def clusters(prefix: str = DEFAULT_PREFIX) -> Setup:
    return Setup(LocalCluster(f"{prefix}-manager"), {w: LocalCluster(f"{prefix}-{w}") for w in WORKERS})


def apply(cluster: Any, *objects: dict[str, Any]) -> None:
    """Server-side apply of ``objects`` with kubectl (works for LocalCluster and the e2e one)."""
    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-",
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
    )  # fmt: skip


def kubeconfig_secret(name: str, kubeconfig: str | bytes) -> dict[str, Any]:
    raw = kubeconfig.encode() if isinstance(kubeconfig, str) else kubeconfig
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": PYKUEUE_NAMESPACE},
        "data": {"kubeconfig": base64.b64encode(raw).decode("ascii")},
    }


def multikueue_cluster(name: str, secret: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "MultiKueueCluster",
        "metadata": {"name": name},
        "spec": {"kubeConfig": {"locationType": "Secret", "location": secret}},
    }


def connect(manager: Any, workers: dict[str, Any]) -> None:
    """On the manager: a Secret and a MultiKueueCluster per worker (named as in ``workers``)."""
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PYKUEUE_NAMESPACE}}
    objects: list[dict[str, Any]] = [namespace]
    for name, worker in workers.items():
        objects.append(kubeconfig_secret(f"{name}-kubeconfig", Path(worker.kubeconfig).read_bytes()))
        objects.append(multikueue_cluster(name, f"{name}-kubeconfig"))
    apply(manager, *objects)


def queues(check: str | None, clusters_: list[str] | None = None, *, namespace: str, cpu: str = "4") -> list[dict[str, Any]]:
    """A ResourceFlavor, a ClusterQueue ``mk-cq`` (with the MultiKueue check ``check`` on the
    manager, none on a worker), the namespace and a LocalQueue ``mk-lq`` in it. On the manager
    (``check`` set) also the AdmissionCheck and a MultiKueueConfig listing ``clusters_``."""
    cq: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "mk-cq"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [{"name": "mk-flavor", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}
            ],
        },
    }  # fmt: skip
    objects: list[dict[str, Any]] = []
    if check:
        cq["spec"]["admissionChecks"] = [check]
        objects += [
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "MultiKueueConfig", "metadata": {"name": check},
             "spec": {"clusters": list(clusters_ or [])}},
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "AdmissionCheck", "metadata": {"name": check},
             "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                      "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": check}}},
        ]  # fmt: skip
    return [
        *objects,
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "mk-flavor"}},
        cq,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
         "metadata": {"name": "mk-lq", "namespace": namespace}, "spec": {"clusterQueue": "mk-cq"}},
    ]  # fmt: skip


def job(name: str, namespace: str, *, pods: int = 1, run_seconds: int = 5) -> dict[str, Any]:
    """A Job for ``mk-lq`` whose simulated pods run ``run_seconds`` on kwok nodes."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "mk-lq"}},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "template": {
                "metadata": {"annotations": {"pykueue.dev/sim-run-seconds": str(run_seconds)}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "work", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                },
            },
        },
    }


def up(setup: Setup) -> None:
    for cluster in (setup.manager, *setup.workers.values()):
        print(f"bringing up {cluster.name} ...", flush=True)
        cluster.up()
        run_pykueue.start(cluster)
    connect(setup.manager, setup.workers)
    print(f"manager kubeconfig: {setup.manager.kubeconfig}")
    for name, worker in setup.workers.items():
        print(f"{name} kubeconfig: {worker.kubeconfig}")


def down(setup: Setup) -> None:
    for cluster in (*setup.workers.values(), setup.manager):
        if cluster.is_healthy():
            run_pykueue.stop(cluster)
        stopped = cluster.down()
        print(f"{cluster.name}: stopped {', '.join(stopped) or 'nothing'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hack.multikueue", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("up", "down", "status"))
    parser.add_argument("--prefix", default=DEFAULT_PREFIX, help="cluster name prefix (default: mk)")
    args = parser.parse_args(argv)
    setup = clusters(args.prefix)
    try:
        if args.action == "up":
            up(setup)
        elif args.action == "down":
            down(setup)
        else:
            for cluster in (setup.manager, *setup.workers.values()):
                print(f"{cluster.name}: healthy={cluster.is_healthy()} pykueue={run_pykueue.status(cluster)}")
    except LocalClusterError as err:
        print(f"multikueue: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
