"""The part of ``make demo`` that shows pykueue at work on real Jobs.

Two steps for :data:`hack.demo.STEPS`:

* :func:`start_pykueue` runs the webhook and the controller next to the cluster
  (:mod:`hack.run_pykueue`);
* :func:`queue_jobs` creates two ResourceFlavors matching the simulated ``on-demand`` and
  ``spot`` nodes, a ClusterQueue with room for two Jobs at a time, a LocalQueue, submits more
  Jobs than fit, and prints — each time something changes — which Jobs are pending (and have no
  pods: delayed pod creation, docs/design/jobs.md), which are admitted and on which nodes their pods run,
  and which have finished, until all are done.
"""

from __future__ import annotations

import json
import time
from typing import Any

from hack import run_pykueue
from hack.localcluster import LocalCluster

NAMESPACE = "demo"
CLUSTER_QUEUE = "demo-cq"
JOBS = 6
PODS_PER_JOB = 2
RUN_SECONDS = 4
TIMEOUT_SECONDS = 180


def _section(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 76 - len(title)), flush=True)


def _apply(cluster: LocalCluster, *objects: dict[str, Any]) -> None:
    cluster.kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    )


def _get(cluster: LocalCluster, *args: str) -> list[dict[str, Any]]:
    result = cluster.kubectl("get", *args, "-o", "json", check=False)
    if result.returncode != 0:
        return []
    return list(json.loads(result.stdout).get("items") or [])


def start_pykueue(cluster: LocalCluster) -> None:
    _section("pykueue: webhook and controller")
    run_pykueue.start(cluster)
    for name, pid in run_pykueue.status(cluster).items():
        print(f"{name:<10} running, pid {pid}")


def _queues() -> list[dict[str, Any]]:
    flavors = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ResourceFlavor",
            "metadata": {"name": name},
            "spec": {"nodeLabels": {"instance-type": name}},
        }
        for name in ("on-demand", "spot")
    ]
    cluster_queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": CLUSTER_QUEUE},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": "2"}]},
                        {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "2"}]},
                    ],
                }
            ],
        },
    }
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    local_queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": "team", "namespace": NAMESPACE},
        "spec": {"clusterQueue": CLUSTER_QUEUE},
    }
    return [*flavors, cluster_queue, namespace, local_queue]


def _job(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "generateName": f"job-{index}-",
            "namespace": NAMESPACE,
            "labels": {"kueue.x-k8s.io/queue-name": "team", "pykueue.dev/demo": "true"},
        },
        "spec": {
            "parallelism": PODS_PER_JOB,
            "completions": PODS_PER_JOB,
            "template": {
                "metadata": {"annotations": {"pykueue.dev/sim-run-seconds": str(RUN_SECONDS)}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "work", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                },
            },
        },
    }


def _condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next(
        (c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == type_), None
    )


def _describe(job: dict[str, Any], workloads: dict[str, dict[str, Any]], pods: list[dict[str, Any]]) -> str:
    """One line for a Job: its state, its Workload's view and where its pods are."""
    uid = job["metadata"]["uid"]
    mine = [
        p for p in pods if p["metadata"].get("labels", {}).get("batch.kubernetes.io/controller-uid") == uid
    ]
    workload = workloads.get(uid)
    complete = _condition(job, "Complete")
    if complete and complete.get("status") == "True":
        return "finished        quota released"
    if workload is None:
        return "submitted       (no Workload yet)"
    admission = (workload.get("status") or {}).get("admission")
    if admission and job["spec"].get("suspend"):
        return f"ADMITTED        starting (quota reserved in {admission.get('clusterQueue')})"
    if admission:
        flavors = sorted(
            {f for a in admission.get("podSetAssignments") or [] for f in (a.get("flavors") or {}).values()}
        )
        nodes = sorted({p["spec"].get("nodeName") or "(scheduling)" for p in mine})
        return f"ADMITTED        flavor {', '.join(flavors)}; pods on {', '.join(nodes) or '(creating)'}"
    reserved = _condition(workload, "QuotaReserved") or {}
    reason = reserved.get("reason") or "Pending"
    return f"pending         {len(mine)} pods; {reason}"


def queue_jobs(cluster: LocalCluster) -> None:
    _section("Queues: two flavors, a ClusterQueue with 2 CPUs of each, a LocalQueue")
    _apply(cluster, *_queues())
    for args in (
        ("resourceflavors", "on-demand", "spot"),
        ("clusterqueue", CLUSTER_QUEUE),
        ("localqueue", "-n", NAMESPACE),
    ):
        print(f"$ kubectl get {' '.join(args)}")
        print(cluster.kubectl("get", *args).stdout.rstrip())

    _section(f"Submitting {JOBS} Jobs of {PODS_PER_JOB} x 1 CPU ({RUN_SECONDS}s each): only 2 fit at a time")
    cluster.kubectl(
        "delete", "jobs", "-n", NAMESPACE, "-l", "pykueue.dev/demo=true", "--ignore-not-found", check=False
    )
    for index in range(1, JOBS + 1):
        result = cluster.kubectl(
            "create", "-o", "jsonpath={.metadata.name}", "-f", "-", input=json.dumps(_job(index))
        )
        print(f"created job {result.stdout.strip()} (suspended by the webhook until admitted)")

    _section("What happens (printed when something changes)")
    started = time.monotonic()
    last = ""
    most_running = 0
    while time.monotonic() - started < TIMEOUT_SECONDS:
        # Pods first, Jobs last: a pod listed is never newer than the Job state shown beside it,
        # so a snapshot cannot show pods next to a Job it still calls pending.
        pods = _get(cluster, "pods", "-n", NAMESPACE)
        workloads = {
            w["metadata"].get("labels", {}).get("kueue.x-k8s.io/job-uid", ""): w
            for w in _get(cluster, "workloads", "-n", NAMESPACE)
        }
        jobs = sorted(
            _get(cluster, "jobs", "-n", NAMESPACE, "-l", "pykueue.dev/demo=true"),
            key=lambda j: j["metadata"]["name"],
        )
        lines = [f"  {j['metadata']['name']:<14} {_describe(j, workloads, pods)}" for j in jobs]
        most_running = max(most_running, sum("ADMITTED" in line for line in lines))
        snapshot = "\n".join(lines)
        if snapshot != last:
            print(f"[t+{time.monotonic() - started:5.1f}s]\n{snapshot}", flush=True)
            last = snapshot
        if jobs and all("finished" in line for line in lines):
            print(
                f"\nAll {len(jobs)} Jobs finished in {time.monotonic() - started:.0f}s; "
                f"at most {most_running} were admitted at the same time."
            )
            break
        time.sleep(1.0)
    else:
        print(f"\n(stopped watching after {TIMEOUT_SECONDS}s; see `kubectl get workloads -n {NAMESPACE}`)")
    print(f"$ kubectl get workloads -n {NAMESPACE}")
    print(cluster.kubectl("get", "workloads", "-n", NAMESPACE).stdout.rstrip())
