"""Priority precedence: WorkloadPriorityClass label, pod PriorityClass, global default, zero."""

from __future__ import annotations

from typing import Any

import pytest

from controller.jobs.priority import (
    SOURCE_POD_PRIORITY_CLASS,
    SOURCE_WORKLOAD_PRIORITY_CLASS,
    Priority,
    PriorityClassNotFound,
    resolve_priority,
)
from tests.builders import JobBuilder, WorkloadPriorityClassBuilder

WPCS = {"high": WorkloadPriorityClassBuilder("high", 1000).obj()}
PCS = {"pod-high": {"metadata": {"name": "pod-high"}, "value": 500}}


def resolve(job: dict[str, Any], default: dict[str, Any] | None = None) -> Priority:
    return resolve_priority(
        job,
        workload_priority_class=WPCS.get,
        priority_class=PCS.get,
        default_priority_class=lambda: default,
    )


def test_workload_priority_class_label_wins() -> None:
    job = JobBuilder("j").workload_priority_class("high").pod_priority_class("pod-high").obj()
    assert resolve(job) == Priority(1000, "high", SOURCE_WORKLOAD_PRIORITY_CLASS)


def test_pod_priority_class_used_without_label() -> None:
    job = JobBuilder("j").pod_priority_class("pod-high").obj()
    assert resolve(job) == Priority(500, "pod-high", SOURCE_POD_PRIORITY_CLASS)


def test_global_default_then_zero() -> None:
    default = {"metadata": {"name": "cluster-default"}, "value": 7, "globalDefault": True}
    assert resolve(JobBuilder("j").obj(), default) == Priority(
        7, "cluster-default", SOURCE_POD_PRIORITY_CLASS
    )
    assert resolve(JobBuilder("j").obj()) == Priority(0)


@pytest.mark.parametrize(
    ("builder", "kind"),
    [
        (JobBuilder("j").workload_priority_class("missing"), "WorkloadPriorityClass"),
        (JobBuilder("j").pod_priority_class("missing"), "PriorityClass"),
    ],
)
def test_missing_named_class_is_an_error(builder: JobBuilder, kind: str) -> None:
    with pytest.raises(PriorityClassNotFound) as info:
        resolve(builder.obj())
    assert info.value.kind == kind and info.value.name == "missing"
