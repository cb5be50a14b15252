"""The HTTP contract: AdmissionReview v1 answers to the letter, 400 for malformed input, never 500."""

from __future__ import annotations

import json

import pytest
from flask.testing import FlaskClient

from tests.builders import ClusterQueueBuilder, ResourceFlavorBuilder
from tests.unit.webhook.conftest import post
from tests.unit.webhook.reviews import decoded_patch, review
from webhook.admission import Verdict
from webhook.app import Endpoint, create_app

CQ_VALIDATE = "/validate-kueue-x-k8s-io-v1beta1-clusterqueue"
CQ_MUTATE = "/mutate-kueue-x-k8s-io-v1beta1-clusterqueue"
RF_MUTATE = "/mutate-kueue-x-k8s-io-v1beta1-resourceflavor"


def valid_cq() -> dict:
    return ClusterQueueBuilder("cq").flavor("default", cpu="10").obj()


def test_allowed_response_echoes_uid_api_version_and_kind(client: FlaskClient) -> None:
    body = post(client, CQ_VALIDATE, review("ClusterQueue", valid_cq(), uid="1234-abcd"))
    assert body == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "1234-abcd", "allowed": True},
    }


def test_denial_names_field_and_rule_with_status_code(client: FlaskClient) -> None:
    cq = ClusterQueueBuilder("cq").flavor("default", cpu="10").strategy("StrictFIFO").obj()
    cq["spec"]["concurrentAdmission"] = {"onSuccess": "RemoveOther"}
    body = post(client, CQ_VALIDATE, review("ClusterQueue", cq, uid="u-1"))
    response = body["response"]
    assert response["uid"] == "u-1"
    assert response["allowed"] is False
    # Kueue's webhooks deny through controller-runtime's Denied: 403 Forbidden, and the message is
    # the field errors alone (the apiserver adds 'admission webhook "..." denied the request: ').
    assert response["status"] == {
        "code": 403,
        "reason": "Forbidden",
        "message": 'spec.concurrentAdmission: Invalid value: "object": concurrentAdmission is not supported with '
        "queueingStrategy StrictFIFO",
    }
    assert "patch" not in response


def test_mutating_response_is_base64_json_patch(client: FlaskClient) -> None:
    body = post(client, CQ_MUTATE, review("ClusterQueue", valid_cq()))
    assert decoded_patch(body) == [
        {"op": "add", "path": "/metadata/finalizers", "value": ["kueue.x-k8s.io/resource-in-use"]}
    ]


def test_mutation_is_idempotent_on_reinvocation(client: FlaskClient) -> None:
    flavor = ResourceFlavorBuilder("rf").obj()
    flavor["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    body = post(client, RF_MUTATE, review("ResourceFlavor", flavor))
    assert body["response"] == {"uid": body["response"]["uid"], "allowed": True}


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"{not json", "body is not JSON"),
        (b"\xff\xfe", "body is not JSON"),
        (b"[]", "body must be a JSON object"),
        (json.dumps({"kind": "Pod"}).encode(), "kind must be AdmissionReview"),
        (json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1"}).encode(),
         "apiVersion must be admission.k8s.io/v1"),
        (json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}).encode(),
         "request must be a JSON object"),
        (json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {}}).encode(),
         "request.uid is required"),
    ],
)
def test_malformed_bodies_get_400_with_one_line_reason(client: FlaskClient, payload: bytes, reason: str) -> None:
    response = client.post(CQ_VALIDATE, data=payload, content_type="application/json")
    assert response.status_code == 400
    text = response.get_data(as_text=True)
    assert text.startswith(reason)
    assert text.count("\n") == 1


def test_missing_uid_is_400(client: FlaskClient) -> None:
    body = review("ClusterQueue", valid_cq())
    del body["request"]["uid"]
    response = client.post(CQ_VALIDATE, json=body)
    assert response.status_code == 400
    assert "request.uid is required" in response.get_data(as_text=True)


def test_wrong_kind_for_path_is_400(client: FlaskClient) -> None:
    response = client.post(CQ_VALIDATE, json=review("ResourceFlavor", ResourceFlavorBuilder("rf").obj()))
    assert response.status_code == 400
    assert "kueue.x-k8s.io/ResourceFlavor is not served at" in response.get_data(as_text=True)


def test_unknown_path_is_400(client: FlaskClient) -> None:
    response = client.post("/validate-nothing", json=review("ClusterQueue", valid_cq()))
    assert response.status_code == 400
    assert response.get_data(as_text=True) == "no webhook is served at /validate-nothing\n"


def test_oversized_body_is_400(client: FlaskClient) -> None:
    cq = valid_cq()
    cq["metadata"]["annotations"] = {"big": "x" * 70_000}
    response = client.post(CQ_VALIDATE, json=review("ClusterQueue", cq))
    assert response.status_code == 400
    assert "over the 65536-byte limit" in response.get_data(as_text=True)


def test_exception_in_rule_is_a_denial_logged_with_uid(caplog: pytest.LogCaptureFixture) -> None:
    def broken(_review: object) -> Verdict:
        raise KeyError("spec")

    app = create_app([Endpoint(CQ_VALIDATE, "kueue.x-k8s.io", "ClusterQueue", False, broken)])
    response = app.test_client().post(CQ_VALIDATE, json=review("ClusterQueue", valid_cq(), uid="uid-77"))
    assert response.status_code == 200
    answer = response.get_json()["response"]
    assert answer["uid"] == "uid-77"
    assert answer["allowed"] is False
    assert answer["status"]["message"] == "internal error while validating ClusterQueue 'cq': KeyError: 'spec'"
    assert any(getattr(r, "uid", None) == "uid-77" for r in caplog.records)


def test_health_ready_and_metrics(client: FlaskClient) -> None:
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    post(client, CQ_VALIDATE, review("ClusterQueue", valid_cq()))
    client.post("/validate-nothing", data=b"x")
    metrics = client.get("/metrics").get_data(as_text=True)
    assert f'pykueue_webhook_requests_total{{outcome="allowed",path="{CQ_VALIDATE}"}}' in metrics
    assert 'pykueue_webhook_requests_total{outcome="malformed",path="unknown"}' in metrics
    assert "pykueue_webhook_request_duration_seconds_bucket" in metrics


def test_not_ready_is_503() -> None:
    app = create_app([], ready=lambda: False)
    assert app.test_client().get("/readyz").status_code == 503
