"""Admission fair sharing between the LocalQueues of one ClusterQueue, with batch Jobs on a real
control plane (docs/design/fair-sharing.md, "Admission fair sharing").

The controller is restarted with ``admissionFairSharing`` (half-life 30 s, a sample every second)
in its Configuration. One ClusterQueue of 1 cpu with ``UsageBasedAdmissionFairSharing`` serves two
LocalQueues; each Job is one pod of 1 cpu that runs 3 s, so the queue admits one Job at a time.
LocalQueue a gets a backlog first and starts running it; b's backlog comes later. In arrival
order every Job of a would run before any of b; by usage, the LocalQueue that ran less recently
goes next, so with equal weights the admissions alternate, and with b weighing 3 b gets most.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.builders import ClusterQueueBuilder, JobBuilder, LocalQueueBuilder, ResourceFlavorBuilder
from tests.e2e.fixtures.controller import ControllerHandle, configuration
from tests.e2e.helpers.jobs import FLAVOR_LABEL, JOB_UID_LABEL, Jobs
from tests.e2e.helpers.kueue import KueueApi, holds_quota, unique
from tests.e2e.helpers.wait import wait_for

pytestmark = pytest.mark.needs_local_cluster

BACKLOG = 5
AFS = {"usageHalfLifeTime": "30s", "usageSamplingInterval": "1s"}


def _queues(kueue: KueueApi, namespace: str, nodes: str, weight_b: str) -> str:
    flavor = unique("flavor")
    kueue.create(ResourceFlavorBuilder(flavor).node_labels(**{FLAVOR_LABEL: nodes}).obj())
    cq = unique("cq")
    kueue.create(ClusterQueueBuilder(cq).flavor(flavor, cpu="1").admission_mode().obj())
    kueue.create(LocalQueueBuilder("lq-a", namespace, cq).weight("1").obj())
    kueue.create(LocalQueueBuilder("lq-b", namespace, cq).weight(weight_b).obj())
    return cq


def _job(name: str, namespace: str, queue: str) -> JobBuilder:
    return JobBuilder(name, namespace).queue(queue).parallelism(1).completions(1).requests(cpu="1").run_seconds(3)


class _Order:
    """Job names in the order their Workloads were first seen holding quota (polled; a Job runs 3 s
    and only one runs at a time, so no reservation is missed)."""

    def __init__(self, kueue: KueueApi, namespace: str) -> None:
        self.kueue = kueue
        self.namespace = namespace
        self.uids: dict[str, str] = {}
        self.seen: list[str] = []

    def poll(self) -> list[str]:
        for wl in self.kueue.workloads(self.namespace):
            job = self.uids.get(((wl.get("metadata") or {}).get("labels") or {}).get(JOB_UID_LABEL, ""))
            if job is not None and job not in self.seen and holds_quota(wl):
                self.seen.append(job)
        return self.seen


def _run(kueue: KueueApi, jobs: Jobs, namespace: str, nodes: str, weight_b: str) -> list[str]:
    _queues(kueue, namespace, nodes, weight_b)
    order = _Order(kueue, namespace)
    for i in range(BACKLOG):
        order.uids[jobs.create(_job(f"a{i}", namespace, "lq-a"))["metadata"]["uid"]] = f"a{i}"
    # Which of a's Jobs runs first is not fixed: the controller creates their Workloads in parallel,
    # within one second (creationTimestamp's resolution), so their FIFO order is a tie.
    wait_for(lambda: order.poll(), timeout=60, message="a first Job of a's backlog runs")
    for i in range(BACKLOG):
        order.uids[jobs.create(_job(f"b{i}", namespace, "lq-b"))["metadata"]["uid"]] = f"b{i}"
    wait_for(lambda: len(order.poll()) == 2 * BACKLOG, timeout=240, interval=0.3,
             message="every Job ran, one at a time")
    return order.seen


def _longest_run(order: list[str]) -> int:
    return max(len(list(group)) for _, group in itertools.groupby(name[0] for name in order))


def _consumed(kueue: KueueApi, namespace: str, lq: str) -> Any:
    status = (kueue.get("LocalQueue", lq, namespace) or {}).get("status") or {}
    return ((status.get("fairSharing") or {}).get("admissionFairSharingStatus") or {}).get("consumedResources")


def test_admissions_alternate_by_usage_instead_of_arrival_order(
    kueue: KueueApi, jobs: Jobs, namespace: str, controller: ControllerHandle, flavor_nodes: str
) -> None:
    with controller.configured(configuration(admissionFairSharing=AFS)):
        order = _run(kueue, jobs, namespace, flavor_nodes, weight_b="1")
        # A Job of a was running when b's backlog came; a Job of b goes next although a's four
        # others are older (which of each: their Workloads are created within one second).
        assert order[0].startswith("a") and order[1].startswith("b"), order
        # Arrival order would be a's five then b's five; by usage the two alternate while both have
        # work (the last Jobs of the longer backlog run in a row at the end).
        assert _longest_run(order[: 2 * BACKLOG - 2]) <= 2, order
        wait_for(lambda: (_consumed(kueue, namespace, "lq-a") or {}).get("cpu") not in (None, "0"), timeout=30,
                 message="lq-a shows its decayed usage in status.fairSharing.admissionFairSharingStatus")
        wait_for(lambda: (_consumed(kueue, namespace, "lq-b") or {}).get("cpu") not in (None, "0"), timeout=30,
                 message="lq-b too")


def test_a_heavier_local_queue_gets_more_of_the_admissions(
    kueue: KueueApi, jobs: Jobs, namespace: str, controller: ControllerHandle, flavor_nodes: str
) -> None:
    with controller.configured(configuration(admissionFairSharing=AFS)):
        order = _run(kueue, jobs, namespace, flavor_nodes, weight_b="3")
        assert order[0].startswith("a") and order[1].startswith("b"), order
        # Weight 3: b's usage counts a third, so b runs several Jobs in a row before a's turn.
        assert sum(1 for name in order[1:7] if name.startswith("b")) >= 4, order
