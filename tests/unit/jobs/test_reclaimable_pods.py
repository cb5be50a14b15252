"""Reclaimable pods of a batch Job: the pods that will never run again, whose quota goes back while
the Job still runs. Cases re-expressed from Kueue v0.19.2
``pkg/controller/jobs/job/job_controller_test.go`` (``TestReclaimablePods``,
``TestTerminalIndexesCount``); the reconciler's write is in ``test_reconciler.py``."""

from __future__ import annotations

from typing import Any

import pytest

from controller.jobs import job as jobs
from tests.builders import JobBuilder


def _indexed(succeeded: int, completed: str, failed_indexes: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"succeeded": succeeded, "completedIndexes": completed}
    if failed_indexes:
        status["failedIndexes"] = failed_indexes
    return JobBuilder("j").indexed().parallelism(8).completions(8).status(**status).obj()


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        pytest.param(_indexed(4, "0-3"), 4, id="indexed Job reclaims its completed indexes"),
        pytest.param(_indexed(1, "0"), 1, id="indexed Job holds quota for a retryable failure"),
        pytest.param(_indexed(1, "0", "1"), 2, id="indexed Job reclaims completed and failed indexes"),
        pytest.param(_indexed(4, ""), 0, id="indexed Job with empty terminal indexes holds quota"),
        # Non-indexed: succeeded pods count; reclaimable once fewer completions remain than parallelism.
        pytest.param(JobBuilder("j").parallelism(4).completions(10).status(succeeded=7).obj(), 1, id="three left for four slots"),
        pytest.param(JobBuilder("j").parallelism(4).completions(10).status(succeeded=6).obj(), 0, id="remaining work fills every slot"),
        pytest.param(JobBuilder("j").parallelism(1).completions(3).status(succeeded=2).obj(), 0, id="a one-pod Job has nothing to reclaim"),
        pytest.param(JobBuilder("j").parallelism(3).completions(3).obj(), 0, id="nothing terminal yet"),
        pytest.param(JobBuilder("j").parallelism(3).completions(3).status(succeeded=3).obj(), 3, id="all done"),
        pytest.param(JobBuilder("j").parallelism(3).completions(None).status(succeeded=1).obj(), 1, id="completions default to parallelism"),
        pytest.param({"spec": {"parallelism": "x"}, "status": {"succeeded": "y"}}, 0, id="garbage"),
    ],
)
def test_reclaimable_pods_of_a_job(job: dict[str, Any], expected: int) -> None:
    assert jobs.reclaimable_pods(job) == expected


@pytest.mark.parametrize(
    ("completed", "failed", "completions", "expected"),
    [
        ("", "", 10, 0),
        ("0-9", "", 0, 0),
        ("0", "", 10, 1),
        ("", "1", 10, 1),
        ("0-4", "", 10, 5),
        ("0-4,7,9-11", "", 10, 7),
        ("0-2,7", "3-5,8", 10, 8),
        ("0-4", "3-7", 10, 8),
        ("0-9", "2-3", 10, 10),
        ("0-8", "", 10, 9),
        ("0-14", "", 10, 10),
        ("5-19", "", 10, 5),
        ("10-19", "", 10, 0),
        ("", "5-19", 10, 5),
        ("", "10-19", 10, 0),
        ("", "4", 3, 0),
        ("0-1", "2-19", 5, 5),
        ("0-4", "", 3, 3),
        ("3,5,7", "", 10, 3),
        ("3,5,12", "", 10, 2),
        ("abc,0-2", "", 10, 3),
        ("0-x,4", "", 10, 1),
    ],
)
def test_terminal_indexes_are_counted_once_and_below_completions(
    completed: str, failed: str, completions: int, expected: int
) -> None:
    job = {"status": {"completedIndexes": completed, "failedIndexes": failed}}
    assert jobs.terminal_indexes(job, completions) == expected
