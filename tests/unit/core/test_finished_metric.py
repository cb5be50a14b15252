"""``kueue_finished_workloads_total``: counted once, when the informer sees a workload finish.

The counter is driven through the handler the Workload controller registers on the workloads
informer, the way a watch event reaches it, so a registration that bypasses the counting (as
once happened: the update handler only enqueued) fails here.
"""

from __future__ import annotations

import copy
from typing import Any

from prometheus_client import REGISTRY

from controller.core.workload_controller import WorkloadController
from controller.runtime.events import RecordingEvents
from tests.builders import WorkloadBuilder
from tests.unit.core.fakes import FakeInformer

METRIC = "kueue_finished_workloads_total"
CQ = "cq-finished-metric"


def _count(cluster_queue: str, priority_class: str) -> float:
    value = REGISTRY.get_sample_value(
        METRIC, {"cluster_queue": cluster_queue, "priority_class": priority_class}
    )
    return value or 0.0


def _total() -> float:
    """The counter summed over every label set."""
    return sum(
        sample.value
        for metric in REGISTRY.collect()
        for sample in metric.samples
        if sample.name == METRIC
    )


def _controller() -> tuple[WorkloadController, FakeInformer]:
    workloads = FakeInformer()
    ctrl = WorkloadController(
        object(),  # type: ignore[arg-type]  # the handlers never call the API
        workloads=workloads,
        local_queues=FakeInformer(),
        cluster_queues=FakeInformer(),
        events=RecordingEvents(),
    )
    ctrl.register_handlers()
    return ctrl, workloads


def _update(informer: FakeInformer, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Deliver an update event to every handler, as the informer does."""
    for handler in informer.handlers:
        handler.on_update(copy.deepcopy(old), copy.deepcopy(new))


def test_a_workload_finishing_is_counted_once_with_its_queue_and_priority_class() -> None:
    ctrl, workloads = _controller()
    running = (
        WorkloadBuilder("w", "ns").queue("lq").priority(5, "high").podset(cpu="1").reserved(CQ).admitted()
    )
    before = running.obj()
    after = copy.deepcopy(before)
    after["status"]["conditions"].append(WorkloadBuilder("x").finished().obj()["status"]["conditions"][0])
    start = _count(CQ, "high")

    _update(workloads, before, after)
    assert _count(CQ, "high") == start + 1
    assert ctrl.queue.get(timeout=0) == "ns/w", "the workload is still reconciled"
    ctrl.queue.done("ns/w")

    # Seen again (a later status write, a resync): already Finished, not counted again.
    _update(workloads, after, after)
    assert _count(CQ, "high") == start + 1


def test_a_workload_that_never_held_quota_is_not_counted() -> None:
    _ctrl, workloads = _controller()
    pending = WorkloadBuilder("p", "ns").queue("lq").podset(cpu="1").obj()
    finished = WorkloadBuilder("p", "ns").queue("lq").podset(cpu="1").finished().obj()
    before = _total()
    _update(workloads, pending, finished)
    assert _total() == before
