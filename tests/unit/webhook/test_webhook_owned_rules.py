"""The denials the webhook owns end to end (the CRD leaves them to it): full message through HTTP.

These go through the Flask endpoint, i.e. ``schema_errors`` *and* the semantic rules, so they also
prove that the schema adds no second, differently worded error for the same mistake.
"""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.builders import SeedClusterQueueBuilder
from tests.unit.webhook.conftest import post
from tests.unit.webhook.reviews import review

CQ_VALIDATE = "/validate-kueue-x-k8s-io-v1beta1-clusterqueue"
STRICT_FIFO_DENIAL = (
    'spec.concurrentAdmission: Invalid value: "object": '
    "concurrentAdmission is not supported with queueingStrategy StrictFIFO"
)


def _two_flavors() -> SeedClusterQueueBuilder:
    return SeedClusterQueueBuilder("cq").flavor("reservation", cpu="8").flavor("spot", cpu="8")


def _denial(client: FlaskClient, body: dict) -> str:
    response = post(client, CQ_VALIDATE, body)["response"]
    assert response["allowed"] is False, response
    assert response["status"]["code"] == 403
    return str(response["status"]["message"])


def test_duplicate_option_name_is_denied_with_the_spec_wording_only(client: FlaskClient) -> None:
    cq = _two_flavors().option("spot", "spot").option("spot", "reservation").obj()
    assert _denial(client, review("ClusterQueue", cq)) == (
        'spec.concurrentAdmission.explicitOptions[1].name: Duplicate value: "spot"'
    )


def test_strict_fifo_with_concurrent_admission_is_denied_on_create(client: FlaskClient) -> None:
    cq = _two_flavors().strategy("StrictFIFO").concurrent("RemoveOther").obj()
    assert _denial(client, review("ClusterQueue", cq)) == STRICT_FIFO_DENIAL


def test_switching_a_concurrent_queue_to_strict_fifo_is_denied(client: FlaskClient) -> None:
    old = _two_flavors().concurrent("RemoveOther").obj()
    new = _two_flavors().concurrent("RemoveOther").strategy("StrictFIFO").obj()
    assert _denial(client, review("ClusterQueue", new, old=old, operation="UPDATE")) == STRICT_FIFO_DENIAL


def test_adding_concurrent_admission_to_a_strict_fifo_queue_is_denied(client: FlaskClient) -> None:
    old = _two_flavors().strategy("StrictFIFO").obj()
    new = _two_flavors().strategy("StrictFIFO").concurrent("RemoveOther").obj()
    message = _denial(client, review("ClusterQueue", new, old=old, operation="UPDATE"))
    assert "concurrentAdmission is not supported with queueingStrategy StrictFIFO" in message


def test_switching_a_concurrent_queue_to_best_effort_is_allowed(client: FlaskClient) -> None:
    old = _two_flavors().concurrent("RemoveOther").obj()
    new = _two_flavors().concurrent("RemoveOther").strategy("BestEffortFIFO").obj()
    response = post(client, CQ_VALIDATE, review("ClusterQueue", new, old=old, operation="UPDATE"))["response"]
    assert response["allowed"] is True, response
