"""The scheduler loop writes a migration as an eviction of the winner (FlavorMigration); the
preferred option reserves only once the winner's quota is released (real engine, in-memory
API). An option that preempts records its parent's preemption gate."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from controller.concurrentadmission.winner import WinnerClaims
from controller.core.scheduler import KINDS, SchedulerLoop
from controller.engine.results import CycleResult
from controller.runtime.events import RecordingEvents
from pykueue.api import constants as C
from pykueue.kube.errors import ServerError
from tests.builders import (
    LocalQueueBuilder,
    PlacementWorkloadBuilder,
    ResourceFlavorBuilder,
    SeedClusterQueueBuilder,
)
from tests.unit.concurrentadmission.helpers import config_of, option, parent, reserved
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


def _release(harness: Harness, name: str) -> None:
    """What the Job integration does once the evicted option's pods are gone."""
    current = copy.deepcopy(harness.api.objects[("workloads", f"ns/{name}")])
    current["status"].pop("admission", None)
    current["status"]["conditions"] = [
        c for c in current["status"]["conditions"] if c["type"] not in ("QuotaReserved", "Admitted")
    ] + [{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "released"}]
    harness.api.put("workloads", current)
    harness.loop.notify("workloads", f"ns/{name}")


def test_migration_evicts_the_winner_and_reserves_only_after_its_quota_is_released(harness: Harness) -> None:
    harness.step()
    assert harness.holders() == {SPOT}
    harness.loop.notify("workloads", f"ns/{SPOT}")  # the echo of the reservation reaches the engine
    harness.free_reservation()
    before = len(harness.api.patches)
    harness.step()
    writes = [(key.split("/")[1], patch) for _, key, patch in harness.api.patches[before:]]
    assert [name for name, _ in writes] == [SPOT]
    evicted = writes[0][1]["status"]
    assert "admission" not in evicted, "the quota stays until the pods are gone"
    assert any(c["type"] == "Evicted" and c["reason"] == "FlavorMigration" for c in evicted["conditions"])
    harness.step()
    assert harness.holders() == {SPOT}, "never two options holding quota"
    harness.loop.notify("workloads", f"ns/{SPOT}")  # the echo of the eviction reaches the engine
    harness.step()
    assert harness.holders() == {SPOT}
    _release(harness, SPOT)
    harness.step()
    harness.step()  # the freed quota requeues the parked option (batched)
    assert harness.holders() == {RESERVATION}


def test_a_failed_migration_eviction_write_is_decided_again(harness: Harness) -> None:
    harness.step()
    harness.free_reservation()
    harness.api.failures = [ServerError(500, "InternalError", "etcd is sad")]
    result = harness.step()
    assert result is not None and result.reservations == []
    assert [e.reason for e in result.evictions] == ["FlavorMigration"]
    assert harness.holders() == {SPOT}
    spot = harness.api.objects[("workloads", f"ns/{SPOT}")]
    assert not any(c["type"] == "Evicted" for c in spot["status"]["conditions"])
    harness.step()  # the next cycle decides the migration again and the write goes through
    spot = harness.api.objects[("workloads", f"ns/{SPOT}")]
    assert any(c["type"] == "Evicted" and c["reason"] == "FlavorMigration" for c in spot["status"]["conditions"])


def test_an_option_admitted_by_its_reservation_claims_the_parent_first() -> None:
    """An option of a queue without checks is admitted by the reservation write. When the API
    already has a sibling admitted (the workload controller's write, which the scheduler's cache
    does not show yet), the claim on the parent is refused and the reservation is dropped."""
    harness = Harness()
    try:
        claims = WinnerClaims(harness.api, harness.informers["workloads"].store.get)
        harness.loop = SchedulerLoop(
            harness.api,
            harness.informers,
            RecordingEvents(),
            clock=lambda: harness.now,
            claim_winner=claims.claim,
        )
        harness.engine = harness.loop.start_engine()
        # Behind the cache's back: the sibling reserved, claimed the parent and was admitted.
        key = f"ns/{RESERVATION}"
        sibling = copy.deepcopy(harness.api.objects[("workloads", key)])
        sibling["status"] = reserved(sibling, "reservation")["status"]
        harness.api.objects[("workloads", key)] = sibling
        parent_key = ("workloads", "ns/job-a-12345")
        claimed = copy.deepcopy(harness.api.objects[parent_key])
        claimed["metadata"]["annotations"] = {C.OPTION_WINNER_ANNOTATION: RESERVATION}
        claimed["metadata"]["resourceVersion"] = "999"
        harness.api.objects[parent_key] = claimed
        harness.step()
        assert harness.holders() == {RESERVATION}, "the spot option was not reserved next to the winner"
        assert harness.api.conflicts >= 1
    finally:
        harness.pool.shutdown()


class _GateRefused(FakeApi):
    """Refuses every write of the preemption gate annotation."""

    gate_attempts = 0

    def patch(self, res: Any, name: str, patch: dict[str, Any], namespace: str | None = None, **kw: Any) -> dict[str, Any]:
        annotations = (patch.get("metadata") or {}).get("annotations") or {}
        if C.OPTION_PREEMPTION_GATE_ANNOTATION in annotations:
            self.gate_attempts += 1
            raise ServerError(500, "InternalError", "etcd is sad")
        return super().patch(res, name, patch, namespace, **kw)


def _preempting_world(api_class: type[FakeApi]) -> tuple[FakeApi, dict[str, FakeInformer], SchedulerLoop]:
    informers = {kind: FakeInformer() for kind in KINDS}
    api = api_class(informers)
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
    loop = SchedulerLoop(api, informers, RecordingEvents(), clock=lambda: 1_800_000_000.0)
    return api, informers, loop


def test_an_option_that_preempts_records_the_preemption_gate_in_the_api() -> None:
    api, _informers, loop = _preempting_world(FakeApi)
    pool = ThreadPoolExecutor(max_workers=2)
    try:
        engine = loop.start_engine()
        loop.step(engine, pool)
        assert loop.settle(5)
    finally:
        pool.shutdown()
    gated = api.objects[("workloads", f"ns/{SPOT}")]
    assert gated["metadata"]["annotations"]["kueue.x-k8s.io/option-preemption-gate"] == "2027-01-15T08:00:00Z"


def test_the_preemption_gate_is_written_before_the_preemptions_it_covers() -> None:
    api, _informers, loop = _preempting_world(FakeApi)
    pool = ThreadPoolExecutor(max_workers=4)
    try:
        loop.step(loop.start_engine(), pool)
        assert loop.settle(5)
    finally:
        pool.shutdown()
    order = [
        "gate" if C.OPTION_PREEMPTION_GATE_ANNOTATION in ((patch.get("metadata") or {}).get("annotations") or {})
        else key
        for _, key, patch in api.patches
    ]
    assert order.index("gate") < order.index("ns/low"), order


def test_no_preemption_is_issued_when_its_gate_could_not_be_recorded() -> None:
    """A gate the API refused covers nothing: the victim is left alone, and the engine decides
    the preemption again in a later cycle (with the gate first)."""
    api, _informers, loop = _preempting_world(_GateRefused)
    pool = ThreadPoolExecutor(max_workers=4)
    try:
        loop.step(loop.start_engine(), pool)
        assert loop.settle(5)
    finally:
        pool.shutdown()
    assert isinstance(api, _GateRefused) and api.gate_attempts == 1
    low = api.objects[("workloads", "ns/low")]
    assert not any(c["type"] == "Evicted" for c in low["status"]["conditions"]), "no victim without its gate"
