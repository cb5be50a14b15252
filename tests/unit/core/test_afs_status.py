"""The admissionFairSharingStatus writer (``controller.core.afs_status``): a LocalQueue's status is
written once per sample, bounded per period, in Kueue's shape, and the usage gauge follows."""

from __future__ import annotations

from typing import Any

from controller.core import afs_status
from controller.core import metrics as m
from controller.engine.afs import PublishedUsage
from pykueue.api.config import AdmissionFairSharing
from pykueue.api.timestamps import parse_epoch
from tests.builders import ClusterQueueBuilder, LocalQueueBuilder, PlacementWorkloadBuilder
from tests.unit.core.fakes import FakeApi, FakeInformer, immediate_reads
from tests.unit.engine.harness import World


def _world(*lqs: dict[str, Any]) -> World:
    world = World(heads=1, admission_fair_sharing=AdmissionFairSharing(60.0, 10.0))
    world.flavors("default")
    world.engine.upsert_cluster_queue(ClusterQueueBuilder("cq").flavor("default", cpu="8").admission_mode().obj())
    for lq in lqs:
        world.engine.upsert_local_queue(lq)
    return world


def test_amounts_are_rounded_down_to_nano_units_with_the_coarsest_exact_suffix() -> None:
    assert afs_status.format_amount(2.0) == "2"
    assert afs_status.format_amount(1.5) == "1500m"
    assert afs_status.format_amount(0.0625) == "62500u"
    assert afs_status.format_amount(0.29289321881345254) == "292893218n"
    assert afs_status.format_amount(-1e-12) == "0"


def test_each_sample_is_written_once_in_kueues_shape_and_the_gauge_follows() -> None:
    lq = LocalQueueBuilder("lq", "ns", "cq").obj()
    informer = FakeInformer()
    api = FakeApi({"localqueues": informer})
    api.put("localqueues", lq)
    world = _world(lq)
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq").podset(cpu="4").obj())
    assert world.admit(advance=0) == ["ns/wl"]
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq").podset(cpu="4")
              .reserved("cq", {"cpu": "default"}, {"cpu": "4"}).admitted().obj())
    writer = afs_status.AfsStatus(api, immediate_reads(world.engine), informer)
    assert writer.tick() == 0  # nothing sampled yet: nothing published
    world.cycle(advance=10.0)
    assert writer.tick() == 1
    shown = informer.store.get("ns/lq")["status"]["fairSharing"]
    assert shown["weightedShare"] == 0  # required by the v1beta1 type LocalQueues share
    status = shown["admissionFairSharingStatus"]
    afs = world.engine.afs
    assert afs is not None
    entry = afs.entry("ns/lq")
    assert entry is not None
    assert status["consumedResources"] == {"cpu": afs_status.format_amount(entry.consumed["cpu"])}
    assert parse_epoch(status["lastUpdate"]) == world.now
    assert writer.tick() == 0  # the same sample is not written twice
    assert m.LOCAL_QUEUE_AFS_USAGE.labels("lq", "ns", "cq")._value.get() == entry.usage
    world.cycle(advance=10.0)
    assert writer.tick() == 1


def test_a_persisted_status_seeds_a_new_leader() -> None:
    """Kueue's initializeAfsIfNeeded: the consumed usage shown in status is where a new leader's
    ledger starts (its decay clock starts at the moment it reads it)."""
    world = _world(LocalQueueBuilder("lq", "ns", "cq").consumed(cpu="1500m", memory="2Gi").obj())
    afs = world.engine.afs
    assert afs is not None
    entry = afs.entry("ns/lq")
    assert entry is not None
    assert entry.consumed == {"cpu": 1.5, "memory": float(2 * 1024**3)}
    assert entry.last_update == world.now


def test_writes_per_period_are_bounded_and_removed_resources_are_nulled() -> None:
    names = [f"lq{i:02d}" for i in range(afs_status.WRITES_PER_PERIOD + 3)]
    informer = FakeInformer()
    api = FakeApi({"localqueues": informer})
    for name in names:
        api.put("localqueues", LocalQueueBuilder(name, "ns", "cq").consumed(cpu="1", memory="1").obj())

    class _Ledger:
        @staticmethod
        def published() -> dict[str, PublishedUsage]:
            return {f"ns/{n}": PublishedUsage({"cpu": 0.5}, 2_000_000_000.0, 0.5, "cq") for n in names}

    class _Engine:
        afs = _Ledger()

    writer = afs_status.AfsStatus(api, immediate_reads(_Engine()), informer)
    assert writer.tick() == afs_status.WRITES_PER_PERIOD
    assert writer.tick() == 3
    assert writer.tick() == 0
    consumed = informer.store.get("ns/lq00")["status"]["fairSharing"]["admissionFairSharingStatus"]
    assert consumed["consumedResources"] == {"cpu": "500m"}
