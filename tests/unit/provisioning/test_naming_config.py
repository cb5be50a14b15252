"""Names of requests and PodTemplates, and the AdmissionCheck's Active verdict (Kueue's
``controller_test.go`` naming cases and ``admissioncheck_reconciler_test.go``)."""

from __future__ import annotations

from controller.provisioning.config import active_condition, parse_config
from controller.provisioning.naming import attempt_of, limit_object_name, pod_template_name, request_name
from tests.builders import ProvisioningRequestConfigBuilder, provisioning_admission_check


def test_request_and_template_names_carry_the_attempt() -> None:
    assert request_name("wl", "check", 1) == "wl-check-1"
    assert pod_template_name("wl-check-1", "main") == "ppt-wl-check-1-main"
    assert attempt_of("wl-check-3", "wl", "check") == 3
    assert attempt_of("wl-other-3", "wl", "check") is None
    assert attempt_of("wl-check-x", "wl", "check") is None


def test_long_names_are_cut_with_a_hash() -> None:
    full = "w" * 300
    cut = limit_object_name(full)
    assert len(cut) == 253 and cut.startswith("w" * 247 + "-")
    assert cut != limit_object_name("w" * 299 + "x")
    assert limit_object_name("short") == "short"


def test_defaults_follow_kueue() -> None:
    config = parse_config(ProvisioningRequestConfigBuilder("prc").obj())
    assert config is not None
    assert (config.retry.backoff_limit, config.retry.base_seconds, config.retry.max_seconds) == (3, 60, 1800)
    assert config.managed_resources == () and config.merge_policy == ""


def test_active_follows_the_config() -> None:
    check = provisioning_admission_check("ac", "prc")
    assert active_condition(check, ProvisioningRequestConfigBuilder("prc").obj()) == (
        True, "Active", "The admission check is active"
    )
    status, reason, message = active_condition(check, None)
    assert (status, reason) == (False, "BadParametersRef") and "prc" in message
    wrong_kind = provisioning_admission_check("ac", "prc")
    wrong_kind["spec"]["parameters"]["kind"] = "MultiKueueConfig"
    assert active_condition(wrong_kind, ProvisioningRequestConfigBuilder("prc").obj())[:2] == (False, "BadParametersRef")
