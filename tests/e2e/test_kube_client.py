"""KubeClient against the real apiserver: a CRD through raw paths, the status subresource,
optimistic concurrency, delete preconditions, typed validation errors and aggregated Events."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controller.runtime.events import EventCorrelator
from pykueue.kube.client import KubeClient
from pykueue.kube.errors import AlreadyExists, Conflict, Invalid
from pykueue.kube.resources import CONFIG_MAPS, EVENTS, PROVISIONING_REQUESTS
from tests.builders import ConfigMapBuilder
from tests.e2e.helpers.wait import wait_for


@pytest.fixture(scope="module")
def client(cluster: Any) -> Iterator[KubeClient]:
    kube_client = KubeClient.from_config(cluster.kubeconfig, user_agent="pykueue-e2e")
    try:
        yield kube_client
    finally:
        kube_client.close()


def provisioning_request(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": PROVISIONING_REQUESTS.api_version,
        "kind": PROVISIONING_REQUESTS.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
            "podSets": [{"podTemplateRef": {"name": "tmpl"}, "count": 2}],
        },
    }


def test_crd_status_subresource_and_optimistic_concurrency(client: KubeClient, namespace: str) -> None:
    created = client.create(PROVISIONING_REQUESTS, provisioning_request("pr", namespace))
    with pytest.raises(AlreadyExists):
        client.create(PROVISIONING_REQUESTS, provisioning_request("pr", namespace))

    condition = {
        "type": "Provisioned",
        "status": "True",
        "reason": "Provisioned",
        "message": "ok",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    patched = client.patch_status(
        PROVISIONING_REQUESTS,
        "pr",
        {"status": {"conditions": [condition]}, "spec": {"provisioningClassName": "ignored.example"}},
        namespace,
    )
    assert patched["status"]["conditions"][0]["type"] == "Provisioned"
    assert patched["spec"]["provisioningClassName"] == "check-capacity.autoscaling.x-k8s.io", (
        "the status subresource ignores spec changes"
    )

    stale = created["metadata"]["resourceVersion"]
    with pytest.raises(Conflict):
        client.patch(
            PROVISIONING_REQUESTS,
            "pr",
            {"metadata": {"resourceVersion": stale, "labels": {"a": "b"}}},
            namespace,
        )
    with pytest.raises(Conflict):
        client.delete(PROVISIONING_REQUESTS, "pr", namespace, preconditions={"uid": "not-this-one"})
    assert client.delete(
        PROVISIONING_REQUESTS, "pr", namespace, preconditions={"uid": created["metadata"]["uid"]}
    )
    wait_for(
        lambda: client.get(PROVISIONING_REQUESTS, "pr", namespace) is None, timeout=30, message="pr deleted"
    )
    assert client.delete(PROVISIONING_REQUESTS, "pr", namespace) is False


def test_invalid_object_names_the_field(client: KubeClient, namespace: str) -> None:
    bad = provisioning_request("bad", namespace)
    bad["spec"]["podSets"][0]["count"] = 0
    with pytest.raises(Invalid) as caught:
        client.create(PROVISIONING_REQUESTS, bad)
    assert any("spec.podSets[0].count" in str(cause.get("field")) for cause in caught.value.causes)


def test_repeated_event_is_one_event_with_a_count(client: KubeClient, namespace: str) -> None:
    involved = client.create(CONFIG_MAPS, ConfigMapBuilder("subject", namespace).obj())
    events = EventCorrelator(client)  # what the event senders write with
    for _ in range(3):
        events.write(involved, "Warning", "Pending", "waiting for quota", "pykueue-e2e")
    events.write(involved, "Normal", "QuotaReserved", "reserved", "pykueue-e2e")

    def events_by_reason() -> dict[str, int]:
        listed = client.list(EVENTS, namespace, field_selector="involvedObject.name=subject")
        return {e["reason"]: e.get("count", 1) for e in listed.get("items") or []}

    assert wait_for(
        lambda: events_by_reason() == {"Pending": 3, "QuotaReserved": 1},
        timeout=10,
        message="one aggregated Event per reason",
    )
    listed = client.list(EVENTS, namespace, field_selector="involvedObject.name=subject")
    pending = next(e for e in listed["items"] if e["reason"] == "Pending")
    assert pending["involvedObject"]["uid"] == involved["metadata"]["uid"]
    assert pending["involvedObject"]["kind"] == "ConfigMap"
    assert pending["type"] == "Warning" and pending["source"]["component"] == "pykueue-e2e"
