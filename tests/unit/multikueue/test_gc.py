"""Garbage collection of remote orphans (Kueue's multikueuecluster.go GC loop)."""

from __future__ import annotations

from controller.multikueue import dispatch as d
from controller.multikueue.clusters import Registry, Remote
from controller.multikueue.gc import GarbageCollector
from pykueue.kube import resources as R
from tests.builders import JobBuilder, WorkloadBuilder
from tests.unit.multikueue.fake import FakeClient, FakeInformer

NS = "team-a"


def remote_pair(worker: FakeClient, name: str, origin: str) -> None:
    worker.put(R.WORKLOADS, d.remote_workload(WorkloadBuilder(name, NS).obj(), origin))
    worker.put(R.JOBS, d.remote_job(JobBuilder(f"job-of-{name}", NS).obj(), name, origin))


def test_only_our_orphans_are_deleted_with_their_jobs() -> None:
    worker = FakeClient()
    remote_pair(worker, "orphan", "mgr")
    remote_pair(worker, "alive", "mgr")
    remote_pair(worker, "foreign", "other-manager")
    worker.put(R.JOBS, d.remote_job(JobBuilder("job-without-copy", NS).obj(), "vanished", "mgr"))
    registry = Registry()
    registry.put(Remote("w1", worker, "fp", active=True))  # type: ignore[arg-type]
    local = FakeInformer(WorkloadBuilder("alive", NS).obj())
    gc = GarbageCollector(local, registry, origin="mgr", interval=60)  # type: ignore[arg-type]
    assert gc.collect() == 2
    assert sorted(o["metadata"]["name"] for o in worker.of(R.WORKLOADS)) == ["alive", "foreign"]
    assert sorted(o["metadata"]["name"] for o in worker.of(R.JOBS)) == ["job-of-alive", "job-of-foreign"]


def test_inactive_workers_are_skipped_and_a_failing_one_does_not_stop_the_sweep() -> None:
    down, up = FakeClient(), FakeClient()
    remote_pair(up, "orphan", "mgr")
    registry = Registry()
    registry.put(Remote("a-down", down, "fp", active=True))  # type: ignore[arg-type]
    registry.put(Remote("b-up", up, "fp", active=True))  # type: ignore[arg-type]
    registry.put(Remote("c-inactive", FakeClient(), "fp", active=False))  # type: ignore[arg-type]
    down.down = True
    gc = GarbageCollector(FakeInformer(), registry, origin="mgr", interval=60)  # type: ignore[arg-type]
    assert gc.collect() == 1 and up.of(R.WORKLOADS) == []


def test_a_zero_interval_disables_the_loop() -> None:
    gc = GarbageCollector(FakeInformer(), Registry(), origin="mgr", interval=0)  # type: ignore[arg-type]
    gc.start()
    assert gc._thread is None
    gc.stop()
