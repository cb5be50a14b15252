"""waitForPodsReady from the controller's Configuration: a workload whose pods never become ready
is evicted with PodsReadyTimeout, requeued after an exponential backoff, and deactivated past
the requeuing limit; blockAdmission admits one workload at a time until its pods are ready.

Every test restarts the controller on a waitForPodsReady Configuration, which only the local
cluster's controller process allows (the chart's controller is configured at install time), so the
module needs the local cluster."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.fixtures.controller import ControllerHandle, configuration, wait_for_pods_ready
from tests.e2e.helpers.kueue import (
    KueueApi,
    condition,
    holds_for,
    holds_quota,
    is_admitted,
    make_queues,
    now_rfc3339,
    submit,
)
from tests.e2e.helpers.wait import wait_for

pytestmark = pytest.mark.needs_local_cluster


def test_pods_ready_timeout_evicts_requeues_with_backoff_then_deactivates(
    kueue: KueueApi, namespace: str, controller: ControllerHandle
) -> None:
    config = configuration(
        waitForPodsReady=wait_for_pods_ready(timeout="3s", backoff_base_seconds=2, backoff_limit_count=1)
    )
    with controller.configured(config):
        make_queues(kueue, namespace, cpu="1")
        submit(kueue, namespace, "never-ready")
        wait_for(
            lambda: is_admitted(kueue.workload(namespace, "never-ready")), timeout=30, message="admitted"
        )

        def evicted_once() -> dict[str, Any] | None:
            wl = kueue.workload(namespace, "never-ready")
            state = (wl.get("status") or {}).get("requeueState") or {}
            return wl if state.get("count") == 1 else None

        wl = wait_for(evicted_once, timeout=30, message="evicted after the PodsReady timeout")
        evicted = condition(wl, "Evicted")
        assert evicted["reason"] == "PodsReadyTimeout", evicted
        assert wl["status"]["requeueState"].get("requeueAt"), wl["status"]["requeueState"]

        def readmitted() -> bool:
            current = kueue.workload(namespace, "never-ready")
            return holds_quota(current) and (condition(current, "Requeued") or {}).get("status") == "True"

        wait_for(readmitted, timeout=30, message="re-admitted once the 2 s backoff finished")

        def deactivated() -> dict[str, Any] | None:
            current = kueue.workload(namespace, "never-ready")
            return current if current["spec"].get("active") is False and not holds_quota(current) else None

        final = wait_for(
            deactivated, timeout=40, message="past backoffLimitCount the workload is deactivated"
        )
        assert condition(final, "Evicted")["reason"] == "DeactivatedDueToRequeuingLimitExceeded"


def test_block_admission_admits_sequentially_until_pods_are_ready(
    kueue: KueueApi, namespace: str, controller: ControllerHandle
) -> None:
    config = configuration(waitForPodsReady=wait_for_pods_ready(timeout="5m", block_admission=True))
    with controller.configured(config):
        make_queues(kueue, namespace, cpu="3")
        for name in ("a", "b", "c"):
            submit(kueue, namespace, name)

        def admitted() -> set[str]:
            return {wl["metadata"]["name"] for wl in kueue.workloads(namespace) if is_admitted(wl)}

        first = wait_for(lambda: admitted() or None, timeout=30, message="one workload admitted")
        assert len(first) == 1, first
        holds_for(lambda: admitted() == first, 3, "nothing else is admitted while its pods are not ready")

        # Play the job integration: the admitted workload's pods are ready.
        (name,) = first
        wl = kueue.workload(namespace, name)
        conditions = [
            *wl["status"]["conditions"],
            {
                "type": "PodsReady",
                "status": "True",
                "reason": "Started",
                "message": "pods ready",
                "lastTransitionTime": now_rfc3339(),
            },
        ]
        kueue.patch_status(
            "Workload",
            name,
            {
                "metadata": {"resourceVersion": wl["metadata"]["resourceVersion"]},
                "status": {"conditions": conditions},
            },
            namespace,
        )

        def two_admitted() -> set[str] | None:
            names = admitted()
            return names if len(names) == 2 else None

        second = wait_for(
            two_admitted,
            timeout=30,
            message="the next workload is admitted once the first one's pods are ready",
        )
        assert first < second
