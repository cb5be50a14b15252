"""On kind: the chart's two webhook replicas, their self-provisioned certificate and their budget.

The chart runs the webhook with ``failurePolicy: Fail``: whenever the apiserver cannot get an
answer, the request it was admitting fails. So the precise expectation during a certificate
rotation and during a voluntary disruption that the budget allows is that *no* request fails.

- Both replicas serve: each pod, reached directly, presents a certificate for the Service's DNS
  name signed by the CA in the Secret, and answers an AdmissionReview of a queued Job with the
  suspend patch.
- Rotation while requests flow: the Secret is emptied (what ``helm install`` creates, and what an
  operator does to force a rotation); the replicas issue a new CA and certificate, publish the new
  CA next to the old one in every ``caBundle`` and switch their files. Three threads keep creating
  queued Jobs through the apiserver (server-side dry run) throughout; every one must be admitted
  and suspended.
- The PodDisruptionBudget (``minAvailable: 1``): the Eviction API evicts one of two Ready replicas
  and refuses the other (429, the budget would break), while requests keep being admitted.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.kind.kube import NAMESPACE, get, kubectl
from tests.kind.webhook_pods import (
    BUDGET,
    SECRET,
    RequestStream,
    api_client,
    port_forward,
    published_bundles,
    ready_pods,
    restore_replicas,
    review_job_creation,
    secret_ca,
    served_certificate,
    signed_by,
    wait_until,
)

# The chart's --cert-check-interval is 60 s: a replica that did not rotate itself picks up the
# Secret's new certificate at its next check.
CERT_CHECK_INTERVAL = 60.0


@pytest.fixture
def namespace() -> Iterator[str]:
    name = f"kind-webhook-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def two_ready_replicas() -> list[str]:
    def two() -> list[str] | None:
        pods = ready_pods()
        return pods if len(pods) == 2 else None

    pods: list[str] = wait_until(two, 180, "two webhook replicas Ready")
    return pods


def test_both_webhook_replicas_serve_with_the_secrets_certificate(two_ready_replicas: list[str], namespace: str) -> None:
    ca = secret_ca()
    assert ca, "the certificate Secret holds a CA"
    assert all(ca in bundle for bundle in published_bundles()), "every caBundle trusts the Secret's CA"
    nodes = {get("pod", pod, "-n", NAMESPACE)["spec"]["nodeName"] for pod in two_ready_replicas}
    for pod in two_ready_replicas:
        with port_forward(pod) as port:
            assert signed_by(served_certificate(port), ca), f"{pod} serves a certificate of another CA"
            response = review_job_creation(port, ca, namespace)
        assert response["allowed"] is True, (pod, response)
        patch = json.loads(base64.b64decode(response["patch"]))
        suspends = [op for op in patch if op["path"] == "/spec/suspend"]
        assert [op.get("value") for op in suspends] == [True], (pod, patch)
    # The chart's soft anti-affinity spreads the two replicas over the two workers.
    assert len(nodes) == 2, nodes


def test_rotating_the_certificate_while_requests_flow_fails_none(two_ready_replicas: list[str], namespace: str) -> None:
    old_ca = secret_ca()
    assert old_ca
    secret = get("secret", SECRET, "-n", NAMESPACE)
    with RequestStream(namespace) as stream:
        wait_until(lambda: stream.count() >= 20, 60, "requests flow through the webhook before the rotation")
        # Empty the Secret, as the chart creates it: the replicas must issue a new CA.
        emptied = {key: secret[key] for key in ("apiVersion", "kind", "type")}
        emptied["metadata"] = {"name": SECRET, "namespace": NAMESPACE,
                               "resourceVersion": secret["metadata"]["resourceVersion"]}  # fmt: skip
        kubectl("replace", "-f", "-", input=json.dumps(emptied))
        before_rotation = stream.count()

        new_ca = wait_until(lambda: (ca := secret_ca()) and ca != old_ca and ca, 2 * CERT_CHECK_INTERVAL,
                            "a replica issued a new CA into the emptied Secret")  # fmt: skip
        wait_until(lambda: all(new_ca in bundle for bundle in published_bundles()), 30,
                   "every caBundle trusts the new CA")  # fmt: skip

        def every_replica_serves_the_new_certificate() -> bool:
            for pod in ready_pods():
                with port_forward(pod) as port:
                    if not signed_by(served_certificate(port), new_ca):
                        return False
            return True

        wait_until(every_replica_serves_the_new_certificate, 2 * CERT_CHECK_INTERVAL + 30,
                   "both replicas serve a certificate of the new CA", interval=5)  # fmt: skip
        # And requests keep flowing on the new certificates.
        switched = stream.count()
        wait_until(lambda: stream.count() >= switched + 20, 60, "requests flow after the rotation")
    assert stream.failures == [], f"{len(stream.failures)} of {stream.count()} requests failed: {stream.failures[:5]}"
    assert stream.count() - before_rotation >= 40, "requests flowed throughout the rotation"
    # The old CA stays trusted until it expires, for a replica or client that has not switched yet.
    assert all(old_ca in bundle for bundle in published_bundles())


def test_the_budget_allows_evicting_one_replica_and_refuses_the_second(
    two_ready_replicas: list[str], namespace: str
) -> None:
    core = client.CoreV1Api(api_client())
    budget = get("pdb", BUDGET, "-n", NAMESPACE)
    assert budget["spec"]["minAvailable"] == 1
    wait_until(lambda: get("pdb", BUDGET, "-n", NAMESPACE)["status"].get("disruptionsAllowed") == 1, 60,
               "the budget allows one disruption with two Ready replicas")  # fmt: skip

    def evict(pod: str) -> int:
        eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name=pod, namespace=NAMESPACE))
        try:
            core.create_namespaced_pod_eviction(pod, NAMESPACE, eviction)
        except client.ApiException as err:
            return int(err.status)
        return 201

    first, second = two_ready_replicas
    try:
        with RequestStream(namespace) as stream:
            wait_until(lambda: stream.count() >= 20, 60, "requests flow through the webhook")
            assert evict(first) == 201, "the budget allows evicting one of two Ready replicas"
            # The replacement is not Ready yet: evicting the other would leave none.
            refused = evict(second)
            assert refused == 429, f"evicting the second replica answered {refused}, not 429 (budget)"
            assert second in ready_pods(), "the refused eviction left the second replica running"
            # The remaining replica serves alone until the replacement is Ready.
            evicted_at = stream.count()
            wait_until(lambda: stream.count() >= evicted_at + 40, 60, "requests are admitted by the other replica")
            wait_until(lambda: len(ready_pods()) == 2 and first not in ready_pods(), 180,
                       "the Deployment replaced the evicted replica")  # fmt: skip
        assert stream.failures == [], f"{len(stream.failures)} of {stream.count()} requests failed: {stream.failures[:5]}"
    finally:
        restore_replicas()
