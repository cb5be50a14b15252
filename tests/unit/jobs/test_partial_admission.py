"""Partial admission of a batch Job (``kueue.x-k8s.io/job-min-parallelism``), as Kueue's Job
integration does it: the Workload's podSet carries ``minCount``, an admission with fewer pods
starts the Job with that parallelism, a stop puts the parallelism back, and the running Job still
matches its Workload. The webhook refuses values Kueue refuses."""

from __future__ import annotations

from typing import Any

import pytest

from controller.jobs.compose import compose_workload, job_podsets, podsets_match
from controller.jobs.podsets import podset_infos, restore_patch, start_patch
from controller.jobs.priority import Priority
from tests.builders import JobBuilder
from tests.unit.core.fakes import merge_patch
from webhook.jobs import min_parallelism_errors, validate_job_update

Obj = dict[str, Any]


def _job(parallelism: int = 4, min_parallelism: int | str = 2, **kw: bool) -> Obj:
    return (JobBuilder("job", "ns").uid("job-uid").resource_version("7").queue("lq").parallelism(parallelism)
            .completions(parallelism).requests(cpu="1").min_parallelism(min_parallelism, **kw).obj())


def _admitted(workload: Obj, count: int) -> Obj:
    workload["status"] = {"admission": {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": str(count)}, "count": count}
    ]}}
    return workload


def _workload(job: Obj) -> Obj:
    return compose_workload(job, queue_name="lq", priority=Priority(0))


def test_the_workload_podset_may_shrink_to_min_parallelism() -> None:
    assert job_podsets(_job())[0]["minCount"] == 2
    assert "minCount" not in job_podsets(JobBuilder("job", "ns").parallelism(4).completions(4).obj())[0]


def test_a_partial_admission_starts_the_job_with_the_admitted_parallelism_and_a_stop_restores_it() -> None:
    job = _job(completions_follow=True)
    workload = _admitted(_workload(job), 3)
    started = merge_patch(job, start_patch(job, podset_infos(workload, {"default": {"spec": {}}})))
    assert (started["spec"]["parallelism"], started["spec"]["completions"], started["spec"]["suspend"]) == (3, 3, False)
    assert podsets_match(started, workload)  # running with fewer pods is what was admitted
    stopped = merge_patch(started, {"spec": {"suspend": True}})
    restored = merge_patch(stopped, restore_patch(stopped, None, 4) or {})
    assert (restored["spec"]["parallelism"], restored["spec"]["completions"]) == (4, 4)


def test_completions_are_left_alone_unless_asked() -> None:
    job = _job()
    workload = _admitted(_workload(job), 2)
    patch = start_patch(job, podset_infos(workload, {"default": {"spec": {}}}))
    assert patch["spec"]["parallelism"] == 2 and "completions" not in patch["spec"]


def test_a_full_admission_or_a_job_without_the_annotation_keeps_its_parallelism() -> None:
    job = _job()
    full = start_patch(job, podset_infos(_admitted(_workload(job), 4), {"default": {"spec": {}}}))
    assert "parallelism" not in full["spec"]
    plain = JobBuilder("job", "ns").uid("u").resource_version("1").parallelism(4).completions(4).obj()
    patch = start_patch(plain, podset_infos(_admitted(_workload(plain), 2), {"default": {"spec": {}}}))
    assert "parallelism" not in patch["spec"]


def test_a_job_changed_to_another_count_no_longer_matches() -> None:
    job = _job()
    workload = _admitted(_workload(job), 3)
    assert not podsets_match(merge_patch(job, {"spec": {"parallelism": 2, "completions": 2}}), workload)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", 'metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: "abc": '
                'strconv.Atoi: parsing "abc": invalid syntax'),
        ("4", "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: 4: should be between 0 and 3"),
        ("0", "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: 0: should be between 0 and 3"),
    ],
)
def test_the_webhook_refuses_what_kueue_refuses(value: str, message: str) -> None:
    (error,) = min_parallelism_errors(_job(min_parallelism=value))
    assert str(error) == message


def test_a_valid_annotation_is_accepted() -> None:
    assert min_parallelism_errors(_job(min_parallelism=3)) == []


def test_parallelism_is_frozen_while_a_partially_admissible_job_runs() -> None:
    old = merge_patch(_job(), {"spec": {"suspend": False}})
    new = merge_patch(old, {"spec": {"parallelism": 3}})
    errors = validate_job_update(new, old, "ns", state=None)  # type: ignore[arg-type]
    assert [str(e) for e in errors] == [
        "spec.parallelism: Forbidden: cannot change when partial admission is enabled and the job is not suspended"
    ]
