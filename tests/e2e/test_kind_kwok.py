"""The in-cluster kwok of the kind path (`hack/e2e-deploy.sh install-kwok`), on a real apiserver.

On the local cluster (no Docker, so no kind) kwok already runs as a process and plays every pod
of every simulated node, so an in-cluster kwok pod could not run for real here: its objects are
judged by a server-side dry run, its Deployment is applied into the test's namespace, where the
scheduler must refuse every (simulated) node, and its container's command line and Stage file are
run by the pinned kwok binary as a local process. What the step does after that runs for real:
an `ExistingCluster` on this cluster's kubeconfig creates nodes that a kwok makes Ready (the local
process, which selects nodes by the same annotation), pods run and finish on them, and DaemonSets
are kept off them. Against a kind cluster (PYKUEUE_KUBECONFIG) the same tests check the kwok
that hack/kind-e2e.sh installed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from hack.localcluster import ExistingCluster, LocalCluster
from hack.localcluster.binaries import ensure_binaries
from hack.localcluster.components import KWOK_NODE_ANNOTATION
from hack.localcluster.incluster_kwok import KWOK_NAME, KWOK_NAMESPACE, LABELS, NOT_SIMULATED
from hack.localcluster.nodes import DEFAULT_NODE_POOLS, SIMULATED_NODE_LABEL
from hack.localcluster.processes import stop_child
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
        nodes = core.list_node().items
        simulated = {n.metadata.name for n in nodes if SIMULATED_NODE_LABEL in (n.metadata.labels or {})}
        pods = core.list_namespaced_pod(namespace, label_selector="app=agent").items
        # It tolerates every taint, so it still belongs on each real node (none on the local cluster,
        # the control plane and workers on kind), and on no simulated one.
        return (status.desired_number_scheduled or 0) == len(nodes) - len(simulated) and not any(
            p.spec.node_name in simulated for p in pods
        )

    wait_for(off_simulated_nodes, timeout=90, message="no agent pod on a simulated node after the patch")
    again = install_kwok("patch-daemonsets", "--kubeconfig", cluster.kubeconfig)
    assert again.returncode == 0 and f"{namespace}/agent" not in again.stdout, "the patch is applied once"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def local_kwok_command(objects: list[Obj], workdir: Path, kubeconfig: str, selector_value: str) -> list[str]:
    """The in-cluster kwok container's command line, adapted to run as a local process.

    Only what a pod provides differently changes: the kubeconfig (in-cluster credentials), the
    mounted Stage file, the pod IP and the listen address; and the annotation value it selects
    nodes by, so that it never plays a node the cluster's own kwok process plays.
    """
    [config_map] = [o for o in objects if o["kind"] == "ConfigMap"]
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    port = _free_port()
    command = [str(ensure_binaries(build=False)["kwok"]), f"--kubeconfig={kubeconfig}"]
    for arg in container["args"]:
        flag, _, value = arg.partition("=")
        if flag == "--config":
            stages = workdir / Path(value).name
            stages.write_text(config_map["data"][Path(value).name])
            value = str(stages)
        elif flag == "--manage-nodes-with-annotation-selector":
            assert value == f"{KWOK_NODE_ANNOTATION}=fake"
            value = f"{KWOK_NODE_ANNOTATION}={selector_value}"
        elif flag == "--node-ip":
            value = "10.0.0.5"
        elif flag == "--server-address":
            assert value.endswith(f":{container['readinessProbe']['httpGet']['port']}"), (
                "probes hit the server"
            )
            value = f"127.0.0.1:{port}"
        command.append(f"{flag}={value}")
    return command


@pytest.mark.needs_local_cluster
def test_the_kwok_containers_command_line_and_stages_play_nodes_and_pods(
    cluster: Any, kube: k8s.ApiClient, namespace: str, tmp_path: Path
) -> None:
    """Needs the local cluster's pinned kwok binary (built with its control plane); against kind,
    the kwok pod that install-kwok deployed is what the other tests of this module exercise."""
    objects = rendered_objects()
    selector_value = f"incluster-{uuid.uuid4().hex[:6]}"
    command = local_kwok_command(objects, tmp_path, cluster.kubeconfig, selector_value)
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    probe_path = deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["path"]
    address = next(arg for arg in command if arg.startswith("--server-address=")).partition("=")[2]
    # The container's HOME is an emptyDir on a read-only root: kwok must not need to write there.
    env = {**os.environ, "HOME": str(tmp_path / "no-such-home")}
    log_path = tmp_path / "kwok.log"
    core = k8s.CoreV1Api(kube)
    node_name = f"{selector_value}-0"
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            command, stdout=log_file, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:

        def healthy() -> bool:
            assert process.poll() is None, f"kwok exited: {log_path.read_text()[-2000:]}"
            with urllib.request.urlopen(f"http://{address}{probe_path}", timeout=2) as answer:
                return answer.status == 200

        wait_for(healthy, timeout=30, message="the kwok process answers its probe path")
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": node_name,
                "labels": {SIMULATED_NODE_LABEL: selector_value, "pykueue.dev/e2e-flavor": selector_value},
                "annotations": {KWOK_NODE_ANNOTATION: selector_value},
            },
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
        }
        cluster.kubectl("apply", "-f", "-", input=json.dumps(node))
        wait_for(
            lambda: any(
                c.type == "Ready" and c.status == "True" for c in core.read_node(node_name).status.conditions
            ),
            timeout=60,
            message=f"node {node_name} Ready, played by the in-cluster kwok's command line",
        )
        pod = PodBuilder("played", namespace).node_selector(**{"pykueue.dev/e2e-flavor": selector_value})
        core.create_namespaced_pod(namespace, pod.run_seconds(1).obj())
        wait_for(
            lambda: core.read_namespaced_pod("played", namespace).status.phase == "Succeeded",
            timeout=60,
            message="its pod runs and finishes after its sim-run-seconds",
        )
        assert core.read_namespaced_pod("played", namespace).spec.node_name == node_name
    finally:
        stop_child(process, group=True)
        cluster.kubectl("delete", "node", node_name, "--ignore-not-found", "--wait=false", check=False)
