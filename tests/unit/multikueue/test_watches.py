"""Remote watches: one Workload and one Job watch per connected worker, feeding the dispatch loop
(Kueue's ``multikueuecluster.go`` watches), following the worker's client and its Active state."""

from __future__ import annotations

import threading
from typing import Any

from controller.multikueue.clusters import ClusterController, Registry
from controller.multikueue.watches import RemoteWatches, workload_key_of_remote
from controller.runtime.events import RecordingEvents
from pykueue.kube import resources as R
from tests.builders import JobBuilder, MultiKueueClusterBuilder, WorkloadBuilder, condition
from tests.unit.multikueue.fake import FakeClient, FakeInformer
from tests.unit.multikueue.test_clusters import NS, secret
from tests.unit.multikueue.test_kubeconfig import kubeconfig
from tests.unit.multikueue.test_workload import World

ORIGIN = "mgr"


class WatchInformer(FakeInformer):
    """An informer that records how it was made, started and stopped."""

    def __init__(self, client: Any, resource: R.Resource, **kw: Any) -> None:
        super().__init__()
        self.client, self.resource, self.kw = client, resource, kw
        self.started = False
        self.stopped = threading.Event()
        self.synced = False

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped.set()

    def has_synced(self) -> bool:
        return self.synced

    def deliver(self, obj: dict[str, Any]) -> None:
        for handler in self.handlers:
            handler.on_add(obj)


class Made:
    def __init__(self) -> None:
        self.informers: list[WatchInformer] = []

    def __call__(self, client: Any, resource: R.Resource, **kw: Any) -> WatchInformer:
        informer = WatchInformer(client, resource, **kw)
        self.informers.append(informer)
        return informer

    def of(self, client: Any) -> list[WatchInformer]:
        return [i for i in self.informers if i.client is client]


def watches() -> tuple[RemoteWatches, Made, list[str]]:
    made, woken = Made(), []
    remote = RemoteWatches(ORIGIN, informer_factory=made)
    remote.feed(woken.append)
    return remote, made, woken


def test_a_remote_workload_or_job_wakes_the_manager_workload_it_belongs_to() -> None:
    copy = WorkloadBuilder("job-abc", "team-a").obj()
    assert workload_key_of_remote(R.WORKLOADS, copy) == "team-a/job-abc"
    job = JobBuilder("job", "team-a").obj()
    job["metadata"].setdefault("labels", {})["kueue.x-k8s.io/prebuilt-workload-name"] = "job-abc"
    assert workload_key_of_remote(R.JOBS, job) == "team-a/job-abc"
    assert workload_key_of_remote(R.JOBS, JobBuilder("other", "team-a").obj()) is None


def test_a_connected_worker_gets_a_workload_and_a_job_watch_of_this_origin_only() -> None:
    remote, made, woken = watches()
    client = object()
    remote.connected("w1", client)
    assert [(i.resource, i.kw["label_selector"], i.started) for i in made.of(client)] == [
        (R.WORKLOADS, "kueue.x-k8s.io/multikueue-origin=mgr", True),
        (R.JOBS, "kueue.x-k8s.io/multikueue-origin=mgr", True),
    ]
    wl_watch, job_watch = made.of(client)
    wl_watch.deliver(WorkloadBuilder("job-abc", "team-a").obj())
    job = JobBuilder("job", "team-a").obj()
    job["metadata"].setdefault("labels", {})["kueue.x-k8s.io/prebuilt-workload-name"] = "job-abc"
    job_watch.deliver(job)
    assert woken == ["team-a/job-abc", "team-a/job-abc"]
    assert not remote.synced("w1")
    wl_watch.synced = job_watch.synced = True
    assert remote.synced("w1")


def test_the_same_client_is_watched_once_and_a_rebuilt_or_lost_one_is_unwatched() -> None:
    remote, made, _ = watches()
    first, second = object(), object()
    remote.connected("w1", first)
    remote.connected("w1", first)  # the next probe: nothing new
    assert len(made.informers) == 2
    remote.connected("w1", second)  # a rotated kubeconfig rebuilt the client
    assert all(i.stopped.wait(5) for i in made.of(first))
    assert [i.started for i in made.of(second)] == [True, True]
    remote.disconnected("w1")
    assert all(i.stopped.wait(5) for i in made.of(second))
    assert not remote.synced("w1")


