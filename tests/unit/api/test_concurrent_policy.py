"""Kueue's concurrentAdmissionPolicy ↔ pykueue's concurrentAdmission (pykueue.api.concurrent_policy)."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api.concurrent_policy import to_concurrent_admission, to_policy
from pykueue.api.conversion import convert
from pykueue.api.validation import schema_errors
from tests.builders import ClusterQueueBuilder

MAPPING = [
    ({"migration": {"mode": "RetainFirstAdmission"}}, {"onSuccess": "RemoveOther"}),
    ({"migration": {"mode": "TryPreferredFlavors"}}, {"onSuccess": "RemoveLower"}),
    (
        {"migration": {"mode": "TryPreferredFlavors", "constraints": {"lastAcceptableFlavorName": "on-demand"}}},
        {"onSuccess": "RemoveBelowTarget", "removeBelowTargetConfig": {"targetResourceFlavor": "on-demand"}},
    ),
]


@pytest.mark.parametrize(("policy", "concurrent_admission"), MAPPING)
def test_each_mode_maps_to_the_policy_it_corresponds_to_and_back(
    policy: dict[str, Any], concurrent_admission: dict[str, Any]
) -> None:
    assert to_concurrent_admission(policy) == concurrent_admission
    assert to_policy(concurrent_admission) == policy


@pytest.mark.parametrize(
    "policy",
    [
        {},
        {"migration": "x"},
        {"migration": {"mode": "Sometimes"}},
        # Kueue: lastAcceptableFlavorName only with TryPreferredFlavors.
        {"migration": {"mode": "RetainFirstAdmission", "constraints": {"lastAcceptableFlavorName": "a"}}},
        {"migration": {"mode": "TryPreferredFlavors", "constraints": {"lastAcceptableFlavorName": ""}}},
    ],
)
def test_what_kueue_does_not_define_maps_to_nothing(policy: dict[str, Any]) -> None:
    assert to_concurrent_admission(policy) is None


def test_explicit_options_have_no_kueue_spelling() -> None:
    assert to_policy({"onSuccess": "RemoveOther", "explicitOptions": [{"name": "a", "allowedResourceFlavors": ["f"]}]}) is None
    assert to_policy({"onSuccess": "RemoveOther", "removeBelowTargetConfig": {"targetResourceFlavor": "f"}}) is None


def _v2_queue(policy: dict[str, Any]) -> dict[str, Any]:
    cq = ClusterQueueBuilder("cq").flavor("reservation", cpu="4").flavor("spot", cpu="8").obj()
    cq["apiVersion"] = "kueue.x-k8s.io/v1beta2"
    cq["spec"]["concurrentAdmissionPolicy"] = policy
    return cq


@pytest.mark.parametrize(("policy", "concurrent_admission"), MAPPING)
def test_stored_in_v1beta1_a_policy_is_the_concurrent_admission_the_webhook_and_controller_read(
    policy: dict[str, Any], concurrent_admission: dict[str, Any]
) -> None:
    queue = _v2_queue(policy)
    stored = convert(queue, "v1beta1")
    assert stored["spec"]["concurrentAdmission"] == concurrent_admission
    assert "concurrentAdmissionPolicy" not in stored["spec"]
    assert schema_errors("ClusterQueue", stored) == []
    # Read back in v1beta2 the queue is what was written: the policy, not pykueue's spelling.
    assert convert(stored, "v1beta2") == queue


def test_the_v1beta2_schema_refuses_both_spellings_naming_both() -> None:
    from pykueue.api.schemas.v1beta2 import ONE_CONCURRENT_ADMISSION_POLICY

    spec = {"concurrentAdmission": {"onSuccess": "RemoveOther"}, "concurrentAdmissionPolicy": MAPPING[0][0]}
    assert ONE_CONCURRENT_ADMISSION_POLICY.check is not None
    assert ONE_CONCURRENT_ADMISSION_POLICY.check(spec) is False
    assert ONE_CONCURRENT_ADMISSION_POLICY.check({"concurrentAdmissionPolicy": MAPPING[0][0]}) is True
    message = ONE_CONCURRENT_ADMISSION_POLICY.message
    assert "spec.concurrentAdmission " in message and "spec.concurrentAdmissionPolicy" in message


def test_the_v1beta2_schema_refuses_a_constraint_without_try_preferred_flavors() -> None:
    from pykueue.api.schemas.v1beta2 import CONCURRENT_ADMISSION_POLICY

    rule = CONCURRENT_ADMISSION_POLICY["properties"]["migration"]["x-kubernetes-validations"][0]
    assert "TryPreferredFlavors" in rule["message"]
    from pykueue.api.dsl import RULES

    check = RULES[rule["rule"]].check
    assert check is not None
    assert check({"mode": "RetainFirstAdmission", "constraints": {"lastAcceptableFlavorName": "a"}}) is False
    assert check({"mode": "TryPreferredFlavors", "constraints": {"lastAcceptableFlavorName": "a"}}) is True
    assert check({"mode": "RetainFirstAdmission"}) is True
