"""Workload and queue-status controllers against an in-memory API: writes, conflicts, batching."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controller.core import metrics as m
from controller.core.queue_status_controller import QueueStatusController
from controller.core.workload_controller import WorkloadController
from controller.runtime.events import RecordingEvents
from controller.workload.decisions import PodsReadyPolicy
from pykueue.kube.errors import Forbidden, Invalid
from tests.builders import (
    AdmissionCheckBuilder,
    ClusterQueueBuilder,
    LocalQueueBuilder,
    ResourceFlavorBuilder,
    SeedClusterQueueBuilder,
    SeedWorkloadBuilder,
    WorkloadBuilder,
    WorkloadPriorityClassBuilder,
)
from tests.unit.core.fakes import FakeApi, FakeInformer

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
PLURALS = (
    "workloads",
    "localqueues",
    "clusterqueues",
    "resourceflavors",
    "admissionchecks",
    "workloadpriorityclasses",
    "priorityclasses",
)


def _setup(cq: ClusterQueueBuilder | None = None) -> tuple[FakeApi, dict[str, FakeInformer]]:
    informers = {p: FakeInformer() for p in PLURALS}
    api = FakeApi(informers)
    api.put("resourceflavors", ResourceFlavorBuilder("default").obj())
    api.put("clusterqueues", (cq or ClusterQueueBuilder("cq").flavor("default", cpu="2")).obj())
    api.put("localqueues", LocalQueueBuilder("lq", "ns", "cq").obj())
    return api, informers


def _workload_controller(
    api: FakeApi,
    informers: dict[str, FakeInformer],
    events: RecordingEvents,
    pods_ready: PodsReadyPolicy | None = None,
) -> WorkloadController:
    return WorkloadController(
        api,
        workloads=informers["workloads"],
        local_queues=informers["localqueues"],
        cluster_queues=informers["clusterqueues"],
        workload_priority_classes=informers["workloadpriorityclasses"],
        priority_classes=informers["priorityclasses"],
        pods_ready=pods_ready,
        events=events,
        clock=lambda: NOW,
    )


def _conds(obj: dict) -> dict[str, dict]:
    return {c["type"]: c for c in obj["status"]["conditions"]}


def test_retry_check_evicts_and_clears_standalone_reservation_in_two_steps() -> None:
    api, informers = _setup(ClusterQueueBuilder("cq").flavor("default", cpu="2").admission_checks("ac"))
    events = RecordingEvents()
    ctrl = _workload_controller(api, informers, events)
    api.put(
        "workloads",
        WorkloadBuilder("w", "ns").queue("lq").podset(cpu="1").reserved("cq").check("ac", "Retry").obj(),
    )

    assert ctrl.reconcile("ns/w") is None
    wl = api.objects[("workloads", "ns/w")]
    assert _conds(wl)["Evicted"]["reason"] == "AdmissionCheck"
    assert wl["status"]["admission"] is not None, "eviction first; the reservation is cleared next"
    assert events.reasons("ns/w") == ["EvictedDueToAdmissionCheck"]

    ctrl.reconcile("ns/w")
    wl = api.objects[("workloads", "ns/w")]
    assert "admission" not in wl["status"]
    assert _conds(wl)["QuotaReserved"]["status"] == "False"
    ctrl.reconcile("ns/w")
    assert len(api.patches) == 2, "a settled workload is not written again"


def test_conflict_rereads_and_decides_again() -> None:
    api, informers = _setup()
    ctrl = _workload_controller(api, informers, RecordingEvents())
    api.put("workloads", WorkloadBuilder("w", "ns").queue("lq").podset(cpu="1").reserved("cq").obj())
    api.lag = True
    newer = api.objects[("workloads", "ns/w")]
    newer["status"]["conditions"].append(
        {
            "type": "PodsReady",
            "status": "True",
            "reason": "Started",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    )
    api._stamp(newer)
    ctrl.reconcile("ns/w")
    conds = _conds(api.objects[("workloads", "ns/w")])
    assert conds["Admitted"]["status"] == "True"
    assert "PodsReady" in conds, "the condition written by someone else survived our patch"


def test_invalid_write_is_reported_not_retried_forever() -> None:
    api, informers = _setup()
    events = RecordingEvents()
    ctrl = _workload_controller(api, informers, events)
    api.put("workloads", WorkloadBuilder("w", "ns").queue("lq").podset(cpu="1").reserved("cq").obj())
    api.failures = [Invalid(422, "Invalid", "status.admission: Invalid value")]
    assert ctrl.reconcile("ns/w") is None
    assert events.reasons("ns/w") == ["StatusUpdateFailed"]


def test_webhook_denial_is_reported_not_retried_forever() -> None:
    api, informers = _setup()
    events = RecordingEvents()
    ctrl = _workload_controller(api, informers, events)
    api.put("workloads", WorkloadBuilder("w", "ns").queue("lq").podset(cpu="1").reserved("cq").obj())
    api.failures = [Forbidden(403, "Forbidden", 'admission webhook "vworkload.kb.io" denied the request: '
                                                "status.admission: Invalid value")]
    assert ctrl.reconcile("ns/w") is None
    assert events.reasons("ns/w") == ["StatusUpdateFailed"]
    api.failures = [Forbidden(403, "Forbidden", 'workloads.kueue.x-k8s.io "w" is forbidden: User cannot patch')]
    with pytest.raises(Forbidden):  # RBAC: the work queue backs off and retries
        ctrl.reconcile("ns/w")


def test_pods_ready_deadline_is_a_timer() -> None:
    api, informers = _setup()
    ctrl = _workload_controller(api, informers, RecordingEvents(), PodsReadyPolicy(timeout_seconds=120))
    api.put(
        "workloads",
        WorkloadBuilder("w", "ns")
        .queue("lq")
        .podset(cpu="1")
        .reserved("cq")
        .admitted(at="2026-01-01T11:59:00Z")
        .obj(),
    )
    assert ctrl.reconcile("ns/w") == 60
    assert api.patches == []


def test_priority_is_filled_from_the_workload_priority_class() -> None:
    api, informers = _setup()
    api.put("workloadpriorityclasses", WorkloadPriorityClassBuilder("high", 900).obj())
    ctrl = _workload_controller(api, informers, RecordingEvents())
    api.put("workloads", WorkloadBuilder("w", "ns").queue("lq").podset(cpu="1").priority_class("high").obj())
    ctrl.reconcile("ns/w")
    assert api.objects[("workloads", "ns/w")]["spec"]["priority"] == 900


def test_queue_status_written_once_and_only_on_change() -> None:
    api, informers = _setup(ClusterQueueBuilder("cq").flavor("default", cpu="2").admission_checks("ac"))
    api.put("admissionchecks", AdmissionCheckBuilder("ac").active(True).obj())
    api.put(
        "workloads",
        WorkloadBuilder("a", "ns")
        .queue("lq")
        .podset(cpu="1")
        .reserved("cq", {"cpu": "default"}, {"cpu": "1"})
        .admitted()
        .obj(),
    )
    api.put("workloads", WorkloadBuilder("b", "ns").queue("lq").podset(cpu="1").obj())
    ctrl = QueueStatusController(
        api,
        workloads=informers["workloads"],
        local_queues=informers["localqueues"],
        cluster_queues=informers["clusterqueues"],
        resource_flavors=informers["resourceflavors"],
        admission_checks=informers["admissionchecks"],
        clock=lambda: NOW,
    )
    ctrl.reconcile("cq:cq")
    ctrl.reconcile("lq:ns/lq")
    cq = api.objects[("clusterqueues", "cq")]["status"]
    assert (cq["pendingWorkloads"], cq["reservingWorkloads"], cq["admittedWorkloads"]) == (1, 1, 1)
    assert _conds({"status": cq})["Active"]["reason"] == "Ready"
    lq = api.objects[("localqueues", "ns/lq")]["status"]
    assert lq["flavorUsage"] == [{"name": "default", "resources": [{"name": "cpu", "total": "1"}]}]
    writes = len(api.patches)
    ctrl.reconcile("cq:cq")
    ctrl.reconcile("lq:ns/lq")
    assert len(api.patches) == writes, "unchanged status is not rewritten"

    # A burst of workload events folds into one delayed key per queue.
    for _ in range(50):
        ctrl.workload_changed(api.objects[("workloads", "ns/b")])
    assert ctrl.queue.waiting() == 2


def test_metrics_of_deleted_queues_are_dropped() -> None:
    from controller.core import metrics as m

    m.LOCAL_QUEUE_PENDING.labels("gone-lq", "gone-ns", "active").set(3)
    m.RESERVING_ACTIVE.labels("gone-cq").set(2)
    m.forget_local_queue("gone-ns", "gone-lq")
    m.forget_cluster_queue("gone-cq")
    samples = [
        s for metric in (m.LOCAL_QUEUE_PENDING, m.RESERVING_ACTIVE) for s in metric.collect()[0].samples
    ]
    assert not [s for s in samples if "gone" in str(s.labels)]


def test_flavor_fallback_is_written_counted_and_keeps_the_failed_flavor_after_release() -> None:
    cq = (
        SeedClusterQueueBuilder("cq").flavor("spot", cpu="2").flavor("default", cpu="2")
        .fallback().fallback_rule("spot", timeout="1m")
    )
    api, informers = _setup(cq)
    events = RecordingEvents()
    ctrl = _workload_controller(api, informers, events)
    reserved_at = "2026-01-01T11:58:00Z"  # two minutes before NOW
    api.put(
        "workloads",
        SeedWorkloadBuilder("w", "ns").queue("lq").podset(cpu="1").reserved("cq", {"cpu": "spot"}, at=reserved_at)
        .flavor_assigned("spot", reserved_at).obj(),
    )
    counter = m.FLAVOR_FALLBACKS_TOTAL.labels("cq", "spot", "TimeoutForPodsReadyExceeded")
    before = counter._value.get()

    ctrl.reconcile("ns/w")
    wl = api.objects[("workloads", "ns/w")]
    assert _conds(wl)["Evicted"]["reason"] == "FlavorFallback"
    assert events.reasons("ns/w") == ["FlavorFallback", "EvictedDueToFlavorFallback"]
    assert counter._value.get() == before + 1

    ctrl.reconcile("ns/w")  # a standalone workload: the controller releases the quota itself
    wl = api.objects[("workloads", "ns/w")]
    assert "admission" not in wl["status"]
    assert wl["status"]["flavorAssignmentHistory"] == [{"resourceFlavor": "spot", "assignmentTime": reserved_at}]
