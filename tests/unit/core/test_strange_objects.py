"""Strange objects never crash the core logic (property-based: any JSON in any field)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.core import finalizers, priority, queue_status
from controller.workload import admissionchecks as checks
from controller.workload.decisions import PodsReadyPolicy, WorkloadContext, plan_workload
from controller.workload.patches import queue_status_patch, workload_status_patch
from controller.workload.scheduling_patches import pending_patch, preemption_patch, reservation_patch
from tests.builders import ClusterQueueBuilder, LocalQueueBuilder, WorkloadBuilder

NOW = datetime(2026, 1, 1, tzinfo=UTC)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
FIELDS = {
    "spec": [
        "queueName",
        "active",
        "priority",
        "priorityClassName",
        "podSets",
        "stopPolicy",
        "resourceGroups",
        "admissionChecks",
        "admissionChecksStrategy",
        "clusterQueue",
        "cohort",
    ],
    "status": ["conditions", "admission", "admissionChecks", "requeueState"],
    "metadata": [
        "name",
        "namespace",
        "generation",
        "ownerReferences",
        "deletionTimestamp",
        "resourceVersion",
        "finalizers",
        "creationTimestamp",
        "uid",
    ],
}


@st.composite
def mangled(draw: st.DrawFn, base: dict) -> dict:
    obj = dict(base)
    for section, fields in FIELDS.items():
        if draw(st.booleans()):
            obj[section] = draw(json_values)
            continue
        part = dict(obj.get(section) or {})
        for field in fields:
            if draw(st.integers(0, 3)) == 0:
                part[field] = draw(json_values)
        obj[section] = part
    return obj


WORKLOAD = (
    WorkloadBuilder("w", "ns")
    .queue("lq")
    .podset(cpu="1")
    .reserved("cq", {"cpu": "f"}, {"cpu": "1"})
    .admitted()
    .check("ac", "Retry")
    .obj()
)
CQ = ClusterQueueBuilder("cq").flavor("f", cpu="1").admission_checks("ac").obj()
LQ = LocalQueueBuilder("lq", "ns", "cq").obj()


@settings(max_examples=80, deadline=None)
@given(wl=mangled(WORKLOAD), cq=mangled(CQ), lq=mangled(LQ))
def test_core_logic_tolerates_any_shape(wl: dict, cq: dict, lq: dict) -> None:
    plan = plan_workload(wl, WorkloadContext(lq, cq, PodsReadyPolicy(timeout_seconds=1)), NOW)
    workload_status_patch(wl, plan, NOW)
    reservation_patch(
        wl, uid="", admission={"clusterQueue": "cq"}, admission_checks=("ac",), message="m", now=NOW
    )
    preemption_patch(wl, uid="", reason="InClusterQueue", message="m", now=NOW)
    pending_patch(wl, reason="WaitingForQuota", message="m", now=NOW)
    counts = queue_status.count_workloads([wl], pending=1)
    queue_status_patch(
        cq,
        queue_status.cluster_queue_status_fields(cq, counts),
        queue_status.cluster_queue_active(cq, ["f"], {"ac": True}),
        NOW,
    )
    queue_status_patch(
        lq, queue_status.local_queue_status_fields(counts), queue_status.local_queue_active(lq, cq, True), NOW
    )
    checks.required_checks(cq.get("spec") if isinstance(cq.get("spec"), dict) else {}, wl.get("status"))
    finalizers.cluster_queue_releasable(cq, [wl])
    finalizers.flavor_releasable(cq, [cq])
    finalizers.release_patch(cq)
    priority.desired_priority(wl, lambda _n: {"value": 3}, lambda _n: None)
