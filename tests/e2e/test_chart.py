"""The Helm chart against a real apiserver: its objects are accepted, its RBAC holds.

Each test renders the chart into the test's own namespace under its own release name, so the
cluster-scoped objects (ClusterRoles, bindings, webhook configurations) never collide with the
pykueue the suite itself runs. Webhook configurations are only ever dry-run here: a real one
pointing at a Service with no process behind it would fail every Job create in the cluster.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from hack import helm
from tests.e2e.helpers.wait import wait_for

Obj = dict[str, Any]

# Kinds whose CRDs belong to other projects (cert-manager, the Prometheus operator); the cluster
# under test does not have them, so the apiserver cannot judge those objects.
FOREIGN_KINDS = {"Certificate", "Issuer", "ServiceMonitor"}
RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Secret"}


def to_yaml(objects: list[Obj]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False)


def release_name() -> str:
    return f"chart-{uuid.uuid4().hex[:6]}"


def server_dry_run(cluster: Any, objects: list[Obj]) -> list[str]:
    """Server-side apply every object with dryRun=All; returns kubectl's per-object lines."""
    result = cluster.kubectl("apply", "--server-side", "--dry-run=server", "--field-manager=chart-e2e",
                             "-f", "-", input=to_yaml(objects), check=False)
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("values", [{}, {"certManager.enabled": "true", "metrics.serviceMonitor.enabled": "true"}],
                         ids=["default", "cert-manager"])
def test_every_rendered_object_is_accepted_by_the_apiserver(cluster: Any, namespace: str,
                                                            values: dict[str, str]) -> None:
    objects = helm.render_objects(release=release_name(), namespace=namespace, set_values=values,
                                  include_crds=True)
    judged = [o for o in objects if o["kind"] not in FOREIGN_KINDS]
    skipped = {o["kind"] for o in objects} - {o["kind"] for o in judged}
    assert skipped == (FOREIGN_KINDS if values else set())
    lines = server_dry_run(cluster, judged)
    assert len(lines) == len(judged), lines
    assert all(line.endswith("(server dry run)") for line in lines), lines
    crds = [o for o in judged if o["kind"] == "CustomResourceDefinition"]
    assert len(crds) >= 10


def test_invalid_rendering_is_refused_by_the_apiserver(cluster: Any, namespace: str) -> None:
    """The dry-run above can fail: a Deployment whose selector misses its pods is rejected."""
    objects = helm.render_objects(release=release_name(), namespace=namespace)
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    deployment["spec"]["selector"]["matchLabels"] = {"app.kubernetes.io/name": "something-else"}
    result = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-",
                             input=to_yaml([deployment]), check=False)
    assert result.returncode != 0
    assert "selector" in result.stderr


# --- RBAC ----------------------------------------------------------------------------------------


class Identity:
    """kubectl as one of the chart's service accounts (impersonated by the admin kubeconfig)."""

    def __init__(self, cluster: Any, namespace: str, service_account: str) -> None:
        self.cluster = cluster
        self.user = f"system:serviceaccount:{namespace}:{service_account}"

    def run(self, *args: str, input: str | None = None) -> Any:
        return self.cluster.kubectl(f"--as={self.user}", *args, input=input, check=False)

    def can(self, verb: str, resource: str, *, namespace: str | None = None, subresource: str | None = None) -> bool:
        args = ["auth", "can-i", verb, resource]
        args += ["-n", namespace] if namespace else ["--all-namespaces"]
        if subresource:
            args.append(f"--subresource={subresource}")
        result = self.run(*args)
        answer = result.stdout.strip()
        assert answer in ("yes", "no"), f"kubectl auth can-i: {result.stdout}{result.stderr}"
        return answer == "yes"


@pytest.fixture
def installed_rbac(cluster: Any, namespace: str) -> Iterator[tuple[str, list[Obj]]]:
    """The chart's service accounts, roles, bindings and Secret applied for real; removed after."""
    release = release_name()
    objects = [o for o in helm.render_objects(release=release, namespace=namespace) if o["kind"] in RBAC_KINDS]
    cluster.kubectl("apply", "--server-side", "--field-manager=chart-e2e", "-f", "-", input=to_yaml(objects))
    try:
        yield f"{release}-pykueue", objects
    finally:
        for obj in objects:
            if obj["kind"] in {"ClusterRole", "ClusterRoleBinding"}:
                cluster.kubectl("delete", obj["kind"].lower(), obj["metadata"]["name"], "--ignore-not-found",
                                check=False)


