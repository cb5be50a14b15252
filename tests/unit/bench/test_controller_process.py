"""The controller's API-client figures as the baseline reads them from /metrics."""

from __future__ import annotations

from bench.controller_process import client_request_figures

METRICS = """# HELP pykueue_rest_client_requests_total HTTP requests
# TYPE pykueue_rest_client_requests_total counter
pykueue_rest_client_requests_total{code="200",verb="PATCH"} 40.0
pykueue_rest_client_requests_total{code="409",verb="PATCH"} 2.0
pykueue_rest_client_requests_total{code="201",verb="POST"} 10.0
pykueue_rest_client_requests_total{code="200",verb="WATCH"} 9.0
# HELP pykueue_rest_client_request_duration_seconds Latency
# TYPE pykueue_rest_client_request_duration_seconds histogram
pykueue_rest_client_request_duration_seconds_bucket{le="+Inf",verb="PATCH"} 42.0
pykueue_rest_client_request_duration_seconds_count{verb="PATCH"} 42.0
pykueue_rest_client_request_duration_seconds_sum{verb="PATCH"} 2.1
pykueue_rest_client_request_duration_seconds_bucket{le="+Inf",verb="WATCH"} 9.0
pykueue_rest_client_request_duration_seconds_count{verb="WATCH"} 9.0
pykueue_rest_client_request_duration_seconds_sum{verb="WATCH"} 900.0
# HELP pykueue_rest_client_rate_limiter_duration_seconds Wait
# TYPE pykueue_rest_client_rate_limiter_duration_seconds histogram
pykueue_rest_client_rate_limiter_duration_seconds_bucket{le="+Inf"} 61.0
pykueue_rest_client_rate_limiter_duration_seconds_count 61.0
pykueue_rest_client_rate_limiter_duration_seconds_sum 3.5
"""


def test_requests_by_verb_and_code_latency_and_limiter_wait() -> None:
    figures = client_request_figures(METRICS)
    assert figures["requests_by_verb"] == {"PATCH": 42, "POST": 10, "WATCH": 9}
    assert figures["requests_by_code"] == {"200": 49, "201": 10, "409": 2}
    assert figures["total"] == 61
    assert figures["rate_limiter_wait_s"] == 3.5
    assert figures["mean_latency_ms_by_verb"] == {"PATCH": 50.0}, "watches are long-lived, not latency"


def test_an_empty_page_has_no_requests() -> None:
    assert client_request_figures("")["total"] == 0


def test_event_counters_by_label() -> None:
    page = """# HELP pykueue_events_sent_total Event writes
# TYPE pykueue_events_sent_total counter
pykueue_events_sent_total{write="create"} 120.0
pykueue_events_sent_total{write="patch"} 7.0
# HELP pykueue_events_dropped_total Events not sent
# TYPE pykueue_events_dropped_total counter
pykueue_events_dropped_total{reason="queue_full_normal"} 3.0
"""
    events = client_request_figures(page)["events"]
    assert events == {
        "sent": {"create": 120, "patch": 7},
        "aggregated": {},
        "dropped": {"queue_full_normal": 3},
    }
