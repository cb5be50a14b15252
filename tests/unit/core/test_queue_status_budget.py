"""ClusterQueue/LocalQueue status writes share a write budget: past the burst a write waits for
its token and is then recomputed from the caches, so it carries what changed while it waited."""

from __future__ import annotations

from typing import Any

from controller.core.queue_status_controller import QueueStatusController
from pykueue.kube.backoff import TokenBucket
from tests.builders import ClusterQueueBuilder, LocalQueueBuilder, WorkloadBuilder
from tests.unit.core.fakes import FakeApi, FakeInformer
from tests.unit.core.test_controllers import NOW, _setup


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []
        self.during_sleep: list[object] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        for action in self.during_sleep:
            action()  # type: ignore[operator]
        self.during_sleep.clear()
        self.now += seconds


def _controller(
    api: FakeApi, informers: dict[str, FakeInformer], time: FakeTime, **options: Any
) -> QueueStatusController:
    """The controller under test on the fake clock; ``options`` override the budget (1/s, burst 2)."""
    options.setdefault("write_budget", TokenBucket(1.0, 2, clock=time.clock))
    return QueueStatusController(
        api,
        workloads=informers["workloads"],
        local_queues=informers["localqueues"],
        cluster_queues=informers["clusterqueues"],
        resource_flavors=informers["resourceflavors"],
        admission_checks=informers["admissionchecks"],
        clock=lambda: NOW,
        sleep=time.sleep,
        **options,
    )


def _status_writes(api: FakeApi) -> list[str]:
    return [key for plural, key, patch in api.patches if plural in ("clusterqueues", "localqueues")]


def test_writes_within_the_burst_do_not_wait() -> None:
    api, informers = _setup()
    time = FakeTime()
    ctrl = _controller(api, informers, time)
    ctrl.reconcile("cq:cq")
    ctrl.reconcile("lq:ns/lq")
    assert _status_writes(api) == ["cq", "ns/lq"]
    assert time.slept == []


def test_past_the_burst_a_write_waits_and_carries_what_changed_meanwhile() -> None:
    api, informers = _setup()
    for name in ("cq2", "cq3"):
        api.put("clusterqueues", ClusterQueueBuilder(name).flavor("default", cpu="2").obj())
    api.put("localqueues", LocalQueueBuilder("lq3", "ns", "cq3").obj())
    time = FakeTime()
    ctrl = _controller(api, informers, time)
    ctrl.reconcile("cq:cq")
    ctrl.reconcile("cq:cq2")  # the burst (2) is spent
    assert time.slept == []

    # While the third write waits for its token, a workload arrives in cq3's LocalQueue.
    time.during_sleep.append(
        lambda: api.put("workloads", WorkloadBuilder("late", "ns").queue("lq3").podset(cpu="1").obj())
    )
    ctrl.reconcile("cq:cq3")
    assert time.slept == [1.0], "one token at 1 write/s"
    assert api.objects[("clusterqueues", "cq3")]["status"]["pendingWorkloads"] == 1
    assert _status_writes(api) == ["cq", "cq2", "cq3"], "one write, recomputed after the wait"


def test_nothing_to_write_spends_no_budget() -> None:
    api, informers = _setup()
    time = FakeTime()
    ctrl = _controller(api, informers, time)
    ctrl.reconcile("cq:cq")
    ctrl.reconcile("lq:ns/lq")
    for _ in range(5):
        ctrl.reconcile("cq:cq")
        ctrl.reconcile("lq:ns/lq")
    assert time.slept == []
    assert len(_status_writes(api)) == 2


def test_while_admission_is_busy_status_writes_slow_down_to_the_busy_budget() -> None:
    api, informers = _setup()
    api.put("clusterqueues", ClusterQueueBuilder("cq2").flavor("default", cpu="2").obj())
    time = FakeTime()
    busy = [True]
    ctrl = _controller(
        api,
        informers,
        time,
        write_budget=TokenBucket(5.0, 20, clock=time.clock),
        busy_write_budget=TokenBucket(0.5, 1, clock=time.clock),
        admission_busy=lambda: busy[0],
    )
    ctrl.reconcile("cq:cq")
    ctrl.reconcile("cq:cq2")  # plenty of normal budget, but admission is busy: 1 per 2 s
    assert time.slept == [2.0]
    busy[0] = False
    ctrl.reconcile("lq:ns/lq")
    assert time.slept == [2.0], "not busy: the normal budget applies"
    assert _status_writes(api) == ["cq", "cq2", "ns/lq"]
