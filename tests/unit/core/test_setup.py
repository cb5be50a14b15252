"""waitForPodsReady from the controller Configuration into the workload controller's policy and the
engine's queue order (requeuingStrategy.timestamp)."""

from __future__ import annotations

from controller.core.setup import (
    blocks_admission,
    fair_sharing_strategies,
    pods_ready_policy,
    preemption_grace_seconds,
    requeuing_timestamp,
)
from pykueue.api.config import Configuration, parse_config


def _config(wait_for_pods_ready: dict | None) -> Configuration:
    raw: dict = {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration"}
    if wait_for_pods_ready is not None:
        raw["waitForPodsReady"] = wait_for_pods_ready
    return parse_config(raw)


def test_disabled_by_default_as_in_v1beta1() -> None:
    assert pods_ready_policy(_config(None)) is None
    assert pods_ready_policy(_config({"enable": False, "timeout": "1m"})) is None
    assert pods_ready_policy(Configuration()) is None


def test_enabled_policy_carries_timeouts_and_requeuing_strategy() -> None:
    policy = pods_ready_policy(
        _config(
            {
                "enable": True,
                "timeout": "90s",
                "recoveryTimeout": "30s",
                "requeuingStrategy": {
                    "backoffBaseSeconds": 5,
                    "backoffMaxSeconds": 100,
                    "backoffLimitCount": 3,
                },
            }
        )
    )
    assert policy is not None
    assert (policy.timeout_seconds, policy.recovery_timeout_seconds) == (90.0, 30.0)
    assert (policy.backoff_base_seconds, policy.backoff_max_seconds, policy.backoff_limit_count) == (
        5.0,
        100.0,
        3,
    )


def test_enabled_defaults_are_kueues() -> None:
    policy = pods_ready_policy(_config({"enable": True}))
    assert policy is not None
    assert policy.timeout_seconds == 300.0
    assert (policy.backoff_base_seconds, policy.backoff_max_seconds, policy.backoff_limit_count) == (
        60.0,
        3600.0,
        None,
    )


def test_requeuing_timestamp_for_the_engine() -> None:
    assert requeuing_timestamp(_config(None)) == "Eviction"
    assert requeuing_timestamp(_config({"enable": True})) == "Eviction"
    creation = {"enable": True, "requeuingStrategy": {"timestamp": "Creation"}}
    assert requeuing_timestamp(_config(creation)) == "Creation"
    # Off: no PodsReady eviction happens, the setting does not matter.
    assert requeuing_timestamp(_config({**creation, "enable": False})) == "Eviction"


def test_block_admission_only_while_waiting_for_pods_ready() -> None:
    assert not blocks_admission(_config(None))
    assert blocks_admission(_config({"enable": True}))  # Kueue defaults blockAdmission to enable
    assert not blocks_admission(_config({"enable": True, "blockAdmission": False}))
    assert not blocks_admission(_config({"enable": False, "blockAdmission": True}))


def test_fair_sharing_reaches_the_engine_only_when_enabled() -> None:
    base = {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration"}
    assert fair_sharing_strategies(Configuration()) is None
    assert fair_sharing_strategies(parse_config({**base, "fairSharing": {"enable": False}})) is None
    assert fair_sharing_strategies(parse_config({**base, "fairSharing": {"enable": True}})) == (
        "LessThanOrEqualToFinalShare",
        "LessThanInitialShare",
    )
    only = parse_config({**base, "fairSharing": {"enable": True, "preemptionStrategies": ["LessThanInitialShare"]}})
    assert fair_sharing_strategies(only) == ("LessThanInitialShare",)


def test_preemption_grace_is_the_flag_when_given_else_four_seconds() -> None:
    assert preemption_grace_seconds({}) == 4.0
    assert preemption_grace_seconds({"preemption-grace-seconds": 0.0}) == 0.0  # Kueue's timing
    assert preemption_grace_seconds({"preemption-grace-seconds": 5.5}) == 5.5
