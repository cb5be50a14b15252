"""The parent alone drives the Job: it runs with the holder option's flavors, restarts on
migration, and an evicted holder gives its quota back once the pods are gone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controller.concurrentadmission.naming import option_name
from controller.concurrentadmission.option_workloads import build_option
from controller.jobs.reconciler import JobReconciler, JobSettings
from pykueue.kube import resources as R
from tests.builders import JobBuilder, ResourceFlavorBuilder, condition
from tests.unit.concurrentadmission.helpers import config_of, three_flavor_queue
from tests.unit.jobs.fake import FakeCluster

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
NS = "team-a"
Obj = dict[str, Any]


@pytest.fixture
def cluster() -> FakeCluster:
    api = FakeCluster()
    for flavor in ("reservation", "on-demand", "spot"):
        api.put(R.RESOURCE_FLAVORS, ResourceFlavorBuilder(flavor).node_labels(pool=flavor).obj())
    return api


def _parent(cluster: FakeCluster, rec: JobReconciler) -> Obj:
    cluster.put(R.JOBS, JobBuilder("job", NS).queue("lq").suspend().requests(cpu="1").obj())
    rec.reconcile(NS, "job")
    [wl] = cluster.workloads_for_job(NS, "job")
    # What the option controller does to a workload of a concurrent-admission queue.
    return cluster.patch(
        R.WORKLOADS,
        wl["metadata"]["name"],
        {
            "spec": {"workloadMode": {"type": "Parent"}},
            "metadata": {"labels": {"kueue.x-k8s.io/concurrent-admission-parent": "true"}},
        },
        NS,
    )


def _options(cluster: FakeCluster, parent: Obj) -> None:
    config = config_of(three_flavor_queue())
    for spec in config.options:
        cluster.create(
            R.WORKLOADS, build_option(parent, spec, option_name(parent["metadata"]["name"], spec.suffix)), NS
        )


def _name(parent: Obj, suffix: str) -> str:
    return option_name(parent["metadata"]["name"], suffix)


def _reserve(cluster: FakeCluster, name: str, flavor: str) -> None:
    cluster.patch_status(
        R.WORKLOADS,
        name,
        {
            "status": {
                "admission": {
                    "clusterQueue": "cq",
                    "podSetAssignments": [
                        {
                            "name": "main",
                            "flavors": {"cpu": flavor},
                            "resourceUsage": {"cpu": "1"},
                            "count": 1,
                        }
                    ],
                },
                "conditions": [
                    condition("QuotaReserved", True, "QuotaReserved", "reserved"),
                    condition("Admitted", True, "Admitted", "The workload is admitted"),
                ],
            }
        },
        NS,
    )


def _release(cluster: FakeCluster, name: str, reason: str) -> None:
    """What the scheduler's migration write does: evict and clear the reservation at once."""
    cluster.patch_status(
        R.WORKLOADS,
        name,
        {
            "status": {
                "admission": None,
                "conditions": [
                    condition("QuotaReserved", False, "Pending", reason),
                    condition("Evicted", True, reason, reason),
                ],
            }
        },
        NS,
    )


def _job(cluster: FakeCluster) -> Obj:
    job = cluster.job(NS, "job")
    assert job is not None
    return job


def test_job_waits_while_no_option_holds_quota_then_runs_on_the_holders_flavor(cluster: FakeCluster) -> None:
    rec = JobReconciler(cluster, cluster, JobSettings(), events=cluster, clock=lambda: NOW)
    parent = _parent(cluster, rec)
    _options(cluster, parent)
    rec.reconcile(NS, "job")
    assert _job(cluster)["spec"]["suspend"] is True
    _reserve(cluster, _name(parent, "spot"), "spot")
    rec.reconcile(NS, "job")
    job = _job(cluster)
    assert job["spec"]["suspend"] is False
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}
    # The parent itself never gets an admission.
    stored = cluster.get(R.WORKLOADS, parent["metadata"]["name"], NS)
    assert stored is not None and "admission" not in stored.get("status", {})


