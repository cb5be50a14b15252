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
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

KUBECONFIG = os.environ.get("PYKUEUE_KUBECONFIG", "")
NAMESPACE = os.environ.get("NAMESPACE", "pykueue-system")
BUSYBOX = os.environ.get("BUSYBOX_IMAGE", "pykueue-local/busybox:static")
SYSTEM_TAINT = "pykueue.dev/e2e-system"  # hack/kind-config.yaml's workers
SIMULATED = "pykueue.dev/simulated-node"  # the label of kwok's nodes (hack/localcluster/nodes.py)


def kubectl_binary() -> str:
    pinned = Path(os.environ.get("PYKUEUE_CACHE", Path.home() / ".cache" / "pykueue")) / "bin/current/kubectl"
    return str(pinned) if pinned.exists() else "kubectl"


def kubectl(*args: str, input: str | None = None, check: bool = True) -> str:
    result = subprocess.run(
        [kubectl_binary(), "--kubeconfig", KUBECONFIG, *args],
        capture_output=True, text=True, input=input, timeout=120, check=False,
    )  # fmt: skip
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def get(*args: str) -> Any:
    return json.loads(kubectl("get", "-o", "json", *args))


def wait_for(predicate: Any, timeout: float, message: str) -> Any:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except AssertionError as err:
            last = err
        if last and not isinstance(last, AssertionError):
            return last
        time.sleep(1)
    raise AssertionError(f"{message} (after {timeout:.0f}s; last: {last!r})")


@pytest.fixture(scope="module", autouse=True)
def cluster() -> None:
    if not KUBECONFIG:
        pytest.fail("PYKUEUE_KUBECONFIG must point at the kind cluster (hack/kind-e2e.sh sets it)", pytrace=False)


def test_the_charts_pods_run_non_root_on_a_read_only_root() -> None:
    pods = get("pods", "-n", NAMESPACE)["items"]
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


@pytest.fixture
def queue() -> Iterator[tuple[str, str]]:
    suffix = uuid.uuid4().hex[:6]
    ns, flavor, cq = f"kind-real-{suffix}", f"kind-workers-{suffix}", f"kind-real-{suffix}"
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": flavor},
            # The kind workers (not the simulated pools): their label, and their taint tolerated.
            "spec": {"nodeLabels": {"pykueue.dev/e2e-role": "system"},
                     "tolerations": [{"key": SYSTEM_TAINT, "operator": "Exists", "effect": "NoSchedule"}]},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": cq},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "1"},
                                               {"name": "memory", "nominalQuota": "256Mi"}]}]}]},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
            "metadata": {"name": "main", "namespace": ns}, "spec": {"clusterQueue": cq},
        },
    ]  # fmt: skip
    for obj in objects:
        kubectl("create", "-f", "-", input=json.dumps(obj))
    try:
        yield ns, cq
    finally:
        kubectl("delete", "namespace", ns, "--wait=true", "--timeout=90s", check=False)
        kubectl("delete", "clusterqueue", cq, "--ignore-not-found", "--timeout=60s", check=False)
        kubectl("delete", "resourceflavor", flavor, "--ignore-not-found", "--timeout=60s", check=False)


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
