"""Workload names follow Kueue's ``<kind>-<job>-<sha1[:5]>`` scheme exactly."""

from __future__ import annotations

from controller.jobs.naming import MAX_PREFIX_LENGTH, job_workload_name, workload_name


def test_name_matches_kueue_hash() -> None:
    # Reference value computed with Kueue's Go getHash (sha1 of "Job\nbatch\n<name>\n<uid>").
    assert job_workload_name("sample-job", "0b5a2e3c-5c1e-4a39-9a3b-2b6a6f7e9d10") == "job-sample-job-06f29"


def test_uid_changes_the_name() -> None:
    assert job_workload_name("a", "uid-1") != job_workload_name("a", "uid-2")


def test_long_names_are_truncated_to_253() -> None:
    name = workload_name("Job", "batch", "x" * 300, "uid")
    assert len(name) == 253
    assert name.startswith("job-xxx")
    assert name[MAX_PREFIX_LENGTH] == "-"


def test_kind_is_lower_cased_in_the_prefix() -> None:
    assert workload_name("JobSet", "jobset.x-k8s.io", "n", "u").startswith("jobset-n-")
