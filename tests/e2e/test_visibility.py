"""Kueue's visibility API served by pykueue-controller through the apiserver's aggregation layer.

The controller runs with ``--visibility-addr``; on the local cluster the apiserver reaches it
through an ExternalName Service (``localhost``; the controller is a local process), while the
APIServices and Kueue's ClusterRoles are the ones shipped in manifests/install.yaml. Every request
goes through the apiserver (``kubectl get --raw``), so authentication, the front proxy and
authorization are the real ones; ``--as`` impersonates a user without or with a role.
"""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.helpers.kueue import KueueApi, is_admitted, make_queues, submit
from tests.e2e.helpers.wait import wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "pykueue-system"
SERVICE = "pykueue-visibility-server"
GROUP = "visibility.kueue.x-k8s.io"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _installed(kind: str, name_part: str = "") -> list[dict[str, Any]]:
    """Objects of ``kind`` from the rendered install manifests."""
    docs = yaml.safe_load_all((REPO_ROOT / "manifests" / "install.yaml").read_text())
    return [d for d in docs if d and d.get("kind") == kind and name_part in d["metadata"]["name"]]


def _apply(cluster: Any, objects: list[dict[str, Any]]) -> None:
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))


@pytest.fixture(scope="module")
def visibility(cluster: Any, controller: Any) -> Iterator[Any]:
    """The session controller restarted with the visibility API on, registered with the apiserver."""
    if controller.installed:
        pytest.fail("these tests start the visibility API on a local controller; run them on the local cluster")
    port = _free_port()
    cluster.kubectl("create", "namespace", NAMESPACE, check=False)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVICE, "namespace": NAMESPACE},
        "spec": {"type": "ExternalName", "externalName": "localhost", "ports": [{"port": port, "protocol": "TCP"}]},
    }
    api_services = _installed("APIService")
    assert {a["metadata"]["name"] for a in api_services} == {f"v1beta1.{GROUP}", f"v1beta2.{GROUP}"}
    for api_service in api_services:
        api_service["spec"]["service"].update({"namespace": NAMESPACE, "name": SERVICE, "port": port})
    roles = [r for r in _installed("ClusterRole") if r["metadata"]["name"].startswith("kueue-")]
    _apply(cluster, [service, *api_services, *roles])
    controller.stop()
    controller.extra_args = [
        f"--visibility-addr=127.0.0.1:{port}",
        f"--visibility-service={SERVICE}",
        f"--namespace={NAMESPACE}",
        f"--visibility-secret={SERVICE}-cert",
    ]
    controller.start()
    try:
        yield controller
    finally:
        controller.stop()
        controller.extra_args = []
        cluster.kubectl("delete", "apiservice", f"v1beta1.{GROUP}", f"v1beta2.{GROUP}", "--ignore-not-found", check=False)
        controller.start()


def _raw(cluster: Any, path: str, *, user: str | None = None) -> subprocess.CompletedProcess[str]:
    args = ["get", "--raw", path]
    if user:
        args += ["--as", user]
    return cluster.kubectl(*args, check=False)


