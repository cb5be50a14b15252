"""Prometheus metrics of the webhook: request count and latency by webhook path and outcome.

gunicorn runs several worker processes and a scrape reaches only one of them, so when
``PROMETHEUS_MULTIPROC_DIR`` is set (``webhook.main`` sets it before any worker starts) the
``/metrics`` endpoint aggregates every worker's files with a ``MultiProcessCollector``.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

# Outcomes: allowed, patched (allowed with a mutation), denied, error (a rule raised and the request
# was denied), malformed (HTTP 400).
REQUESTS = Counter(
    "pykueue_webhook_requests_total",
    "Admission requests handled, by webhook path and outcome.",
    ["path", "outcome"],
)
LATENCY = Histogram(
    "pykueue_webhook_request_duration_seconds",
    "Time to answer an admission request, by webhook path and outcome.",
    ["path", "outcome"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)


# (path, outcome) -> the labelled children. ``labels()`` validates and hashes the label values and
# takes the metric's lock on every call; the set of pairs is small and fixed (the registry's paths,
# "unknown", five outcomes), so each pair is resolved once per worker. Concurrent first uses may
# both resolve a pair: labels() returns the same child, so either write is right.
_CHILDREN: dict[tuple[str, str], tuple[Any, Any]] = {}


def observe(path: str, outcome: str, seconds: float) -> None:
    children = _CHILDREN.get((path, outcome))
    if children is None:
        children = (REQUESTS.labels(path=path, outcome=outcome), LATENCY.labels(path=path, outcome=outcome))
        _CHILDREN[(path, outcome)] = children
    requests, latency = children
    requests.inc()
    latency.observe(seconds)


def exposition() -> tuple[bytes, str]:
    """The text exposition of every worker's metrics (or this process's when not multiprocess)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST
