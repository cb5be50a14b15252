"""ClusterQueue/LocalQueue status computation and write-only-when-changed diffing."""

from __future__ import annotations

from datetime import UTC, datetime

from controller.core import queue_status as qs
from controller.workload.patches import apply_conditions, queue_status_patch, workload_status_patch
from controller.workload.status_plan import ConditionSpec, WorkloadPlan
from tests.builders import AdmissionCheckBuilder, ClusterQueueBuilder, LocalQueueBuilder, WorkloadBuilder

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
CQ = (
    ClusterQueueBuilder("cq")
    .flavor("on-demand", cpu="4", memory="8Gi")
    .flavor("spot", cpu="2", memory="4Gi")
    .obj()
)


def _reserving(name: str, cpu: str, memory: str, flavor: str = "on-demand", admitted: bool = True) -> dict:
    b = WorkloadBuilder(name, "ns").queue("lq").podset(cpu=cpu, memory=memory)
    b.reserved("cq", {"cpu": flavor, "memory": flavor}, {"cpu": cpu, "memory": memory})
    return (b.admitted() if admitted else b).obj()


def test_counts_and_usage_split_reserved_from_admitted() -> None:
    workloads = [
        _reserving("a", "3", "4Gi"),
        _reserving("b", "1500m", "2Gi", admitted=False),
        _reserving("c", "1", "1Gi", flavor="spot"),
        WorkloadBuilder("done", "ns").reserved("cq").admitted().finished().obj(),
    ]
    counts = qs.count_workloads(workloads, pending=7)
    fields = qs.cluster_queue_status_fields(CQ, counts)
    assert (fields["pendingWorkloads"], fields["reservingWorkloads"], fields["admittedWorkloads"]) == (
        7,
        3,
        2,
    )
    assert fields["flavorsReservation"] == [
        {
            "name": "on-demand",
            "resources": [
                {"name": "cpu", "total": "4500m", "borrowed": "500m"},
                {"name": "memory", "total": "6Gi", "borrowed": "0"},
            ],
        },
        {
            "name": "spot",
            "resources": [
                {"name": "cpu", "total": "1", "borrowed": "0"},
                {"name": "memory", "total": "1Gi", "borrowed": "0"},
            ],
        },
    ]
    assert fields["flavorsUsage"][0]["resources"][0] == {"name": "cpu", "total": "3", "borrowed": "0"}
    lq_fields = qs.local_queue_status_fields(counts)
    assert lq_fields["flavorUsage"] == [
        {
            "name": "on-demand",
            "resources": [{"name": "cpu", "total": "3"}, {"name": "memory", "total": "4Gi"}],
        },
        {"name": "spot", "resources": [{"name": "cpu", "total": "1"}, {"name": "memory", "total": "1Gi"}]},
    ]


def test_malformed_usage_is_ignored() -> None:
    wl = WorkloadBuilder("w").reserved("cq", {"cpu": "f"}, {"cpu": "lots", "memory": "1Gi"}).obj()
    assert qs.workload_usage(wl) == {}


def test_pending_excludes_inactive_finished_and_reserved() -> None:
    assert qs.is_pending(WorkloadBuilder("w").obj())
    assert not qs.is_pending(WorkloadBuilder("w").active(False).obj())
    assert not qs.is_pending(WorkloadBuilder("w").finished().obj())
    assert not qs.is_pending(WorkloadBuilder("w").reserved("cq").obj())


def test_cluster_queue_active_reasons_first_wins_message_lists_all() -> None:
    ok = qs.cluster_queue_active(CQ, ["on-demand", "spot"], {})
    assert (ok.status, ok.reason, ok.message) == ("True", "Ready", "Can admit new workloads")
    cq = (
        ClusterQueueBuilder("cq")
        .flavor("gone", cpu="1")
        .admission_checks("missing", "off")
        .stop_policy("Hold")
        .obj()
    )
    bad = qs.cluster_queue_active(cq, [], {"off": False})
    assert (bad.status, bad.reason) == ("False", "Stopped")
    for fragment in (
        "is stopped",
        "ResourceFlavor(s): gone",
        "missing AdmissionCheck(s): missing",
        "inactive AdmissionCheck(s): off",
    ):
        assert fragment in bad.message
    inactive = qs.cluster_queue_active(
        ClusterQueueBuilder("cq").admission_checks("off").obj(), [], {"off": False}
    )
    assert inactive.reason == "AdmissionCheckInactive"


