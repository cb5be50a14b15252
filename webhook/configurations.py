"""pykueue's Mutating/ValidatingWebhookConfiguration objects and their ``caBundle``.

Two ways to run, two syncs:

* **in a cluster** (the Helm chart) the configurations already exist, pointing at the Service; the
  webhook only patches ``caBundle`` into each entry (:class:`ServiceConfigurations`). The patch is a
  JSON patch guarded by ``test`` operations on each entry's name, so a concurrent edit of the list
  makes it fail instead of writing a bundle into the wrong entry;
* **locally** (``--local-url``; the apiserver calls ``https://127.0.0.1:PORT``) nothing installs the
  configurations, so the webhook writes them whole from :data:`webhook.registry.HOOKS`
  (:class:`LocalConfigurations`) and deletes them when it stops, so a stopped local webhook never
  blocks the cluster with ``failurePolicy: Fail``.
"""

from __future__ import annotations

import base64
import logging
from typing import Any, Protocol

from pykueue.api import constants as c
from pykueue.kube import resources as r
from pykueue.kube.client import KubeClient
from pykueue.kube.errors import Conflict, Invalid, NotFound
from pykueue.tls.certs import merge_ca_bundle
from webhook.registry import HOOKS, MUTATING_CONFIGURATION_NAME, VALIDATING_CONFIGURATION_NAME, Hook

log = logging.getLogger("pykueue.webhook.configurations")

CONFIGURATIONS = (
    (r.MUTATING_WEBHOOK_CONFIGURATIONS, MUTATING_CONFIGURATION_NAME, True),
    (r.VALIDATING_WEBHOOK_CONFIGURATIONS, VALIDATING_CONFIGURATION_NAME, False),
)
TIMEOUT_SECONDS = 10


class ConfigurationSync(Protocol):
    def sync(self, ca_cert: bytes) -> None: ...


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _existing_bundle(configuration: dict[str, Any] | None) -> bytes:
    """The first entry's caBundle (all entries carry the same one)."""
    for hook in (configuration or {}).get("webhooks") or []:
        encoded = (hook.get("clientConfig") or {}).get("caBundle")
        if encoded:
            try:
                return base64.b64decode(encoded)
            except ValueError:
                return b""
    return b""


def _essentials(configuration: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What we set on each entry; the apiserver fills in defaults for the rest, which we ignore."""
    return [
        (hook.get("name"), hook.get("clientConfig"), hook.get("rules"), hook.get("namespaceSelector") or None,
         hook.get("objectSelector") or None)
        for hook in configuration.get("webhooks") or []
    ]


def job_namespace_selector(own_namespace: str) -> dict[str, Any]:
    """Never intercept Jobs in kube-system or the webhook's own namespace (it could block its recovery)."""
    return {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", own_namespace]}
        ]
    }


def webhook_entry(
    hook: Hook, client_config: dict[str, Any], *, own_namespace: str, manage_jobs_without_queue_name: bool
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": hook.name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": TIMEOUT_SECONDS,
        "matchPolicy": "Equivalent",
        "clientConfig": client_config,
        "rules": [
            {
                "apiGroups": [hook.group],
                "apiVersions": list(hook.versions),
                "resources": list(hook.resources),
                "operations": list(hook.operations),
                "scope": hook.scope,
            }
        ],
    }
    if hook.mutating:
        entry["reinvocationPolicy"] = "Never"
    if hook.target == "job":
        entry["namespaceSelector"] = job_namespace_selector(own_namespace)
        if not hook.mutating and not manage_jobs_without_queue_name:
            entry["objectSelector"] = {"matchExpressions": [{"key": c.QUEUE_NAME_LABEL, "operator": "Exists"}]}
    return entry


def local_configurations(
    base_url: str, ca_bundle: bytes, *, own_namespace: str, manage_jobs_without_queue_name: bool
) -> list[tuple[r.Resource, dict[str, Any]]]:
    """Both configuration objects, calling ``base_url`` + each hook's path."""
    objects = []
    for resource, name, mutating in CONFIGURATIONS:
        webhooks = [
            webhook_entry(
                hook,
                {"url": base_url.rstrip("/") + hook.path, "caBundle": _b64(ca_bundle)},
                own_namespace=own_namespace,
                manage_jobs_without_queue_name=manage_jobs_without_queue_name,
            )
            for hook in HOOKS
            if hook.mutating == mutating
        ]
        objects.append(
            (
                resource,
                {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": resource.kind,
                    "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "pykueue", "app.kubernetes.io/component": "webhook"}},
                    "webhooks": webhooks,
                },
            )
        )
    return objects


class LocalConfigurations:
    def __init__(
        self, client: KubeClient, base_url: str, *, own_namespace: str, manage_jobs_without_queue_name: bool
    ) -> None:
        self.client = client
        self.base_url = base_url
        self.own_namespace = own_namespace
        self.manage_jobs_without_queue_name = manage_jobs_without_queue_name

    def sync(self, ca_cert: bytes) -> None:
        for resource, desired in self._desired(ca_cert):
            for _ in range(5):
                current = self.client.get(resource, desired["metadata"]["name"])
                desired_now = self._with_bundle(desired, merge_ca_bundle(ca_cert, _existing_bundle(current)))
                try:
                    if current is None:
                        self.client.create(resource, desired_now)
                    elif _essentials(current) != _essentials(desired_now):
                        desired_now["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                        self.client.replace(resource, desired_now)
                    break
                except Conflict:
                    continue

    def _desired(self, ca_cert: bytes) -> list[tuple[r.Resource, dict[str, Any]]]:
        return local_configurations(
            self.base_url, ca_cert,
            own_namespace=self.own_namespace, manage_jobs_without_queue_name=self.manage_jobs_without_queue_name,
        )

    @staticmethod
    def _with_bundle(configuration: dict[str, Any], bundle: bytes) -> dict[str, Any]:
        copy = {**configuration, "metadata": dict(configuration["metadata"])}
        copy["webhooks"] = [
            {**hook, "clientConfig": {**hook["clientConfig"], "caBundle": _b64(bundle)}} for hook in configuration["webhooks"]
        ]
        return copy

    def delete(self) -> None:
        for resource, name, _ in CONFIGURATIONS:
            self.client.delete(resource, name)


class ServiceConfigurations:
    """Patch ``caBundle`` into the configurations the chart installed."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def sync(self, ca_cert: bytes) -> None:
        for resource, name, _ in CONFIGURATIONS:
            for _ in range(5):
                current = self.client.get(resource, name)
                if current is None:
                    log.warning("webhook configuration not found; caBundle not injected", extra={"configuration": name})
                    break
                bundle = _b64(merge_ca_bundle(ca_cert, _existing_bundle(current)))
                operations: list[dict[str, Any]] = []
                for index, hook in enumerate(current.get("webhooks") or []):
                    client_config = hook.get("clientConfig") or {}
                    if client_config.get("caBundle") == bundle:
                        continue
                    operations.append({"op": "test", "path": f"/webhooks/{index}/name", "value": hook["name"]})
                    operations.append(
                        {"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": bundle}
                    )
                if not operations:
                    break
                try:
                    self.client.patch(resource, name, operations, patch_type="json")
                    log.info("injected the CA bundle", extra={"configuration": name})
                    break
                except (Conflict, Invalid, NotFound):
                    # A failed ``test`` (the list changed under us) answers 422: read again.
                    continue
