"""A strange Job (wrong types anywhere) never crashes a reconcile: an Event, a log line, or nothing."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.jobs.reconciler import JobReconciler, JobSettings
from pykueue.kube import resources as R
from pykueue.kube.errors import ApiError
from tests.builders import JobBuilder, ResourceFlavorBuilder
from tests.unit.jobs.fake import FakeCluster

GARBAGE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.text(max_size=5),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
)
PATHS = [
    ("spec", "parallelism"),
    ("spec", "completions"),
    ("spec", "suspend"),
    ("spec", "template"),
    ("spec", "template", "metadata"),
    ("spec", "template", "spec"),
    ("spec", "template", "spec", "containers"),
    ("spec", "template", "spec", "nodeSelector"),
    ("spec", "template", "spec", "tolerations"),
    ("spec", "template", "spec", "priorityClassName"),
    ("metadata", "annotations"),
    ("metadata", "ownerReferences"),
    ("status",),
    ("status", "conditions"),
    ("status", "active"),
]


def _set(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node: Any = obj
    for part in path[:-1]:
        if not isinstance(node, dict):
            return
        node = node.setdefault(part, {})
    if isinstance(node, dict):
        node[path[-1]] = value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), GARBAGE), min_size=1, max_size=3))
def test_reconcile_survives_garbage(mutations: list[tuple[tuple[str, ...], Any]]) -> None:
    cluster = FakeCluster()
    cluster.put(R.RESOURCE_FLAVORS, ResourceFlavorBuilder("spot").obj())
    job = JobBuilder("job", "ns").queue("lq").suspend().requests(cpu="1").obj()
    for path, value in mutations:
        _set(job, path, copy.deepcopy(value))
    cluster.put(R.JOBS, job)
    reconciler = JobReconciler(cluster, cluster, JobSettings(wait_for_pods_ready=True), events=cluster)
    for _ in range(2):
        with contextlib.suppress(ApiError):  # the API refusing a write is an answer, not a crash
            reconciler.reconcile("ns", "job")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), GARBAGE), min_size=1, max_size=3), st.booleans())
def test_start_and_stop_survive_garbage(mutations: list[tuple[tuple[str, ...], Any]], evicted: bool) -> None:
    """The same, once the Job's Workload is admitted (start path) or evicted (stop path)."""
    cluster = FakeCluster()
    cluster.put(R.RESOURCE_FLAVORS, ResourceFlavorBuilder("spot").obj())
    cluster.put(R.JOBS, JobBuilder("job", "ns").queue("lq").suspend().requests(cpu="1").obj())
    reconciler = JobReconciler(cluster, cluster, JobSettings(wait_for_pods_ready=True), events=cluster)
    reconciler.reconcile("ns", "job")
    [wl] = cluster.of(R.WORKLOADS)
    conditions = [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": ""},
        {"type": "Admitted", "status": "True", "reason": "Admitted", "message": ""},
    ]
    if evicted:
        conditions.append({"type": "Evicted", "status": "True", "reason": "Preempted", "message": ""})
    admission = {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "flavors": {"cpu": "spot"}}]}
    cluster.patch_status(
        R.WORKLOADS,
        wl["metadata"]["name"],
        {"status": {"admission": admission, "conditions": conditions}},
        "ns",
    )
    job = cluster.job("ns", "job")
    assert job is not None
    job = copy.deepcopy(job)
    for path, value in mutations:
        _set(job, path, copy.deepcopy(value))
    cluster.objects[("jobs", "ns", "job")] = job
    for _ in range(3):
        with contextlib.suppress(ApiError):
            reconciler.reconcile("ns", "job")
