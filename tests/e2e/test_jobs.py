"""batch/v1 Jobs end to end: real Jobs, real pods on simulated nodes, webhook and controller running.

What a user sees (delayed pod creation, docs/design/jobs.md): a queued Job has no pods; admission unsuspends it with the
flavor's node selector and its pods land on that flavor's nodes; preemption suspends a running
Job and gives its quota back only once its pods are gone; WaitForPodsReady evicts Jobs whose
pods cannot start; deleting a Job deletes its Workload and frees the quota.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tests.builders import (
    AdmissionCheckBuilder,
    ClusterQueueBuilder,
    JobBuilder,
    LocalQueueBuilder,
    ResourceFlavorBuilder,
    WorkloadPriorityClassBuilder,
)
from tests.e2e.fixtures.controller import ControllerHandle, configuration, wait_for_pods_ready
from tests.e2e.helpers.jobs import FLAVOR_LABEL, Jobs, make_queues, queued, wait_for
from tests.e2e.helpers.kueue import (
    KueueApi,
    condition,
    holds_quota,
    is_admitted,
    is_true,
    now_rfc3339,
    unique,
)

# Every test here needs both programs: the webhook suspends Jobs, the controller admits them.
pytestmark = pytest.mark.usefixtures("webhook", "controller")


def timestamp(value: str) -> datetime:
    """An API timestamp (``2026-01-01T00:00:00Z``, second precision)."""
    return datetime.fromisoformat(value)


@pytest.mark.both_versions  # also in v1beta2, through the conversion webhook
def test_job_beyond_quota_waits_without_pods_then_runs_on_its_flavor(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str
) -> None:
    make_queues(kueue, namespace, flavor_nodes, cpu="2")
    # Long enough that the first still holds the quota when the second is looked at below.
    jobs.create(queued("first", namespace, seconds=8))
    first_wl = wait_for(
        lambda: (wl := jobs.workload("first")) and is_admitted(wl) and wl, message="first admitted"
    )
    assert first_wl["metadata"]["name"].startswith("job-first-")
    # Only now the second: created together, the two Workloads (made by concurrent reconcile
    # workers) may be created in either order, and the older one is admitted first.
    second = jobs.create(queued("second", namespace, seconds=2))
    assert second["spec"]["suspend"] is True, "the webhook suspends a queued Job at creation"

    # The second Job does not fit: pending with a reason, no pods at all.
    def pending_with_reason() -> dict[str, Any] | None:
        wl = jobs.workload("second")
        cond = condition(wl, "QuotaReserved") if wl else None
        return cond if cond and cond["status"] == "False" and cond.get("message") else None

    reason = wait_for(pending_with_reason, message="second pending with a reason")
    assert reason["reason"] in ("Pending", "WaitingForQuota"), reason
    assert jobs.get("second")["spec"]["suspend"] is True
    assert jobs.pods("second") == []

    # The first Job's pods carry the flavor's node selector and run on that flavor's nodes.
    running = wait_for(
        lambda: [p for p in jobs.pods("first") if p.spec.node_name], message="first's pods scheduled"
    )
    for pod in running:
        assert pod.spec.node_selector.get(FLAVOR_LABEL) == flavor_nodes
        assert pod.spec.node_name.startswith(flavor_nodes)
    wait_for(lambda: "Started" in jobs.events("first"), message="the Started Event")

    # Quota frees when the first finishes; the second then runs on the same nodes and finishes.
    wait_for(lambda: jobs.succeeded("first"), message="first completes")
    finished = wait_for(
        lambda: (wl := jobs.workload("first")) and condition(wl, "Finished"), message="first Finished"
    )
    assert (finished["status"], finished["reason"]) == ("True", "Succeeded")
    wait_for(lambda: (wl := jobs.workload("second")) and is_admitted(wl), message="second admitted")
    second_pods = wait_for(
        lambda: [p for p in jobs.pods("second") if p.spec.node_name], message="second scheduled"
    )
    assert all(p.spec.node_name.startswith(flavor_nodes) for p in second_pods)
    wait_for(lambda: jobs.succeeded("second"), message="second completes")
    wait_for(lambda: (wl := jobs.workload("second")) and is_true(wl, "Finished"), message="second Finished")


def test_lower_priority_job_is_preempted_and_requeued(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str
) -> None:
    make_queues(kueue, namespace, flavor_nodes, cpu="2", within_cluster_queue="LowerPriority")
    low, high = unique("low"), unique("high")
    kueue.create(WorkloadPriorityClassBuilder(low, 10).obj())
    kueue.create(WorkloadPriorityClassBuilder(high, 1000).obj())

    jobs.create(queued("low", namespace, seconds=-1).workload_priority_class(low))
    wait_for(
        lambda: len([p for p in jobs.pods("low") if p.status.phase == "Running"]) == 2, message="low running"
    )

    jobs.create(queued("high", namespace, seconds=3).workload_priority_class(high))

    # The quota moves only once the low-priority Job's pods are gone (delayed pod creation): by the time the
    # high-priority Workload holds quota, no pod of the low one may still run or terminate.
    wait_for(lambda: (wl := jobs.workload("high")) and holds_quota(wl), message="high reserves quota")
    assert jobs.live_pods("low") == [], "quota went to high while low's pods were still there"

    # The low-priority Job is suspended and its pods go away; its Workload is evicted and requeued.
    wait_for(lambda: jobs.get("low")["spec"]["suspend"] is True, message="low suspended")
    wait_for(lambda: jobs.live_pods("low") == [], message="low's pods gone")
    low_wl = wait_for(
        lambda: (wl := jobs.workload("low")) and condition(wl, "Requeued") and wl, message="low requeued"
    )
    evicted = condition(low_wl, "Evicted")
    assert evicted is not None and evicted["reason"] == "Preempted"
    wait_for(lambda: "Stopped" in jobs.events("low"), message="the Stopped Event")

    # The higher-priority Job runs to completion, then the low one is admitted again.
    wait_for(lambda: jobs.succeeded("high"), message="high completes")
    wait_for(lambda: (wl := jobs.workload("low")) and is_admitted(wl), message="low re-admitted")
    wait_for(lambda: jobs.get("low")["spec"]["suspend"] is False, message="low resumed")
    # It is still pinned to the flavor's nodes after the restart.
    template = jobs.get("low")["spec"]["template"]["spec"]
    assert template["nodeSelector"] == {FLAVOR_LABEL: flavor_nodes}
    jobs.delete("low")


def test_failed_job_finishes_its_workload_as_failed_and_frees_the_quota(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str
) -> None:
    make_queues(kueue, namespace, flavor_nodes, cpu="2")
    # Its pods run forever; the Job controller fails the Job when its deadline passes.
    jobs.create(queued("doomed", namespace, seconds=-1).active_deadline_seconds(3))
    wait_for(lambda: (wl := jobs.workload("doomed")) and is_admitted(wl), message="doomed admitted")
    jobs.create(queued("next", namespace, seconds=1))
    wait_for(lambda: (wl := jobs.workload("next")) and not holds_quota(wl) and wl, message="next waits")

    def job_failed() -> dict[str, Any] | None:
        conditions = jobs.get("doomed").get("status", {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "Failed" and c["status"] == "True"), None)

    failed = wait_for(job_failed, message="the Job fails at its deadline")
    finished = wait_for(
        lambda: (wl := jobs.workload("doomed")) and condition(wl, "Finished"), message="doomed Finished"
    )
    assert (finished["status"], finished["reason"]) == ("True", "Failed")
    assert finished["message"] == failed["message"], (finished, failed)
    # Events are sent asynchronously, behind admissions in the client's budget.
    wait_for(lambda: "FinishedWorkload" in jobs.events("doomed"), message="the FinishedWorkload Event")
    wait_for(lambda: (wl := jobs.workload("next")) and is_admitted(wl), message="next admitted")
    wait_for(lambda: jobs.succeeded("next"), message="next completes")


def test_deleting_a_job_removes_its_workload_and_frees_quota(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str
) -> None:
    make_queues(kueue, namespace, flavor_nodes, cpu="2")
    jobs.create(queued("forever", namespace, seconds=-1))
    forever_wl = wait_for(
        lambda: (wl := jobs.workload("forever")) and is_admitted(wl) and wl, message="admitted"
    )
    jobs.create(queued("next", namespace, seconds=2))
    wait_for(lambda: (wl := jobs.workload("next")) and not holds_quota(wl) and wl, message="next waits")

    jobs.delete("forever")

    def workload_gone() -> bool:
        return kueue.get("Workload", forever_wl["metadata"]["name"], namespace) is None

    wait_for(workload_gone, message="the deleted Job's Workload is gone")
    wait_for(lambda: (wl := jobs.workload("next")) and is_admitted(wl), message="next admitted")
    wait_for(lambda: jobs.succeeded("next"), message="next completes")


@pytest.mark.needs_local_cluster
def test_pods_that_never_start_are_evicted_after_the_timeout_and_requeued_with_backoff(
    jobs: Jobs, kueue: KueueApi, namespace: str, controller: ControllerHandle
) -> None:
    """It restarts the controller on another Configuration, which only the local cluster's controller process
    allows (the chart's controller is configured at install time), so it needs the local cluster."""
    config = configuration(waitForPodsReady=wait_for_pods_ready(timeout="5s", backoff_base_seconds=2))
    with controller.configured(config):
        # No node carries this flavor's label: the pods are created but can never be scheduled.
        make_queues(kueue, namespace, unique("nowhere"), cpu="2")
        jobs.create(queued("stuck", namespace, seconds=1))
        wait_for(lambda: (wl := jobs.workload("stuck")) and is_admitted(wl), message="stuck admitted")
        wait_for(lambda: jobs.pods("stuck"), message="its pods exist (admitted)")
        pods_ready = wait_for(
            lambda: (wl := jobs.workload("stuck")) and condition(wl, "PodsReady"),
            message="PodsReady reported",
        )
        assert (pods_ready["status"], pods_ready["reason"]) == ("False", "WaitForStart")

        def evicted_for_timeout() -> dict[str, Any] | None:
            wl = jobs.workload("stuck")
            cond = condition(wl, "Evicted") if wl else None
            return wl if cond and cond["reason"] == "PodsReadyTimeout" else None

        wl = wait_for(evicted_for_timeout, message="evicted with PodsReadyTimeout")
        requeue_state = wl["status"].get("requeueState") or {}
        count = requeue_state.get("count", 0)
        assert count >= 1, requeue_state
        # The backoff is base * 2^(count-1) seconds from the eviction (base 2 s here).
        evicted_at = timestamp(condition(wl, "Evicted")["lastTransitionTime"])  # type: ignore[index]
        requeue_at = timestamp(requeue_state["requeueAt"])
        assert (requeue_at - evicted_at).total_seconds() >= 2 * 2 ** (count - 1), requeue_state
        wait_for(lambda: "Stopped" in jobs.events("stuck"), message="the Job was stopped")

        # Requeued only after the backoff: the next reservation is not earlier than requeueAt.
        def reserved_again() -> dict[str, Any] | None:
            reserved = condition(jobs.workload("stuck") or {}, "QuotaReserved")
            if (
                reserved
                and reserved["status"] == "True"
                and timestamp(reserved["lastTransitionTime"]) > evicted_at
            ):
                return reserved
            return None

        reserved = wait_for(reserved_again, message="admitted again after the backoff")
        assert timestamp(reserved["lastTransitionTime"]) >= requeue_at, (reserved, requeue_state)

        # Admitted again, evicted again: the count grows.
        def evicted_twice() -> bool:
            current = jobs.workload("stuck")
            return bool(current) and (current["status"].get("requeueState") or {}).get("count", 0) >= 2

        wait_for(evicted_twice, message="a second admission timed out too")
        jobs.delete("stuck")


def test_job_without_queue_is_left_alone(jobs: Jobs, namespace: str) -> None:
    created = jobs.create(JobBuilder("plain", namespace).run_seconds(1))
    assert not created["spec"].get("suspend")
    wait_for(lambda: jobs.succeeded("plain"), message="an unmanaged Job runs by itself")
    assert jobs.workload("plain") is None


def test_default_local_queue_adopts_jobs_without_a_queue_label(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str
) -> None:
    cluster_queue = make_queues(kueue, namespace, flavor_nodes, cpu="2")
    kueue.create(LocalQueueBuilder("default", namespace, cluster_queue).obj())
    created = jobs.create(JobBuilder("unlabelled", namespace).requests(cpu="1").run_seconds(1))
    assert created["spec"]["suspend"] is True
    wl = wait_for(lambda: jobs.workload("unlabelled"), message="a Workload for the unlabelled Job")
    assert wl["spec"]["queueName"] == "default"
    wait_for(lambda: jobs.succeeded("unlabelled"), message="it runs through the default queue")


@pytest.mark.needs_local_cluster
def test_manage_jobs_without_queue_name_suspends_a_job_that_arrived_running(
    jobs: Jobs, namespace: str, controller: ControllerHandle
) -> None:
    """It restarts the controller on another Configuration, which only the local cluster's controller process
    allows (the chart's controller is configured at install time), so it needs the local cluster."""
    selector = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    config = configuration(manageJobsWithoutQueueName=True, managedJobsNamespaceSelector=selector)
    with controller.configured(config):
        # The webhook runs with its default Configuration, so this Job is created running:
        # the controller's safety net must suspend it and queue it (with no queue: it waits).
        created = jobs.create(JobBuilder("unqueued", namespace).requests(cpu="1").run_seconds(-1))
        assert not created["spec"].get("suspend")
        wait_for(
            lambda: jobs.get("unqueued")["spec"].get("suspend") is True, message="suspended by the controller"
        )
        wl = wait_for(lambda: jobs.workload("unqueued"), message="a Workload for it")
        assert not wl["spec"].get("queueName")
        wait_for(lambda: jobs.live_pods("unqueued") == [], message="no pods while it waits")
        assert not is_admitted(jobs.workload("unqueued") or {})
        jobs.delete("unqueued")


@pytest.mark.needs_local_cluster
def test_requeuing_limit_deactivates_the_workload_and_leaves_the_job_suspended(
    jobs: Jobs, kueue: KueueApi, namespace: str, controller: ControllerHandle
) -> None:
    """It restarts the controller on another Configuration, which only the local cluster's controller process
    allows (the chart's controller is configured at install time), so it needs the local cluster."""
    config = configuration(
        waitForPodsReady=wait_for_pods_ready(timeout="4s", backoff_base_seconds=1, backoff_limit_count=1)
    )
    with controller.configured(config):
        make_queues(kueue, namespace, unique("nowhere"), cpu="2")
        jobs.create(queued("hopeless", namespace, seconds=1))

        def deactivated() -> dict[str, Any] | None:
            wl = jobs.workload("hopeless")
            return wl if wl and wl["spec"].get("active") is False else None

        wl = wait_for(deactivated, timeout=120, message="deactivated after exceeding the requeuing limit")
        wait_for(lambda: not holds_quota(jobs.workload("hopeless") or {}), message="its quota released")
        evicted = condition(jobs.workload("hopeless") or {}, "Evicted")
        assert evicted is not None and evicted["reason"].startswith("Deactivated"), evicted
        assert (wl["status"].get("requeueState") or {}).get("count", 0) >= 1
        assert jobs.get("hopeless")["spec"]["suspend"] is True
        wait_for(lambda: jobs.live_pods("hopeless") == [], message="no pods left")


def _set_check(kueue: KueueApi, namespace: str, wl_name: str, check: str, state: str, **extra: Any) -> None:
    """Play the admission-check controller on one Workload."""
    wl = kueue.workload(namespace, wl_name)
    states = []
    for entry in (wl.get("status") or {}).get("admissionChecks") or []:
        if entry["name"] == check:
            entry = {**entry, "state": state, "message": f"set to {state} by the test", **extra}
            entry["lastTransitionTime"] = now_rfc3339()
        states.append(entry)
    kueue.patch_status(
        "Workload",
        wl_name,
        {
            "metadata": {"resourceVersion": wl["metadata"]["resourceVersion"]},
            "status": {"admissionChecks": states},
        },
        namespace,
    )


def test_admission_check_gates_the_start_and_its_pod_set_updates_reach_the_pods(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str
) -> None:
    check = unique("check")
    kueue.create(AdmissionCheckBuilder(check).obj())
    kueue.set_active_condition("AdmissionCheck", check, True)
    flavor = unique("flavor")
    kueue.create(ResourceFlavorBuilder(flavor).node_labels(**{FLAVOR_LABEL: flavor_nodes}).obj())
    cq = unique("cq")
    kueue.create(ClusterQueueBuilder(cq).flavor(flavor, cpu="2").admission_checks(check).obj())
    kueue.create(LocalQueueBuilder("lq", namespace, cq).obj())
    jobs.create(queued("checked", namespace, seconds=2))

    def reserved_check_pending() -> dict[str, Any] | None:
        wl = jobs.workload("checked")
        states = (wl or {}).get("status", {}).get("admissionChecks") or []
        pending = any(s["name"] == check and s["state"] == "Pending" for s in states)
        fresh = wl and holds_quota(wl) and not is_true(wl, "Evicted")
        return wl if fresh and not is_admitted(wl) and pending else None

    # Quota reserved, check pending (the InQueue state of delayed pod creation): still no pods.
    wl = wait_for(reserved_check_pending, message="quota reserved with the check pending")
    assert jobs.get("checked")["spec"]["suspend"] is True and jobs.pods("checked") == []

    # The check says Retry: the workload is evicted and its check reset to Pending, counting one
    # retry. With a 1s requeue delay it may be reserved again between two polls, and the new
    # reservation flips Evicted back to False ("Previously: ..."), so the wait asserts on what
    # persists: the check's retryCount and reset message, and Evicted naming the check's eviction.
    _set_check(kueue, namespace, wl["metadata"]["name"], check, "Retry", requeueAfterSeconds=1)

    def evicted_by_the_check() -> dict[str, Any] | None:
        wl = jobs.workload("checked") or {}
        states = (wl.get("status") or {}).get("admissionChecks") or []
        entry = next((s for s in states if s["name"] == check), {})
        evicted = condition(wl, "Evicted") or {}
        evicted_now = evicted.get("status") == "True" and evicted.get("reason") == "AdmissionCheck"
        evicted_before = evicted.get("status") == "False" and evicted.get("message") == (
            "Previously: At least one admission check is false"
        )
        reset = entry.get("state") == "Pending" and entry.get("retryCount") == 1
        reset_message = entry.get("message") == "Reset to Pending after eviction. Previously: Retry"
        return wl if reset and reset_message and (evicted_now or evicted_before) else None

    wait_for(evicted_by_the_check, message="evicted by the check, which counts one retry")
    assert jobs.pods("checked") == []
    wl = wait_for(reserved_check_pending, message="reserved again after the check's delay")
    assert condition(wl, "Evicted")["reason"] == "QuotaReserved"

    # Ready, with updates for the pods: they are merged into the template at start.
    update = {
        "name": "main",
        "labels": {"pykueue.dev/e2e-check": "passed"},
        "nodeSelector": {"kubernetes.io/os": "linux"},
    }
    _set_check(kueue, namespace, wl["metadata"]["name"], check, "Ready", podSetUpdates=[update])
    pods = wait_for(lambda: [p for p in jobs.pods("checked") if p.spec.node_name], message="pods scheduled")
    for pod in pods:
        assert pod.metadata.labels.get("pykueue.dev/e2e-check") == "passed"
        assert pod.spec.node_selector == {FLAVOR_LABEL: flavor_nodes, "kubernetes.io/os": "linux"}
        assert pod.spec.node_name.startswith(flavor_nodes)
    wait_for(lambda: jobs.succeeded("checked"), message="the checked Job completes")
