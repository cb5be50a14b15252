"""The scheduler loop writes a migration as evict-then-reserve, and never reserves if the
eviction could not be written (real engine, in-memory API)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from controller.core.scheduler import KINDS, SchedulerLoop
from controller.engine.results import CycleResult
from controller.runtime.events import RecordingEvents
from pykueue.kube.errors import ServerError
from tests.builders import (
    LocalQueueBuilder,
    PlacementWorkloadBuilder,
    ResourceFlavorBuilder,
    SeedClusterQueueBuilder,
)
from tests.unit.concurrentadmission.helpers import config_of, option, parent
from tests.unit.core.fakes import FakeApi, FakeInformer

SPOT = "job-a-12345-option-spot"
RESERVATION = "job-a-12345-option-reservation"


def _queue(reservation_cpu: str) -> dict:
    return (
        SeedClusterQueueBuilder("cq")
        .flavor("reservation", cpu=reservation_cpu)
        .flavor("spot", cpu="4")
        .concurrent("RemoveLower")
        .obj()
    )


class Harness:
    def __init__(self) -> None:
        self.informers = {kind: FakeInformer() for kind in KINDS}
        self.api = FakeApi(self.informers)
        self.api.put("namespaces", {"metadata": {"name": "ns", "labels": {}}})
        for flavor in ("reservation", "spot"):
            self.api.put("resourceflavors", ResourceFlavorBuilder(flavor).obj())
        self.api.put("clusterqueues", _queue("0"))
        self.api.put("localqueues", LocalQueueBuilder("lq", "ns", "cq").obj())
        p = parent(queue="lq")
        self.api.put("workloads", p)
        config = config_of(_queue("0"))
        for suffix in ("reservation", "spot"):
            self.api.put("workloads", option(p, config, suffix))
        self.now = 1_800_000_000.0
        self.loop = SchedulerLoop(self.api, self.informers, RecordingEvents(), clock=lambda: self.now)
        self.pool = ThreadPoolExecutor(max_workers=2)
        self.engine = self.loop.start_engine()

    def step(self) -> CycleResult | None:
        self.now += 2.0  # past the engine's requeue batching period
        result = self.loop.step(self.engine, self.pool)
        assert self.loop.settle(5), "admission writes finished and applied"
        return result

    def holders(self) -> set[str]:
        return {
            key.split("/")[1]
            for (plural, key), obj in self.api.objects.items()
            if plural == "workloads" and (obj.get("status") or {}).get("admission")
        }

    def free_reservation(self) -> None:
        self.api.put("clusterqueues", _queue("4"))
        self.loop.notify("clusterqueues", "cq")


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = Harness()
    yield h
    h.pool.shutdown()


def test_migration_evicts_the_sibling_before_reserving(harness: Harness) -> None:
    harness.step()
    assert harness.holders() == {SPOT}
    harness.free_reservation()
    before = len(harness.api.patches)
    harness.step()
    writes = [(key.split("/")[1], patch) for _, key, patch in harness.api.patches[before:]]
    assert [name for name, _ in writes] == [SPOT, RESERVATION]
    evicted = writes[0][1]["status"]
    assert evicted["admission"] is None
    assert any(c["type"] == "Evicted" and c["reason"] == "FlavorMigration" for c in evicted["conditions"])
    assert harness.holders() == {RESERVATION}


def test_a_failed_eviction_write_means_no_reservation_and_the_sibling_keeps_its_quota(
    harness: Harness,
) -> None:
    harness.step()
    harness.free_reservation()
    harness.api.failures = [ServerError(500, "InternalError", "etcd is sad")]
    result = harness.step()
    assert result is not None
    assert [r.workload for r in result.reservations] == [f"ns/{RESERVATION}"]
    assert harness.holders() == {SPOT}
    assert harness.engine.workloads[f"ns/{RESERVATION}"].admission is None
    spot = harness.engine.admitted_workload(f"ns/{SPOT}")
    assert spot is not None, "the rollback gave the sibling its quota back"
    harness.step()
    assert harness.holders() == {RESERVATION}


def test_a_failed_reservation_after_the_eviction_was_written_leaves_no_ghost_quota(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sibling's eviction (which clears its reservation) is written, the preferred option's
    reservation write then fails: the engine must not give the evicted sibling its quota back
    (the API no longer shows it), and the preferred option reserves on the next cycle."""
    harness.step()
    harness.free_reservation()
    real_patch = harness.api.patch
    failed: list[str] = []

    def patch(res, name, body, namespace=None, **kw):  # type: ignore[no-untyped-def]
        if name == RESERVATION and not failed:
            failed.append(name)
            raise ServerError(500, "InternalError", "etcd is sad")
        return real_patch(res, name, body, namespace, **kw)

    monkeypatch.setattr(harness.api, "patch", patch)
    harness.step()
    assert failed == [RESERVATION]
    assert harness.holders() == set()
    assert harness.engine.admitted_workload(f"ns/{SPOT}") is None, "ghost quota for the evicted sibling"
    harness.step()
    assert harness.holders() == {RESERVATION}


def test_an_option_that_preempts_records_the_preemption_gate_in_the_api() -> None:
    informers = {kind: FakeInformer() for kind in KINDS}
    api = FakeApi(informers)
    api.put("namespaces", {"metadata": {"name": "ns", "labels": {}}})
    api.put("resourceflavors", ResourceFlavorBuilder("spot").obj())
    cq = SeedClusterQueueBuilder("cq").flavor("spot", cpu="1").concurrent("RemoveOther").preemption(
        within_cluster_queue="LowerPriority"
    ).obj()
    api.put("clusterqueues", cq)
    api.put("localqueues", LocalQueueBuilder("lq", "ns", "cq").obj())
    api.put(
        "workloads",
        PlacementWorkloadBuilder("low", "ns").queue("lq").podset(cpu="1").priority(-10)
        .reserved("cq", {"cpu": "spot"}, {"cpu": "1"}).admitted().obj(),
    )
    p = parent(queue="lq", cpu="1")
    api.put("workloads", p)
    api.put("workloads", option(p, config_of(cq), "spot"))
    now = 1_800_000_000.0
    loop = SchedulerLoop(api, informers, RecordingEvents(), clock=lambda: now)
    pool = ThreadPoolExecutor(max_workers=2)
    try:
        engine = loop.start_engine()
        loop.step(engine, pool)
        assert loop.settle(5)
    finally:
        pool.shutdown()
    gated = api.objects[("workloads", f"ns/{SPOT}")]
    assert gated["metadata"]["annotations"]["kueue.x-k8s.io/option-preemption-gate"] == "2027-01-15T08:00:00Z"