def test_the_cluster_controller_watches_an_active_worker_and_stops_when_it_turns_inactive() -> None:
    manager = FakeClient()
    manager.put(R.SECRETS, secret("w1-kubeconfig", kubeconfig()))
    cluster = manager.put(R.MULTIKUEUE_CLUSTERS, MultiKueueClusterBuilder("w1").obj())
    worker = FakeClient()
    remote, made, _ = watches()
    controller = ClusterController(
        manager, FakeInformer(cluster), Registry(), namespace=NS, events=RecordingEvents(),
        client_factory=lambda _doc: worker, watches=remote,  # type: ignore[arg-type,return-value]
    )  # fmt: skip
    controller.reconcile("w1")
    assert [i.started for i in made.of(worker)] == [True, True]
    worker.down = True
    controller.reconcile("w1")
    assert all(i.stopped.wait(5) for i in made.of(worker))
    worker.down = False
    controller.reconcile("w1")  # back: watched again (a fresh list wakes every Workload once)
    assert len(made.of(worker)) == 4


def test_the_loop_resyncs_slowly_once_its_workers_are_watched_and_polls_until_then() -> None:
    w = World()
    remote, made, _ = watches()
    w.dispatcher._watches = remote
    assert w.sync() == 1.0  # no watch yet: the fast poll
    for name, client in w.workers.items():
        remote.connected(name, client)
    assert w.sync() == 1.0  # watches still listing
    for informer in made.informers:
        informer.synced = True
    assert w.sync() == w.dispatcher.settings.resync_interval
    w.reserve_on("w1", "2026-01-01T12:00:01Z")
    wl_cache = next(i for i in made.of(w.workers["w1"]) if i.resource == R.WORKLOADS).store
    wl_cache.put(w.workers["w1"].get(R.WORKLOADS, "job-abc", NS_A))  # the watch saw the reservation
    w.sync()
    assert w.local()["status"]["clusterName"] == "w1"
    assert w.sync() == w.dispatcher.settings.resync_interval


def test_a_change_to_the_manager_job_wakes_its_workload() -> None:
    w = World()
    w.informers["workloads"].add_indexer("jobs.pykueue.dev/owner-job", lambda wl: [f"{NS_A}/job"])
    w.dispatcher.register_handlers()
    [handler] = w.informers["jobs"].handlers
    job = w.manager.get(R.JOBS, "job", NS_A)
    handler.on_update(job, job)
    assert w.dispatcher.queue.get(timeout=1) == f"{NS_A}/job-abc"


NS_A = "team-a"


def test_a_worker_turning_inactive_or_active_wakes_the_workloads_it_concerns() -> None:
    w = World()
    w.sync()
    w.dispatcher.register_handlers()
    handler = w.informers["multikueueclusters"].handlers[0]
    up = MultiKueueClusterBuilder("w1").active().obj()
    down = MultiKueueClusterBuilder("w1").condition("Active", False, "ClientConnectionFailed", "down").obj()
    handler.on_update(up, up)  # a probe that changed nothing
    assert w.dispatcher.queue.get(timeout=0.05) is None
    handler.on_update(up, down)
    assert w.dispatcher.queue.get(timeout=1) == f"{NS_A}/job-abc"


def _watched_world() -> tuple[World, Made]:
    w = World()
    remote, made, _ = watches()
    w.dispatcher._watches = remote
    for name, client in w.workers.items():
        remote.connected(name, client)
    for informer in made.informers:
        informer.synced = True
    return w, made


def _cache_of(made: Made, client: Any, resource: R.Resource) -> Any:
    return next(i for i in made.of(client) if i.resource == resource).store


def test_a_synced_watch_is_read_instead_of_the_worker() -> None:
    w, made = _watched_world()
    w.sync()  # copies created on both workers (the watch has not seen them yet)
    reserved = w.workers["w2"].get(R.WORKLOADS, "job-abc", NS_A)
    assert reserved is not None
    reserved["status"] = {"conditions": [condition("QuotaReserved", True, "QuotaReserved", "ok", at="2026-01-01T12:00:01Z")]}
    _cache_of(made, w.workers["w2"], R.WORKLOADS).put(reserved)  # only the watch knows of the reservation
    w.sync()
    assert w.local()["status"]["clusterName"] == "w2"


def test_a_copy_the_watch_has_not_seen_yet_is_confirmed_live_before_a_retry() -> None:
    w, made = _watched_world()
    w.sync()
    w.reserve_on("w1", "2026-01-01T12:00:01Z")
    _cache_of(made, w.workers["w1"], R.WORKLOADS).put(w.workers["w1"].get(R.WORKLOADS, "job-abc", NS_A))
    w.sync()
    assert w.local()["status"]["clusterName"] == "w1"
    _cache_of(made, w.workers["w1"], R.WORKLOADS).items.clear()  # the cache lags behind the worker
    w.sync()
    [state] = w.local()["status"]["admissionChecks"]
    assert state["state"] == "Ready"  # the live read found the copy: still dispatched
    del w.workers["w1"].objects[("workloads", NS_A, "job-abc")]  # now it is really gone
    w.sync()
    assert w.local()["status"]["admissionChecks"][0]["state"] == "Retry"
