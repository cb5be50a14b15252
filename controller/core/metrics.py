"""Kueue's core Prometheus metrics (Kueue's pkg/metrics/metrics.go), same names and labels.

Dashboards and alerts written for Kueue keep working: ``kueue_pending_workloads``,
``kueue_admitted_workloads_total``, ``kueue_admission_wait_time_seconds``,
``kueue_cluster_queue_resource_usage`` and friends. They live in the default registry, which the
runtime's metrics server exposes. Gauges for a deleted ClusterQueue are removed with it so that
scrapes do not keep reporting a queue that no longer exists.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import Counter, Gauge, Histogram

from controller.runtime.metrics import WAIT_BUCKETS

ATTEMPT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

ADMISSION_ATTEMPTS = Counter(
    "kueue_admission_attempts_total",
    "Scheduling cycles, by result: success (something admitted) or inadmissible.",
    ["result"],
)
ADMISSION_ATTEMPT_DURATION = Histogram(
    "kueue_admission_attempt_duration_seconds",
    "Duration of a scheduling cycle, by result.",
    ["result"],
    buckets=ATTEMPT_BUCKETS,
)
PENDING_WORKLOADS = Gauge(
    "kueue_pending_workloads",
    "Pending workloads per ClusterQueue, by status (active: may be tried; inadmissible: parked).",
    ["cluster_queue", "status"],
)
QUOTA_RESERVED_TOTAL = Counter(
    "kueue_quota_reserved_workloads_total",
    "Workloads that got a quota reservation.",
    ["cluster_queue", "priority_class"],
)
QUOTA_RESERVED_WAIT = Histogram(
    "kueue_quota_reserved_wait_time_seconds",
    "Time from creation (or last requeue) to quota reservation.",
    ["cluster_queue", "priority_class"],
    buckets=WAIT_BUCKETS,
)
ADMITTED_TOTAL = Counter(
    "kueue_admitted_workloads_total",
    "Workloads admitted (quota reserved and all admission checks Ready).",
    ["cluster_queue", "priority_class"],
)
ADMISSION_WAIT = Histogram(
    "kueue_admission_wait_time_seconds",
    "Time from creation (or last requeue) to admission.",
    ["cluster_queue", "priority_class"],
    buckets=WAIT_BUCKETS,
)
ADMISSION_CHECKS_WAIT = Histogram(
    "kueue_admission_checks_wait_time_seconds",
    "Time from quota reservation to admission (admission checks).",
    ["cluster_queue", "priority_class"],
    buckets=WAIT_BUCKETS,
)
EVICTED_TOTAL = Counter(
    "kueue_evicted_workloads_total",
    "Evicted workloads, by reason and underlying cause.",
    ["cluster_queue", "reason", "underlying_cause", "priority_class"],
)
PREEMPTED_TOTAL = Counter(
    "kueue_preempted_workloads_total",
    "Workloads preempted, by the preempting ClusterQueue and the reason.",
    ["preempting_cluster_queue", "reason"],
)
FINISHED_TOTAL = Counter(
    "kueue_finished_workloads_total",
    "Workloads that finished while holding a reservation.",
    ["cluster_queue", "priority_class"],
)
# ResourceFlavor fallbacks (docs/design/fallbacks.md): Kueue has no such metric, hence the prefix.
FLAVOR_FALLBACKS_TOTAL = Counter(
    "pykueue_flavor_fallbacks_total",
    "Flavors a workload fell back from, by ClusterQueue, flavor and trigger "
    "(TimeoutForPodsReadyExceeded or AdmissionCheckRejected).",
    ["cluster_queue", "flavor", "trigger"],
)
RESERVING_ACTIVE = Gauge(
    "kueue_reserving_active_workloads", "Unfinished workloads holding a reservation.", ["cluster_queue"]
)
ADMITTED_ACTIVE = Gauge(
    "kueue_admitted_active_workloads", "Unfinished admitted workloads.", ["cluster_queue"]
)
CLUSTER_QUEUE_STATUS = Gauge(
    "kueue_cluster_queue_status",
    "One-hot status of a ClusterQueue: pending (inactive), active or terminating.",
    ["cluster_queue", "status"],
)
RESOURCE_RESERVATION = Gauge(
    "kueue_cluster_queue_resource_reservation",
    "Quota reserved per flavor and resource (milli-units for cpu, units otherwise).",
    ["cohort", "cluster_queue", "flavor", "resource"],
)
RESOURCE_USAGE = Gauge(
    "kueue_cluster_queue_resource_usage",
    "Quota used by admitted workloads per flavor and resource (milli-units for cpu).",
    ["cohort", "cluster_queue", "flavor", "resource"],
)
NOMINAL_QUOTA = Gauge(
    "kueue_cluster_queue_nominal_quota",
    "Nominal quota per flavor and resource (milli-units for cpu).",
    ["cohort", "cluster_queue", "flavor", "resource"],
)
LOCAL_QUEUE_PENDING = Gauge(
    "kueue_local_queue_pending_workloads",
    "Pending workloads per LocalQueue.",
    ["name", "namespace", "status"],
)

# pykueue's own (not Kueue's): how long queue status writes waited for their share of the main
# client's budget (controller.core.queue_status_controller.STATUS_WRITES_PER_SECOND).
QUEUE_STATUS_BUDGET_WAIT = Counter(
    "pykueue_queue_status_budget_wait_seconds",
    "Seconds ClusterQueue/LocalQueue status writes waited for the status write budget.",
)

# pykueue's own: the scheduler's Workload status writes by kind (reservation, preemption,
# eviction, migration, pending_reason) and result (written, conflict, not_needed, gone, failed),
# to see where the main client's requests go (docs/performance.md).
SCHEDULER_WRITES = Counter(
    "pykueue_scheduler_status_writes_total",
    "Workload status writes of the scheduler, by kind and result.",
    ["kind", "result"],
)

CQ_STATUSES = ("pending", "active", "terminating")


def set_cluster_queue_status(cluster_queue: str, status: str) -> None:
    for candidate in CQ_STATUSES:
        CLUSTER_QUEUE_STATUS.labels(cluster_queue, candidate).set(1 if candidate == status else 0)


def set_resource_gauges(
    gauge: Gauge, cohort: str, cluster_queue: str, values: Iterable[tuple[str, str, int]]
) -> None:
    for flavor, resource, amount in values:
        gauge.labels(cohort, cluster_queue, flavor, resource).set(amount)


def forget_cluster_queue(cluster_queue: str) -> None:
    """Drop every gauge series of a deleted ClusterQueue (counters keep their history)."""
    for gauge in (
        PENDING_WORKLOADS,
        RESERVING_ACTIVE,
        ADMITTED_ACTIVE,
        CLUSTER_QUEUE_STATUS,
        RESOURCE_RESERVATION,
        RESOURCE_USAGE,
        NOMINAL_QUOTA,
    ):
        for labels in list(gauge._metrics):
            names = gauge._labelnames
            if dict(zip(names, labels, strict=True)).get("cluster_queue") == cluster_queue:
                gauge.remove(*labels)


def forget_local_queue(namespace: str, name: str) -> None:
    """Drop the gauge series of a deleted LocalQueue."""
    for labels in list(LOCAL_QUEUE_PENDING._metrics):
        if dict(zip(LOCAL_QUEUE_PENDING._labelnames, labels, strict=True)) | {"status": ""} == {
            "name": name,
            "namespace": namespace,
            "status": "",
        }:
            LOCAL_QUEUE_PENDING.remove(*labels)
    for labels in list(LOCAL_QUEUE_AFS_USAGE._metrics):
        if labels[:2] == (name, namespace):
            LOCAL_QUEUE_AFS_USAGE.remove(*labels)

# Fair sharing (controller.core.fair_share_status): the weighted share that status shows, NaN for
# a queue or cohort of weight 0 that borrows (Kueue's names and meaning).
CLUSTER_QUEUE_WEIGHTED_SHARE = Gauge(
    "kueue_cluster_queue_weighted_share",
    "The ClusterQueue's dominant resource share divided by its fair sharing weight "
    "(0: within nominal quota; NaN: weight 0 and borrowing).",
    ["cluster_queue", "cohort"],
)
COHORT_WEIGHTED_SHARE = Gauge(
    "kueue_cohort_weighted_share",
    "The Cohort's dominant resource share divided by its fair sharing weight "
    "(0: within its subtree quota; NaN: weight 0 and borrowing).",
    ["cohort"],
)
# Admission fair sharing (controller.core.afs_status): a LocalQueue's usage as the scheduler
# orders by it (Kueue's name, labels and meaning; +Inf for weight 0).
LOCAL_QUEUE_AFS_USAGE = Gauge(
    "kueue_local_queue_admission_fair_sharing_usage",
    "A value representing the LocalQueue's Admission Fair Sharing usage: the resource-weighted sum "
    "of consumed resources and pending admission penalties, divided by the LocalQueue's fair "
    "sharing weight.",
    ["name", "namespace", "cluster_queue"],
)
