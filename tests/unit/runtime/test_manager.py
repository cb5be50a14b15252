"""Controller manager: leader work starts after sync and stops on shutdown or when the lease is lost."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from controller.runtime.events import EventBroadcaster
from controller.runtime.leaderelection import ElectionConfig
from controller.runtime.manager import EXIT_LOST_LEADERSHIP, EXIT_OK, Controller
from controller.workload.status_plan import EventSpec
from pykueue.kube.resources import CONFIG_MAPS
from tests.unit.runtime.memory_lock import MemoryLock
from tests.unit.runtime.scripted_source import Block, ScriptedSource, cm, page


class Recorder:
    name = "recorder"

    def __init__(self, ctrl: Controller) -> None:
        self.ctrl = ctrl
        self.events: list[str] = []
        self.cached_at_start: int | None = None

    def register_handlers(self) -> None:
        self.events.append("handlers")

    def start(self) -> None:
        self.cached_at_start = len(self.ctrl.informer(CONFIG_MAPS).store)
        self.events.append("start")

    def stop(self) -> None:
        self.events.append("stop")


def run_in_thread(ctrl: Controller, stop: threading.Event) -> tuple[threading.Thread, list[int]]:
    status: list[int] = []
    thread = threading.Thread(target=lambda: status.append(ctrl.run(stop)))
    thread.start()
    return thread, status


def wait_until(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_runnables_start_after_informers_synced_and_stop_on_shutdown() -> None:
    source = ScriptedSource(lists=[page([cm("a", "1"), cm("b", "2")], "5")], watches=[[Block()]])
    ctrl = Controller(source, identity="me", election=None, health_addr="0", metrics_addr="0")
    ctrl.informer(CONFIG_MAPS)
    recorder = Recorder(ctrl)
    ctrl.register(recorder)
    assert recorder.events == ["handlers"]
    started: list[threading.Event] = []
    ctrl.on_started_leading.append(started.append)
    stop = threading.Event()
    thread, status = run_in_thread(ctrl, stop)
    assert wait_until(lambda: "start" in recorder.events)
    assert recorder.cached_at_start == 2, "leader work must see a synced cache"
    assert wait_until(lambda: len(started) == 1) and ctrl.is_leader
    stop.set()
    thread.join(10)
    assert status == [EXIT_OK]
    assert recorder.events == ["handlers", "start", "stop"]



class _EventsApi:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def create(self, res: Any, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        time.sleep(0.2)  # a slow apiserver: the Event is still queued when run() winds down
        self.reasons.append(obj["reason"])
        return obj

    def patch(self, res: Any, name: str, patch: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        raise AssertionError("no repeats here")


def test_one_event_broadcaster_and_its_last_events_are_sent_before_run_returns() -> None:
    source = ScriptedSource(lists=[page([], "5")], watches=[[Block()]])
    api = _EventsApi()
    broadcaster = EventBroadcaster(api)
    ctrl = Controller(
        source, identity="me", election=None, health_addr="0", metrics_addr="0", event_broadcaster=broadcaster
    )
    ctrl.informer(CONFIG_MAPS)
    assert ctrl.event_recorder("a").broadcaster is ctrl.event_recorder("b").broadcaster is broadcaster

    class EmitsOnStop:
        name = "emits-on-stop"

        def start(self) -> None:
            pass

        def stop(self) -> None:
            ctrl.event_recorder().emit(cm("x", "1"), EventSpec("Normal", "Stopped", "bye"))

    ctrl.register(EmitsOnStop())
    stop = threading.Event()
    thread, status = run_in_thread(ctrl, stop)
    assert wait_until(lambda: ctrl.is_leader)
    stop.set()
    thread.join(10)
    assert status == [EXIT_OK]
    assert api.reasons == ["Stopped"], "the manager flushes the broadcaster after stopping runnables"


def test_register_rejects_objects_without_start_and_stop() -> None:
    ctrl = Controller(ScriptedSource([], []), identity="me", election=None, health_addr="0", metrics_addr="0")
    with pytest.raises(TypeError, match=r"start\(\)/stop\(\)"):
        ctrl.register(object())  # type: ignore[arg-type]


def test_runnable_that_fails_to_start_ends_the_process_with_an_error() -> None:
    class Broken:
        name = "broken"

        def start(self) -> None:
            raise RuntimeError("cannot start")

        def stop(self) -> None:
            pass

    ctrl = Controller(ScriptedSource([], []), identity="me", election=None, health_addr="0", metrics_addr="0")
    ctrl.register(Broken())
    stop = threading.Event()
    thread, status = run_in_thread(ctrl, stop)
    thread.join(10)
    assert status == [EXIT_LOST_LEADERSHIP]


def elected_controller(lock: MemoryLock) -> tuple[Controller, Recorder]:
    """A controller with leader election on ``lock`` (short timings) and a recording runnable."""
    source = ScriptedSource(lists=[page([], "5")], watches=[[Block()]])
    election = ElectionConfig("lease", "ns", "me", lease_duration=1.5, renew_deadline=1.0, retry_period=0.2)
    ctrl = Controller(source, identity="me", election=election, health_addr="0", metrics_addr="0", lock=lock)
    ctrl.informer(CONFIG_MAPS)
    recorder = Recorder(ctrl)
    ctrl.register(recorder)
    return ctrl, recorder


def test_losing_the_lease_stops_leader_work_at_once_and_exits_with_an_error() -> None:
    lock = MemoryLock()
    ctrl, recorder = elected_controller(lock)
    stop = threading.Event()
    thread, status = run_in_thread(ctrl, stop)
    try:
        assert wait_until(lambda: "start" in recorder.events), "the only candidate leads"
        assert lock.lease is not None and lock.lease.record.holder_identity == "me"
        lock.failing = True  # the apiserver becomes unreachable for this replica
        lost_at = time.monotonic()
        assert wait_until(lambda: "stop" in recorder.events, timeout=5)
        assert time.monotonic() - lost_at < 1.0 + 0.5, "work stops at the renew deadline"
        thread.join(10)
        assert status == [EXIT_LOST_LEADERSHIP]
        assert not ctrl.is_leader
    finally:
        stop.set()
        thread.join(10)


def test_graceful_stop_releases_the_lease_after_stopping_work() -> None:
    lock = MemoryLock()
    ctrl, recorder = elected_controller(lock)
    stop = threading.Event()
    thread, status = run_in_thread(ctrl, stop)
    assert wait_until(lambda: "start" in recorder.events)
    stop.set()
    thread.join(10)
    assert status == [EXIT_OK]
    assert recorder.events[-1] == "stop"
    assert lock.lease is not None and lock.lease.record.holder_identity == "", "the lease was released"
