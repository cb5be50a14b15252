"""Two concurrent-admission rules belong to the webhook, not the CRD (docs/design/api.md).

The apiserver runs the CRD schema and its CEL rules before it calls validating webhooks, so any
rule the CRD also enforces is answered by the apiserver and the webhook's denial is never seen.
StrictFIFO with ``concurrentAdmission`` and duplicate ``explicitOptions`` names must therefore be
absent from the CRD (no CEL rule, no list-map key) and absent from ``schema_errors`` (which mirrors
the CRD); the option name's DNS-label pattern and length stay in the schema.
"""

from __future__ import annotations

from typing import Any

from pykueue.api import generate
from pykueue.api.schema import KINDS
from pykueue.api.validation import schema_errors
from tests.builders import SeedClusterQueueBuilder


def _served_spec_schema() -> dict[str, Any]:
    crd = generate.crd(KINDS["ClusterQueue"])
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]


def _two_flavors() -> SeedClusterQueueBuilder:
    return SeedClusterQueueBuilder("cq").flavor("reservation", cpu="8").flavor("spot", cpu="8")


def test_crd_has_no_strict_fifo_rule() -> None:
    spec = _served_spec_schema()
    rules = [rule["rule"] for rule in spec.get("x-kubernetes-validations", [])]
    assert rules, "the ClusterQueue spec keeps its other CEL rules"
    assert not [rule for rule in rules if "StrictFIFO" in rule or "concurrentAdmission" in rule]


def test_explicit_options_are_an_atomic_list_with_the_name_format_kept() -> None:
    options = _served_spec_schema()["properties"]["concurrentAdmission"]["properties"]["explicitOptions"]
    assert options["x-kubernetes-list-type"] == "atomic"
    assert "x-kubernetes-list-map-keys" not in options
    name = options["items"]["properties"]["name"]
    assert (name["maxLength"], name["minLength"]) == (63, 1)
    assert name["pattern"].startswith("^[a-z0-9]")


def test_schema_errors_leave_strict_fifo_to_the_webhook() -> None:
    cq = _two_flavors().strategy("StrictFIFO").concurrent("RemoveOther").obj()
    assert schema_errors("ClusterQueue", cq) == []


def test_schema_errors_leave_duplicate_option_names_to_the_webhook() -> None:
    cq = _two_flavors().option("spot", "spot").option("spot", "reservation").obj()
    assert schema_errors("ClusterQueue", cq) == []


def test_schema_still_rejects_a_malformed_option_name() -> None:
    cq = _two_flavors().option("Spot_1", "spot").obj()
    messages = [str(error) for error in schema_errors("ClusterQueue", cq)]
    assert messages == [
        'spec.concurrentAdmission.explicitOptions[0].name: Invalid value: "Spot_1": should match '
        "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"
    ], messages
