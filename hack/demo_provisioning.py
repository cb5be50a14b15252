"""The second act of ``make demo``: a Job waits for capacity from the (simulated) cluster-autoscaler.

:func:`provision_job`, a step of :data:`hack.demo.STEPS`, sets up a ProvisioningRequest admission
check (``docs/design/provisioning.md``): a ProvisioningRequestConfig for
``best-effort-atomic-scale-up.autoscaling.x-k8s.io``, an AdmissionCheck, a ResourceFlavor whose
nodes do not exist yet, and a ClusterQueue requiring the check. It starts the simulated autoscaler
(:mod:`hack.autoscaler_sim`, test infrastructure) in a thread, submits one Job, and prints each
change: the check's state and message (the autoscaler's ETA), the ProvisioningRequest's
conditions, the nodes that appear, where the pods run — until the Job has finished.

Run alone with ``python -m hack.demo_provisioning`` once ``make demo`` (or ``hack.localcluster up``
and ``hack.run_pykueue``) has the cluster and pykueue running.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from hack.autoscaler_sim import NODE_GROUP_LABEL, AutoscalerSim, NodeGroup
from hack.localcluster import LocalCluster, default_cluster_name
from pykueue.kube.client import KubeClient

NAMESPACE = "demo-provisioning"
POOL_LABEL = "pykueue.dev/demo-pool"
CHECK = "demo-capacity"
STEP_WITHOUT_CHANGE_SECONDS = 2.0  # the autoscaler's pace while nothing visible changes
TIMEOUT_SECONDS = 120
API = "kueue.x-k8s.io/v1beta1"


def _section(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 76 - len(title)), flush=True)


def _objects() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": API,
            "kind": "ProvisioningRequestConfig",
            "metadata": {"name": "demo-atomic"},
            "spec": {
                "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
                # Read by the simulated autoscaler: two ETA messages before the nodes come.
                "parameters": {"SimBehavior": "eta=2"},
                "podSetUpdates": {
                    "nodeSelector": [{"key": NODE_GROUP_LABEL, "valueFromProvisioningClassDetail": "NodeGroup"}]
                },
            },
        },
        {
            "apiVersion": API,
            "kind": "AdmissionCheck",
            "metadata": {"name": CHECK},
            "spec": {
                "controllerName": "kueue.x-k8s.io/provisioning-request",
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "demo-atomic"},
            },
        },
        {
            "apiVersion": API,
            "kind": "ResourceFlavor",
            "metadata": {"name": "autoscaled"},
            "spec": {"nodeLabels": {POOL_LABEL: "autoscaled"}},
        },
        {
            "apiVersion": API,
            "kind": "ClusterQueue",
            "metadata": {"name": "demo-autoscaled-cq"},
            "spec": {
                "namespaceSelector": {},
                "admissionChecks": [CHECK],
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "autoscaled", "resources": [{"name": "cpu", "nominalQuota": "4"}]}],
                    }
                ],
            },
        },
        {
            "apiVersion": API,
            "kind": "LocalQueue",
            "metadata": {"name": "autoscaled", "namespace": NAMESPACE},
            "spec": {"clusterQueue": "demo-autoscaled-cq"},
        },
    ]


def _job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "generateName": "train-",
            "namespace": NAMESPACE,
            "labels": {"kueue.x-k8s.io/queue-name": "autoscaled", "pykueue.dev/demo": "true"},
        },
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "template": {
                "metadata": {"annotations": {"pykueue.dev/sim-run-seconds": "3"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "work", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                },
            },
        },
    }


def _get(cluster: LocalCluster, *args: str) -> list[dict[str, Any]]:
    result = cluster.kubectl("get", *args, "-o", "json", check=False)
    return list(json.loads(result.stdout).get("items") or []) if result.returncode == 0 else []


def _conditions(obj: dict[str, Any]) -> str:
    conds = (obj.get("status") or {}).get("conditions") or []
    return ", ".join(f"{c['type']}={c['status']}" for c in conds) or "(no conditions yet)"


def _snapshot(cluster: LocalCluster) -> tuple[str, bool]:
    lines = []
    for wl in _get(cluster, "workloads", "-n", NAMESPACE):
        for state in (wl.get("status") or {}).get("admissionChecks") or []:
            lines.append(f"  check {state['name']}: {state['state']}  {state.get('message') or ''}".rstrip())
    for request in _get(cluster, "provisioningrequests", "-n", NAMESPACE):
        lines.append(f"  ProvisioningRequest {request['metadata']['name']}: {_conditions(request)}")
    nodes = sorted(n["metadata"]["name"] for n in _get(cluster, "nodes", "-l", f"{POOL_LABEL}=autoscaled"))
    lines.append(f"  autoscaled nodes: {', '.join(nodes) or '(none)'}")
    pods = _get(cluster, "pods", "-n", NAMESPACE)
    placed = sorted(f"{p['metadata']['name']}@{p['spec'].get('nodeName') or '-'}" for p in pods)
    lines.append(f"  pods: {', '.join(placed) or '(none: the Job is suspended)'}")
    jobs = _get(cluster, "jobs", "-n", NAMESPACE)
    done = bool(jobs) and all(
        any(c.get("type") == "Complete" and c.get("status") == "True" for c in (j.get("status") or {}).get("conditions") or [])
        for j in jobs
    )
    return "\n".join(lines), done


def provision_job(cluster: LocalCluster) -> None:
    _section("Provisioning: a Job waits until the (simulated) cluster-autoscaler has its nodes")
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": _objects()}))
    cluster.kubectl("delete", "jobs", "-n", NAMESPACE, "--all", "--ignore-not-found", check=False)
    sim = AutoscalerSim(
        KubeClient.from_config(cluster.kubeconfig, user_agent="autoscaler-sim"),
        [NodeGroup("autoscaled-pool", labels={POOL_LABEL: "autoscaled"}, capacity={"cpu": "2", "memory": "4Gi", "pods": "10"})],
    )
    # The demo steps the simulated autoscaler itself, once the previous step's effect was shown
    # (or after a while without change), so every stage — the ETAs included — is on screen however
    # fast or slow the machine is.
    try:
        created = cluster.kubectl("create", "-o", "jsonpath={.metadata.name}", "-f", "-", input=json.dumps(_job()))
        print(f"created job {created.stdout.strip()} in queue 'autoscaled' (its ClusterQueue requires {CHECK})")
        started = time.monotonic()
        last = ""
        last_step = started
        while time.monotonic() - started < TIMEOUT_SECONDS:
            snapshot, done = _snapshot(cluster)
            changed = snapshot != last
            if changed:
                print(f"[t+{time.monotonic() - started:5.1f}s]\n{snapshot}", flush=True)
                last = snapshot
            if done:
                print(f"\nThe Job finished on the autoscaled nodes in {time.monotonic() - started:.0f}s.")
                break
            if changed or time.monotonic() - last_step > STEP_WITHOUT_CHANGE_SECONDS:
                sim.step()
                last_step = time.monotonic()
            time.sleep(0.5)
        else:
            print(f"\n(stopped watching after {TIMEOUT_SECONDS}s)")
        # Finished: the controller deletes the request, and the autoscaler scales its nodes down.
        deadline = time.monotonic() + 15
        while _get(cluster, "provisioningrequests", "-n", NAMESPACE) and time.monotonic() < deadline:
            time.sleep(0.5)
        sim.step()
        print(_snapshot(cluster)[0])
    finally:
        sim.stop()
    print(f"$ kubectl get events -n {NAMESPACE} --field-selector involvedObject.kind=Workload")
    print(cluster.kubectl("get", "events", "-n", NAMESPACE, "--field-selector", "involvedObject.kind=Workload",
                          check=False).stdout.rstrip())


def main() -> int:
    provision_job(LocalCluster(default_cluster_name()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