def test_local_queue_active_reasons() -> None:
    lq = LocalQueueBuilder("lq", "ns", "cq")
    assert qs.local_queue_active(lq.obj(), CQ, True).reason == "Ready"
    assert qs.local_queue_active(lq.obj(), None, False).reason == "ClusterQueueDoesNotExist"
    assert qs.local_queue_active(lq.obj(), CQ, False).reason == "ClusterQueueIsInactive"
    assert qs.local_queue_active(lq.stop_policy("Hold").obj(), CQ, True).reason == "Stopped"


def test_queue_status_patch_only_when_changed() -> None:
    counts = qs.count_workloads([_reserving("a", "1", "1Gi")], pending=0)
    fields = qs.cluster_queue_status_fields(CQ, counts)
    active = qs.cluster_queue_active(CQ, ["on-demand", "spot"], {})
    cq = (
        ClusterQueueBuilder("cq")
        .flavor("on-demand", cpu="4", memory="8Gi")
        .flavor("spot", cpu="2", memory="4Gi")
        .obj()
    )
    cq["metadata"]["resourceVersion"] = "42"
    first = queue_status_patch(cq, fields, active, NOW)
    assert first is not None and first["metadata"] == {"resourceVersion": "42"}
    assert first["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T12:00:00Z"
    cq["status"] = first["status"]
    assert queue_status_patch(cq, fields, active, NOW) is None
    changed = dict(fields, pendingWorkloads=3)
    assert queue_status_patch(cq, changed, active, NOW)["status"] == {"pendingWorkloads": 3}


def test_apply_conditions_keeps_transition_time_when_status_unchanged() -> None:
    existing = [
        {
            "type": "Active",
            "status": "False",
            "reason": "Stopped",
            "message": "m",
            "lastTransitionTime": "2025-01-01T00:00:00Z",
            "observedGeneration": 1,
        }
    ]
    same_status = apply_conditions(
        existing, [ConditionSpec("Active", "False", "FlavorNotFound", "x")], [], 2, NOW
    )
    assert same_status[0]["lastTransitionTime"] == "2025-01-01T00:00:00Z"
    assert same_status[0]["observedGeneration"] == 2 and same_status[0]["reason"] == "FlavorNotFound"
    flipped = apply_conditions(existing, [ConditionSpec("Active", "True", "Ready", "ok")], [], 1, NOW)
    assert flipped[0]["lastTransitionTime"] == "2026-01-01T12:00:00Z"
    assert apply_conditions(existing, [ConditionSpec("Active", "False", "Stopped", "m")], [], 1, NOW) is None
    assert apply_conditions(existing, [], ["Active"], 1, NOW) == []


def test_workload_status_patch_skips_unchanged_fields() -> None:
    wl = WorkloadBuilder("w").reserved("cq").requeue_state(count=1).obj()
    plan = WorkloadPlan(admission=wl["status"]["admission"], requeue_state=None)
    assert workload_status_patch(wl, plan, NOW) == {"status": {"requeueState": None}}
    assert workload_status_patch(wl, WorkloadPlan(admission=None), NOW) == {"status": {"admission": None}}
    del wl["status"]["requeueState"]
    assert workload_status_patch(wl, WorkloadPlan(requeue_state=None), NOW) is None
    assert workload_status_patch(wl, WorkloadPlan(), NOW) is None


def test_admission_check_builder_is_active() -> None:
    ac = AdmissionCheckBuilder("ac").active(True).obj()
    assert ac["status"]["conditions"][0]["status"] == "True"
