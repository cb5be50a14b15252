"""Two leader-electing replicas: only the leader admits; kill -9 it while admissions flow and the
standby takes over within the lease time, admitting the rest exactly once.

The replicas are local controller processes started in place of the suite's controller, which
only the local cluster allows (the chart runs its own), so the module needs the local cluster."""

from __future__ import annotations

import time

import pytest
from kubernetes import client as k8s

from tests.e2e.fixtures.controller import ControllerHandle
from tests.e2e.helpers.invariants import check_cluster
from tests.e2e.helpers.kueue import KueueApi, condition, is_admitted, is_true, make_queues, submit
from tests.e2e.helpers.wait import wait_for

pytestmark = pytest.mark.needs_local_cluster

LEASE_NAME = "pykueue-controller-leader"
WORKLOADS = 60
QUOTA_CPU = 10
KILL_AFTER_FINISHED = 20
# Lease duration 15 s plus a retry period and the new leader's first cycle.
TAKEOVER_BOUND_SECONDS = 30


def _holder(kube: k8s.ApiClient, namespace: str) -> str | None:
    try:
        lease = k8s.CoordinationV1Api(kube).read_namespaced_lease(LEASE_NAME, namespace)
    except k8s.ApiException:
        return None
    return lease.spec.holder_identity or None


def _finish_admitted(kueue: KueueApi, namespace: str, reserved_at: dict[str, str]) -> int:
    finished = 0
    for wl in kueue.workloads(namespace):
        if is_true(wl, "Finished"):
            finished += 1
        elif is_admitted(wl):
            reserved_at.setdefault(
                wl["metadata"]["name"], condition(wl, "QuotaReserved")["lastTransitionTime"]
            )
            kueue.finish(wl)
    return finished


def test_standby_takes_over_admission_after_the_leader_is_killed(
    kueue: KueueApi, kube: k8s.ApiClient, namespace: str, controller: ControllerHandle
) -> None:
    _, cq = make_queues(kueue, namespace, cpu=str(QUOTA_CPU))
    reserved_at: dict[str, str] = {}
    violations: list[str] = []
    with controller.replicas(2, lease_namespace=namespace) as replicas:
        leader_id = wait_for(lambda: _holder(kube, namespace), timeout=60, message="one replica leads")
        leader = next(r for r in replicas if r.identity == leader_id)
        standby = next(r for r in replicas if r is not leader)

        for i in range(WORKLOADS):
            submit(kueue, namespace, f"w{i:02d}")
        deadline = time.monotonic() + 120
        finished = 0
        while finished < KILL_AFTER_FINISHED and time.monotonic() < deadline:
            violations += check_cluster(kube)
            finished = _finish_admitted(kueue, namespace, reserved_at)
            time.sleep(0.1)
        assert finished >= KILL_AFTER_FINISHED, (
            f"the leader admitted too little: {finished}\n{leader.log_tail()}"
        )

        leader.kill()
        killed_at = time.monotonic()
        wait_for(
            lambda: _holder(kube, namespace) == standby.identity,
            timeout=TAKEOVER_BOUND_SECONDS,
            message="the standby holds the lease",
        )
        while time.monotonic() < deadline:
            violations += check_cluster(kube)
            finished = _finish_admitted(kueue, namespace, reserved_at)
            if finished == WORKLOADS:
                break
            time.sleep(0.3)
        resumed_after = time.monotonic() - killed_at
        assert finished == WORKLOADS, f"{finished}/{WORKLOADS} finished; standby log:\n{standby.log_tail()}"
        assert not violations, violations[:10]
        standby_log = standby.log_path.read_text()
        assert '"quota reserved"' in standby_log, "the new leader admitted the rest"
        print(
            f"\nall {WORKLOADS} admitted; the standby finished the backlog {resumed_after:.1f}s after the kill"
        )

    for wl in kueue.workloads(namespace):
        name = wl["metadata"]["name"]
        assert condition(wl, "QuotaReserved")["lastTransitionTime"] == reserved_at[name], (
            f"{name} reserved twice"
        )
    wait_for(
        lambda: ((kueue.get("ClusterQueue", cq) or {}).get("status") or {}).get("reservingWorkloads") == 0,
        timeout=30,
        message="nothing is left reserved once everything finished",
    )
