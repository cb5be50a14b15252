"""The controller Configuration: Kueue's v1beta1 defaults, and errors that name the bad field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api.config import (
    DISPATCHER_ALL_AT_ONCE,
    DISPATCHER_INCREMENTAL,
    ConfigError,
    Configuration,
    load_config,
    parse_config,
    refused_fields,
    require_supported,
)

HEADER = {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration"}


def doc(**fields: Any) -> dict[str, Any]:
    return {**HEADER, **fields}


def test_no_file_gives_kueue_defaults() -> None:
    cfg = load_config(None)
    assert cfg == Configuration()
    assert cfg.namespace == "pykueue-system"
    assert cfg.manage_jobs_without_queue_name is False
    assert cfg.wait_for_pods_ready.enable is False
    assert cfg.wait_for_pods_ready.timeout == 300
    assert cfg.client_connection.qps == 20 and cfg.client_connection.burst == 30
    assert cfg.integrations.frameworks == ("batch/job",)
    assert cfg.internal_cert_management.enable is True
    assert cfg.internal_cert_management.webhook_secret_name == "pykueue-webhook-server-cert"
    assert (cfg.leader_election.lease_duration, cfg.leader_election.renew_deadline,
            cfg.leader_election.retry_period) == (15, 10, 2)
    assert (cfg.metrics_bind_address, cfg.health_probe_bind_address) == (":8080", ":8081")
    assert cfg.multi_kueue.gc_interval == 60
    assert cfg.multi_kueue.origin == "multikueue"
    assert cfg.multi_kueue.worker_lost_timeout == 900
    assert cfg.multi_kueue.dispatcher_name == DISPATCHER_ALL_AT_ONCE
    assert cfg.managed_jobs_namespace_selector["matchExpressions"][0]["values"] == ["kube-system", "pykueue-system"]


def test_a_full_file_is_loaded(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(doc(
        namespace="queues",
        manageJobsWithoutQueueName=True,
        waitForPodsReady={"enable": True, "timeout": "10m", "recoveryTimeout": "1m30s",
                          "requeuingStrategy": {"timestamp": "Creation", "backoffLimitCount": 5}},
        clientConnection={"qps": 50, "burst": 100},
        integrations={"frameworks": ["batch/job"]},
        internalCertManagement={"enable": False},
        leaderElection={"leaderElect": True, "leaseDuration": "30s", "renewDeadline": "20s", "retryPeriod": "4s"},
        metrics={"bindAddress": ":9090"},
        health={"healthProbeBindAddress": ":9091"},
        multiKueue={"gcInterval": "2m", "origin": "manager-1", "workerLostTimeout": "5m",
                    "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental"},
    )))
    cfg = load_config(path)
    assert cfg.namespace == "queues"
    assert cfg.managed_jobs_namespace_selector["matchExpressions"][0]["values"] == ["kube-system", "queues"]
    assert cfg.wait_for_pods_ready.enable and cfg.wait_for_pods_ready.block_admission
    assert cfg.wait_for_pods_ready.timeout == 600
    assert cfg.wait_for_pods_ready.recovery_timeout == 90
    assert cfg.wait_for_pods_ready.requeuing_strategy.timestamp == "Creation"
    assert cfg.wait_for_pods_ready.requeuing_strategy.backoff_limit_count == 5
    assert cfg.client_connection.qps == 50.0
    assert not cfg.internal_cert_management.enable
    assert cfg.leader_election.lease_duration == 30
    assert cfg.metrics_bind_address == ":9090"
    assert cfg.multi_kueue.gc_interval == 120
    assert cfg.multi_kueue.origin == "manager-1"


INVALID = [
    ("zero timeout", doc(waitForPodsReady={"enable": True, "timeout": "0s"}),
     'waitForPodsReady.timeout: Invalid value: "0s": must be greater than 0'),
    ("timeout not a duration", doc(waitForPodsReady={"timeout": "five minutes"}),
     'waitForPodsReady.timeout: Invalid value: "five minutes": should match'),
    ("bad requeuing timestamp", doc(waitForPodsReady={"requeuingStrategy": {"timestamp": "Now"}}),
     'waitForPodsReady.requeuingStrategy.timestamp: Unsupported value: "Now": supported values: "Eviction", "Creation"'),
    ("negative backoff", doc(waitForPodsReady={"requeuingStrategy": {"backoffBaseSeconds": -1}}),
     "waitForPodsReady.requeuingStrategy.backoffBaseSeconds: Invalid value: -1"),
    ("max below base", doc(waitForPodsReady={"requeuingStrategy": {"backoffBaseSeconds": 60, "backoffMaxSeconds": 10}}),
     "waitForPodsReady.requeuingStrategy.backoffMaxSeconds: Invalid value: 10: must be greater than or equal to"),
    ("unknown field", doc(waitForPodsReady={"enabled": True}),
     'waitForPodsReady.enabled: Invalid value: unknown field "enabled"'),
    ("unknown top-level field", doc(queueVisibility={}), 'queueVisibility: Invalid value: unknown field "queueVisibility"'),
    ("wrong type", doc(manageJobsWithoutQueueName="yes"),
     'manageJobsWithoutQueueName: Invalid value: "yes": must be of type boolean'),
    ("unsupported framework", doc(integrations={"frameworks": ["batch/job", "pod"]}),
     'integrations.frameworks[1]: Unsupported value: "pod": supported values: "batch/job"'),
    ("empty frameworks", doc(integrations={"frameworks": []}), "integrations.frameworks: Invalid value"),
    ("selector matches kube-system", doc(managedJobsNamespaceSelector={}),
     'managedJobsNamespaceSelector: Invalid value: "object": should not match the kube-system namespace'),
    ("bad namespace", doc(namespace="Pykueue"), 'namespace: Invalid value: "Pykueue": should match'),
    ("wrong apiVersion", {"apiVersion": "config.kueue.x-k8s.io/v1alpha1", "kind": "Configuration"},
     'apiVersion: Unsupported value: "config.kueue.x-k8s.io/v1alpha1": supported values: '
     '"config.kueue.x-k8s.io/v1beta1", "config.kueue.x-k8s.io/v1beta2"'),
    ("missing kind", {"apiVersion": "config.kueue.x-k8s.io/v1beta1"}, "kind: Required value"),
    ("renew deadline above lease", doc(leaderElection={"leaseDuration": "10s", "renewDeadline": "15s"}),
     'leaderElection.renewDeadline: Invalid value: "15s": must be less than leaseDuration'),
    ("bad origin", doc(multiKueue={"origin": "not a label!"}), 'multiKueue.origin: Invalid value: "not a label!"'),
    ("bad dispatcher", doc(multiKueue={"dispatcherName": "incremental"}),
     'multiKueue.dispatcherName: Invalid value: "incremental": must be a domain-prefixed path'),
    ("webhook port out of range", doc(webhook={"port": 70000}), "webhook.port: Invalid value: 70000"),
]


@pytest.mark.parametrize(("raw", "expected"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_configuration_names_the_field(raw: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(raw)
    assert any(str(e).startswith(expected) for e in info.value.errors), str(info.value)
    assert str(info.value).startswith(str(info.value.errors[0]))


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        load_config(bad)
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("42\n")
    with pytest.raises(ConfigError, match="must be a YAML mapping"):
        load_config(scalar)


def test_config_error_is_a_value_error() -> None:
    """The controller's start-up code catches ValueError for every bad-input case."""
    with pytest.raises(ValueError, match=r"waitForPodsReady\.timeout"):
        parse_config(doc(waitForPodsReady={"timeout": "0s"}))


