"""The weightedShare writer: what differs is written, a bounded number per period, and metrics
follow the engine (``controller.core.fair_share_status``)."""

from __future__ import annotations

import math
from typing import Any

from controller.core import fair_share_status as fss
from controller.core import metrics as m
from tests.unit.core.fakes import FakeApi, FakeInformer, immediate_reads
from tests.unit.engine.harness import World


def _obj(kind: str, name: str, share: int | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": kind, "metadata": {"name": name}, "spec": {}}
    if share is not None:
        obj["status"] = {"fairSharing": {"weightedShare": share}}
    return obj


class _Engine:
    def __init__(self, queues: dict[str, tuple[int, str]], cohorts: dict[str, int]) -> None:
        self.shares = (queues, cohorts)

    def weighted_shares(self) -> tuple[dict[str, tuple[int, str]], dict[str, int]]:
        return self.shares


def test_only_changed_shares_are_written_and_metrics_follow() -> None:
    cqs = FakeInformer(_obj("ClusterQueue", "a", 250), _obj("ClusterQueue", "b"))
    cohorts = FakeInformer(_obj("Cohort", "all", 0))
    api = FakeApi({"clusterqueues": cqs, "cohorts": cohorts})
    engine = _Engine({"a": (250, "all"), "b": (2**63 - 1, "all")}, {"all": 7, "implicit": 3})
    writer = fss.FairShareStatus(api, immediate_reads(engine), cqs, cohorts)
    assert writer.tick() == 2
    assert {(p[0], p[1]) for p in api.patches} == {("clusterqueues", "b"), ("cohorts", "all")}
    assert cqs.store.get("b")["status"]["fairSharing"]["weightedShare"] == 2**63 - 1
    assert writer.tick() == 0  # nothing differs any more; the implicit cohort has no object
    assert m.CLUSTER_QUEUE_WEIGHTED_SHARE.labels("a", "all")._value.get() == 250
    assert math.isnan(m.CLUSTER_QUEUE_WEIGHTED_SHARE.labels("b", "all")._value.get())
    assert m.COHORT_WEIGHTED_SHARE.labels("all")._value.get() == 7


def test_writes_per_period_are_bounded() -> None:
    names = [f"cq{i:02d}" for i in range(fss.WRITES_PER_PERIOD + 5)]
    cqs = FakeInformer(*(_obj("ClusterQueue", n) for n in names))
    cohorts = FakeInformer()
    api = FakeApi({"clusterqueues": cqs, "cohorts": cohorts})
    writer = fss.FairShareStatus(api, immediate_reads(_Engine({n: (1, "") for n in names}, {})), cqs, cohorts)
    assert writer.tick() == fss.WRITES_PER_PERIOD
    assert writer.tick() == 5


def test_the_engine_answers_the_writer() -> None:
    world = World(fair_sharing=("LessThanInitialShare",))
    queues, cohorts = world.engine.weighted_shares()
    assert (queues, cohorts) == ({}, {})
