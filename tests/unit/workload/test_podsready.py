"""PodsReady on the Workload from the Job's ready and succeeded pods."""

from __future__ import annotations

import pytest

from controller.jobs.job import pods_ready
from controller.workload.podsready import differs, pods_ready_condition
from tests.builders import JobBuilder, WorkloadBuilder


def admitted() -> WorkloadBuilder:
    return WorkloadBuilder("wl").podset(count=2).reserved("cq").admitted()


def ready_job(ready: int, succeeded: int = 0) -> bool:
    """Whether a 2-pod Job with these counts has all its pods ready (the job integration's answer)."""
    return pods_ready(JobBuilder("j").parallelism(2).completions(2).status(ready=ready, succeeded=succeeded).obj())


def test_not_admitted_waits_for_start() -> None:
    cond = pods_ready_condition(ready_job(2), WorkloadBuilder("wl").podset(count=2).obj())
    assert (cond.status, cond.reason) == ("False", "WaitForStart")


def test_started_when_all_pods_ready_or_succeeded() -> None:
    assert pods_ready_condition(ready_job(1), admitted().obj()).reason == "WaitForStart"
    cond = pods_ready_condition(ready_job(1, succeeded=1), admitted().obj())
    assert (cond.status, cond.reason) == ("True", "Started")


@pytest.mark.parametrize("previous_reason", ["Started", "Recovered"])
def test_losing_a_pod_after_start_waits_for_recovery(previous_reason: str) -> None:
    wl = admitted().condition("PodsReady", True, previous_reason).obj()
    cond = pods_ready_condition(ready_job(1), wl)
    assert (cond.status, cond.reason) == ("False", "WaitForRecovery")


def test_recovering_reports_recovered() -> None:
    wl = admitted().condition("PodsReady", False, "WaitForRecovery").obj()
    assert pods_ready_condition(ready_job(1), wl).reason == "WaitForRecovery"
    cond = pods_ready_condition(ready_job(2), wl)
    assert (cond.status, cond.reason) == ("True", "Recovered")


def test_differs_only_on_status_or_reason() -> None:
    wl = admitted().condition("PodsReady", True, "Started", "any message").obj()
    assert not differs(wl, pods_ready_condition(ready_job(2), wl))
    assert differs(wl, pods_ready_condition(ready_job(0), wl))
