"""Which queue changes re-enqueue a queue's workloads in the Workload controller.

A workload's plan reads only its queues' spec (``plan_workload``); under load every queue's
status is written every second, and each such write used to re-enqueue every workload of the
queue. Updates are delivered through the handlers the controller registers, as a watch event
reaches them."""

from __future__ import annotations

import copy
from typing import Any

from controller.core.workload_controller import WorkloadController
from controller.runtime.events import RecordingEvents
from tests.builders import ClusterQueueBuilder, LocalQueueBuilder, WorkloadBuilder
from tests.unit.core.fakes import FakeInformer


def _controller() -> tuple[WorkloadController, dict[str, FakeInformer]]:
    informers = {
        "workloads": FakeInformer(
            WorkloadBuilder("pending", "ns").queue("lq").podset(cpu="1").obj(),
            WorkloadBuilder("running", "ns").queue("lq").podset(cpu="1").reserved("cq").admitted().obj(),
        ),
        "localqueues": FakeInformer(LocalQueueBuilder("lq", "ns", "cq").obj()),
        "clusterqueues": FakeInformer(ClusterQueueBuilder("cq").flavor("default", cpu="2").obj()),
    }
    ctrl = WorkloadController(
        object(),  # type: ignore[arg-type]  # the handlers never call the API
        workloads=informers["workloads"],
        local_queues=informers["localqueues"],
        cluster_queues=informers["clusterqueues"],
        events=RecordingEvents(),
    )
    ctrl.register_handlers()
    return ctrl, informers


def _update(informer: FakeInformer, old: dict[str, Any], new: dict[str, Any]) -> None:
    for handler in informer.handlers:
        handler.on_update(copy.deepcopy(old), copy.deepcopy(new))


def _drain(ctrl: WorkloadController) -> set[str]:
    keys = set()
    while (key := ctrl.queue.get(timeout=0)) is not None:
        keys.add(key)
        ctrl.queue.done(key)
    return keys


def _with_status(obj: dict[str, Any], **status: Any) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    changed.setdefault("status", {}).update(status)
    changed["metadata"]["resourceVersion"] = "999"
    return changed


def test_a_queue_status_write_enqueues_none_of_its_workloads() -> None:
    ctrl, informers = _controller()
    cq = informers["clusterqueues"].store.get("cq")
    lq = informers["localqueues"].store.get("ns/lq")
    _update(informers["clusterqueues"], cq, _with_status(cq, pendingWorkloads=7, reservingWorkloads=1))
    _update(informers["localqueues"], lq, _with_status(lq, pendingWorkloads=7))
    assert _drain(ctrl) == set()


def test_a_spec_change_or_a_deletion_enqueues_the_queues_workloads() -> None:
    ctrl, informers = _controller()
    cq = informers["clusterqueues"].store.get("cq")
    stopped = copy.deepcopy(cq)
    stopped["spec"]["stopPolicy"] = "HoldAndDrain"
    _update(informers["clusterqueues"], cq, stopped)
    assert _drain(ctrl) == {"ns/pending", "ns/running"}

    lq = informers["localqueues"].store.get("ns/lq")
    moved = copy.deepcopy(lq)
    moved["spec"]["clusterQueue"] = "other"
    _update(informers["localqueues"], lq, moved)
    assert _drain(ctrl) == {"ns/pending", "ns/running"}

    deleting = copy.deepcopy(cq)
    deleting["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z"
    _update(informers["clusterqueues"], cq, deleting)
    assert _drain(ctrl) == {"ns/pending", "ns/running"}
