"""What a batch Job reports: pod count, activity, readiness, finish."""

from __future__ import annotations

import pytest

from controller.jobs import job as jobs
from tests.builders import JobBuilder


@pytest.mark.parametrize(
    ("parallelism", "completions", "expected"),
    [(1, 1, 1), (4, None, 4), (4, 2, 2), (2, 10, 2), (0, 3, 0)],
)
def test_pods_count_is_parallelism_capped_by_completions(
    parallelism: int, completions: int | None, expected: int
) -> None:
    job = JobBuilder("j").parallelism(parallelism).completions(completions).obj()
    assert jobs.pods_count(job) == expected


def test_pods_count_tolerates_garbage() -> None:
    assert jobs.pods_count({"spec": {"parallelism": "three"}}) == 1
    assert jobs.pods_count({}) == 1


def test_pods_ready_counts_ready_and_succeeded() -> None:
    builder = JobBuilder("j").parallelism(3).completions(3)
    assert not jobs.pods_ready(builder.status(ready=2).obj())
    assert jobs.pods_ready(builder.status(ready=2, succeeded=1).obj())


def test_active_includes_terminating_pods() -> None:
    assert not jobs.is_active(JobBuilder("j").obj())
    assert jobs.is_active(JobBuilder("j").status(active=1).obj())
    assert jobs.is_active(JobBuilder("j").status(active=0, terminating=2).obj())


def test_finished_reports_success_and_failure_with_message() -> None:
    assert jobs.finished(JobBuilder("j").obj()) is None
    done = jobs.finished(JobBuilder("j").job_condition("Complete").obj())
    assert done == jobs.Finish(True, "Job finished successfully")
    failed = jobs.finished(
        JobBuilder("j")
        .job_condition(
            "Failed", reason="BackoffLimitExceeded", message="Job has reached the specified backoff limit"
        )
        .obj()
    )
    assert failed == jobs.Finish(False, "Job has reached the specified backoff limit")
    assert jobs.finished(JobBuilder("j").job_condition("Complete", status="False").obj()) is None
