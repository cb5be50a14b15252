"""Request metrics: each (path, outcome) pair counts on its own, through the cached children."""

from __future__ import annotations

from prometheus_client import REGISTRY

from webhook import metrics


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_repeated_observations_land_on_their_own_pair() -> None:
    path = "/validate-test-metrics-pairs"
    before = _value("pykueue_webhook_requests_total", path=path, outcome="allowed")
    for _ in range(3):
        metrics.observe(path, "allowed", 0.002)
    metrics.observe(path, "denied", 0.02)
    assert _value("pykueue_webhook_requests_total", path=path, outcome="allowed") == before + 3
    assert _value("pykueue_webhook_requests_total", path=path, outcome="denied") == 1
    assert _value("pykueue_webhook_request_duration_seconds_bucket", path=path, outcome="allowed", le="0.0025") == 3
    assert _value("pykueue_webhook_request_duration_seconds_bucket", path=path, outcome="denied", le="0.01") == 0
    assert _value("pykueue_webhook_request_duration_seconds_count", path=path, outcome="denied") == 1
