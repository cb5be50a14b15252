"""A ClusterQueue's ``Active`` condition (written by the queue-status controller) and the engine's
decision to schedule into it are one rule (``controller.engine.activity``): for every case the
condition's reason and message are exactly what the engine holds, so a queue never shows
``Ready`` while nothing is admitted into it, or the other way round."""

from __future__ import annotations

from typing import Any

import pytest

from controller.core import queue_status as qs
from controller.engine import Engine
from pykueue.api import constants as C
from tests.builders import AdmissionCheckBuilder, ClusterQueueBuilder, ResourceFlavorBuilder

FLAVORS = ("on-demand", "spot")
CHECKS: dict[str, tuple[str, bool]] = {  # name -> (controllerName, Active)
    "prov": (C.PROVISIONING_REQUEST_CONTROLLER, True),
    "mk-1": (C.MULTIKUEUE_CONTROLLER, True),
    "mk-2": (C.MULTIKUEUE_CONTROLLER, True),
    "off": ("pykueue.dev/test-check", False),
}


def _cq() -> ClusterQueueBuilder:
    return ClusterQueueBuilder("cq").flavor("on-demand", cpu="4").flavor("spot", cpu="2")


def _terminating() -> dict[str, Any]:
    obj = _cq().obj()
    obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return obj


def _bad_quota() -> dict[str, Any]:
    obj = _cq().obj()
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "lots"
    return obj


CASES: list[tuple[str, dict[str, Any], str]] = [
    ("ready", _cq().obj(), "Ready"),
    ("terminating", _terminating(), "Terminating"),
    ("stopped", _cq().stop_policy("Hold").obj(), "Stopped"),
    ("missing flavor", ClusterQueueBuilder("cq").flavor("gone", cpu="1").obj(), "FlavorNotFound"),
    ("missing check", _cq().admission_checks("nowhere").obj(), "AdmissionCheckNotFound"),
    ("inactive check", _cq().admission_checks("off").obj(), "AdmissionCheckInactive"),
    ("two MultiKueue checks", _cq().admission_checks("mk-1", "mk-2").obj(), "MultipleMultiKueueAdmissionChecks"),
    (
        "MultiKueue per flavor",
        _cq().admission_check_strategy("mk-1", "spot").obj(),
        "MultiKueueAdmissionCheckAppliedPerFlavor",
    ),
    ("MultiKueue with ProvisioningRequest", _cq().admission_checks("mk-1", "prov").obj(), "MultiKueueWithProvisioningRequest"),
    ("invalid spec", _bad_quota(), "Unknown"),
    (
        "several: the first reason wins",
        ClusterQueueBuilder("cq").flavor("gone", cpu="1").admission_checks("off", "nowhere").stop_policy("Hold").obj(),
        "Stopped",
    ),
]


@pytest.mark.parametrize(("case", "cq", "reason"), CASES, ids=[c[0] for c in CASES])
def test_condition_and_engine_agree(case: str, cq: dict[str, Any], reason: str) -> None:
    engine = Engine()
    for flavor in FLAVORS:
        engine.upsert_resource_flavor(ResourceFlavorBuilder(flavor).obj())
    for name, (controller, active) in CHECKS.items():
        engine.upsert_admission_check(AdmissionCheckBuilder(name, controller).active(active).obj())
    engine.upsert_cluster_queue(cq)

    condition = qs.cluster_queue_active(
        cq,
        FLAVORS,
        {name: active for name, (_, active) in CHECKS.items()},
        {name: controller for name, (controller, _) in CHECKS.items()},
    )
    assert condition.reason == reason
    assert engine.is_active("cq") == (condition.status == "True")
    if condition.status == "False":
        assert engine.inactive["cq"] == (condition.reason, condition.message)
    else:
        assert condition.message == "Can admit new workloads"
