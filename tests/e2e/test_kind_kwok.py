"""The in-cluster kwok of the kind path (`hack/e2e-deploy.sh install-kwok`), on a real apiserver.

On the local cluster (no Docker, so no kind) kwok already runs as a process and plays every pod
of every simulated node, so an in-cluster kwok pod could not run for real here: its objects are
judged by a server-side dry run, and its Deployment is applied into the test's namespace, where
the scheduler must refuse every (simulated) node. What the step does after that runs for real:
an `ExistingCluster` on this cluster's kubeconfig creates nodes that a kwok makes Ready (the local
process, which selects nodes by the same annotation), pods run and finish on them, and DaemonSets
are kept off them. Against a kind cluster (PYKUEUE_KUBECONFIG) the same tests check the kwok
that hack/kind-e2e.sh installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from hack.localcluster import ExistingCluster, LocalCluster
from hack.localcluster.incluster_kwok import KWOK_NAME, KWOK_NAMESPACE, LABELS, NOT_SIMULATED
from hack.localcluster.nodes import DEFAULT_NODE_POOLS, SIMULATED_NODE_LABEL
from tests.builders import DaemonSetBuilder, PodBuilder
from tests.e2e.helpers.wait import wait_for

Obj = dict[str, Any]
INSTALL_KWOK = [sys.executable, "-m", "hack.localcluster.install_kwok"]


def install_kwok(*args: str) -> subprocess.CompletedProcess[str]:
    """One step of hack.localcluster.install_kwok, as hack/e2e-deploy.sh install-kwok runs it."""
    return subprocess.run([*INSTALL_KWOK, *args], capture_output=True, text=True, timeout=300, check=False)


def rendered_objects() -> list[Obj]:
    result = install_kwok("manifests")
    assert result.returncode == 0, result.stderr
    return list(yaml.safe_load_all(result.stdout))


def as_existing(cluster: Any) -> ExistingCluster:
    """The cluster under test seen as an external one (what the kind path gets)."""
    return cluster if isinstance(cluster, ExistingCluster) else ExistingCluster(cluster.kubeconfig)


def test_kwok_manifests_are_accepted_by_the_apiserver(cluster: Any) -> None:
    objects = rendered_objects()
    result = cluster.kubectl(
        "apply",
        "--server-side",
        "--dry-run=server",
        "--force-conflicts",
        "--field-manager=kind-kwok-e2e",
        "-f",
        "-",
        input=yaml.safe_dump_all(objects),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == len(objects) and all(line.endswith("(server dry run)") for line in lines), lines
    assert {o["kind"] for o in objects} >= {"Deployment", "ConfigMap", "ClusterRole", "FlowSchema"}


@pytest.fixture
def scratch_kwok(cluster: Any, namespace: str) -> Iterator[list[Obj]]:
    """The kwok ServiceAccount, ConfigMap and Deployment applied for real into the test namespace."""
    objects = [o for o in rendered_objects() if o["kind"] in {"ServiceAccount", "ConfigMap", "Deployment"}]
    for obj in objects:
        obj["metadata"]["namespace"] = namespace
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(objects))
    yield objects  # the namespace fixture deletes them


def test_kwok_is_never_scheduled_onto_a_simulated_node(
    cluster: Any, kube: k8s.ApiClient, request: Any
) -> None:
    core = k8s.CoreV1Api(kube)
    if isinstance(cluster, LocalCluster):
        # Every node here is simulated: the scheduler must find none that fits kwok's affinity.
        namespace = request.getfixturevalue("namespace")
        request.getfixturevalue("scratch_kwok")
        selector = ",".join(f"{k}={v}" for k, v in LABELS.items())

        def unschedulable() -> str:
            [pod] = core.list_namespaced_pod(namespace, label_selector=selector).items
            scheduled = next(c for c in pod.status.conditions or [] if c.type == "PodScheduled")
            assert pod.spec.node_name is None, f"kwok's pod was put on {pod.spec.node_name}"
            return scheduled.reason == "Unschedulable" and scheduled.message

        message = wait_for(
            unschedulable, timeout=60, message="the scheduler refuses kwok every simulated node"
        )
        assert "affinity" in message, message
    else:
        pods = core.list_namespaced_pod(KWOK_NAMESPACE, label_selector=f"app.kubernetes.io/name={KWOK_NAME}")
        assert pods.items, f"no kwok pod in {KWOK_NAMESPACE}: was hack/e2e-deploy.sh install-kwok run?"
        for pod in pods.items:
            node = core.read_node(pod.spec.node_name)
            assert SIMULATED_NODE_LABEL not in (node.metadata.labels or {}), pod.metadata.name


def test_an_existing_cluster_with_kwok_gets_simulated_nodes_that_run_pods(
    cluster: Any, kube: k8s.ApiClient, namespace: str
) -> None:
    existing = as_existing(cluster)
    assert existing.kwok_provider() is not None
    prefix = f"kindpath-{uuid.uuid4().hex[:6]}"
    core = k8s.CoreV1Api(kube)
    try:
        names = existing.create_nodes(prefix, 2, labels={"pykueue.dev/e2e-flavor": prefix}, timeout=90)
        assert names == [f"{prefix}-0", f"{prefix}-1"]
        pod = PodBuilder("on-simulated", namespace).node_selector(**{"pykueue.dev/e2e-flavor": prefix})
        core.create_namespaced_pod(namespace, pod.run_seconds(1).obj())
        finished = wait_for(
            lambda: (
                (p := core.read_namespaced_pod("on-simulated", namespace)).status.phase == "Succeeded" and p
            ),
            timeout=60,
            message="the pod runs and finishes on a simulated node (the sim-run-seconds Stage)",
        )
        assert finished.spec.node_name in names
    finally:
        existing.delete_nodes(prefix)
    wait_for(
        lambda: not core.list_node(label_selector=f"{SIMULATED_NODE_LABEL}={prefix}").items,
        timeout=60,
        message=f"nodes {prefix}-* deleted",
    )


def test_default_nodes_step_leaves_the_default_pools_ready(cluster: Any, kube: k8s.ApiClient) -> None:
    result = install_kwok("default-nodes", "--kubeconfig", cluster.kubeconfig)
    assert result.returncode == 0, result.stderr
    core = k8s.CoreV1Api(kube)
    for prefix, count, labels in DEFAULT_NODE_POOLS:
        nodes = core.list_node(label_selector=f"{SIMULATED_NODE_LABEL}={prefix}").items
        assert len(nodes) == count, prefix
        for node in nodes:
            assert labels.items() <= (node.metadata.labels or {}).items()
            assert any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)


def test_patch_daemonsets_keeps_node_agents_off_simulated_nodes(
    cluster: Any, kube: k8s.ApiClient, namespace: str
) -> None:
    apps = k8s.AppsV1Api(kube)
    agent = DaemonSetBuilder("agent", namespace).tolerate_everything().obj()
    apps.create_namespaced_daemon_set(namespace, agent)
    # Like kindnet: it tolerates every taint, so every simulated node is asked to run it.
    wait_for(
        lambda: (
            (apps.read_namespaced_daemon_set("agent", namespace).status.desired_number_scheduled or 0) > 0
        ),
        timeout=60,
        message="the DaemonSet wants pods on the simulated nodes before the patch",
    )
    result = install_kwok("patch-daemonsets", "--kubeconfig", cluster.kubeconfig)
    assert result.returncode == 0, result.stderr
    assert f"{namespace}/agent" in result.stdout
    stored = json.loads(cluster.kubectl("-n", namespace, "get", "daemonset", "agent", "-o", "json").stdout)
    affinity = stored["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert all(NOT_SIMULATED in term["matchExpressions"] for term in terms)
    core = k8s.CoreV1Api(kube)

    def off_simulated_nodes() -> bool:
        status = apps.read_namespaced_daemon_set("agent", namespace).status
        pods = [
            p
            for p in core.list_namespaced_pod(namespace, label_selector="app=agent").items
            if p.spec.node_name
        ]
        simulated = {n.metadata.name for n in core.list_node(label_selector=SIMULATED_NODE_LABEL).items}
        # kind's workers and control plane are tainted, so this agent has nowhere else to go.
        return (status.desired_number_scheduled or 0) == 0 and not any(
            p.spec.node_name in simulated for p in pods
        )

    wait_for(off_simulated_nodes, timeout=90, message="no agent pod on a simulated node after the patch")
    again = install_kwok("patch-daemonsets", "--kubeconfig", cluster.kubeconfig)
    assert again.returncode == 0 and f"{namespace}/agent" not in again.stdout, "the patch is applied once"