def test_migration_stops_the_job_and_starts_it_on_the_new_flavor(cluster: FakeCluster) -> None:
    rec = JobReconciler(cluster, cluster, JobSettings(), events=cluster, clock=lambda: NOW)
    parent = _parent(cluster, rec)
    _options(cluster, parent)
    _reserve(cluster, _name(parent, "spot"), "spot")
    rec.reconcile(NS, "job")
    assert _job(cluster)["spec"]["suspend"] is False

    _release(cluster, _name(parent, "spot"), "FlavorMigration")
    _reserve(cluster, _name(parent, "on-demand"), "on-demand")
    rec.reconcile(NS, "job")
    job = _job(cluster)
    assert job["spec"]["suspend"] is True
    assert any("Migrating to option" in e[3] for e in cluster.events if e[2] == "Stopped")

    rec.reconcile(NS, "job")
    job = _job(cluster)
    assert job["spec"]["suspend"] is False
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "on-demand"}


def test_an_evicted_holder_releases_its_own_quota_once_pods_are_gone(cluster: FakeCluster) -> None:
    rec = JobReconciler(cluster, cluster, JobSettings(), events=cluster, clock=lambda: NOW)
    parent = _parent(cluster, rec)
    _options(cluster, parent)
    spot = _name(parent, "spot")
    _reserve(cluster, spot, "spot")
    rec.reconcile(NS, "job")
    current = cluster.get(R.WORKLOADS, spot, NS)
    assert current is not None
    conds = [*current["status"]["conditions"], condition("Evicted", True, "Preempted", "preempted")]
    cluster.patch_status(R.WORKLOADS, spot, {"status": {"conditions": conds}}, NS)
    rec.reconcile(NS, "job")
    assert _job(cluster)["spec"]["suspend"] is True
    rec.reconcile(NS, "job")  # no pods left in the fake: the quota goes back
    option = cluster.get(R.WORKLOADS, spot, NS)
    assert option is not None and "admission" not in option["status"]
    stored = cluster.get(R.WORKLOADS, parent["metadata"]["name"], NS)
    assert stored is not None and "admission" not in stored.get("status", {})


def _reserve_only(cluster: FakeCluster, name: str, flavor: str) -> None:
    _reserve(cluster, name, flavor)
    current = cluster.get(R.WORKLOADS, name, NS)
    assert current is not None
    conds = [c for c in current["status"]["conditions"] if c["type"] != "Admitted"]
    conds.append(condition("Admitted", False, "UnsatisfiedAdmissionChecks", "checks pending"))
    cluster.patch_status(R.WORKLOADS, name, {"status": {"conditions": conds}}, NS)


def test_a_reserved_option_whose_checks_still_run_does_not_start_the_job(cluster: FakeCluster) -> None:
    """Two-phase: only the option that became Admitted (the winner) drives the Job."""
    rec = JobReconciler(cluster, cluster, JobSettings(), events=cluster, clock=lambda: NOW)
    parent = _parent(cluster, rec)
    _options(cluster, parent)
    _reserve_only(cluster, _name(parent, "reservation"), "reservation")
    _reserve_only(cluster, _name(parent, "spot"), "spot")
    rec.reconcile(NS, "job")
    assert _job(cluster)["spec"]["suspend"] is True
    _reserve(cluster, _name(parent, "spot"), "spot")  # spot's check became Ready first
    rec.reconcile(NS, "job")
    job = _job(cluster)
    assert job["spec"]["suspend"] is False
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}


def test_a_stale_mirrored_admission_on_the_parent_never_starts_the_job(cluster: FakeCluster) -> None:
    rec = JobReconciler(cluster, cluster, JobSettings(), events=cluster, clock=lambda: NOW)
    parent = _parent(cluster, rec)
    _options(cluster, parent)
    # The parent still shows the admission of a winner that has since lost its quota.
    _reserve(cluster, parent["metadata"]["name"], "spot")
    rec.reconcile(NS, "job")
    assert _job(cluster)["spec"]["suspend"] is True
