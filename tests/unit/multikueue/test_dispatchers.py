"""The Incremental and External dispatchers (Kueue's incrementaldispatcher_test.go and
workload_test.go nomination cases, re-expressed as facts), with the dispatch loop in memory."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from controller.multikueue import dispatchers as ds
from controller.multikueue.dispatchers import IncrementalRounds, Mode, mode_of, next_nominees
from controller.multikueue.workload import Settings, WorkloadDispatcher
from pykueue.api.config import DISPATCHER_ALL_AT_ONCE, DISPATCHER_INCREMENTAL
from pykueue.kube import resources as R
from tests.builders import condition
from tests.unit.multikueue.test_workload import NOW, NS, ORIGIN, World

# --- pure: which workers the next round adds ---------------------------------------------------------


@pytest.mark.parametrize(
    ("clusters", "nominated", "step", "added"),
    [
        (["A"], [], 3, ["A"]),
        (["B", "A"], [], 3, ["B", "A"]),  # the config's order, not the names'
        (["C", "B", "A"], [], 3, ["C", "B", "A"]),
        (list("ONMLKJIHGFEDCBA"), [], 3, ["O", "N", "M"]),
        (["C", "B", "A"], ["C", "B", "A"], 3, []),  # every worker nominated: nothing more
        (["A"], ["A"], 3, []),
        (list("FEDCBA"), ["F", "E", "D"], 3, ["C", "B", "A"]),
        (list("HGFEDCBA"), list("HGFEDC"), 3, ["B", "A"]),  # fewer left than a step: all of them
        ([], [], 3, []),
        (list("EDCBA"), [], 2, ["E", "D"]),
        (list("EDCBA"), ["E", "D"], 2, ["C", "B"]),
        (["A", "B", "A"], [], 3, ["A", "B"]),  # a name listed twice is one worker
    ],
)
def test_next_nominees(clusters: list[str], nominated: list[str], step: int, added: list[str]) -> None:
    assert next_nominees(nominated, clusters, step) == added


def test_dispatcher_names() -> None:
    assert mode_of(DISPATCHER_ALL_AT_ONCE) is Mode.ALL_AT_ONCE
    assert mode_of(DISPATCHER_INCREMENTAL) is Mode.INCREMENTAL
    assert mode_of("example.com/my-dispatcher") is Mode.EXTERNAL


def test_a_round_lasts_its_length_inclusive() -> None:
    rounds = IncrementalRounds(300)
    assert rounds.remaining("ns/wl", NOW) is None
    rounds.start("ns/wl", NOW)
    assert rounds.remaining("ns/wl", NOW + timedelta(seconds=100)) == 200
    assert rounds.remaining("ns/wl", NOW + timedelta(seconds=300)) == 0  # still this round
    assert rounds.remaining("ns/wl", NOW + timedelta(seconds=301)) is None
    rounds.forget("ns/wl")
    assert rounds.remaining("ns/wl", NOW) is None


def test_copy_targets_are_the_nominated_workers_the_config_lists() -> None:
    assert ds.copy_targets(["w2", "elsewhere"], ["w1", "w2"]) == ["w2"]


# --- the dispatch loop with each dispatcher -----------------------------------------------------------


def world(mode: Mode, workers: tuple[str, ...] = ("w1", "w2", "w3", "w4", "w5"), **settings: Any) -> World:
    w = World(workers)
    w.dispatcher = WorkloadDispatcher(
        w.manager, w.informers, w.registry,  # type: ignore[arg-type]
        Settings(origin=ORIGIN, worker_lost_timeout=60, dispatcher=mode, **settings),
        events=w.events, clock=lambda: w.clock,
    )  # fmt: skip
    return w


def holders(w: World) -> list[str]:
    return [name for name, client in w.workers.items() if client.of(R.WORKLOADS)]


def test_incremental_nominates_three_workers_then_three_more_after_a_round() -> None:
    w = world(Mode.INCREMENTAL, incremental_round_seconds=300)
    w.sync()
    assert w.local()["status"]["nominatedClusterNames"] == ["w1", "w2", "w3"]
    w.sync()  # the nomination is read back; the copies follow it
    assert holders(w) == ["w1", "w2", "w3"]
    w.clock = NOW + timedelta(seconds=300)
    w.sync()
    assert w.local()["status"]["nominatedClusterNames"] == ["w1", "w2", "w3"]  # the round is not over
    w.clock = NOW + timedelta(seconds=301)
    w.sync()
    assert w.local()["status"]["nominatedClusterNames"] == ["w1", "w2", "w3", "w4", "w5"]
    w.sync()
    assert holders(w) == ["w1", "w2", "w3", "w4", "w5"]
    w.clock = NOW + timedelta(seconds=700)
    w.sync()  # nobody left to nominate: the nomination stays as it is
    assert w.local()["status"]["nominatedClusterNames"] == ["w1", "w2", "w3", "w4", "w5"]


@pytest.mark.parametrize(("step", "rounds"), [(1, [["w1"], ["w1", "w2"], ["w1", "w2", "w3"]]),
                                              (2, [["w1", "w2"], ["w1", "w2", "w3", "w4"], ["w1", "w2", "w3", "w4", "w5"]])])
def test_incremental_adds_step_size_workers_per_round(step: int, rounds: list[list[str]]) -> None:
    w = world(Mode.INCREMENTAL, incremental_round_seconds=300, incremental_step=step)
    for i, nominated in enumerate(rounds):
        w.clock = NOW + timedelta(seconds=301 * i)
        w.sync()
        assert w.local()["status"]["nominatedClusterNames"] == nominated
        w.sync()
        assert holders(w) == nominated


def test_incremental_a_worker_of_a_later_round_can_win() -> None:
    w = world(Mode.INCREMENTAL, incremental_round_seconds=10)
    w.sync()
    w.clock = NOW + timedelta(seconds=11)
    w.sync()
    w.sync()
    w.reserve_on("w5", "2026-01-01T12:00:12Z")
    w.sync()
    local = w.local()
    assert local["status"]["clusterName"] == "w5" and "nominatedClusterNames" not in local["status"]
    assert holders(w) == ["w5"] and len(w.workers["w5"].of(R.JOBS)) == 1


def test_incremental_nominates_inactive_workers_too_and_copies_only_to_active_ones() -> None:
    w = world(Mode.INCREMENTAL, workers=("w1", "w2"))
    w.registry.get("w1").active = False  # type: ignore[union-attr]
    w.sync()
    w.sync()
    assert w.local()["status"]["nominatedClusterNames"] == ["w1", "w2"]
    assert holders(w) == ["w2"]


def test_incremental_does_not_nominate_while_the_check_is_not_pending() -> None:
    w = world(Mode.INCREMENTAL)
    w.manager.objects[("workloads", NS, "job-abc")]["status"]["admissionChecks"][0]["state"] = "Ready"
    w.sync()
    assert "nominatedClusterNames" not in w.local()["status"] and holders(w) == []


def test_eviction_resets_the_nomination_and_starts_the_rounds_again() -> None:
    w = world(Mode.INCREMENTAL, incremental_round_seconds=10)
    w.sync()
    w.clock = NOW + timedelta(seconds=11)
    w.sync()
    assert len(w.local()["status"]["nominatedClusterNames"]) == 5
    evicted = w.manager.objects[("workloads", NS, "job-abc")]
    evicted["status"]["conditions"] = [condition("Evicted", True, "AdmissionCheck", "requeued")]
    w.sync()
    assert "nominatedClusterNames" not in w.local()["status"] and holders(w) == []
    evicted["status"]["conditions"] = [condition("QuotaReserved", True, "QuotaReserved", "again")]
    w.sync()
    assert w.local()["status"]["nominatedClusterNames"] == ["w1", "w2", "w3"]  # a fresh first round


def test_external_waits_for_the_nomination_and_copies_follow_its_changes() -> None:
    w = world(Mode.EXTERNAL, workers=("w1", "w2"))
    w.sync()
    assert "nominatedClusterNames" not in w.local()["status"] and holders(w) == []
    w.manager.objects[("workloads", NS, "job-abc")]["status"]["nominatedClusterNames"] = ["w1"]
    w.sync()
    assert holders(w) == ["w1"]
    w.manager.objects[("workloads", NS, "job-abc")]["status"]["nominatedClusterNames"] = ["w2", "elsewhere"]
    w.sync()
    assert holders(w) == ["w2"]  # w1's copy removed; a name outside the config gets nothing
    assert w.local()["status"]["nominatedClusterNames"] == ["w2", "elsewhere"]  # never rewritten by us
    w.reserve_on("w2", "2026-01-01T12:00:05Z")
    w.sync()
    assert w.local()["status"]["clusterName"] == "w2" and len(w.workers["w2"].of(R.JOBS)) == 1


def test_external_reservation_on_a_worker_no_longer_nominated_does_not_win() -> None:
    w = world(Mode.EXTERNAL, workers=("w1", "w2"))
    w.manager.objects[("workloads", NS, "job-abc")]["status"]["nominatedClusterNames"] = ["w1"]
    w.sync()
    w.reserve_on("w1", "2026-01-01T12:00:05Z")
    w.manager.objects[("workloads", NS, "job-abc")]["status"]["nominatedClusterNames"] = ["w2"]
    w.sync()
    assert "clusterName" not in w.local()["status"]
    assert holders(w) == ["w2"] and w.workers["w1"].of(R.JOBS) == []


def test_external_eviction_resets_the_nomination_as_kueue_does() -> None:
    w = world(Mode.EXTERNAL, workers=("w1", "w2"))
    wl = w.manager.objects[("workloads", NS, "job-abc")]
    wl["status"]["nominatedClusterNames"] = ["w1"]
    w.sync()
    assert holders(w) == ["w1"]
    wl["status"]["conditions"] = [condition("Evicted", True, "Preempted", "preempted")]
    w.sync()
    assert "nominatedClusterNames" not in w.local()["status"] and holders(w) == []
    wl["status"]["conditions"] = [condition("QuotaReserved", True, "QuotaReserved", "again")]
    w.sync()
    assert "nominatedClusterNames" not in w.local()["status"] and holders(w) == []  # until it nominates again
