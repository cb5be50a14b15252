"""Kueue's metrics that only the job side can observe (Kueue's ``pkg/metrics/metrics.go``), same names and labels.

The moment a Job's pods are all ready is known here, when ``PodsReady`` turns True with reason
``Started``; the two wait times Kueue reports for it are observed then:

- ``kueue_ready_wait_time_seconds``: from the Workload's creation (or its last requeue) to ready;
- ``kueue_admitted_until_ready_wait_time_seconds``: from admission to ready.

``kueue_workload_creation_latency_seconds`` is observed when the Workload is created for a Job:
the time since the Job was created (the informer and queue delay a user sees before queueing).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prometheus_client import Histogram

from controller.runtime.metrics import WAIT_BUCKETS
from controller.workload import view as wv
from pykueue.api.constants import COND_ADMITTED, COND_REQUEUED
from pykueue.api.timestamps import parse_time

LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

READY_WAIT = Histogram(
    "kueue_ready_wait_time_seconds",
    "Time from creation (or last requeue) until all the Workload's pods are ready.",
    ["cluster_queue", "priority_class"],
    buckets=WAIT_BUCKETS,
)
ADMITTED_UNTIL_READY_WAIT = Histogram(
    "kueue_admitted_until_ready_wait_time_seconds",
    "Time from admission until all the Workload's pods are ready.",
    ["cluster_queue", "priority_class"],
    buckets=WAIT_BUCKETS,
)
WORKLOAD_CREATION_LATENCY = Histogram(
    "kueue_workload_creation_latency_seconds",
    "Time from a Job's creation until its Workload was created.",
    buckets=LATENCY_BUCKETS,
)


def _seconds_since(value: Any, now: datetime) -> float | None:
    moment = parse_time(value)
    return None if moment is None else max(0.0, (now - moment).total_seconds())


def observe_pods_ready(workload: dict[str, Any], now: datetime) -> None:
    """Record both wait times for a Workload whose pods just became ready for the first time."""
    labels = (wv.admitted_cluster_queue(workload), wv.priority_class_name(workload))
    requeued = wv.condition(workload, COND_REQUEUED) or {}
    since_queued = _seconds_since(
        requeued.get("lastTransitionTime") or wv.meta(workload).get("creationTimestamp"), now
    )
    if since_queued is not None:
        READY_WAIT.labels(*labels).observe(since_queued)
    admitted = wv.condition(workload, COND_ADMITTED) or {}
    since_admitted = _seconds_since(admitted.get("lastTransitionTime"), now)
    if since_admitted is not None:
        ADMITTED_UNTIL_READY_WAIT.labels(*labels).observe(since_admitted)


def observe_workload_created(job: dict[str, Any], now: datetime) -> None:
    latency = _seconds_since((job.get("metadata") or {}).get("creationTimestamp"), now)
    if latency is not None:
        WORKLOAD_CREATION_LATENCY.observe(latency)