def test_controller_service_account_can_do_its_job_and_no_more(cluster: Any, namespace: str,
                                                                installed_rbac: tuple[str, list[Obj]]) -> None:
    fullname, _ = installed_rbac
    controller = Identity(cluster, namespace, f"{fullname}-controller")
    # RBAC reaches the authorizer through an informer: wait for the first grant to be visible.
    wait_for(lambda: controller.can("list", "workloads.kueue.x-k8s.io"), timeout=30,
             message="controller RBAC to take effect")

    allowed = [
        ("patch", "workloads.kueue.x-k8s.io", None, "status"),
        ("create", "workloads.kueue.x-k8s.io", None, None),
        ("patch", "clusterqueues.kueue.x-k8s.io", None, "status"),
        ("patch", "jobs.batch", None, None),
        ("patch", "jobs.batch", None, "status"),
        ("delete", "pods", None, None),
        ("watch", "pods", None, None),
        ("create", "events", None, None),
        ("list", "nodes", None, None),
        ("watch", "namespaces", None, None),
        ("list", "priorityclasses.scheduling.k8s.io", None, None),
        ("create", "podtemplates", None, None),
        ("create", "provisioningrequests.autoscaling.x-k8s.io", None, None),
        ("update", "leases.coordination.k8s.io", namespace, None),
    ]
    for verb, resource, ns, sub in allowed:
        assert controller.can(verb, resource, namespace=ns, subresource=sub), (verb, resource, ns, sub)
    refused = [
        ("get", "secrets", None),
        ("list", "secrets", "default"),
        ("create", "jobs.batch", None),
        ("create", "pods", None),
        ("patch", "nodes", None),
        ("create", "leases.coordination.k8s.io", "default"),
        ("patch", "mutatingwebhookconfigurations.admissionregistration.k8s.io", None),
        ("create", "clusterroles.rbac.authorization.k8s.io", None),
    ]
    for verb, resource, ns in refused:
        assert not controller.can(verb, resource, namespace=ns), (verb, resource, ns)

    # The verbs really work, and the refusals really are refusals, through the API itself.
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "chart-e2e-leader", "namespace": namespace},
             "spec": {"holderIdentity": "chart-e2e", "leaseDurationSeconds": 15}}
    created = controller.run("create", "-f", "-", "-o", "json", input=json.dumps(lease))
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["spec"]["holderIdentity"] == "chart-e2e"
    listed = controller.run("get", "pods", "--all-namespaces", "-o", "name")
    assert listed.returncode == 0, listed.stderr
    secrets = controller.run("get", "secrets", "--all-namespaces")
    assert secrets.returncode != 0 and "forbidden" in secrets.stderr.lower()


def test_webhook_service_account_touches_only_its_own_objects(cluster: Any, namespace: str,
                                                              installed_rbac: tuple[str, list[Obj]]) -> None:
    fullname, _ = installed_rbac
    webhook = Identity(cluster, namespace, f"{fullname}-webhook")
    secret = f"{fullname}-webhook-server-cert"
    wait_for(lambda: webhook.can("list", "clusterqueues.kueue.x-k8s.io"), timeout=30,
             message="webhook RBAC to take effect")

    for verb in ["get", "update", "patch"]:
        assert webhook.can(verb, f"secrets/{secret}", namespace=namespace), verb
    for kind, name in [("mutatingwebhookconfigurations", "pykueue-mutating-webhook-configuration"),
                       ("validatingwebhookconfigurations", "pykueue-validating-webhook-configuration")]:
        resource = f"{kind}.admissionregistration.k8s.io"
        assert webhook.can("patch", f"{resource}/{name}")
        assert not webhook.can("patch", f"{resource}/someone-elses-webhook")
        assert not webhook.can("delete", f"{resource}/{name}")
    for resource in ["localqueues", "clusterqueues", "cohorts", "resourceflavors"]:
        assert webhook.can("list", f"{resource}.kueue.x-k8s.io")
        assert not webhook.can("update", f"{resource}.kueue.x-k8s.io")
    assert not webhook.can("get", "secrets")
    assert not webhook.can("list", "secrets", namespace=namespace)
    assert not webhook.can("get", "secrets/some-other-secret", namespace=namespace)
    assert not webhook.can("patch", "jobs.batch")
    assert not webhook.can("patch", "workloads.kueue.x-k8s.io", subresource="status")

    # Writing its own Secret works (that is how self-provisioned certificates are stored) ...
    patched = webhook.run("-n", namespace, "patch", "secret", secret, "--type=merge",
                          "-p", json.dumps({"metadata": {"annotations": {"pykueue.dev/e2e": "written"}}}))
    assert patched.returncode == 0, patched.stderr
    # ... reading anyone else's does not.
    cluster.kubectl("-n", namespace, "create", "secret", "generic", "someone-elses", "--from-literal=k=v")
    stolen = webhook.run("-n", namespace, "get", "secret", "someone-elses")
    assert stolen.returncode != 0 and "forbidden" in stolen.stderr.lower()
    everywhere = webhook.run("get", "secrets", "--all-namespaces")
    assert everywhere.returncode != 0 and "forbidden" in everywhere.stderr.lower()
