"""The Job reconciler against an in-memory API: the whole job-side lifecycle, step by step."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controller.jobs.compose import job_podsets
from controller.jobs.management import ManagementPolicy
from controller.jobs.reconciler import JobReconciler, JobSettings
from pykueue.api.constants import (
    JOB_UID_LABEL,
    ORIGINAL_TEMPLATE_ANNOTATION,
    PODSET_LABEL,
    RESOURCE_IN_USE_FINALIZER,
)
from pykueue.kube import resources as R
from tests.builders import (
    JobBuilder,
    LocalQueueBuilder,
    ResourceFlavorBuilder,
    WorkloadBuilder,
    WorkloadPriorityClassBuilder,
    condition,
)
from tests.unit.jobs.fake import FakeCluster

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
NS = "team-a"


@pytest.fixture
def cluster() -> FakeCluster:
    api = FakeCluster()
    api.put(R.RESOURCE_FLAVORS, ResourceFlavorBuilder("spot").node_labels(pool="spot").obj())
    return api


def reconciler(cluster: FakeCluster, **settings: Any) -> JobReconciler:
    return JobReconciler(cluster, cluster, JobSettings(**settings), events=cluster, clock=lambda: NOW)


def queued_job(name: str = "job") -> JobBuilder:
    return JobBuilder(name, NS).queue("lq").suspend().parallelism(2).completions(2).requests(cpu="1")


def workload_of(cluster: FakeCluster, job_name: str = "job") -> dict[str, Any]:
    [wl] = cluster.workloads_for_job(NS, job_name)
    return wl


def admit(cluster: FakeCluster, wl: dict[str, Any], flavor: str = "spot") -> None:
    """Play the scheduler: reserve quota and admit."""
    status = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "flavors": {"cpu": flavor}, "count": 2}],
        },
        "conditions": [
            condition("QuotaReserved", True, "QuotaReserved", "Quota reserved in ClusterQueue cq"),
            condition("Admitted", True, "Admitted", "The workload is admitted"),
        ],
    }
    cluster.patch_status(R.WORKLOADS, wl["metadata"]["name"], {"status": status}, NS)


def evict(cluster: FakeCluster, wl: dict[str, Any], reason: str = "Preempted") -> None:
    """Play the workload controller: mark the workload evicted (quota still reserved)."""
    current = cluster.get(R.WORKLOADS, wl["metadata"]["name"], NS)
    assert current is not None
    conds = [*current["status"]["conditions"], condition("Evicted", True, reason, f"evicted: {reason}")]
    cluster.patch_status(R.WORKLOADS, wl["metadata"]["name"], {"status": {"conditions": conds}}, NS)


def cond(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == type_), None)


def set_job_status(cluster: FakeCluster, name: str = "job", **fields: Any) -> None:
    cluster.patch_status(R.JOBS, name, {"status": fields}, NS)


# --- management --------------------------------------------------------------------------------


def test_queued_job_gets_a_workload_and_stays_suspended(cluster: FakeCluster) -> None:
    cluster.put(R.JOBS, queued_job().obj())
    reconciler(cluster).reconcile(NS, "job")
    wl = workload_of(cluster)
    job = cluster.job(NS, "job")
    assert job is not None
    assert wl["spec"]["queueName"] == "lq"
    assert wl["metadata"]["labels"][JOB_UID_LABEL] == job["metadata"]["uid"]
    assert wl["metadata"]["finalizers"] == [RESOURCE_IN_USE_FINALIZER]
    assert job["spec"]["suspend"] is True
    assert cluster.reasons() == ["CreatedWorkload"]
    # A second pass changes nothing.
    reconciler(cluster).reconcile(NS, "job")
    assert len(cluster.of(R.WORKLOADS)) == 1 and cluster.reasons() == ["CreatedWorkload"]


def test_unsuspended_managed_job_is_suspended_before_anything_else(cluster: FakeCluster) -> None:
    cluster.put(R.JOBS, queued_job().suspend(False).obj())
    reconciler(cluster).reconcile(NS, "job")
    job = cluster.job(NS, "job")
    assert job is not None and job["spec"]["suspend"] is True
    assert "Stopped" in cluster.reasons()
    reconciler(cluster).reconcile(NS, "job")
    assert len(cluster.workloads_for_job(NS, "job")) == 1


def test_job_without_queue_is_ignored(cluster: FakeCluster) -> None:
    cluster.put(R.JOBS, JobBuilder("plain", NS).obj())
    reconciler(cluster).reconcile(NS, "plain")
    assert cluster.of(R.WORKLOADS) == [] and cluster.events == []
    job = cluster.job(NS, "plain")
    assert job is not None and "suspend" not in job["spec"]


def test_default_local_queue_adopts_jobs_without_queue_label(cluster: FakeCluster) -> None:
    cluster.put(R.LOCAL_QUEUES, LocalQueueBuilder("default", NS, "cq").obj())
    cluster.put(R.JOBS, JobBuilder("j", NS).suspend().obj())
    reconciler(cluster).reconcile(NS, "j")
    assert workload_of(cluster, "j")["spec"]["queueName"] == "default"


def test_manage_jobs_without_queue_name_honours_the_namespace_selector(cluster: FakeCluster) -> None:
    cluster.put(R.NAMESPACES, {"metadata": {"name": NS, "labels": {"managed": "yes"}}})
    cluster.put(R.NAMESPACES, {"metadata": {"name": "other", "labels": {}}})
    cluster.put(R.JOBS, JobBuilder("j", NS).suspend().obj())
    cluster.put(R.JOBS, JobBuilder("j", "other").suspend().obj())
    policy = ManagementPolicy.from_raw(True, {"matchLabels": {"managed": "yes"}})
    rec = reconciler(cluster, management=policy)
    rec.reconcile(NS, "j")
    rec.reconcile("other", "j")
    [wl] = cluster.of(R.WORKLOADS)
    assert wl["metadata"]["namespace"] == NS
    assert "queueName" not in wl["spec"]


def test_job_owned_by_a_managed_job_is_left_alone(cluster: FakeCluster) -> None:
    cluster.put(R.JOBS, queued_job("child").suspend(False).owner("Job", "parent", "p-uid").obj())
    reconciler(cluster).reconcile(NS, "child")
    assert cluster.of(R.WORKLOADS) == []
    job = cluster.job(NS, "child")
    assert job is not None and job["spec"]["suspend"] is False


def test_priority_from_workload_priority_class(cluster: FakeCluster) -> None:
    cluster.put(R.WORKLOAD_PRIORITY_CLASSES, WorkloadPriorityClassBuilder("high", 1000).obj())
    cluster.put(R.JOBS, queued_job().workload_priority_class("high").obj())
    reconciler(cluster).reconcile(NS, "job")
    spec = workload_of(cluster)["spec"]
    assert (spec["priority"], spec["priorityClassName"]) == (1000, "high")


def test_changing_the_priority_class_label_updates_the_workload(cluster: FakeCluster) -> None:
    cluster.put(R.WORKLOAD_PRIORITY_CLASSES, WorkloadPriorityClassBuilder("low", 10).obj())
    cluster.put(R.WORKLOAD_PRIORITY_CLASSES, WorkloadPriorityClassBuilder("high", 1000).obj())
    cluster.put(R.JOBS, queued_job().workload_priority_class("low").obj())
    rec = reconciler(cluster)
    rec.reconcile(NS, "job")
    cluster.patch(R.JOBS, "job", {"metadata": {"labels": {"kueue.x-k8s.io/priority-class": "high"}}}, NS)
    rec.reconcile(NS, "job")
    spec = workload_of(cluster)["spec"]
    assert (spec["priority"], spec["priorityClassName"]) == (1000, "high")
    assert len(cluster.of(R.WORKLOADS)) == 1


def test_missing_priority_class_warns_and_retries(cluster: FakeCluster) -> None:
    cluster.put(R.JOBS, queued_job().workload_priority_class("nope").obj())
    result = reconciler(cluster).reconcile(NS, "job")
    assert cluster.of(R.WORKLOADS) == []
    assert cluster.reasons() == ["WorkloadPriorityClassNotFound"]
    assert result.requeue_after is not None and result.requeue_after > 0


def test_malformed_job_produces_an_event_not_a_crash(cluster: FakeCluster) -> None:
    job = queued_job().obj()
    job["spec"]["template"]["spec"]["containers"] = []
    cluster.put(R.JOBS, job)
    assert reconciler(cluster).reconcile(NS, "job").requeue_after is None
    assert cluster.reasons() == ["ErrWorkloadCompose"]
    assert "containers" in cluster.events[0][3]


# --- keeping one matching workload -----------------------------------------------------------------


def test_parallelism_change_updates_an_unreserved_workload_in_place(cluster: FakeCluster) -> None:
    cluster.put(R.JOBS, queued_job().obj())
    rec = reconciler(cluster)
    rec.reconcile(NS, "job")
    name = workload_of(cluster)["metadata"]["name"]
    cluster.patch(R.JOBS, "job", {"spec": {"parallelism": 1}}, NS)
    rec.reconcile(NS, "job")
    wl = workload_of(cluster)
    assert wl["metadata"]["name"] == name
    assert wl["spec"]["podSets"][0]["count"] == 1
    assert cluster.reasons()[-1] == "UpdatedWorkload"


def test_workload_of_a_previous_job_with_the_same_name_is_deleted(cluster: FakeCluster) -> None:
    cluster.put(R.JOBS, queued_job().obj())
    reconciler(cluster).reconcile(NS, "job")
    old = workload_of(cluster)
    # The Job is deleted and re-created under the same name (new UID) before the GC ran.
    del cluster.objects[("jobs", NS, "job")]
    cluster.put(R.JOBS, queued_job().obj())
    reconciler(cluster).reconcile(NS, "job")
    names = [w["metadata"]["name"] for w in cluster.of(R.WORKLOADS)]
    assert old["metadata"]["name"] not in names and len(names) == 1


# --- start ----------------------------------------------------------------------------------------------


def test_admission_starts_the_job_with_the_flavor_injected(cluster: FakeCluster) -> None:
    cluster.put(R.JOBS, queued_job().node_selector(disk="ssd").obj())
    rec = reconciler(cluster)
    rec.reconcile(NS, "job")
    admit(cluster, workload_of(cluster))
    rec.reconcile(NS, "job")
    job = cluster.job(NS, "job")
    assert job is not None
    assert job["spec"]["suspend"] is False
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {"disk": "ssd", "pool": "spot"}
    assert job["spec"]["template"]["metadata"]["labels"][PODSET_LABEL] == "main"
    assert ORIGINAL_TEMPLATE_ANNOTATION in job["metadata"]["annotations"]
    assert cluster.events[-1][2:] == ("Started", "Admitted by clusterQueue cq")
    # The injected template still matches the workload: nothing is deleted or re-created.
    rec.reconcile(NS, "job")
    assert len(cluster.of(R.WORKLOADS)) == 1 and cluster.reasons().count("Started") == 1


def test_quota_reserved_but_checks_pending_does_not_start(cluster: FakeCluster) -> None:
    cluster.put(R.JOBS, queued_job().obj())
    rec = reconciler(cluster)
    rec.reconcile(NS, "job")
    wl = workload_of(cluster)
    admit(cluster, wl)
    conds = [
        condition("QuotaReserved", True, "QuotaReserved"),
        condition("Admitted", False, "UnsatisfiedAdmissionChecks"),
    ]
    cluster.patch_status(R.WORKLOADS, wl["metadata"]["name"], {"status": {"conditions": conds}}, NS)
    rec.reconcile(NS, "job")
    job = cluster.job(NS, "job")
    assert job is not None and job["spec"]["suspend"] is True


def test_start_clears_a_left_over_start_time_first(cluster: FakeCluster) -> None:
    cluster.put(R.JOBS, queued_job().status(startTime="2026-01-01T00:00:00Z").obj())
    rec = reconciler(cluster)
    rec.reconcile(NS, "job")
    admit(cluster, workload_of(cluster))
    rec.reconcile(NS, "job")
    job = cluster.job(NS, "job")
    assert job is not None and job["spec"]["suspend"] is False
    assert "startTime" not in job["status"]


def test_vanished_flavor_sends_the_workload_back_to_pending(cluster: FakeCluster) -> None:
    cluster.put(R.JOBS, queued_job().obj())
    rec = reconciler(cluster)
    rec.reconcile(NS, "job")
    admit(cluster, workload_of(cluster), flavor="deleted-meanwhile")
    assert rec.reconcile(NS, "job").requeue_after is None
    job = cluster.job(NS, "job")
    assert job is not None and job["spec"]["suspend"] is True
    assert cluster.pods == {}
    wl = workload_of(cluster)
    assert "admission" not in wl["status"]
    quota = cond(wl, "QuotaReserved")
    assert quota is not None and (quota["status"], quota["reason"]) == ("False", "Pending")
    assert "deleted-meanwhile" in quota["message"]


def test_conflicting_check_updates_finish_the_workload_as_failed_to_start(cluster: FakeCluster) -> None:
    cluster.put(R.JOBS, queued_job().node_selector(pool="on-demand").obj())
    rec = reconciler(cluster)
    rec.reconcile(NS, "job")
    admit(cluster, workload_of(cluster))  # the spot flavor wants pool=spot
    rec.reconcile(NS, "job")
    finished = cond(workload_of(cluster), "Finished")
    assert finished is not None and finished["reason"] == "FailedToStart"
    job = cluster.job(NS, "job")
    assert job is not None and job["spec"]["suspend"] is True


# --- stop and release ----------------------------------------------------------------------------


def running(cluster: FakeCluster, **job_status: Any) -> JobReconciler:
    cluster.put(R.JOBS, queued_job().obj())
    rec = reconciler(cluster)
    rec.reconcile(NS, "job")
    admit(cluster, workload_of(cluster))
    rec.reconcile(NS, "job")
    set_job_status(cluster, startTime="2026-01-01T12:00:00Z", **job_status)
    return rec


def test_eviction_stops_the_job_and_keeps_quota_while_pods_run(cluster: FakeCluster) -> None:
    rec = running(cluster, active=2)
    job = cluster.job(NS, "job")
    assert job is not None
    cluster.pods[job["metadata"]["uid"]] = [{"status": {"phase": "Running"}}] * 2
    evict(cluster, workload_of(cluster))
    result = rec.reconcile(NS, "job")
    job = cluster.job(NS, "job")
    assert job is not None
    assert job["spec"]["suspend"] is True
    assert "startTime" not in job["status"]
    assert cluster.events[-1][2] == "Stopped"
    wl = workload_of(cluster)
    assert "admission" in wl["status"], "quota must stay reserved while pods run"
    assert result.requeue_after is not None

    # The Job controller removed its pods from its count, but one pod is still terminating.
    set_job_status(cluster, active=0)
    cluster.pods[job["metadata"]["uid"]] = [
        {"status": {"phase": "Running"}},
        {"status": {"phase": "Succeeded"}},
    ]
    assert rec.reconcile(NS, "job").requeue_after is not None
    assert "admission" in workload_of(cluster)["status"]

    cluster.pods[job["metadata"]["uid"]] = []
    assert rec.reconcile(NS, "job").requeue_after is None
    wl = workload_of(cluster)
    assert "admission" not in wl["status"]
    quota = cond(wl, "QuotaReserved")
    assert quota is not None and (quota["status"], quota["reason"]) == ("False", "Pending")
    admitted = cond(wl, "Admitted")
    assert admitted is not None and admitted["status"] == "False"
    requeued = cond(wl, "Requeued")
    assert requeued is not None and (requeued["status"], requeued["reason"]) == ("True", "Preempted")
    job = cluster.job(NS, "job")
    assert job is not None
    assert job["spec"]["template"] == queued_job().obj()["spec"]["template"]
    assert ORIGINAL_TEMPLATE_ANNOTATION not in job["metadata"].get("annotations", {})


def test_template_restored_once_the_job_api_allows_it(cluster: FakeCluster) -> None:
    rec = running(cluster, active=2)
    evict(cluster, workload_of(cluster))
    assert rec.reconcile(NS, "job").requeue_after is not None
    job = cluster.job(NS, "job")
    assert job is not None and job["spec"]["suspend"] is True
    assert job["spec"]["template"]["spec"].get("nodeSelector") == {"pool": "spot"}, "refused while pods run"
    set_job_status(cluster, active=0)
    rec.reconcile(NS, "job")
    job = cluster.job(NS, "job")
    assert job is not None and "nodeSelector" not in job["spec"]["template"]["spec"]
    assert "admission" not in workload_of(cluster)["status"]


def test_release_keeps_the_workload_controllers_requeued_decision(cluster: FakeCluster) -> None:
    rec = running(cluster, active=0)
    wl = workload_of(cluster)
    evict(cluster, wl, "PodsReadyTimeout")
    current = workload_of(cluster)
    conds = [*current["status"]["conditions"], condition("Requeued", False, "PodsReadyTimeout")]
    cluster.patch_status(R.WORKLOADS, wl["metadata"]["name"], {"status": {"conditions": conds}}, NS)
    rec.reconcile(NS, "job")
    requeued = cond(workload_of(cluster), "Requeued")
    assert requeued is not None and requeued["status"] == "False"
    assert "admission" not in workload_of(cluster)["status"]


def test_release_resets_admission_checks_and_pods_ready(cluster: FakeCluster) -> None:
    rec = running(cluster, active=0)
    wl = workload_of(cluster)
    checks = [{"name": "prov", "state": "Ready", "lastTransitionTime": "2026-01-01T00:00:00Z", "message": ""}]
    conds = [*wl["status"]["conditions"], condition("PodsReady", True, "Started")]
    cluster.patch_status(
        R.WORKLOADS, wl["metadata"]["name"], {"status": {"admissionChecks": checks, "conditions": conds}}, NS
    )
    evict(cluster, wl, "AdmissionCheck")
    rec.reconcile(NS, "job")
    wl = workload_of(cluster)
    assert wl["status"]["admissionChecks"][0]["state"] == "Pending"
    assert (
        wl["status"]["admissionChecks"][0]["message"] == "Reset to Pending after eviction. Previously: Ready"
    )
    pods_ready = cond(wl, "PodsReady")
    assert pods_ready is not None and (pods_ready["status"], pods_ready["reason"]) == (
        "False",
        "WaitForStart",
    )


def test_running_job_without_admission_is_stopped(cluster: FakeCluster) -> None:
    rec = running(cluster, active=1)
    wl = workload_of(cluster)
    cluster.patch_status(
        R.WORKLOADS, wl["metadata"]["name"], {"status": {"admission": None, "conditions": []}}, NS
    )
    rec.reconcile(NS, "job")
    job = cluster.job(NS, "job")
    assert job is not None and job["spec"]["suspend"] is True


# --- progress and the end --------------------------------------------------------------------------


def test_pods_ready_written_only_with_wait_for_pods_ready(cluster: FakeCluster) -> None:
    running(cluster, active=2, ready=2)
    reconciler(cluster).reconcile(NS, "job")
    assert cond(workload_of(cluster), "PodsReady") is None
    reconciler(cluster, wait_for_pods_ready=True).reconcile(NS, "job")
    pods_ready = cond(workload_of(cluster), "PodsReady")
    assert pods_ready is not None and (pods_ready["status"], pods_ready["reason"]) == ("True", "Started")


def test_pods_ready_written_for_a_reservation_with_flavor_history(cluster: FakeCluster) -> None:
    """A ClusterQueue with a fallback strategy records flavorAssignmentHistory with the reservation:
    PodsReady is kept then even without waitForPodsReady, since it stops the fallback clock."""
    running(cluster, active=2, ready=2)
    wl = workload_of(cluster)
    history = [{"resourceFlavor": "spot", "assignmentTime": "2026-01-01T00:00:00Z"}]
    cluster.patch_status(R.WORKLOADS, wl["metadata"]["name"], {"status": {"flavorAssignmentHistory": history}}, NS)
    reconciler(cluster).reconcile(NS, "job")
    pods_ready = cond(workload_of(cluster), "PodsReady")
    assert pods_ready is not None and (pods_ready["status"], pods_ready["reason"]) == ("True", "Started")


def test_finished_job_finishes_the_workload_and_drops_the_finalizer(cluster: FakeCluster) -> None:
    rec = running(cluster, active=0, succeeded=2)
    cluster.patch_status(
        R.JOBS, "job", {"status": {"conditions": [{"type": "Complete", "status": "True", "message": ""}]}}, NS
    )
    rec.reconcile(NS, "job")
    wl = workload_of(cluster)
    finished = cond(wl, "Finished")
    assert finished is not None and (finished["status"], finished["reason"]) == ("True", "Succeeded")
    assert wl["metadata"].get("finalizers") in (None, [])
    assert cluster.reasons()[-1] == "FinishedWorkload"


def test_failed_job_reports_its_message(cluster: FakeCluster) -> None:
    rec = running(cluster, active=0, failed=1)
    failed = {
        "type": "Failed",
        "status": "True",
        "reason": "BackoffLimitExceeded",
        "message": "backoff limit",
    }
    cluster.patch_status(R.JOBS, "job", {"status": {"conditions": [failed]}}, NS)
    rec.reconcile(NS, "job")
    finished = cond(workload_of(cluster), "Finished")
    assert finished is not None and (finished["reason"], finished["message"]) == ("Failed", "backoff limit")


def test_deleting_the_workload_stops_the_job_and_requeues_it(cluster: FakeCluster) -> None:
    rec = running(cluster, active=2)
    old = workload_of(cluster)
    cluster.delete(R.WORKLOADS, old["metadata"]["name"], NS)  # finalizer: only marked for deletion
    assert rec.reconcile(NS, "job").requeue_after is not None, "waits for the pods"
    job = cluster.job(NS, "job")
    assert job is not None and job["spec"]["suspend"] is True
    assert cluster.get(R.WORKLOADS, old["metadata"]["name"], NS) is not None
    set_job_status(cluster, active=0)
    rec.reconcile(NS, "job")
    assert cluster.get(R.WORKLOADS, old["metadata"]["name"], NS) is None, "finalizer dropped: deleted"
    rec.reconcile(NS, "job")
    fresh = workload_of(cluster)
    assert "admission" not in fresh.get("status", {}) and fresh["metadata"].get("deletionTimestamp") is None


def test_deleted_job_releases_its_workload(cluster: FakeCluster) -> None:
    rec = running(cluster, active=1)
    del cluster.objects[("jobs", NS, "job")]
    rec.reconcile(NS, "job")
    assert cluster.of(R.WORKLOADS) == []


def test_pods_ready_observes_kueues_wait_time_metrics(cluster: FakeCluster) -> None:
    from prometheus_client import REGISTRY

    def count(name: str) -> float:
        return (
            REGISTRY.get_sample_value(f"{name}_count", {"cluster_queue": "cq", "priority_class": ""}) or 0.0
        )

    before = count("kueue_admitted_until_ready_wait_time_seconds"), count("kueue_ready_wait_time_seconds")
    running(cluster, active=2, ready=2)
    reconciler(cluster, wait_for_pods_ready=True).reconcile(NS, "job")
    reconciler(cluster, wait_for_pods_ready=True).reconcile(NS, "job")  # no second observation
    after = count("kueue_admitted_until_ready_wait_time_seconds"), count("kueue_ready_wait_time_seconds")
    assert after[0] == before[0] + 1
    assert after[1] == before[1] + 1


# --- prebuilt workloads (MultiKueue workers) ----------------------------------------------------


def prebuilt_for(job: dict[str, Any], name: str = "copy") -> dict[str, Any]:
    """A Workload made beforehand for ``job`` (its podSets as the Job's), as MultiKueue copies one."""
    wl = WorkloadBuilder(name, NS).queue("lq").obj()
    wl["spec"]["podSets"] = job_podsets(job)
    return wl


def test_a_job_naming_a_prebuilt_workload_adopts_it_and_starts_when_it_is_admitted(cluster: FakeCluster) -> None:
    job = cluster.put(R.JOBS, queued_job().label("kueue.x-k8s.io/prebuilt-workload-name", "copy").uid("j-1").obj())
    r = reconciler(cluster)
    assert r.reconcile(NS, "job").requeue_after is not None  # the copy is not there yet: wait, suspended
    assert cluster.of(R.WORKLOADS) == [] and job["spec"]["suspend"] is True
    cluster.put(R.WORKLOADS, prebuilt_for(job))
    r.reconcile(NS, "job")
    wl = workload_of(cluster)
    assert wl["metadata"]["name"] == "copy" and wl["metadata"]["ownerReferences"][0]["uid"] == "j-1"
    admit(cluster, wl)
    r.reconcile(NS, "job")
    assert cluster.get(R.JOBS, "job", NS)["spec"]["suspend"] is False  # type: ignore[index]
    assert len(cluster.of(R.WORKLOADS)) == 1  # no Workload of its own was composed


def test_a_prebuilt_workload_owned_by_something_else_is_not_taken(cluster: FakeCluster) -> None:
    cluster.put(R.JOBS, queued_job().label("kueue.x-k8s.io/prebuilt-workload-name", "copy").uid("j-1").obj())
    wl = WorkloadBuilder("copy", NS).queue("lq").podset(count=2, cpu="1").obj()
    wl["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "x", "uid": "o", "controller": True}]
    cluster.put(R.WORKLOADS, wl)
    reconciler(cluster).reconcile(NS, "job")
    assert cluster.get(R.WORKLOADS, "copy", NS)["metadata"]["ownerReferences"][0]["uid"] == "o"  # type: ignore[index]
    assert cluster.get(R.JOBS, "job", NS)["spec"]["suspend"] is True  # type: ignore[index]


# --- reclaimable pods ----------------------------------------------------------------------------


def test_the_reconciler_keeps_status_reclaimable_pods_current(cluster: FakeCluster) -> None:
    cluster.put(R.JOBS, queued_job().parallelism(3).completions(4).obj())
    r = reconciler(cluster)
    r.reconcile(NS, "job")
    admit(cluster, workload_of(cluster))
    r.reconcile(NS, "job")
    assert "reclaimablePods" not in workload_of(cluster)["status"]
    set_job_status(cluster, active=2, succeeded=2)  # two left for three slots: one pod's quota goes back
    r.reconcile(NS, "job")
    assert workload_of(cluster)["status"]["reclaimablePods"] == [{"name": "main", "count": 1}]
    version = workload_of(cluster)["metadata"]["resourceVersion"]
    r.reconcile(NS, "job")  # unchanged: no write
    assert workload_of(cluster)["metadata"]["resourceVersion"] == version
    set_job_status(cluster, active=0, succeeded=4)
    r.reconcile(NS, "job")
    assert workload_of(cluster)["status"]["reclaimablePods"] == [{"name": "main", "count": 3}]


def test_a_prebuilt_workload_describing_another_shape_is_finished_out_of_sync(cluster: FakeCluster) -> None:
    """Kueue's ensurePrebuiltWorkloadInSync: a prebuilt Workload whose podSets do not describe
    the Job (here 3 pods of 2 cpu for a Job of 2 pods of 1 cpu) never admits it."""
    cluster.put(R.JOBS, queued_job().label("kueue.x-k8s.io/prebuilt-workload-name", "copy").uid("j-1").obj())
    cluster.put(R.WORKLOADS, WorkloadBuilder("copy", NS).queue("lq").podset(count=3, cpu="2").obj())
    reconciler(cluster).reconcile(NS, "job")
    wl = cluster.get(R.WORKLOADS, "copy", NS)
    assert wl is not None
    finished = cond(wl, "Finished")
    assert finished is not None and finished["status"] == "True" and finished["reason"] == "OutOfSync"
    assert finished["message"] == "The prebuilt workload is out of sync with its user job"
    assert cluster.get(R.JOBS, "job", NS)["spec"]["suspend"] is True  # type: ignore[index]
    # Admitting the finished Workload afterwards does not start the Job.
    admit(cluster, wl)
    reconciler(cluster).reconcile(NS, "job")
    assert cluster.get(R.JOBS, "job", NS)["spec"]["suspend"] is True  # type: ignore[index]


def test_a_matching_prebuilt_workload_is_not_finished(cluster: FakeCluster) -> None:
    job = cluster.put(R.JOBS, queued_job().label("kueue.x-k8s.io/prebuilt-workload-name", "copy").uid("j-1").obj())
    cluster.put(R.WORKLOADS, prebuilt_for(job))
    reconciler(cluster).reconcile(NS, "job")
    wl = cluster.get(R.WORKLOADS, "copy", NS)
    assert wl is not None and cond(wl, "Finished") is None
