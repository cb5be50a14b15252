"""Prometheus metrics of the API client, shared by both programs (client-go's rest_client_*)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

REQUESTS = Counter(
    "pykueue_rest_client_requests_total",
    "HTTP requests to the Kubernetes API, by verb and status code (0: no answer).",
    ["verb", "code"],
)
REQUEST_DURATION = Histogram(
    "pykueue_rest_client_request_duration_seconds",
    "Latency of Kubernetes API requests (until the headers arrive, for streams).",
    ["verb"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
RETRIES = Counter(
    "pykueue_rest_client_retries_total",
    "Kubernetes API requests retried, by the cause of the retry.",
    ["reason"],
)
RATE_LIMITER_WAIT = Histogram(
    "pykueue_rest_client_rate_limiter_duration_seconds",
    "Time requests waited for the client-side QPS/burst limiter.",
    buckets=(0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10),
)