# --- what the programs refuse at start --------------------------------------------------------------


def test_absent_empty_or_default_multikueue_is_not_refused() -> None:
    assert refused_fields(Configuration()) == []
    honoured = {"gcInterval": "2m", "origin": "manager-1", "workerLostTimeout": "5m"}
    assert refused_fields(parse_config(doc(multiKueue=honoured))) == []
    assert refused_fields(parse_config(doc(multiKueue={}))) == []
    spelled_out = {"gcInterval": "1m", "origin": "multikueue", "workerLostTimeout": "15m",
                   "dispatcherName": DISPATCHER_ALL_AT_ONCE}
    assert refused_fields(parse_config(doc(multiKueue=spelled_out))) == []


@pytest.mark.parametrize(
    "dispatcher",
    [DISPATCHER_INCREMENTAL, "example.com/my-dispatcher"],  # Kueue's Incremental, and an external one
)
def test_every_multikueue_dispatcher_is_accepted_and_started(dispatcher: str) -> None:
    cfg = parse_config(doc(multiKueue={"dispatcherName": dispatcher}))
    assert cfg.multi_kueue.dispatcher_name == dispatcher
    assert refused_fields(cfg) == []
    assert require_supported(cfg, "config.yaml") is cfg


def test_a_dispatcher_name_must_be_a_domain_prefixed_path() -> None:
    with pytest.raises(ConfigError, match=r"multiKueue\.dispatcherName"):
        parse_config(doc(multiKueue={"dispatcherName": "incremental"}))


