"""The Active condition of MultiKueue AdmissionChecks (Kueue's admissioncheck_test.go cases)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.multikueue.admissioncheck import AdmissionCheckController, check_verdict
from controller.multikueue.clusters import Verdict
from pykueue.kube import resources as R
from tests.builders import MultiKueueClusterBuilder, MultiKueueConfigBuilder, multikueue_admission_check
from tests.unit.multikueue.fake import FakeClient, FakeInformer

CHECK = multikueue_admission_check("mk", "workers")


def verdict(configs: list[dict[str, Any]], clusters: list[dict[str, Any]], check: dict[str, Any] = CHECK) -> Verdict:
    by_config = {c["metadata"]["name"]: c for c in configs}
    by_cluster = {c["metadata"]["name"]: c for c in clusters}
    return check_verdict(check, by_config.get, by_cluster.get)


@pytest.mark.parametrize(
    ("configs", "clusters", "expected"),
    [
        ([], [], Verdict(False, "BadConfig",
                         'Cannot load the AdmissionChecks parameters: MultiKueueConfig "workers" not found')),
        ([MultiKueueConfigBuilder("workers", "w1").obj()], [],
         Verdict(False, "NoUsableClusters", "Missing clusters: [w1]")),
        ([MultiKueueConfigBuilder("workers", "w1").obj()], [MultiKueueClusterBuilder("w1").active(False).obj()],
         Verdict(False, "NoUsableClusters", "Inactive clusters: [w1]")),
        ([MultiKueueConfigBuilder("workers", "w1", "w2", "w3").obj()],
         [MultiKueueClusterBuilder("w1").active().obj(), MultiKueueClusterBuilder("w3").active(False).obj()],
         Verdict(True, "SomeActiveClusters", "Missing clusters: [w2], Inactive clusters: [w3]")),
        ([MultiKueueConfigBuilder("workers", "w1", "w2").obj()],
         [MultiKueueClusterBuilder("w1").active().obj(), MultiKueueClusterBuilder("w2").active().obj()],
         Verdict(True, "Active", "The admission check is active")),
    ],
)
def test_check_verdicts(configs: list[dict[str, Any]], clusters: list[dict[str, Any]], expected: Verdict) -> None:
    assert verdict(configs, clusters) == expected


def test_parameters_naming_another_kind_are_a_bad_config() -> None:
    check = multikueue_admission_check("mk", "workers")
    check["spec"]["parameters"]["kind"] = "ProvisioningRequestConfig"
    assert verdict([], [], check).reason == "BadConfig"


def test_the_controller_writes_the_condition_once_guarded_by_resource_version() -> None:
    api = FakeClient()
    check = api.put(R.ADMISSION_CHECKS, {**CHECK, "metadata": {"name": "mk", "generation": 3}})
    checks = FakeInformer(check)
    controller = AdmissionCheckController(
        api, checks, FakeInformer(MultiKueueConfigBuilder("workers", "w1").obj()),
        FakeInformer(MultiKueueClusterBuilder("w1").active().obj()),
    )
    controller.reconcile("mk")
    [(plural, name, patch)] = api.patches
    assert (plural, name) == ("admissionchecks", "mk")
    assert patch["metadata"]["resourceVersion"] == check["metadata"]["resourceVersion"]
    [cond] = patch["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"], cond["observedGeneration"]) == ("Active", "True", "Active", 3)
    checks.store.put(api.get(R.ADMISSION_CHECKS, "mk"))
    controller.reconcile("mk")
    assert len(api.patches) == 1  # nothing changed, nothing written
