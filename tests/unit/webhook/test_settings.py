"""Command line, Configuration wiring, the TTL cache of cluster reads, and the small kinds' rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from pykueue.kube import resources as r
from tests.builders import LocalQueueBuilder
from tests.unit.webhook.conftest import post
from tests.unit.webhook.reviews import review
from webhook.cluster_state import KubeClusterState, TTLCache
from webhook.main import job_policy_from_config, parse_args, server_options


def test_defaults_match_the_agreed_command_line() -> None:
    settings = parse_args([])
    assert (settings.bind, settings.port, settings.workers) == ("0.0.0.0", 9443, 2)
    assert settings.cert_secret == "pykueue-webhook-server-cert"
    assert settings.service_name == "pykueue-webhook-service"
    assert settings.cert_management == "internal"
    assert settings.controller_username == "system:serviceaccount:pykueue-system:pykueue-controller"


def test_local_url_must_be_https() -> None:
    with pytest.raises(SystemExit):
        parse_args(["--local-url", "http://127.0.0.1:9443"])


def test_job_policy_from_configuration_file(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nmanageJobsWithoutQueueName: true\n"
        "managedJobsNamespaceSelector:\n  matchLabels:\n    team: a\n"
    )
    policy = job_policy_from_config(parse_args(["--config", str(config)]))
    assert policy.manage_jobs_without_queue_name is True
    assert policy.managed_jobs_namespace_selector == {"matchLabels": {"team": "a"}}


def test_without_configuration_own_namespace_is_excluded() -> None:
    policy = job_policy_from_config(parse_args(["--namespace", "queues"]))
    assert policy.manage_jobs_without_queue_name is False
    assert policy.managed_jobs_namespace_selector == {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "queues"]}]}


def test_bad_configuration_stops_with_the_field(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nmanageJobsWithoutQueueName: 3\n")
    with pytest.raises(SystemExit, match="manageJobsWithoutQueueName"):
        job_policy_from_config(parse_args(["--config", str(config)]))


def _config_file(tmp_path: Path, **fields: Any) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps({"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration", **fields}))
    return str(path)


def test_listener_and_certificates_come_from_the_configuration(tmp_path: Path) -> None:
    config = _config_file(
        tmp_path,
        webhook={"port": 10250, "host": "127.0.0.1", "certDir": "/certs"},
        internalCertManagement={"enable": False, "webhookServiceName": "svc", "webhookSecretName": "sec"},
    )
    settings = parse_args(["--config", config])
    assert (settings.bind, settings.port, str(settings.cert_dir)) == ("127.0.0.1", 10250, "/certs")
    assert (settings.cert_management, settings.service_name, settings.cert_secret) == ("external", "svc", "sec")
    assert server_options(settings, Path("c"), Path("k")).bind == "127.0.0.1:10250"


def test_flags_win_over_the_configuration(tmp_path: Path) -> None:
    config = _config_file(
        tmp_path,
        webhook={"port": 10250, "host": "127.0.0.1", "certDir": "/certs"},
        internalCertManagement={"enable": False, "webhookServiceName": "svc", "webhookSecretName": "sec"},
    )
    settings = parse_args([
        "--config", config, "--port", "9443", "--bind", "0.0.0.0", "--cert-dir", "/tmp/c",
        "--cert-management", "internal", "--service-name", "s2", "--cert-secret", "c2",
    ])
    assert (settings.bind, settings.port, str(settings.cert_dir)) == ("0.0.0.0", 9443, "/tmp/c")
    assert (settings.cert_management, settings.service_name, settings.cert_secret) == ("internal", "s2", "c2")


def test_every_multikueue_dispatcher_is_accepted_at_start(tmp_path: Path) -> None:
    incremental = {"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental"}
    assert parse_args(["--config", _config_file(tmp_path, multiKueue=incremental)]).port == 9443
    external = {"dispatcherName": "example.com/my-dispatcher"}
    assert parse_args(["--config", _config_file(tmp_path, multiKueue=external)]).port == 9443
    assert parse_args(["--config", _config_file(tmp_path, multiKueue={"gcInterval": "5m"})]).port == 9443
    assert parse_args(["--config", _config_file(tmp_path, multiKueue={})]).port == 9443


class CountingClient:
    def __init__(self, objects: dict[tuple[str, str, str], Any]) -> None:
        self.objects = objects
        self.gets = 0

    def get(self, res: r.Resource, name: str, namespace: str | None = None) -> Any:
        self.gets += 1
        return self.objects.get((res.plural, namespace or "", name))


def test_reads_are_cached_briefly_and_misses_more_briefly() -> None:
    now = [0.0]
    client = CountingClient({("localqueues", "ns", "default"): {"kind": "LocalQueue"}})
    state = KubeClusterState(lambda: client)  # type: ignore[arg-type, return-value]
    state._cache = TTLCache(5.0, 1.0, clock=lambda: now[0])
    assert state.local_queue("ns", "default") == {"kind": "LocalQueue"}
    assert state.local_queue("ns", "missing") is None
    assert client.gets == 2
    now[0] = 0.5
    state.local_queue("ns", "default")
    state.local_queue("ns", "missing")
    assert client.gets == 2
    now[0] = 1.5  # the miss expired, the hit has not
    state.local_queue("ns", "default")
    state.local_queue("ns", "missing")
    assert client.gets == 3


def test_local_queue_cluster_queue_is_immutable(client: FlaskClient) -> None:
    old = LocalQueueBuilder("lq", "ns", "cq-a").obj()
    new = LocalQueueBuilder("lq", "ns", "cq-b").obj()
    answer = post(client, "/validate-kueue-x-k8s-io-v1beta1-localqueue",
                  review("LocalQueue", new, old=old, operation="UPDATE"))["response"]
    assert answer["status"]["message"] == (
        'spec.clusterQueue: Invalid value: "cq-b": field is immutable')


def test_admission_check_controller_is_immutable(client: FlaskClient) -> None:
    def check(controller: str) -> dict[str, Any]:
        return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "AdmissionCheck", "metadata": {"name": "ac"},
                "spec": {"controllerName": controller}}

    answer = post(client, "/validate-kueue-x-k8s-io-v1beta1-admissioncheck",
                  review("AdmissionCheck", check("b.example/x"), old=check("a.example/x"), operation="UPDATE"))
    assert 'spec.controllerName: Invalid value: "b.example/x": field is immutable' in answer["response"]["status"][
        "message"]