def _get(cluster: Any, path: str, user: str | None = None) -> dict[str, Any]:
    result = _raw(cluster, path, user=user)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _cq_view(cluster: Any, cq: str, version: str = "v1beta1", query: str = "") -> list[tuple[str, int, int]]:
    body = _get(cluster, f"/apis/{GROUP}/{version}/clusterqueues/{cq}/pendingworkloads{query}")
    assert body["kind"] == "PendingWorkloadsSummary" and body["apiVersion"] == f"{GROUP}/{version}"
    return [
        (i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in body["items"]
    ]


def _available(cluster: Any, name: str) -> bool:
    result = cluster.kubectl("get", "apiservice", name, "-o", "json", check=False)
    if result.returncode != 0:
        return False
    obj = json.loads(result.stdout)
    return any(c["type"] == "Available" and c["status"] == "True" for c in obj.get("status", {}).get("conditions", []))


def test_api_services_available_with_the_controllers_ca(cluster: Any, visibility: Any) -> None:
    for version in ("v1beta1", "v1beta2"):
        wait_for(lambda v=version: _available(cluster, f"{v}.{GROUP}"), timeout=60, message=f"{version} Available")
        obj = json.loads(cluster.kubectl("get", "apiservice", f"{version}.{GROUP}", "-o", "json").stdout)
        assert obj["spec"].get("caBundle"), "the controller publishes its CA; TLS is verified"
        assert not obj["spec"].get("insecureSkipTLSVerify")
    resources = _get(cluster, f"/apis/{GROUP}/v1beta1")
    assert {r["name"] for r in resources["resources"]} >= {
        "clusterqueues/pendingworkloads",
        "localqueues/pendingworkloads",
    }


def test_positions_follow_admission_priority_and_deletion(
    cluster: Any, visibility: Any, kueue: KueueApi, namespace: str
) -> None:
    wait_for(lambda: _available(cluster, f"v1beta1.{GROUP}"), timeout=60, message="APIService Available")
    _, cq = make_queues(kueue, namespace, cpu="1")
    submit(kueue, namespace, "first")
    wait_for(lambda: is_admitted(kueue.workload(namespace, "first")), timeout=30, message="first admitted")
    for name in ("a", "b", "c"):
        submit(kueue, namespace, name)
    expected = [("a", 0, 0), ("b", 1, 1), ("c", 2, 2)]
    wait_for(lambda: _cq_view(cluster, cq) == expected, timeout=30, message="a, b, c pending in creation order")
    assert _cq_view(cluster, cq, "v1beta2") == expected
    assert _cq_view(cluster, cq, query="?offset=1&limit=1") == [("b", 1, 1)]

    submit(kueue, namespace, "urgent", priority=100)
    wait_for(
        lambda: _cq_view(cluster, cq) == [("urgent", 0, 0), ("a", 1, 1), ("b", 2, 2), ("c", 3, 3)],
        timeout=30,
        message="a higher-priority workload goes to the front",
    )
    item = _get(cluster, f"/apis/{GROUP}/v1beta1/clusterqueues/{cq}/pendingworkloads")["items"][0]
    assert item["priority"] == 100 and item["localQueueName"] == "lq"
    assert item["metadata"]["namespace"] == namespace and item["metadata"]["creationTimestamp"]

    kueue.custom.delete_namespaced_custom_object("kueue.x-k8s.io", "v1beta1", namespace, "workloads", "a")
    wait_for(
        lambda: _cq_view(cluster, cq) == [("urgent", 0, 0), ("b", 1, 1), ("c", 2, 2)],
        timeout=30,
        message="a deleted workload leaves the queue",
    )
    kueue.finish(kueue.workload(namespace, "first"))
    wait_for(lambda: is_admitted(kueue.workload(namespace, "urgent")), timeout=30, message="urgent admitted")
    wait_for(
        lambda: _cq_view(cluster, cq) == [("b", 0, 0), ("c", 1, 1)],
        timeout=30,
        message="an admitted workload leaves the queue and everyone moves up",
    )
    lq_view = _get(cluster, f"/apis/{GROUP}/v1beta1/namespaces/{namespace}/localqueues/lq/pendingworkloads")
    assert [(i["metadata"]["name"], i["positionInLocalQueue"]) for i in lq_view["items"]] == [("b", 0), ("c", 1)]
    missing = _raw(cluster, f"/apis/{GROUP}/v1beta1/clusterqueues/no-such-queue/pendingworkloads")
    assert missing.returncode != 0 and "not found" in missing.stderr.lower(), missing.stderr


def test_rbac_no_role_is_forbidden_batch_user_sees_own_namespace(
    cluster: Any, visibility: Any, kueue: KueueApi, namespace: str
) -> None:
    wait_for(lambda: _available(cluster, f"v1beta1.{GROUP}"), timeout=60, message="APIService Available")
    _, cq = make_queues(kueue, namespace, cpu="0")
    submit(kueue, namespace, "waiting")
    lq_path = f"/apis/{GROUP}/v1beta1/namespaces/{namespace}/localqueues/lq/pendingworkloads"
    cq_path = f"/apis/{GROUP}/v1beta1/clusterqueues/{cq}/pendingworkloads"

    denied = _raw(cluster, lq_path, user="nobody")
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower(), denied.stderr
    assert 'User "nobody" cannot get resource "localqueues/pendingworkloads"' in denied.stderr

    cluster.kubectl("create", "rolebinding", "batch-user", "-n", namespace, "--clusterrole=kueue-batch-user-role",
                    "--user=alice")
    wait_for(
        lambda: [i["metadata"]["name"] for i in _get(cluster, lq_path, user="alice")["items"]] == ["waiting"],
        timeout=30,
        message="a batch user sees their namespace's LocalQueue view",
    )
    cq_denied = _raw(cluster, cq_path, user="alice")
    assert cq_denied.returncode != 0 and "forbidden" in cq_denied.stderr.lower()
    other = _raw(cluster, f"/apis/{GROUP}/v1beta1/namespaces/default/localqueues/lq/pendingworkloads", user="alice")
    assert other.returncode != 0 and "forbidden" in other.stderr.lower()

    cluster.kubectl("create", "clusterrolebinding", f"batch-admin-{namespace}", "--clusterrole=kueue-batch-admin-role",
                    "--user=root-of-queues")
    try:
        wait_for(
            lambda: [i["metadata"]["name"] for i in _get(cluster, cq_path, user="root-of-queues")["items"]] == ["waiting"],
            timeout=30,
            message="a batch admin sees the ClusterQueue view",
        )
    finally:
        cluster.kubectl("delete", "clusterrolebinding", f"batch-admin-{namespace}", check=False)
