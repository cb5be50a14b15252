"""What explain says about a MultiKueue Workload: the dispatch loop's own record of its workers."""

from __future__ import annotations

from controller.multikueue import status as mk
from controller.multikueue.status import DispatchState, WorkerState
from pykueue.kube import resources as R
from pykueue.kube.errors import Forbidden
from tests.builders import MultiKueueClusterBuilder
from tests.unit.multikueue.test_workload import NS, World

KEY = f"{NS}/job-abc"


def test_each_pass_records_the_nomination_the_copies_and_their_reservations() -> None:
    w = World()
    w.sync()
    state = w.dispatcher.states.get(KEY)
    assert state is not None and (state.check, state.dispatcher, state.cluster_name) == ("mk", "AllAtOnce", "")
    assert [(x.name, x.active, x.nominated, x.copy, x.quota_reserved) for x in state.workers] == [
        ("w1", True, True, True, False), ("w2", True, True, True, False)]
    assert mk.sentence(state) == ("MultiKueue (AllAtOnce) nominated w1, w2: w1 holds a pending copy; w2 holds a "
                                  "pending copy; the first nominated worker to reserve quota for its copy runs it")
    w.registry.get("w2").active = False  # type: ignore[union-attr]
    w.sync()
    state = w.dispatcher.states.get(KEY)
    assert state is not None
    assert [(x.name, x.active, x.copy) for x in state.workers] == [("w1", True, True), ("w2", False, None)]
    assert "w2 is inactive" in mk.sentence(state)


def test_the_winner_and_its_job_are_recorded_and_a_lost_winner_is_said_so() -> None:
    w = World()
    w.sync()
    w.reserve_on("w2", "2026-01-01T12:00:01Z")
    w.sync()
    state = w.dispatcher.states.get(KEY)
    assert state is not None and state.cluster_name == "w2"
    assert [(x.name, x.quota_reserved, x.job) for x in state.workers] == [("w2", True, True)]
    w.sync()  # following it
    state = w.dispatcher.states.get(KEY)
    assert state is not None and mk.sentence(state) == "MultiKueue dispatched it to w2; its Job runs there"
    assert mk.to_dict(state)["workers"] == [{"name": "w2", "active": True, "nominated": True, "copy": True,
                                             "quotaReserved": True, "admitted": False, "job": True}]
    w.registry.get("w2").active = False  # type: ignore[union-attr]
    w.informers["multikueueclusters"].store.put(
        MultiKueueClusterBuilder("w2").condition("Active", False, "ClientConnectionFailed", "down").obj())
    w.sync()
    state = w.dispatcher.states.get(KEY)
    assert state is not None and state.workers[0].active is False
    assert "dispatched it to w2, which is inactive" in mk.sentence(state)


def test_the_record_is_dropped_when_the_workload_leaves_multikueue() -> None:
    w = World()
    w.sync()
    assert w.dispatcher.states.get(KEY) is not None
    del w.manager.objects[("workloads", NS, "job-abc")]
    w.sync()
    assert w.dispatcher.states.get(KEY) is None
    assert w.workers["w1"].of(R.WORKLOADS) == []


def test_a_worker_refusing_the_copy_is_recorded_without_one() -> None:
    w = World()
    w.workers["w2"].create = _refuse  # type: ignore[method-assign]
    w.sync()
    state = w.dispatcher.states.get(KEY)
    assert state is not None
    assert [(x.name, x.copy) for x in state.workers] == [("w1", True), ("w2", False)]
    assert "w2 has no copy" in mk.sentence(state)


def _refuse(*_a: object, **_k: object) -> None:
    raise Forbidden(403, "Forbidden", "denied by policy")


def test_sentences_for_the_edge_cases() -> None:
    none = DispatchState("mk", "Incremental", "", (), "t")
    assert mk.sentence(none) == "MultiKueue check mk: its MultiKueueConfig lists no workers"
    waiting = DispatchState("mk", "External", "", (WorkerState("w1", True, False, False),), "t")
    assert mk.sentence(waiting) == "MultiKueue (External) has nominated no worker yet: w1 has no copy (not nominated)"
    admitted = DispatchState("mk", "AllAtOnce", "", (WorkerState("w1", True, True, True, True, True),), "t")
    assert "w1 admitted its copy" in mk.sentence(admitted)
