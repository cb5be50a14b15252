"""On a kind cluster: pykueue's own pods and a queued Job's pods run as real containers.

hack/kind-e2e.sh runs these (offline mode) after installing the chart and before tests/e2e,
against the cluster in $PYKUEUE_KUBECONFIG; they need kind's real kubelets (the local cluster's
nodes are kwok's, which never run a container), so they are not part of tests/e2e.

- The chart's webhook and controller pods are Ready under the kubelet's own checks of the chart's
  security settings (runAsNonRoot verifies the image's numeric user before starting it).
- A Job queued through a LocalQueue is suspended by the webhook, admitted by the controller onto
  a flavor whose nodeLabels and tolerations place it on the kind workers, and its pods run the
  static busybox image built here to completion; the Workload ends Finished.
"""

from __future__ import annotations

import json
from typing import Any

from tests.kind.kube import BUSYBOX, NAMESPACE, SIMULATED, get, kubectl, wait_for


def test_the_charts_pods_run_non_root_on_a_read_only_root() -> None:
    # Pods on their way out (a scale-down by another test) are not judged.
    pods = [pod for pod in get("pods", "-n", NAMESPACE)["items"] if not pod["metadata"].get("deletionTimestamp")]
    programs = {pod["metadata"]["labels"].get("app.kubernetes.io/component") for pod in pods}
    assert {"webhook", "controller"} <= programs, programs
    for pod in pods:
        name = pod["metadata"]["name"]
        ready = [c for c in pod["status"].get("conditions", []) if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", f"{name} is not Ready"
        assert pod["spec"]["securityContext"].get("runAsNonRoot") is True, name
        for container in pod["spec"]["containers"]:
            assert container["securityContext"]["readOnlyRootFilesystem"] is True, (name, container["name"])
        node = get("node", pod["spec"]["nodeName"])
        assert SIMULATED not in node["metadata"].get("labels", {}), f"{name} runs on a simulated node"


def test_a_queued_job_runs_real_containers_to_completion_on_the_kind_workers(queue: tuple[str, str]) -> None:
    ns, cq = queue
    job = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "hello", "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "main"}},
        "spec": {
            "parallelism": 2, "completions": 2, "backoffLimit": 0,
            "template": {"spec": {
                "restartPolicy": "Never",
                "securityContext": {"runAsNonRoot": True},
                "containers": [{
                    "name": "hello", "image": BUSYBOX, "imagePullPolicy": "Never",
                    "command": ["sh", "-c", "echo hello from $(hostname) as $(id -u); sleep 2"],
                    "resources": {"requests": {"cpu": "250m", "memory": "32Mi"}},
                    "securityContext": {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                                        "capabilities": {"drop": ["ALL"]}},
                }],
            }},
        },
    }  # fmt: skip
    created = json.loads(kubectl("create", "-o", "json", "-f", "-", input=json.dumps(job)))
    assert created["spec"]["suspend"] is True, "the webhook suspends a queued Job at creation"

    def succeeded() -> bool:
        status = get("job", "hello", "-n", ns)["status"]
        assert not status.get("failed"), status
        return bool(status.get("succeeded") == 2)

    wait_for(succeeded, 240, "the Job's two pods did not both succeed")
    pods = get("pods", "-n", ns, "-l", "job-name=hello")["items"]
    assert len(pods) == 2
    workers = {
        node["metadata"]["name"]
        for node in get("nodes", "-l", "pykueue.dev/e2e-role=system")["items"]
        if SIMULATED not in node["metadata"].get("labels", {})
    }
    for pod in pods:
        assert pod["spec"]["nodeName"] in workers, (pod["spec"]["nodeName"], workers)
        assert pod["status"]["phase"] == "Succeeded"
        assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
        log = kubectl("logs", "-n", ns, pod["metadata"]["name"])
        assert log.strip() == f"hello from {pod['metadata']['name']} as 65532", log

    def finished() -> dict[str, Any] | None:
        (workload,) = get("workloads", "-n", ns)["items"]
        conditions = {c["type"]: c for c in workload["status"].get("conditions", [])}
        return workload if conditions.get("Finished", {}).get("status") == "True" else None

    workload = wait_for(finished, 60, "the Workload never became Finished")
    assert workload["status"]["admission"]["clusterQueue"] == cq
