"""The controller's API-client figures as the baseline reads them from /metrics."""

from __future__ import annotations

import pytest

from bench.controller_process import client_request_figures, histogram_quantile

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


def test_event_queue_wait_quantiles_maximum_and_waiting_room() -> None:
    page = """# HELP pykueue_events_queue_wait_seconds Wait
# TYPE pykueue_events_queue_wait_seconds histogram
pykueue_events_queue_wait_seconds_bucket{le="1.0"} 50.0
pykueue_events_queue_wait_seconds_bucket{le="10.0"} 90.0
pykueue_events_queue_wait_seconds_bucket{le="100.0"} 100.0
pykueue_events_queue_wait_seconds_bucket{le="+Inf"} 100.0
pykueue_events_queue_wait_seconds_count 100.0
pykueue_events_queue_wait_seconds_sum 900.0
# HELP pykueue_events_queue_wait_max_seconds Longest
# TYPE pykueue_events_queue_wait_max_seconds gauge
pykueue_events_queue_wait_max_seconds 42.0
# HELP pykueue_events_waiting Now
# TYPE pykueue_events_waiting gauge
pykueue_events_waiting 7.0
# HELP pykueue_events_oldest_waiting_seconds Oldest
# TYPE pykueue_events_oldest_waiting_seconds gauge
pykueue_events_oldest_waiting_seconds 12.345
# HELP pykueue_events_waiting_peak Most
# TYPE pykueue_events_waiting_peak gauge
pykueue_events_waiting_peak 1234.0
"""
    assert client_request_figures(page)["event_queue"] == {
        "taken": 100,
        "wait_p50_s": 1.0,
        "wait_p99_s": 42.0,  # 91 s by the buckets, above the measured maximum
        "wait_max_s": 42.0,
        "waiting_at_end": 7,
        "oldest_waiting_at_end_s": 12.35,
        "waiting_peak": 1234,
    }
    assert client_request_figures(METRICS)["event_queue"] == {}, "a controller without the metrics"


def test_histogram_quantile_interpolates_inside_its_bucket_as_prometheus() -> None:
    buckets = [(0.5, 0.0), (1.0, 10.0), (5.0, 30.0), (float("inf"), 40.0)]
    assert histogram_quantile(0.5, buckets) == 3.0  # rank 20: halfway from 1 to 5
    assert histogram_quantile(0.1, buckets) == pytest.approx(0.7)  # rank 4 of the 10 between 0.5 and 1
    assert histogram_quantile(0.99, buckets) == 5.0, "in +Inf: the highest finite bound"
    assert histogram_quantile(0.5, [(1.0, 0.0), (float("inf"), 0.0)]) is None
