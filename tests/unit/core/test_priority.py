"""Priority filled from WorkloadPriorityClass / PriorityClass when missing or stale."""

from __future__ import annotations

from controller.core.priority import desired_priority
from tests.builders import WorkloadBuilder, WorkloadPriorityClassBuilder

WPCS = {"high": WorkloadPriorityClassBuilder("high", 1000).obj()}
PCS = {"system": {"metadata": {"name": "system"}, "value": 50}}


def _resolve(wl: dict) -> int | None:
    return desired_priority(wl, WPCS.get, PCS.get)


def test_missing_priority_is_filled_from_workload_priority_class() -> None:
    assert _resolve(WorkloadBuilder("w").priority_class("high").obj()) == 1000


def test_stale_workload_priority_class_value_is_refreshed_and_current_is_left() -> None:
    assert _resolve(WorkloadBuilder("w").priority(5, "high").obj()) == 1000
    assert _resolve(WorkloadBuilder("w").priority(1000, "high").obj()) is None


def test_pod_priority_class_only_fills_missing_values() -> None:
    source = "scheduling.k8s.io/priorityclass"
    assert _resolve(WorkloadBuilder("w").priority_class("system", source).obj()) == 50
    stale = WorkloadBuilder("w").priority_class("system", source).priority(7).obj()
    stale["spec"]["priorityClassName"] = "system"
    assert _resolve(stale) is None


def test_unknown_class_or_no_class_changes_nothing() -> None:
    assert _resolve(WorkloadBuilder("w").priority_class("nope").obj()) is None
    assert _resolve(WorkloadBuilder("w").obj()) is None
