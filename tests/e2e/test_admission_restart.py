"""Kill -9 the controller in the middle of a burst of 200 workloads, restart it: every workload is
admitted exactly once and the admission invariants hold at every point we look."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from kubernetes import client as k8s

from tests.e2e.fixtures.controller import ControllerHandle
from tests.e2e.helpers.invariants import check_cluster
from tests.e2e.helpers.kueue import KueueApi, condition, is_admitted, is_true, make_queues, submit
from tests.e2e.helpers.wait import wait_for

BURST = 200
KILL_AFTER_FINISHED = 60
QUOTA_CPU = 20
DEADLINE_SECONDS = 300


def _finish_admitted(kueue: KueueApi, namespace: str, first_reservation: dict[str, str]) -> int:
    """Finish every admitted workload (as its job would); record when its quota was reserved.
    Returns how many are finished."""
    finished = 0
    for wl in kueue.workloads(namespace):
        name = wl["metadata"]["name"]
        reserved = condition(wl, "QuotaReserved")
        if is_true(wl, "Finished"):
            finished += 1
            continue
        if is_admitted(wl):
            stamp = f"{reserved['lastTransitionTime']}|{wl['status']['admission']['clusterQueue']}"
            first_reservation.setdefault(name, stamp)
            try:
                kueue.finish(wl)
            except k8s.ApiException as err:
                if err.status != 409:  # the controller wrote in between; next round
                    raise
    return finished


def test_kill_minus_nine_during_a_burst_admits_everything_exactly_once(
    kueue: KueueApi, kube: k8s.ApiClient, namespace: str, controller: ControllerHandle
) -> None:
    _, cq = make_queues(kueue, namespace, cpu=str(QUOTA_CPU))
    first_reservation: dict[str, str] = {}
    violations_seen: list[str] = []

    # The burst: 200 workloads for 20 slots. The test finishes admitted ones as they come, so the
    # controller keeps admitting; the kill lands while admission writes are flowing.
    for i in range(BURST):
        submit(kueue, namespace, f"w{i:03d}")
    deadline = time.monotonic() + DEADLINE_SECONDS
    finished = 0
    while finished < KILL_AFTER_FINISHED and time.monotonic() < deadline:
        violations_seen += check_cluster(kube)
        finished = _finish_admitted(kueue, namespace, first_reservation)
        time.sleep(0.25)  # each round lists 200 Workloads (through the conversion webhook in v1beta1)
    controller.kill()
    admitted_before_kill = len(first_reservation)
    # Whatever the dead controller managed to write is admitted: finish those too.
    _finish_admitted(kueue, namespace, first_reservation)
    violations_seen += check_cluster(kube)
    controller.start()
    restarted = time.monotonic()

    while time.monotonic() < deadline:
        violations_seen += check_cluster(kube)
        finished = _finish_admitted(kueue, namespace, first_reservation)
        if finished == BURST:
            break
        time.sleep(0.3)
    assert not violations_seen, violations_seen[:10]
    assert finished == BURST, (
        f"only {finished}/{BURST} workloads finished; controller log:\n{controller.log_tail()}"
    )
    assert KILL_AFTER_FINISHED <= admitted_before_kill < BURST, (
        "the kill must land in the middle of the burst"
    )
    print(
        f"\n{admitted_before_kill} admitted before the kill; the other {BURST - admitted_before_kill} "
        f"admitted and finished {time.monotonic() - restarted:.1f}s after the restart"
    )

    workloads = {wl["metadata"]["name"]: wl for wl in kueue.workloads(namespace)}
    for name, stamp in first_reservation.items():
        wl = workloads[name]
        reserved = condition(wl, "QuotaReserved")
        assert f"{reserved['lastTransitionTime']}|{wl['status']['admission']['clusterQueue']}" == stamp, (
            f"{name} was reserved again after it was admitted"
        )
        assert (condition(wl, "Evicted") or {}).get("status") != "True", f"{name} was evicted: {wl['status']}"
    assert len(first_reservation) == BURST

    events = k8s.CoreV1Api(kube).list_namespaced_event(namespace).items
    reservations: Counter[str] = Counter()
    for event in events:
        if event.reason == "QuotaReserved":
            reservations[event.involved_object.name] += event.count or 1
    twice = {name: n for name, n in reservations.items() if n > 1}
    assert not twice, f"workloads whose quota was reserved more than once: {twice}"

    def drained_status() -> dict[str, Any] | None:
        status = (kueue.get("ClusterQueue", cq) or {}).get("status") or {}
        counts = (
            status.get("pendingWorkloads"),
            status.get("reservingWorkloads"),
            status.get("admittedWorkloads"),
        )
        return status if counts == (0, 0, 0) else None

    wait_for(
        drained_status, timeout=30, message="the ClusterQueue shows nothing pending or reserved at the end"
    )
