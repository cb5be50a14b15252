"""Probe server: /healthz, /readyz and /metrics answers, address parsing."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from controller.runtime.health import HealthChecks, parse_address, start_probe_servers
from controller.runtime.workqueue import WorkQueue


def fetch(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_readyz_follows_its_checks_and_names_the_failing_one() -> None:
    checks = HealthChecks()
    synced = {"value": False}
    checks.add_readiness("informers-synced", lambda: synced["value"])
    (server,) = start_probe_servers("127.0.0.1:0", "127.0.0.1:0", checks)
    try:
        status, body = fetch(server.port, "/readyz")
        assert status == 503 and "[-]informers-synced failed" in body
        assert fetch(server.port, "/healthz") == (200, "ok")
        synced["value"] = True
        assert fetch(server.port, "/readyz") == (200, "ok")
        status, body = fetch(server.port, "/readyz?verbose")
        assert status == 200 and "[+]informers-synced ok" in body
    finally:
        server.stop()


def test_a_raising_check_fails_instead_of_crashing() -> None:
    checks = HealthChecks()
    checks.add_liveness("boom", lambda: 1 / 0 == 0)
    (server,) = start_probe_servers("127.0.0.1:0", "127.0.0.1:0", checks)
    try:
        status, body = fetch(server.port, "/healthz")
        assert status == 503 and "[-]boom failed" in body
    finally:
        server.stop()


def test_separate_metrics_server_serves_prometheus_text() -> None:
    WorkQueue("probe-test").add("x")  # makes sure a labelled sample exists
    servers = start_probe_servers("127.0.0.1:0", "0.0.0.0:0", HealthChecks())
    try:
        health, metrics = servers
        status, body = fetch(metrics.port, "/metrics")
        assert status == 200
        assert 'workqueue_depth{name="probe-test"} 1.0' in body
        assert fetch(health.port, "/metrics")[0] == 404, "the health port does not serve metrics"
        assert fetch(metrics.port, "/healthz")[0] == 404, "the metrics port does not serve probes"
    finally:
        for server in servers:
            server.stop()


def test_disabled_addresses_start_nothing() -> None:
    assert start_probe_servers("0", "0", HealthChecks()) == []


@pytest.mark.parametrize(
    ("address", "expected"),
    [(":8081", ("0.0.0.0", 8081)), ("127.0.0.1:9", ("127.0.0.1", 9)), ("[::1]:80", ("::1", 80))],
)
def test_parse_address(address: str, expected: tuple[str, int]) -> None:
    assert parse_address(address) == expected


@pytest.mark.parametrize("address", ["host:http", "host:70000"])
def test_bad_address_is_explained(address: str) -> None:
    with pytest.raises(ValueError, match="port must be"):
        parse_address(address)
