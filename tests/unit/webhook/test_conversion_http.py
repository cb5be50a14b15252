"""``POST /convert``: ConversionReview v1 answers, and a failed result with a reason (never a 500) for bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask.testing import FlaskClient

CQ_V1 = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {"cohort": "all"}}


def review(objects: list[Any], desired: str = "kueue.x-k8s.io/v1beta2", uid: str = "u-1") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    }


def convert(client: FlaskClient, body: Any) -> dict[str, Any]:
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    response = client.post("/convert", data=data, content_type="application/json")
    assert response.status_code == 200, response.data
    answer = response.get_json()
    assert answer["apiVersion"] == "apiextensions.k8s.io/v1" and answer["kind"] == "ConversionReview"
    return answer["response"]


def test_objects_are_converted_and_the_uid_echoed(client: FlaskClient) -> None:
    response = convert(client, review([CQ_V1, {**CQ_V1, "metadata": {"name": "other"}}], uid="abc"))
    assert response["uid"] == "abc"
    assert response["result"] == {"status": "Success"}
    assert [o["apiVersion"] for o in response["convertedObjects"]] == ["kueue.x-k8s.io/v1beta2"] * 2
    assert response["convertedObjects"][0]["spec"] == {"cohortName": "all"}
    assert response["convertedObjects"][1]["metadata"] == {"name": "other"}


def test_an_empty_list_converts_to_an_empty_list(client: FlaskClient) -> None:
    assert convert(client, review([])) == {"uid": "u-1", "convertedObjects": [], "result": {"status": "Success"}}


@pytest.mark.parametrize(
    ("body", "uid", "reason"),
    [
        (b"{not json", "", "body is not JSON"),
        ([1, 2], "", "body is not a ConversionReview"),
        ({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview", "request": {}}, "", "is not apiextensions.k8s.io/v1"),
        ({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}, "", "has no request"),
        ({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {"objects": []}}, "", "request.uid is missing"),
        (review([CQ_V1], desired="v1beta2"), "u-1", "is not group/version"),
        (review([CQ_V1], desired="batch/v1"), "u-1", "is not of the kueue.x-k8s.io group"),
        ({**review([]), "request": {"uid": "u-1", "desiredAPIVersion": "kueue.x-k8s.io/v1beta2", "objects": "x"}}, "u-1", "not a list"),
        (review([CQ_V1, "not an object"]), "u-1", "request.objects[1] (unnamed): object is not a JSON object"),
        (review([{**CQ_V1, "apiVersion": "kueue.x-k8s.io/v1alpha1"}]), "u-1", "request.objects[0] (cq): apiVersion"),
        (review([CQ_V1], desired="kueue.x-k8s.io/v9"), "u-1", "desired version 'v9'"),
        (review([{**CQ_V1, "kind": "Nope"}]), "u-1", "kind 'Nope' is not"),
    ],
)
def test_malformed_reviews_fail_with_a_reason(client: FlaskClient, body: Any, uid: str, reason: str) -> None:
    response = convert(client, body)
    assert response["uid"] == uid
    assert response["convertedObjects"] == []
    assert response["result"]["status"] == "Failure"
    assert reason in response["result"]["message"]
    assert "\n" not in response["result"]["message"]


def test_a_converter_bug_is_a_failed_result_not_a_500(client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    import webhook.conversion

    def broken(obj: Any, version: str) -> Any:
        raise KeyError("boom")

    monkeypatch.setattr(webhook.conversion, "convert_shared", broken)
    response = convert(client, review([CQ_V1]))
    assert response["result"]["status"] == "Failure"
    assert "internal error: KeyError" in response["result"]["message"]


def test_an_oversized_body_fails_with_a_reason(client: FlaskClient) -> None:
    big = review([{**CQ_V1, "metadata": {"name": "x" * (80 * 1024)}}])
    response = convert(client, big)
    assert response["result"]["status"] == "Failure"
    assert "byte limit" in response["result"]["message"]
