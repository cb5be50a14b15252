"""Kueue's ``replica_role`` label (pkg/metrics/metrics.go, v0.19.2): on every ``kueue_*`` series
but ``kueue_build_info``, ``leader``/``follower`` under leader election
and ``standalone`` without it; pykueue's own series unchanged."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.parser import text_string_to_metric_families

from controller.core import metrics as m
from controller.runtime.health import HealthChecks, start_probe_servers
from controller.runtime.replica_role import FOLLOWER, LEADER, STANDALONE, exposition, role_of
from tests.unit.runtime.test_health import fetch


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    Gauge("kueue_pending_workloads", "pending", ["cluster_queue", "status"], registry=registry).labels("cq", "active").set(3)
    Counter("kueue_admission_attempts_total", "attempts", ["result"], registry=registry).labels("success").inc()
    Histogram("kueue_admission_wait_time_seconds", "wait", ["cluster_queue"], registry=registry).labels("cq").observe(1)
    Gauge("kueue_build_info", "build", ["git_version"], registry=registry).labels("v").set(1)
    Gauge("pykueue_events_dropped", "ours", registry=registry).set(2)
    return registry


def _labels(text: str) -> dict[str, list[dict[str, str]]]:
    return {f.name: [s.labels for s in f.samples] for f in text_string_to_metric_families(text)}


def test_every_kueue_series_but_build_info_carries_the_role() -> None:
    text = exposition(lambda: LEADER, _registry()).decode()
    labels = _labels(text)
    assert labels["kueue_pending_workloads"] == [{"cluster_queue": "cq", "status": "active", "replica_role": "leader"}]
    assert all(s["replica_role"] == "leader" for s in labels["kueue_admission_attempts"])
    assert all(s["replica_role"] == "leader" for s in labels["kueue_admission_wait_time_seconds"])
    assert labels["kueue_build_info"] == [{"git_version": "v"}]
    assert labels["pykueue_events_dropped"] == [{}]
    # The text format lists a series' labels sorted by name (prometheus_client), Kueue's Go client too.
    assert 'kueue_pending_workloads{cluster_queue="cq",replica_role="leader",status="active"} 3.0' in text


def test_the_role_follows_leadership_and_leader_election() -> None:
    leading = {"now": False}
    role = role_of(True, lambda: leading["now"])
    assert role() == FOLLOWER
    leading["now"] = True
    assert role() == LEADER
    assert role_of(False, lambda: False)() == STANDALONE
    assert exposition(None, _registry()).decode().count("replica_role") == 0


def test_the_metrics_endpoint_labels_the_process_registry() -> None:
    m.PENDING_WORKLOADS.labels("cq-role", "active").set(1)
    (server,) = start_probe_servers("127.0.0.1:0", "127.0.0.1:0", HealthChecks(), role_of(False, lambda: False))
    try:
        status, body = fetch(server.port, "/metrics")
    finally:
        server.stop()
    assert status == 200
    series = [s for s in _labels(body)["kueue_pending_workloads"] if s.get("cluster_queue") == "cq-role"]
    assert series and all(s["replica_role"] == "standalone" for s in series)
