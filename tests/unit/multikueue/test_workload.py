"""The dispatch loop against in-memory manager and workers (Kueue's workload_test.go stories)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from controller.multikueue import dispatch as d
from controller.multikueue.clusters import Registry, Remote
from controller.multikueue.workload import Settings, WorkloadDispatcher
from controller.runtime.events import RecordingEvents
from pykueue.api.timestamps import parse_time
from pykueue.kube import resources as R
from pykueue.kube.errors import Forbidden
from tests.builders import (
    JobBuilder,
    MultiKueueClusterBuilder,
    MultiKueueConfigBuilder,
    WorkloadBuilder,
    condition,
    multikueue_admission_check,
)
from tests.unit.multikueue.fake import FakeClient, FakeInformer

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
NS = "team-a"
ORIGIN = "mgr"


def local_job() -> dict[str, Any]:
    job = JobBuilder("job", NS).queue("lq").suspend().uid("job-uid").obj()
    job["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    job["spec"]["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": "job-uid"}}
    job["spec"]["template"]["metadata"]["labels"] = {"batch.kubernetes.io/controller-uid": "job-uid", "app": "x"}
    return job


def reserved_workload(**status: Any) -> dict[str, Any]:
    wl = WorkloadBuilder("job-abc", NS).queue("lq").obj()
    wl["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "job", "uid": "job-uid", "controller": True}
    ]
    wl["status"] = {
        "conditions": [condition("QuotaReserved", True, "QuotaReserved", "reserved")],
        "admission": {"clusterQueue": "cq", "podSetAssignments": []},
        "admissionChecks": [{"name": "mk", "state": "Pending", "message": "", "lastTransitionTime": "2026-01-01T11:00:00Z"}],
        **status,
    }
    return wl


class World:
    def __init__(self, workers: tuple[str, ...] = ("w1", "w2")) -> None:
        self.manager = FakeClient()
        self.workers = {name: FakeClient() for name in workers}
        self.registry = Registry()
        for name, client in self.workers.items():
            self.registry.put(Remote(name, client, "fp", active=True))  # type: ignore[arg-type]
        self.wl = self.manager.put(R.WORKLOADS, reserved_workload())
        self.job = self.manager.put(R.JOBS, local_job())
        self.informers = {
            "workloads": FakeInformer(self.wl),
            "jobs": FakeInformer(self.job),
            "admissionchecks": FakeInformer(multikueue_admission_check("mk", "workers")),
            "multikueueconfigs": FakeInformer(MultiKueueConfigBuilder("workers", *workers).obj()),
            "multikueueclusters": FakeInformer(*[MultiKueueClusterBuilder(w).active().obj() for w in workers]),
        }
        self.events = RecordingEvents()
        self.clock = NOW
        self.dispatcher = WorkloadDispatcher(
            self.manager, self.informers, self.registry, Settings(origin=ORIGIN, worker_lost_timeout=60),  # type: ignore[arg-type]
            events=self.events, clock=lambda: self.clock,
        )

    def sync(self) -> float | None:
        """Refresh the informers from the manager and run one pass."""
        for res, key in ((R.WORKLOADS, "workloads"), (R.JOBS, "jobs")):
            store = self.informers[key].store
            store.items.clear()
            for obj in self.manager.of(res):
                store.put(obj)
        return self.dispatcher.reconcile(f"{NS}/job-abc")

    def reserve_on(self, worker: str, at: str) -> None:
        client = self.workers[worker]
        remote = client.objects[("workloads", NS, "job-abc")]
        remote["status"] = {"conditions": [condition("QuotaReserved", True, "QuotaReserved", "ok", at=at)]}

    def local(self) -> dict[str, Any]:
        wl = self.manager.get(R.WORKLOADS, "job-abc", NS)
        assert wl is not None
        return wl


def test_copies_go_to_every_active_worker_with_the_origin_label() -> None:
    w = World()
    assert w.sync() == 1.0
    assert w.local()["status"]["nominatedClusterNames"] == ["w1", "w2"]
    for client in w.workers.values():
        [copy] = client.of(R.WORKLOADS)
        assert copy["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] == ORIGIN
        assert copy["spec"]["queueName"] == "lq" and "ownerReferences" not in copy["metadata"]
        assert "status" not in copy or not copy["status"].get("conditions")
        assert client.of(R.JOBS) == []  # no Job before a worker admits


def test_the_first_worker_to_reserve_wins_and_the_other_copy_is_deleted() -> None:
    w = World()
    w.sync()
    w.reserve_on("w2", "2026-01-01T12:00:01Z")
    w.reserve_on("w1", "2026-01-01T12:00:02Z")
    w.sync()
    assert w.workers["w1"].of(R.WORKLOADS) == [] and w.workers["w1"].of(R.JOBS) == []
    [job] = w.workers["w2"].of(R.JOBS)
    labels = job["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/prebuilt-workload-name"] == "job-abc"
    assert labels["kueue.x-k8s.io/multikueue-origin"] == ORIGIN
    assert "managedBy" not in job["spec"] and "selector" not in job["spec"]
    assert job["spec"]["template"]["metadata"]["labels"] == {"app": "x"}
    local = w.local()
    assert local["status"]["clusterName"] == "w2"
    assert "nominatedClusterNames" not in local["status"]  # exclusive with clusterName
    [state] = local["status"]["admissionChecks"]
    assert (state["state"], state["message"]) == ("Ready", 'The workload got reservation on "w2"')


def test_the_worker_job_status_is_mirrored_once_the_manager_job_runs() -> None:
    w = World()
    w.sync()
    w.reserve_on("w1", "2026-01-01T12:00:01Z")
    w.sync()
    w.manager.objects[("jobs", NS, "job")]["spec"]["suspend"] = False  # the Job integration started it
    remote_job = w.workers["w1"].objects[("jobs", NS, "job")]
    remote_job["status"] = {"active": 1, "startTime": "2026-01-01T12:00:03Z"}
    w.sync()
    assert w.manager.get(R.JOBS, "job", NS)["status"] == {"active": 1, "startTime": "2026-01-01T12:00:03Z"}  # type: ignore[index]
    remote_job["status"] = {"succeeded": 1, "startTime": "2026-01-01T12:00:03Z",
                            "conditions": [{"type": "Complete", "status": "True"}]}
    w.sync()
    status = w.manager.get(R.JOBS, "job", NS)["status"]  # type: ignore[index]
    assert "active" not in status and status["succeeded"] == 1


def test_a_finished_or_deleted_manager_workload_removes_the_remote_objects() -> None:
    w = World()
    w.sync()
    w.reserve_on("w1", "2026-01-01T12:00:01Z")
    w.sync()
    assert w.workers["w1"].of(R.JOBS)
    del w.manager.objects[("workloads", NS, "job-abc")]
    assert w.sync() is None
    assert w.workers["w1"].of(R.JOBS) == [] and w.workers["w1"].of(R.WORKLOADS) == []


def test_a_copy_removed_by_the_winner_sends_the_check_to_retry() -> None:
    w = World()
    w.sync()
    w.reserve_on("w1", "2026-01-01T12:00:01Z")
    w.sync()
    del w.workers["w1"].objects[("workloads", NS, "job-abc")]
    w.sync()
    local = w.local()
    assert local["status"]["admissionChecks"][0]["state"] == "Retry"
    assert "clusterName" not in local["status"]


def test_the_worker_deleting_the_adopted_job_sends_the_check_to_retry_and_removes_the_copy() -> None:
    w = World()
    w.sync()
    w.reserve_on("w1", "2026-01-01T12:00:01Z")
    w.sync()
    remote = w.workers["w1"].objects[("workloads", NS, "job-abc")]
    remote["metadata"]["ownerReferences"] = [  # the worker's Job integration adopted the copy
        {"apiVersion": "batch/v1", "kind": "Job", "name": "job", "uid": "remote-uid", "controller": True}
    ]
    del w.workers["w1"].objects[("jobs", NS, "job")]  # a user on the worker deleted the Job
    w.sync()
    assert w.workers["w1"].of(R.JOBS) == []  # not created again behind the manager's back
    assert w.workers["w1"].of(R.WORKLOADS) == []
    local = w.local()
    [state] = local["status"]["admissionChecks"]
    assert state["state"] == "Retry"
    assert state["message"] == 'Admitting remote no longer exists on worker "w1"'
    assert "clusterName" not in local["status"]
    assert [(t, r) for _, t, r, _ in w.events.events] == [("Normal", "MultiKueue"), ("Warning", "MultiKueue")]


def test_a_job_not_yet_adopted_on_the_winner_is_created_again() -> None:
    w = World()
    w.sync()
    w.reserve_on("w1", "2026-01-01T12:00:01Z")
    w.sync()
    del w.workers["w1"].objects[("jobs", NS, "job")]  # lost before the worker adopted the copy
    w.sync()
    assert len(w.workers["w1"].of(R.JOBS)) == 1
    assert w.local()["status"]["admissionChecks"][0]["state"] == "Ready"


def test_a_lost_worker_is_waited_for_until_worker_lost_timeout() -> None:
    w = World()
    w.sync()
    w.reserve_on("w1", "2026-01-01T12:00:01Z")
    w.sync()
    w.registry.get("w1").active = False  # type: ignore[union-attr]
    w.informers["multikueueclusters"].store.put(
        MultiKueueClusterBuilder("w1").condition("Active", False, "ClientConnectionFailed", "down").obj()
    )
    lost_at = w.informers["multikueueclusters"].store.get("w1")["status"]["conditions"][0]["lastTransitionTime"]  # type: ignore[index]
    w.clock = parse_time(lost_at) + timedelta(seconds=30)  # type: ignore[operator]
    w.sync()
    assert w.local()["status"]["admissionChecks"][0]["state"] == "Ready"
    w.clock = parse_time(lost_at) + timedelta(seconds=61)  # type: ignore[operator]
    w.sync()
    assert w.local()["status"]["admissionChecks"][0]["state"] == "Retry"


def test_workloads_without_a_multikueue_check_are_left_alone() -> None:
    w = World()
    w.informers["admissionchecks"].store.items.clear()
    assert w.sync() is None
    assert all(c.of(R.WORKLOADS) == [] for c in w.workers.values())


def test_copies_of_another_origin_are_not_ours() -> None:
    w = World()
    foreign = d.remote_workload(w.wl, "other-manager")
    w.workers["w1"].put(R.WORKLOADS, foreign)
    w.reserve_on("w1", "2026-01-01T12:00:01Z")
    w.sync()
    assert w.workers["w1"].of(R.JOBS) == []  # not a winner: the copy is someone else's
    assert "clusterName" not in w.local()["status"]


def test_pick_winner_prefers_the_chosen_one_then_the_earliest_reservation() -> None:
    def reserved(at: str) -> dict[str, Any]:
        return {"status": {"conditions": [condition("QuotaReserved", True, "r", "", at=at)]}}

    remotes = {"a": reserved("2026-01-01T00:00:02Z"), "b": reserved("2026-01-01T00:00:01Z"), "c": {}}
    assert d.pick_winner(remotes, None) == "b"
    assert d.pick_winner(remotes, "a") == "a"
    assert d.pick_winner({"a": {}, "b": None}, None) is None


def test_only_active_workers_are_nominated_and_copied_to() -> None:
    w = World()
    w.registry.get("w2").active = False  # type: ignore[union-attr]
    w.sync()
    assert w.local()["status"]["nominatedClusterNames"] == ["w1"]
    assert w.workers["w2"].of(R.WORKLOADS) == []


def test_a_reservation_on_a_worker_not_nominated_does_not_win() -> None:
    w = World(("w1",))
    w.workers["w1"].put(R.WORKLOADS, d.remote_workload(w.wl, ORIGIN))
    w.reserve_on("w1", "2026-01-01T12:00:01Z")
    w.sync()  # the nomination is written first
    assert "clusterName" not in w.local()["status"]
    w.sync()
    assert w.local()["status"]["clusterName"] == "w1"


def test_an_evicted_workload_stops_counting_the_worker_pods_on_the_manager_job() -> None:
    w = World()
    w.sync()
    w.reserve_on("w1", "2026-01-01T12:00:01Z")
    w.sync()
    w.manager.objects[("jobs", NS, "job")]["status"] = {"active": 2, "ready": 2, "startTime": "2026-01-01T12:00:03Z"}
    evicted = w.manager.objects[("workloads", NS, "job-abc")]
    evicted["status"]["conditions"].append(condition("Evicted", True, "AdmissionCheck", "lost"))
    w.sync()
    assert w.manager.get(R.JOBS, "job", NS)["status"] == {"startTime": "2026-01-01T12:00:03Z"}  # type: ignore[index]
    assert w.workers["w1"].of(R.JOBS) == []


def test_forget_pods_only_touches_multikueue_jobs() -> None:
    job = {"spec": {}, "status": {"active": 1}}
    assert d.forget_pods_patch(job) is None
    job["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    assert d.forget_pods_patch(job) == {"active": None}
    assert d.forget_pods_patch({"spec": job["spec"], "status": {}}) is None


def test_a_worker_refusing_the_copy_is_skipped_and_the_others_still_get_theirs() -> None:
    w = World()

    def refuse(*_: Any, **__: Any) -> Any:
        raise Forbidden(403, "Forbidden", 'namespace "team-a" not found')

    w.workers["w1"].create = refuse  # type: ignore[method-assign]
    assert w.sync() == 1.0
    assert w.workers["w1"].of(R.WORKLOADS) == [] and len(w.workers["w2"].of(R.WORKLOADS)) == 1


def test_two_workers_reserving_at_the_same_instant_yield_one_winner_and_one_job() -> None:
    w = World()
    w.sync()
    w.reserve_on("w1", "2026-01-01T12:00:01Z")
    w.reserve_on("w2", "2026-01-01T12:00:01Z")
    w.sync()
    w.sync()
    winner = w.local()["status"]["clusterName"]
    loser = "w1" if winner == "w2" else "w2"
    assert winner in ("w1", "w2")
    assert len(w.workers[winner].of(R.JOBS)) == 1 and w.workers[loser].of(R.JOBS) == []
    assert w.workers[loser].of(R.WORKLOADS) == []


def test_a_tie_is_broken_the_same_way_every_time_and_not_always_for_the_same_worker() -> None:
    def reserved(at: str) -> dict[str, Any]:
        return {"status": {"conditions": [condition("QuotaReserved", True, "r", "", at=at)]}}

    tie = {"w1": reserved("2026-01-01T00:00:01Z"), "w2": reserved("2026-01-01T00:00:01Z")}
    winners = [d.pick_winner(tie, None, tie_break=f"ns/job-{i}") for i in range(200)]
    assert winners == [d.pick_winner(tie, None, tie_break=f"ns/job-{i}") for i in range(200)]
    assert 70 <= winners.count("w1") <= 130  # spread over both workers, not the first name
    # An earlier reservation still wins whatever the hash says.
    early = {**tie, "w2": reserved("2026-01-01T00:00:00Z")}
    assert {d.pick_winner(early, None, tie_break=f"ns/job-{i}") for i in range(50)} == {"w2"}


def test_only_workload_events_with_admission_check_states_reach_the_dispatch_queue() -> None:
    """A workload without check states has no MultiKueue check: its events (every event of
    every workload on a cluster without MultiKueue) never reach the queue; an update counts
    when either version has states, so a workload losing its check is looked at once more."""
    w = World()
    w.dispatcher.register_handlers()
    handler = w.informers["workloads"].handlers[0]
    plain = WorkloadBuilder("plain", NS).queue("lq").obj()
    dispatched = reserved_workload()
    handler.on_add(plain)
    handler.on_update(plain, plain)
    handler.on_delete(plain)
    assert len(w.dispatcher.queue) == 0
    handler.on_add(dispatched)
    assert w.dispatcher.queue.get(timeout=0.1) == f"{NS}/job-abc"
    w.dispatcher.queue.done(f"{NS}/job-abc")
    lost = reserved_workload()
    lost["status"]["admissionChecks"] = []
    handler.on_update(dispatched, lost)
    assert w.dispatcher.queue.get(timeout=0.1) == f"{NS}/job-abc"
    w.dispatcher.queue.done(f"{NS}/job-abc")
    handler.on_delete(dispatched)
    assert w.dispatcher.queue.get(timeout=0.1) == f"{NS}/job-abc", "its copies are looked for on deletion"
