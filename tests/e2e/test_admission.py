"""Admission of standalone Workloads on the real apiserver: within quota, waiting beyond it,
quota released by finishing, queue status, Events and metrics."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from tests.builders import ClusterQueueBuilder, LocalQueueBuilder, ResourceFlavorBuilder, WorkloadBuilder
from tests.e2e.fixtures.controller import ControllerHandle
from tests.e2e.helpers.kueue import (
    KueueApi,
    admitted_names,
    condition,
    holds_quota,
    is_admitted,
    make_queues,
    submit,
    unique,
)
from tests.e2e.helpers.wait import wait_for


def events_for(kube: k8s.ApiClient, namespace: str, name: str) -> list[str]:
    events = k8s.CoreV1Api(kube).list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={name}"
    )
    return [e.reason for e in events.items]


@pytest.mark.both_versions  # also in v1beta2, through the conversion webhook
def test_admits_within_quota_and_queues_the_rest_with_a_reason(
    kueue: KueueApi, kube: k8s.ApiClient, namespace: str
) -> None:
    flavor, cq_name = make_queues(kueue, namespace, cpu="2")
    for name in ("a", "b", "c"):
        submit(kueue, namespace, name)

    def two_admitted() -> set[str] | None:
        names = admitted_names(kueue, namespace)
        return names if len(names) == 2 else None

    admitted = wait_for(
        two_admitted, timeout=30, message="two of three 1-cpu workloads admitted in a 2-cpu queue"
    )
    (waiting,) = {"a", "b", "c"} - admitted
    first = kueue.workload(namespace, sorted(admitted)[0])
    assert first["status"]["admission"]["clusterQueue"] == cq_name
    assert first["status"]["admission"]["podSetAssignments"][0]["flavors"] == {"cpu": flavor}
    assert condition(first, "QuotaReserved")["reason"] == "QuotaReserved"

    def pending_reason() -> dict[str, Any] | None:
        cond = condition(kueue.workload(namespace, waiting), "QuotaReserved")
        return cond if cond and cond["status"] == "False" else None

    reason = wait_for(pending_reason, timeout=30, message="pending workload explains why")
    assert reason["reason"] == "WaitingForQuota", reason
    assert "insufficient unused quota for cpu" in reason["message"]

    def cq_status() -> dict[str, Any] | None:
        status = (kueue.get("ClusterQueue", cq_name) or {}).get("status") or {}
        return (
            status if status.get("admittedWorkloads") == 2 and status.get("pendingWorkloads") == 1 else None
        )

    status = wait_for(cq_status, timeout=30, message="ClusterQueue status counts")
    assert status["reservingWorkloads"] == 2
    assert status["flavorsUsage"] == [
        {"name": flavor, "resources": [{"name": "cpu", "total": "2", "borrowed": "0"}]}
    ]
    assert condition({"status": status}, "Active")["reason"] == "Ready"

    def lq_status_counts() -> dict[str, Any] | None:
        lq_status = (kueue.get("LocalQueue", "lq", namespace) or {}).get("status") or {}
        return lq_status if lq_status.get("admittedWorkloads") == 2 else None

    lq_status = wait_for(lq_status_counts, timeout=30, message="LocalQueue status")
    assert lq_status["pendingWorkloads"] == 1
    assert lq_status["flavorUsage"] == [{"name": flavor, "resources": [{"name": "cpu", "total": "2"}]}]
    wait_for(
        lambda: {"QuotaReserved", "Admitted"} <= set(events_for(kube, namespace, first["metadata"]["name"])),
        timeout=30,
        message="QuotaReserved and Admitted events",
    )

    # Finishing an admitted workload releases its quota to the waiting one.
    kueue.finish(first)
    wait_for(
        lambda: is_admitted(kueue.workload(namespace, waiting)),
        timeout=30,
        message="the waiting workload is admitted once quota is released",
    )


def test_kueue_metrics_count_admissions(
    kueue: KueueApi, namespace: str, controller: ControllerHandle
) -> None:
    _, cq_name = make_queues(kueue, namespace, cpu="1")
    submit(kueue, namespace, "m1")
    submit(kueue, namespace, "m2")
    wait_for(
        lambda: is_admitted(kueue.workload(namespace, "m1")) or is_admitted(kueue.workload(namespace, "m2")),
        timeout=30,
        message="one admitted",
    )

    def sample(name: str, **labels: str) -> float | None:
        selector = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in controller.metrics().splitlines():
            if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
        raise AssertionError(f"no sample {name}{{{selector}}}")

    wait_for(
        lambda: sample("kueue_admitted_workloads_total", cluster_queue=cq_name) == 1,
        timeout=30,
        message="kueue_admitted_workloads_total counts the admission",
    )
    # Kueue v0.19's replica_role label: this replica admits, so it leads (or runs standalone).
    assert any(
        line.startswith("kueue_admitted_workloads_total{") and f'cluster_queue="{cq_name}"' in line
        and ('replica_role="leader"' in line or 'replica_role="standalone"' in line)
        for line in controller.metrics().splitlines()
    ), "kueue_admitted_workloads_total carries replica_role"
    wait_for(
        lambda: sample("kueue_pending_workloads", cluster_queue=cq_name, status="inadmissible") == 1,
        timeout=30,
        message="kueue_pending_workloads shows the waiting one",
    )
    wait_for(
        lambda: sample("kueue_cluster_queue_resource_usage", cluster_queue=cq_name, resource="cpu") == 1000,
        timeout=30,
        message="usage in milli-cpu",
    )
    assert sample("kueue_admission_wait_time_seconds_count", cluster_queue=cq_name) == 1


def test_workload_larger_than_the_queue_never_fits(kueue: KueueApi, namespace: str) -> None:
    make_queues(kueue, namespace, cpu="2")
    submit(kueue, namespace, "huge", cpu="3")

    def reason() -> str | None:
        cond = condition(kueue.workload(namespace, "huge"), "QuotaReserved")
        return cond["reason"] if cond and cond["status"] == "False" else None

    assert wait_for(reason, timeout=30, message="oversized workload gets a pending reason") in (
        "ExceedsMaxQuota",
        "NoMatchingFlavor",
        "WaitingForQuota",
    )
    assert not holds_quota(kueue.workload(namespace, "huge"))


def test_missing_local_queue_is_misconfigured(kueue: KueueApi, namespace: str) -> None:
    submit(kueue, namespace, "lost", queue="no-such-queue")

    def reason() -> dict[str, Any] | None:
        cond = condition(kueue.workload(namespace, "lost"), "QuotaReserved")
        return cond if cond and cond["status"] == "False" else None

    cond = wait_for(reason, timeout=30, message="workload without a LocalQueue explains why")
    assert cond["reason"] == "Misconfigured"
    assert cond["message"] == "LocalQueue no-such-queue doesn't exist"


def test_cluster_queue_with_a_missing_flavor_is_inactive_until_it_exists(
    kueue: KueueApi, namespace: str
) -> None:
    flavor = unique("late")
    cq_name = unique("cq")
    kueue.create(ClusterQueueBuilder(cq_name).flavor(flavor, cpu="1").obj())
    kueue.create(LocalQueueBuilder("lq", namespace, cq_name).obj())
    submit(kueue, namespace, "w")

    def active(kind: str, name: str, ns: str | None = None) -> dict[str, Any] | None:
        return condition(kueue.get(kind, name, ns) or {}, "Active")

    cq_active = wait_for(
        lambda: (c := active("ClusterQueue", cq_name)) and c["status"] == "False" and c,
        timeout=30,
        message="ClusterQueue inactive",
    )
    assert cq_active["reason"] == "FlavorNotFound" and flavor in cq_active["message"]
    lq_active = wait_for(
        lambda: (c := active("LocalQueue", "lq", namespace)) and c["status"] == "False" and c,
        timeout=30,
        message="LocalQueue inactive",
    )
    assert lq_active["reason"] == "ClusterQueueIsInactive"
    assert not holds_quota(kueue.workload(namespace, "w"))

    kueue.create(ResourceFlavorBuilder(flavor).obj())
    wait_for(
        lambda: is_admitted(kueue.workload(namespace, "w")),
        timeout=30,
        message="the workload is admitted once the flavor exists",
    )
    # The queue's status is written by its own controller, possibly just after the admission.
    wait_for(lambda: (active("ClusterQueue", cq_name) or {}).get("reason") == "Ready", timeout=30,
             message="the ClusterQueue is Ready again")


def test_maximum_execution_time_deactivates_the_workload(kueue: KueueApi, namespace: str) -> None:
    make_queues(kueue, namespace, cpu="1")
    wl = WorkloadBuilder("capped", namespace).queue("lq").podset(cpu="1").obj()
    for generated in ("uid", "creationTimestamp", "generation"):
        del wl["metadata"][generated]
    wl["spec"]["maximumExecutionTimeSeconds"] = 3
    kueue.create(wl)
    wait_for(lambda: is_admitted(kueue.workload(namespace, "capped")), timeout=30, message="admitted")

    def deactivated() -> dict[str, Any] | None:
        current = kueue.workload(namespace, "capped")
        return current if current["spec"].get("active") is False and not holds_quota(current) else None

    final = wait_for(deactivated, timeout=30, message="deactivated once its execution time is used up")
    assert condition(final, "Evicted")["reason"] == "DeactivatedDueToMaximumExecutionTimeExceeded"
    assert final["status"].get("accumulatedPastExexcutionTimeSeconds", 0) >= 3