# --- config.kueue.x-k8s.io/v1beta2 -----------------------------------------------------------------

V1BETA2 = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}


def test_a_v1beta2_configuration_reads_as_the_v1beta1_one_it_stands_for() -> None:
    cfg = parse_config({**V1BETA2, "manageJobsWithoutQueueName": True, "waitForPodsReady": {"timeout": "2m"}})
    assert cfg.manage_jobs_without_queue_name is True
    # Kueue v1beta2: the section's presence enables waiting; an unset blockAdmission is false.
    assert cfg.wait_for_pods_ready.enable is True
    assert cfg.wait_for_pods_ready.timeout == 120.0
    assert cfg.wait_for_pods_ready.block_admission is False
    assert parse_config({**V1BETA2, "waitForPodsReady": {"blockAdmission": True}}).wait_for_pods_ready.block_admission
    assert parse_config(V1BETA2).wait_for_pods_ready.enable is False


def test_v1beta2_has_no_wait_for_pods_ready_enable() -> None:
    with pytest.raises(ConfigError, match=r"waitForPodsReady\.enable"):
        parse_config({**V1BETA2, "waitForPodsReady": {"enable": True}})


def test_other_versions_are_refused() -> None:
    with pytest.raises(ConfigError, match="apiVersion"):
        parse_config({"apiVersion": "config.kueue.x-k8s.io/v1alpha1", "kind": "Configuration"})


# --- v1beta2 multiKueue.incrementalDispatcherConfig (Kueue's validateMultiKueue and defaults) --------


def v1beta2_mk(**multikueue: Any) -> dict[str, Any]:
    return {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration", "multiKueue": multikueue}


def test_the_incremental_step_size_is_read_and_defaults_to_three() -> None:
    cfg = parse_config(v1beta2_mk(dispatcherName=DISPATCHER_INCREMENTAL, incrementalDispatcherConfig={"stepSize": 1}))
    assert cfg.multi_kueue.incremental_step_size == 1
    assert refused_fields(cfg) == []
    assert parse_config(v1beta2_mk(dispatcherName=DISPATCHER_INCREMENTAL)).multi_kueue.incremental_step_size == 3
    empty = v1beta2_mk(dispatcherName=DISPATCHER_INCREMENTAL, incrementalDispatcherConfig={})
    assert parse_config(empty).multi_kueue.incremental_step_size == 3


@pytest.mark.parametrize(
    ("multikueue", "message"),
    [
        ({"dispatcherName": DISPATCHER_INCREMENTAL, "incrementalDispatcherConfig": {"stepSize": 0}},
         'multiKueue.incrementalDispatcherConfig.stepSize: Invalid value: 0: must be greater than or equal to 1'),
        ({"dispatcherName": DISPATCHER_INCREMENTAL, "incrementalDispatcherConfig": {"stepSize": -2}},
         "must be greater than or equal to 1"),
        ({"incrementalDispatcherConfig": {"stepSize": 2}},
         "incrementalDispatcherConfig is only valid when dispatcherName is set to the incremental dispatcher"),
        ({"dispatcherName": "example.com/mine", "incrementalDispatcherConfig": {}},
         "only valid when dispatcherName is set to the incremental dispatcher"),
        ({"dispatcherName": DISPATCHER_INCREMENTAL, "incrementalDispatcherConfig": {"stepSize": "3"}},
         "multiKueue.incrementalDispatcherConfig.stepSize"),
        ({"dispatcherName": DISPATCHER_INCREMENTAL, "incrementalDispatcherConfig": {"size": 3}},
         'unknown field "size"'),
    ],
)
def test_a_bad_incremental_dispatcher_config_is_refused_naming_the_field(multikueue: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(v1beta2_mk(**multikueue))
    assert message in str(err.value)


def test_incremental_dispatcher_config_is_not_a_v1beta1_field() -> None:
    with pytest.raises(ConfigError, match=r'unknown field "multiKueue\.incrementalDispatcherConfig"'):
        parse_config(doc(multiKueue={"dispatcherName": DISPATCHER_INCREMENTAL, "incrementalDispatcherConfig": {"stepSize": 2}}))
