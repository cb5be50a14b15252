"""``fairSharing`` and ``admissionFairSharing`` in the Configuration, as Kueue v0.19 reads them
(defaults from ``apis/config/v1beta1/defaults.go``, rules from ``pkg/config/validation.go``
``validateFairSharing``/``validateAdmissionFairSharing``, versions from
``apis/config/v1beta1/configuration_conversion.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api.config import (
    DEFAULT_PREEMPTION_STRATEGIES,
    AdmissionFairSharing,
    ConfigError,
    FairSharing,
    parse_config,
    refused_fields,
)

V1 = {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration"}
V2 = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}


def test_absent_sections_leave_fair_sharing_off() -> None:
    cfg = parse_config(dict(V1))
    assert cfg.fair_sharing == FairSharing(enable=False)
    assert cfg.admission_fair_sharing is None


def test_enabled_without_strategies_gets_both_in_kueue_order() -> None:
    cfg = parse_config({**V1, "fairSharing": {"enable": True}})
    assert cfg.fair_sharing.enable
    assert cfg.fair_sharing.preemption_strategies == ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
    assert cfg.fair_sharing.preemption_strategies == DEFAULT_PREEMPTION_STRATEGIES


def test_disabled_section_is_as_good_as_absent() -> None:
    cfg = parse_config({**V1, "fairSharing": {"enable": False, "preemptionStrategies": ["LessThanInitialShare"]}})
    assert not cfg.fair_sharing.enable


@pytest.mark.parametrize("strategies", [
    ["LessThanOrEqualToFinalShare"],
    ["LessThanInitialShare"],
    ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
])
def test_each_accepted_strategy_list(strategies: list[str]) -> None:
    cfg = parse_config({**V1, "fairSharing": {"enable": True, "preemptionStrategies": strategies}})
    assert cfg.fair_sharing.preemption_strategies == tuple(strategies)


@pytest.mark.parametrize("strategies", [
    ["LessThanInitialShare", "LessThanOrEqualToFinalShare"],
    ["LessThanInitialShare", "LessThanInitialShare"],
])
def test_other_strategy_lists_are_not_supported(strategies: list[str]) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({**V1, "fairSharing": {"enable": True, "preemptionStrategies": strategies}})
    assert str(err.value).startswith("fairSharing.preemptionStrategies: Unsupported value")


def test_unknown_strategy_names_the_field() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({**V1, "fairSharing": {"enable": True, "preemptionStrategies": ["Fairest"]}})
    assert "fairSharing.preemptionStrategies[0]: Unsupported value" in str(err.value)


def test_v1beta2_presence_enables_and_strategies_are_required() -> None:
    cfg = parse_config({**V2, "fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]}})
    assert cfg.fair_sharing == FairSharing(enable=True, preemption_strategies=("LessThanInitialShare",))
    with pytest.raises(ConfigError) as err:
        parse_config({**V2, "fairSharing": {}})
    assert str(err.value) == "fairSharing.preemptionStrategies: Required value"
    with pytest.raises(ConfigError) as err:
        parse_config({**V2, "fairSharing": {"enable": True, "preemptionStrategies": ["LessThanInitialShare"]}})
    assert str(err.value).startswith('fairSharing.enable: unknown field')


@pytest.mark.parametrize("header", [V1, V2])
def test_admission_fair_sharing_defaults(header: dict[str, Any]) -> None:
    cfg = parse_config({**header, "admissionFairSharing": {"usageHalfLifeTime": "10m"}})
    assert cfg.admission_fair_sharing == AdmissionFairSharing(
        usage_half_life_time=600.0, usage_sampling_interval=300.0, resource_weights={}
    )


def test_admission_fair_sharing_read_in_full() -> None:
    cfg = parse_config({**V1, "admissionFairSharing": {
        "usageHalfLifeTime": "0s", "usageSamplingInterval": "30s", "resourceWeights": {"cpu": 2, "nvidia.com/gpu": 0.5},
    }})
    assert cfg.admission_fair_sharing == AdmissionFairSharing(0.0, 30.0, {"cpu": 2.0, "nvidia.com/gpu": 0.5})


@pytest.mark.parametrize(("section", "expected"), [
    ({"usageHalfLifeTime": "-1s"}, "admissionFairSharing.usageHalfLifeTime: Invalid value"),
    ({"usageSamplingInterval": "-5s"}, "admissionFairSharing.usageSamplingInterval: Invalid value"),
    ({"resourceWeights": {"cpu": -1}}, "admissionFairSharing.resourceWeights[cpu]: Invalid value: -1"),
    ({"halfLife": "1m"}, 'admissionFairSharing.halfLife: Invalid value: unknown field "halfLife"'),
])
def test_admission_fair_sharing_errors_name_the_field(section: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({**V1, "admissionFairSharing": section})
    assert str(err.value).startswith(expected), str(err.value)


def test_fair_sharing_and_admission_fair_sharing_are_both_honoured_at_start() -> None:
    assert refused_fields(parse_config({**V1, "fairSharing": {"enable": True}})) == []
    cfg = parse_config({**V1, "admissionFairSharing": {"usageHalfLifeTime": "1h", "usageSamplingInterval": "10s",
                                                       "resourceWeights": {"cpu": 2}}})
    assert refused_fields(cfg) == []
    assert cfg.admission_fair_sharing == AdmissionFairSharing(3600.0, 10.0, {"cpu": 2.0})
