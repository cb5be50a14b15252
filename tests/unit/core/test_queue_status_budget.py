"""ClusterQueue/LocalQueue status writes share a write budget: past the burst a write waits for
its token and is then recomputed from the caches, so it carries what changed while it waited."""

from __future__ import annotations

from typing import Any

from controller.core.queue_status_controller import QueueStatusController
from pykueue.kube.backoff import TokenBucket
from tests.builders import ClusterQueueBuilder, WorkloadBuilder
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


def _activate(ctrl: QueueStatusController, *keys: str) -> None:
    """First writes: each carries the queue's new ``Active`` condition."""
    for key in keys:
        ctrl.reconcile(key)


def _pending(api: FakeApi, name: str, queue: str = "lq") -> None:
    api.put("workloads", WorkloadBuilder(name, "ns").queue(queue).podset(cpu="1").obj())


def test_writes_within_the_burst_do_not_wait() -> None:
    api, informers = _setup()
    time = FakeTime()
    ctrl = _controller(api, informers, time)
    _activate(ctrl, "cq:cq", "lq:ns/lq")
    _pending(api, "w1")
    ctrl.reconcile("cq:cq")
    ctrl.reconcile("lq:ns/lq")
    assert _status_writes(api) == ["cq", "ns/lq", "cq", "ns/lq"]
    assert time.slept == []


def test_a_condition_change_never_waits_for_the_budget() -> None:
    """A thousand new ClusterQueues must show ``Active`` without queueing behind 5 writes/s."""
    api, informers = _setup()
    names = [f"cq{i}" for i in range(5)]
    for name in names:
        api.put("clusterqueues", ClusterQueueBuilder(name).flavor("default", cpu="2").obj())
    time = FakeTime()
    ctrl = _controller(api, informers, time, write_budget=TokenBucket(1.0, 1, clock=time.clock))
    _activate(ctrl, "cq:cq", *(f"cq:{name}" for name in names))
    assert time.slept == []
    assert all(
        any(c["type"] == "Active" and c["status"] == "True"
            for c in api.objects[("clusterqueues", name)]["status"]["conditions"])
        for name in names
    )
    # The budget is intact: the first counters-only write takes its one token, the next waits.
    _pending(api, "w1")
    ctrl.reconcile("cq:cq")
    ctrl.reconcile("cq:cq")  # nothing changed: no write, no token
    _pending(api, "w2")
    ctrl.reconcile("cq:cq")
    assert time.slept == [1.0]


def test_past_the_burst_a_write_waits_and_carries_what_changed_meanwhile() -> None:
    api, informers = _setup()
    time = FakeTime()
    ctrl = _controller(api, informers, time)
    _activate(ctrl, "cq:cq")
    _pending(api, "w1")
    ctrl.reconcile("cq:cq")
    _pending(api, "w2")
    ctrl.reconcile("cq:cq")  # the burst (2) is spent
    assert time.slept == []

    # While the third write waits for its token, another workload arrives.
    time.during_sleep.append(lambda: _pending(api, "late"))
    _pending(api, "w3")
    ctrl.reconcile("cq:cq")
    assert time.slept == [1.0], "one token at 1 write/s"
    assert api.objects[("clusterqueues", "cq")]["status"]["pendingWorkloads"] == 4
    assert _status_writes(api) == ["cq"] * 4, "one write, recomputed after the wait"


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
    _activate(ctrl, "cq:cq", "lq:ns/lq")  # condition changes: no budget, busy or not
    assert time.slept == []
    _pending(api, "w1")
    ctrl.reconcile("cq:cq")
    _pending(api, "w2")
    ctrl.reconcile("cq:cq")  # plenty of normal budget, but admission is busy: 1 per 2 s
    assert time.slept == [2.0]
    busy[0] = False
    ctrl.reconcile("lq:ns/lq")
    assert time.slept == [2.0], "not busy: the normal budget applies"
    assert _status_writes(api) == ["cq", "ns/lq", "cq", "cq", "ns/lq"]
