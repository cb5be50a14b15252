"""Kueue's flavor-assigner cases, re-expressed against pykueue's engine.

Each case names its source: a case of ``TestAssignFlavors`` or ``TestReclaimBeforePriorityPreemption``
in kueue/pkg/scheduler/flavorassigner/flavorassigner_test.go (v0.19.2). As there, the preemption
oracle is a stub: it answers "preemption possible, borrowing level 0" unless the case says otherwise,
so these cases test the flavor walk, fungibility, borrowing levels and messages, not victim search
(which the preemption and scheduler ports cover).

The expected outcome is Kueue's: the representative mode (``Fit``, ``Preempt`` — which includes a
flavor with no preemption candidates — or ``NoFit``), the flavor of every resource per podSet, the
borrowing level, and the pending message, which is Kueue's status text (reasons sorted, prefixed by
``couldn't assign flavors to pod set <name>:``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from controller.engine import flavors as fa
from controller.engine import quota
from controller.engine.records import FlavorResource, WorkloadInfo
from tests.builders import (
    CohortBuilder,
    FungibleClusterQueueBuilder,
    PlacementWorkloadBuilder,
    ResourceFlavorBuilder,
    TaintedFlavorBuilder,
)
from tests.unit.engine.harness import World

Obj = dict[str, Any]
GPU = "example.com/gpu"
MSG = "couldn't assign flavors to pod set {}: {}"


def _flavors() -> list[Obj]:
    """The ResourceFlavors every TestAssignFlavors case can use."""
    return [
        ResourceFlavorBuilder("default").obj(),
        ResourceFlavorBuilder("one").node_labels(type="one").obj(),
        ResourceFlavorBuilder("two").node_labels(type="two").obj(),
        ResourceFlavorBuilder("b_one").node_labels(b_type="one").obj(),
        ResourceFlavorBuilder("b_two").node_labels(b_type="two").obj(),
        TaintedFlavorBuilder("tainted").taint("instance", "spot").obj(),
        TaintedFlavorBuilder("taint_and_toleration").taint("instance", "spot").toleration("instance", "spot").obj(),
        ResourceFlavorBuilder("label-x-a").node_labels(x="a").obj(),
        ResourceFlavorBuilder("label-xy-b").node_labels(x="b", y="k").obj(),
        ResourceFlavorBuilder("uno").obj(),
        ResourceFlavorBuilder("due").obj(),
        ResourceFlavorBuilder("tre").obj(),
    ]


def cq(name: str = "test-clusterqueue") -> FungibleClusterQueueBuilder:
    return FungibleClusterQueueBuilder(name)


def ps(name: str = "main", count: int = 1, **requests: str) -> PlacementWorkloadBuilder:
    """A one-podSet workload; more podSets are added with ``.podset(...)``."""
    return PlacementWorkloadBuilder("wl", "ns").queue("lq-test-clusterqueue").podset(name, count, **requests)


@dataclass
class Case:
    source: str
    workload: PlacementWorkloadBuilder
    cluster_queue: FungibleClusterQueueBuilder
    mode: str  # Fit / Preempt / NoFit
    flavors: list[dict[str, str]] = field(default_factory=list)  # per podSet: resource -> flavor
    borrowing: int = 0
    message: str = ""
    usage: dict[FlavorResource, str] = field(default_factory=dict)
    secondary: FungibleClusterQueueBuilder | None = None
    secondary_usage: dict[FlavorResource, str] = field(default_factory=dict)
    oracle: dict[FlavorResource, tuple[int, int]] = field(default_factory=dict)


def _use(world: World, cq_name: str, usage: dict[FlavorResource, str], prefix: str) -> None:
    for i, ((flavor, resource), amount) in enumerate(usage.items()):
        world.add(
            PlacementWorkloadBuilder(f"{prefix}{i}", "ns").queue(f"lq-{cq_name}").podset(**{resource: amount})
            .reserved(cq_name, {resource: flavor}, {resource: amount}).admitted().obj()
        )


def _assign(case: Case, cohorts: list[Obj] | None = None) -> fa.Assignment:
    world = World()
    for flavor in [*_flavors(), ResourceFlavorBuilder("three").obj()]:
        world.engine.upsert_resource_flavor(flavor)
    for cohort in cohorts or []:
        world.engine.upsert_cohort(cohort)
    main = case.cluster_queue.obj()
    world.queue(main)
    if case.secondary is not None:
        world.queue(case.secondary.obj())
        _use(world, case.secondary.obj()["metadata"]["name"], case.secondary_usage, "other-")
    _use(world, main["metadata"]["name"], case.usage, "used-")
    world.add(case.workload.obj())
    engine = world.engine
    info: WorkloadInfo = engine.workloads["ns/wl"]
    name = main["metadata"]["name"]

    def oracle(_node: quota.QuotaNode, fr: FlavorResource, _val: int, _wl: WorkloadInfo) -> tuple[int, int]:
        return case.oracle.get(fr, (fa.PREEMPT, 0))

    return fa.assign_flavors(info, engine.cluster_queues[name], engine.forest.cluster_queues[name], engine.cache.flavors, oracle)


def _mode(assignment: fa.Assignment) -> str:
    return {fa.FIT: "Fit", fa.PREEMPT: "Preempt", fa.NO_CANDIDATES: "Preempt", fa.NO_FIT: "NoFit"}[assignment.mode]


ONE_TWO_CPU = cq().flavor("one", cpu="4").flavor("two", cpu="4")
AFFINITY_TYPE_TWO = [{"key": "type", "operator": "In", "values": ["two"]}]

CASES = [
    Case("TestAssignFlavors/single flavor, fits",
         ps(cpu="1", memory="1Mi"), cq().flavor("default", cpu="1", memory="2Mi"),
         "Fit", [{"cpu": "default", "memory": "default"}]),
    Case("TestAssignFlavors/single flavor, fits tainted flavor",
         ps(cpu="1").toleration("instance", "spot"), cq().flavor("tainted", cpu="4"),
         "Fit", [{"cpu": "tainted"}]),
    Case("TestAssignFlavors/single flavor, fits tainted flavor with toleration",
         ps(cpu="1"), cq().flavor("taint_and_toleration", cpu="4"),
         "Fit", [{"cpu": "taint_and_toleration"}]),
    Case("TestAssignFlavors/single flavor, used resources, doesn't fit",
         ps(cpu="2"), cq().flavor("default", cpu="4"), "Preempt", [{"cpu": "default"}],
         message=MSG.format("main", "insufficient unused quota for cpu in flavor default, 1 more needed"),
         usage={("default", "cpu"): "3"}),
    Case("TestAssignFlavors/multiple resource groups, fits",
         ps(cpu="3", memory="10Mi"),
         cq().flavor("one", cpu="2").flavor("two", cpu="4").flavor("b_one", memory="1Gi").flavor("b_two", memory="5Gi"),
         "Fit", [{"cpu": "two", "memory": "b_one"}]),
    Case("TestAssignFlavors/multiple resource groups, one could fit with preemption, other doesn't fit",
         ps(cpu="3", memory="10Mi"), cq().flavor("one", cpu="3").flavor("b_one", memory="1Mi"), "NoFit",
         message=MSG.format("main", "insufficient quota for memory in flavor b_one, previously considered podsets "
                                    "requests (0) + current podset request (10Mi) > maximum capacity (1Mi)"),
         usage={("one", "cpu"): "1"}),
    Case("TestAssignFlavors/multiple resource groups with multiple resources, fits",
         ps(cpu="3", memory="10Mi", **{GPU: "3"}),
         cq().flavor("one", cpu="2", memory="1Gi").flavor("two", cpu="4", memory="15Mi")
         .flavor("b_one", **{GPU: "4"}).flavor("b_two", **{GPU: "2"}),
         "Fit", [{"cpu": "two", "memory": "two", GPU: "b_one"}]),
    Case("TestAssignFlavors/multiple resource groups with multiple resources, fits with different modes",
         ps(cpu="3", memory="10Mi", **{GPU: "3"}),
         cq().cohort("test-cohort").flavor("one", cpu="2", memory="1Gi").flavor("two", cpu="4", memory="15Mi")
         .flavor("b_one", **{GPU: "4"}),
         "Preempt", [{"cpu": "two", "memory": "two", GPU: "b_one"}], borrowing=1,
         message=MSG.format("main", ", ".join([
             "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset "
             "request (3) > maximum capacity (2)",
             "insufficient unused quota for example.com/gpu in flavor b_one, 1 more needed",
             "insufficient unused quota for memory in flavor two, 5Mi more needed"])),
         usage={("two", "memory"): "10Mi"},
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("b_one", **{GPU: "0"}),
         secondary_usage={("b_one", GPU): "2"},
         oracle={("two", "memory"): (fa.PREEMPT, 1)}),
    Case("TestAssignFlavors/multiple resources in a group, doesn't fit",
         ps(cpu="3", memory="10Mi"), cq().flavor("one", cpu="2", memory="1Gi").flavor("two", cpu="4", memory="5Mi"),
         "NoFit", message=MSG.format("main", ", ".join([
             "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset "
             "request (3) > maximum capacity (2)",
             "insufficient quota for memory in flavor two, previously considered podsets requests (0) + current podset "
             "request (10Mi) > maximum capacity (5Mi)"]))),
    Case("TestAssignFlavors/multiple flavors, fits while skipping tainted flavor",
         ps(cpu="3"), cq().flavor("tainted", cpu="4").flavor("two", cpu="4"), "Fit", [{"cpu": "two"}]),
    Case("TestAssignFlavors/multiple flavors, fits a node selector",
         ps(cpu="1").node_selector(type="two", ignored1="foo")
         .required_affinity([{"key": "ignored2", "operator": "In", "values": ["bar"]}]),
         ONE_TWO_CPU, "Fit", [{"cpu": "two"}]),
    Case("TestAssignFlavors/multiple flavors, fits with node affinity",
         ps(cpu="1", memory="1Mi").node_selector(ignored1="foo").required_affinity(AFFINITY_TYPE_TWO),
         cq().flavor("one", cpu="4", memory="1Gi").flavor("two", cpu="4", memory="1Gi"),
         "Fit", [{"cpu": "two", "memory": "two"}]),
    Case("TestAssignFlavors/multiple flavors, node affinity fits any flavor",
         ps(cpu="1").required_affinity([{"key": "ignored2", "operator": "In", "values": ["bar"]}],
                                       [{"key": "cpuType", "operator": "In", "values": ["two"]}]),
         ONE_TWO_CPU, "Fit", [{"cpu": "one"}]),
    Case("TestAssignFlavors/multiple flavors with different label keys, selector only uses flavor's own keys",
         ps(cpu="1").node_selector(x="a", y="g"), cq().flavor("label-x-a", cpu="4").flavor("label-xy-b", cpu="4"),
         "Fit", [{"cpu": "label-x-a"}]),
    Case("TestAssignFlavors/labelless flavor in group with labeled flavor, workload uses labeled selector",
         ps(cpu="1").node_selector(type="two"), cq().flavor("default", cpu="4").flavor("two", cpu="4"),
         "Fit", [{"cpu": "default"}]),
    Case("TestAssignFlavors/multiple flavors, doesn't fit node affinity",
         ps(cpu="1").required_affinity([{"key": "type", "operator": "In", "values": ["three"]}]),
         ONE_TWO_CPU, "NoFit",
         message=MSG.format("main", "flavor one doesn't match node affinity, flavor two doesn't match node affinity")),
    Case("TestAssignFlavors/multiple specs, fit different flavors",
         ps("driver", cpu="5").podset("worker", cpu="3"), cq().flavor("one", cpu="4").flavor("two", cpu="10"),
         "Fit", [{"cpu": "two"}, {"cpu": "one"}]),
    Case("TestAssignFlavors/multiple specs, fits borrowing",
         ps("driver", cpu="4", memory="1Gi").podset("worker", cpu="6", memory="4Gi"),
         cq().cohort("test-cohort").flavor("default", borrowing_limit={"cpu": "98"}, cpu="2", memory="2Gi"),
         "Fit", [{"cpu": "default", "memory": "default"}] * 2, borrowing=1,
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("default", cpu="198", memory="198Gi")),
    Case("TestAssignFlavors/not enough space to borrow",
         ps(cpu="2"), cq().cohort("test-cohort").flavor("one", cpu="1"), "NoFit",
         message=MSG.format("main", "insufficient quota for cpu in flavor one, previously considered podsets requests "
                                    "(0) + current podset request (2) > maximum capacity (1)"),
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("one", lending_limit={"cpu": "0"}, cpu="10"),
         secondary_usage={("one", "cpu"): "9"}),
    Case("TestAssignFlavors/past max, but can preempt in ClusterQueue",
         ps(cpu="2"), cq().cohort("test-cohort").flavor("one", borrowing_limit={"cpu": "8"}, cpu="2"),
         "Preempt", [{"cpu": "one"}], borrowing=1,
         message=MSG.format("main", "insufficient unused quota for cpu in flavor one, 1 more needed"),
         usage={("one", "cpu"): "9"},
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("one", cpu="98"),
         secondary_usage={("one", "cpu"): "9"},
         oracle={("one", "cpu"): (fa.PREEMPT, 1)}),
    Case("TestAssignFlavors/past min, but can preempt in ClusterQueue",
         ps(cpu="2"), cq().flavor("one", cpu="2"), "Preempt", [{"cpu": "one"}],
         message=MSG.format("main", "insufficient unused quota for cpu in flavor one, 1 more needed"),
         usage={("one", "cpu"): "1"}),
    Case("TestAssignFlavors/past min, but can preempt in cohort and ClusterQueue",
         ps(cpu="2"), cq().cohort("test-cohort").flavor("one", cpu="3"), "Preempt", [{"cpu": "one"}], borrowing=1,
         message=MSG.format("main", "insufficient unused quota for cpu in flavor one, 2 more needed"),
         usage={("one", "cpu"): "2"},
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("one", cpu="7"),
         secondary_usage={("one", "cpu"): "8"},
         oracle={("one", "cpu"): (fa.PREEMPT, 1)}),
    Case("TestAssignFlavors/resource not listed in clusterQueue",
         ps(cpu="1", **{GPU: "1"}), cq().flavor("one", cpu="4"), "NoFit",
         message=MSG.format("main", "resource example.com/gpu unavailable in ClusterQueue")),
    Case("TestAssignFlavors/zero resource request not in clusterQueue should succeed",
         ps(cpu="1", **{GPU: "0"}), cq().flavor("default", cpu="4"), "Fit", [{"cpu": "default"}]),
    Case("TestAssignFlavors/zero resource request defined in clusterQueue should get flavor assigned",
         ps(cpu="1", **{GPU: "0"}), cq().flavor("default", cpu="4", **{GPU: "4"}), "Fit", [{"cpu": "default", GPU: "default"}]),
    Case("TestAssignFlavors/num pods fit",
         ps(count=3, cpu="1"), cq().flavor("default", pods="3", cpu="10"), "Fit", [{"cpu": "default", "pods": "default"}]),
    Case("TestAssignFlavors/num pods don't fit",
         ps(count=3, cpu="1"), cq().flavor("default", pods="2", cpu="10"), "NoFit",
         message=MSG.format("main", "insufficient quota for pods in flavor default, previously considered podsets "
                                    "requests (0) + current podset request (3) > maximum capacity (2)")),
    Case("TestAssignFlavors/preempt before try next flavor",
         ps(cpu="9"), cq().fungibility("MayStopSearch", "MayStopSearch").flavor("one", pods="10", cpu="10")
         .flavor("two", pods="10", cpu="10"),
         "Preempt", [{"cpu": "one", "pods": "one"}],
         message=MSG.format("main", "insufficient unused quota for cpu in flavor one, 1 more needed"),
         usage={("one", "cpu"): "2"}),
    Case("TestAssignFlavors/preempt try next flavor",
         ps(cpu="9"), cq().flavor("one", pods="10", cpu="10").flavor("two", pods="10", cpu="10"),
         "Fit", [{"cpu": "two", "pods": "two"}], usage={("one", "cpu"): "2"}),
    Case("TestAssignFlavors/borrow try next flavor, found the first flavor",
         ps(cpu="9"), cq().cohort("test-cohort").fungibility("TryNextFlavor", "TryNextFlavor")
         .flavor("one", borrowing_limit={"cpu": "1"}, pods="10", cpu="10").flavor("two", pods="10", cpu="1"),
         "Fit", [{"cpu": "one", "pods": "one"}], borrowing=1, usage={("one", "cpu"): "2"},
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("one", cpu="1")),
    Case("TestAssignFlavors/borrow try next flavor, found the second flavor",
         ps(cpu="9"), cq().cohort("test-cohort").fungibility("TryNextFlavor", "TryNextFlavor")
         .flavor("one", borrowing_limit={"cpu": "1"}, pods="10", cpu="10").flavor("two", pods="10", cpu="10"),
         "Fit", [{"cpu": "two", "pods": "two"}], usage={("one", "cpu"): "2"},
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("one", cpu="1")),
    Case("TestAssignFlavors/borrow before try next flavor",
         ps(cpu="9"), cq().cohort("test-cohort")
         .flavor("one", borrowing_limit={"cpu": "1"}, pods="10", cpu="10").flavor("two", pods="10", cpu="10"),
         "Fit", [{"cpu": "one", "pods": "one"}], borrowing=1, usage={("one", "cpu"): "2"},
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("one", cpu="1")),
    Case("TestAssignFlavors/when borrowing while preemption is needed for flavor one; WhenCanBorrow=MayStopSearch",
         ps(cpu="12"), cq().cohort("test-cohort").preemption(reclaim_within_cohort="LowerPriority",
                                                             borrow_within_cohort="LowerPriority")
         .fungibility("MayStopSearch", "MayStopSearch")
         .flavor("one", borrowing_limit={"cpu": "12"}, cpu="0").flavor("two", cpu="12"),
         "Preempt", [{"cpu": "one"}], borrowing=1,
         message=MSG.format("main", "insufficient unused quota for cpu in flavor one, 10 more needed"),
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("one", cpu="12"),
         secondary_usage={("one", "cpu"): "10"},
         oracle={("one", "cpu"): (fa.PREEMPT, 1)}),
    Case("TestAssignFlavors/when borrowing while preemption is needed for flavor one, no borrowingLimit; "
         "WhenCanBorrow=MayStopSearch",
         ps(cpu="12"), cq().cohort("test-cohort").preemption(reclaim_within_cohort="LowerPriority",
                                                             borrow_within_cohort="LowerPriority")
         .fungibility("MayStopSearch", "MayStopSearch").flavor("one", cpu="0").flavor("two", cpu="12"),
         "Preempt", [{"cpu": "one"}], borrowing=1,
         message=MSG.format("main", "insufficient unused quota for cpu in flavor one, 10 more needed"),
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("one", cpu="12"),
         secondary_usage={("one", "cpu"): "10"},
         oracle={("one", "cpu"): (fa.PREEMPT, 1)}),
    Case("TestAssignFlavors/when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor",
         ps(cpu="12"), cq().cohort("test-cohort").preemption(reclaim_within_cohort="LowerPriority",
                                                             borrow_within_cohort="LowerPriority")
         .fungibility("TryNextFlavor", "MayStopSearch")
         .flavor("one", borrowing_limit={"cpu": "12"}, cpu="0").flavor("two", cpu="12"),
         "Fit", [{"cpu": "two"}],
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("one", cpu="12")),
    Case("TestAssignFlavors/when borrowing while preemption is needed, but borrowingLimit exceeds the quota "
         "available in the cohort",
         ps(cpu="12"), cq().cohort("test-cohort").preemption(reclaim_within_cohort="LowerPriority",
                                                             borrow_within_cohort="LowerPriority")
         .flavor("one", borrowing_limit={"cpu": "12"}, cpu="0"),
         "NoFit", message=MSG.format("main", "insufficient quota for cpu in flavor one, previously considered "
                                             "podsets requests (0) + current podset request (12) > maximum capacity (11)"),
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("one", cpu="11"),
         secondary_usage={("one", "cpu"): "10"}),
    Case("TestAssignFlavors/lend try next flavor, found the second flavor",
         ps(cpu="9"), cq().cohort("test-cohort").fungibility("TryNextFlavor", "TryNextFlavor")
         .flavor("one", lending_limit={"cpu": "1"}, pods="10", cpu="10")
         .flavor("two", lending_limit={"cpu": "0"}, pods="10", cpu="10"),
         "Fit", [{"cpu": "two", "pods": "two"}], usage={("one", "cpu"): "2"},
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("one", cpu="1")),
    Case("TestAssignFlavors/lend try next flavor, found the first flavor",
         ps(cpu="9"), cq().cohort("test-cohort").fungibility("TryNextFlavor", "TryNextFlavor")
         .flavor("one", lending_limit={"cpu": "1"}, pods="10", cpu="10")
         .flavor("two", lending_limit={"cpu": "0"}, pods="10", cpu="1"),
         "Fit", [{"cpu": "one", "pods": "one"}], borrowing=1, usage={("one", "cpu"): "2"},
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("one", cpu="1")),
    Case("TestAssignFlavors/cannot preempt in cohort (oracle returns None) for the first flavor, tries the second "
         "flavor (which fits)",
         ps(cpu="2"), cq().cohort("test-cohort").fungibility("MayStopSearch", "MayStopSearch")
         .preemption(reclaim_within_cohort="LowerPriority", borrow_within_cohort="LowerPriority")
         .flavor("one", borrowing_limit={"cpu": "2"}, cpu="0").flavor("two", borrowing_limit={"cpu": "2"}, cpu="0"),
         "Fit", [{"cpu": "two"}], borrowing=1,
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("one", cpu="2").flavor("two", cpu="2"),
         secondary_usage={("one", "cpu"): "2"},
         oracle={("one", "cpu"): (fa.NO_CANDIDATES, 0)}),
    Case("TestAssignFlavors/quota exhausted, but can preempt in cohort and ClusterQueue",
         ps(cpu="9"), cq().cohort("test-cohort").flavor("one", lending_limit={"cpu": "0"}, pods="10", cpu="10"),
         "Preempt", [{"cpu": "one", "pods": "one"}], borrowing=1,
         message=MSG.format("main", "insufficient unused quota for cpu in flavor one, 1 more needed"),
         usage={("one", "cpu"): "2"},
         secondary=cq("test-secondary-clusterqueue").cohort("test-cohort").flavor("one", pods="0", cpu="0"),
         oracle={("one", "cpu"): (fa.PREEMPT, 1)}),
]


@pytest.mark.parametrize("case", CASES, ids=[case.source for case in CASES])
def test_kueue_assign_flavors_case(case: Case) -> None:
    assignment = _assign(case)
    assert _mode(assignment) == case.mode
    if case.mode != "NoFit":
        assert [ps.flavors for ps in assignment.podsets] == case.flavors
        assert assignment.borrowing_level == case.borrowing
    assert assignment.message == case.message


# TestReclaimBeforePriorityPreemption: flavors uno, due, tre with 10 compute and 10 gpu each in
# test-clusterqueue (LowerPriority within the queue and for reclaim; whenCanPreempt TryNextFlavor),
# lent to an other-clusterqueue with no quota of its own in the same cohort.
def _reclaim_world_case(
    source: str,
    requests: dict[str, str],
    test_usage: dict[FlavorResource, str],
    other_usage: dict[FlavorResource, str],
    oracle: dict[FlavorResource, tuple[int, int]],
    mode: str,
    want: dict[str, str],
    fungibility: tuple[str, str] | None = None,
) -> Case:
    test = cq().cohort("cohort").preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="LowerPriority")
    test.fungibility(*(fungibility or (None, "TryNextFlavor")))  # type: ignore[arg-type]
    other = cq("other-clusterqueue").cohort("cohort")
    for flavor in ("uno", "due", "tre"):
        test.flavor(flavor, compute="10", gpu="10")
        other.flavor(flavor, compute="0", gpu="0")
    return Case(source, ps(**requests), test, mode, [want], usage=test_usage, secondary=other,
                secondary_usage=other_usage, oracle=oracle)


RECLAIM_CASES = [
    _reclaim_world_case(
        "TestReclaimBeforePriorityPreemption/Select first flavor which fits",
        {"gpu": "10"}, {("uno", "gpu"): "1"}, {("due", "gpu"): "1"}, {}, "Fit", {"gpu": "tre"}),
    _reclaim_world_case(
        "TestReclaimBeforePriorityPreemption/Select first flavor where gpu reclamation is possible",
        {"gpu": "10"}, {("uno", "gpu"): "1"}, {("due", "gpu"): "1", ("tre", "gpu"): "1"},
        {("uno", "gpu"): (fa.PREEMPT, 0), ("due", "gpu"): (fa.RECLAIM, 0)},
        "Preempt", {"gpu": "due"}),
    _reclaim_world_case(
        "TestReclaimBeforePriorityPreemption/Select first flavor when flavor fungibility is disabled",
        {"gpu": "10"}, {("uno", "gpu"): "1"}, {("due", "gpu"): "1", ("tre", "gpu"): "1"}, {},
        "Preempt", {"gpu": "uno"}, fungibility=(None, "MayStopSearch")),
    _reclaim_world_case(
        "TestReclaimBeforePriorityPreemption/Select first flavor where priority based preemption is possible",
        {"gpu": "10"}, {("uno", "gpu"): "1", ("due", "gpu"): "1", ("tre", "gpu"): "1"}, {},
        {}, "Preempt", {"gpu": "uno"}),
    _reclaim_world_case(
        "TestReclaimBeforePriorityPreemption/Select second flavor where gpu reclamation is possible, as compute Fits",
        {"gpu": "10", "compute": "10"},
        {("uno", "gpu"): "1", ("uno", "compute"): "1", ("due", "compute"): "1"},
        {("due", "gpu"): "1", ("tre", "gpu"): "1"},
        {("uno", "gpu"): (fa.PREEMPT, 0), ("due", "gpu"): (fa.RECLAIM, 0), ("tre", "gpu"): (fa.RECLAIM, 0)},
        "Preempt", {"gpu": "tre", "compute": "tre"}),
]


@pytest.mark.parametrize("case", RECLAIM_CASES, ids=[case.source for case in RECLAIM_CASES])
def test_kueue_reclaim_before_priority_preemption_case(case: Case) -> None:
    assignment = _assign(case)
    assert _mode(assignment) == case.mode
    assert [ps.flavors for ps in assignment.podsets] == case.flavors


# TestHierarchical: flavors one, two, three and a three-level Cohort tree (three > two > one) where
# each Cohort holds 4 cpu of its own flavor; test-clusterqueue sits in Cohort one with no quota of
# its own, other-clusterqueue in Cohort two.
def _hierarchical(
    source: str,
    test_usage: dict[FlavorResource, str],
    other_usage: dict[FlavorResource, str],
    want: str,
    *,
    one_quota: tuple[str, str | None] = ("0", None),
    fungibility: tuple[str | None, str | None, str | None] = (None, "TryNextFlavor", None),
    oracle: dict[FlavorResource, tuple[int, int]] | None = None,
) -> tuple[str, Case, list[Obj]]:
    nominal, borrowing_limit = one_quota
    test = cq().cohort("one").preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="LowerPriority")
    test.fungibility(*fungibility)
    test.flavor("one", borrowing_limit={"cpu": borrowing_limit} if borrowing_limit else None, cpu=nominal)
    test.flavor("two", cpu="0").flavor("three", cpu="0")
    other = cq("other-clusterqueue").cohort("two").flavor("one", cpu="0").flavor("two", cpu="0").flavor("three", cpu="0")
    cohorts = [
        CohortBuilder("three").flavor("three", cpu="4").obj(),
        CohortBuilder("two").parent("three").flavor("two", cpu="4").obj(),
        CohortBuilder("one").parent("two").flavor("one", cpu="4").obj(),
    ]
    case = Case(source, ps(cpu="4"), test, "Fit", [{"cpu": want}], usage=test_usage, secondary=other,
                secondary_usage=other_usage, oracle=oracle or {})
    return source, case, cohorts


HIERARCHICAL_CASES = [
    _hierarchical("TestHierarchical/Select the top flavor", {("one", "cpu"): "4"}, {("two", "cpu"): "4"}, "three"),
    _hierarchical("TestHierarchical/Select the first flavor which fits", {("one", "cpu"): "4"}, {}, "two"),
    _hierarchical(
        "TestHierarchical/Select deeper-borrowing flavor that fits when shallower-borrowing flavor has no "
        "preemption candidates",
        {("one", "cpu"): "4"}, {}, "two", one_quota=("4", "0"),
        fungibility=("TryNextFlavor", "TryNextFlavor", "PreemptionOverBorrowing"),
        oracle={("one", "cpu"): (fa.NO_CANDIDATES, 1)}),
]


@pytest.mark.parametrize(("source", "case", "cohorts"), HIERARCHICAL_CASES, ids=[c[0] for c in HIERARCHICAL_CASES])
def test_kueue_hierarchical_case(source: str, case: Case, cohorts: list[Obj]) -> None:
    assert _mode(_assign(case, cohorts)) == case.mode, source
    assert [ps.flavors for ps in _assign(case, cohorts).podsets] == case.flavors


def test_hierarchical_borrowing_level_is_the_height_of_the_lending_cohort() -> None:
    """Borrowing from Cohort three (the root of a three-level tree) is level 3, from two level 2."""
    top = _assign(HIERARCHICAL_CASES[0][1], HIERARCHICAL_CASES[0][2])
    first = _assign(HIERARCHICAL_CASES[1][1], HIERARCHICAL_CASES[1][2])
    assert (top.borrowing_level, first.borrowing_level) == (3, 2)


# TestIsPreferred: grade a against grade b, (mode, borrowing level).
IS_PREFERRED = [
    ("feature gate disabled prioritises preemption", (fa.FIT, 0), (fa.PREEMPT, 0), False, True),
    ("explicit BorrowingOverPreemption prioritises borrowing distance", (fa.PREEMPT, 1), (fa.FIT, 2), False, False),
    ("explicit PreemptionOverBorrowing prioritises lower preemption", (fa.PREEMPT, 1), (fa.FIT, 2), True, True),
    ("explicit PreemptionOverBorrowing breaks borrowing ties with preemption", (fa.PREEMPT, 1), (fa.FIT, 1), True, False),
    ("explicit PreemptionOverBorrowing rejects no-candidate flavor before borrowing comparison",
     (fa.NO_CANDIDATES, 1), (fa.FIT, 2), True, False),
    ("explicit PreemptionOverBorrowing prefers fit over shallower-borrowing no-candidate flavor",
     (fa.FIT, 2), (fa.NO_CANDIDATES, 1), True, True),
    ("no-candidate flavor remains preferable to no-fit flavor", (fa.NO_CANDIDATES, 1), (fa.NO_FIT, 0), False, True),
    ("no-fit flavor remains worse than no-candidate flavor", (fa.NO_FIT, 0), (fa.NO_CANDIDATES, 1), False, False),
    ("no-candidate flavors retain borrowing preference", (fa.NO_CANDIDATES, 1), (fa.NO_CANDIDATES, 2), True, True),
    ("no-candidate flavors retain borrowing preference in reverse",
     (fa.NO_CANDIDATES, 2), (fa.NO_CANDIDATES, 1), True, False),
]


@pytest.mark.parametrize(("source", "a", "b", "preemption_over_borrowing", "want"), IS_PREFERRED,
                         ids=[f"TestIsPreferred/{c[0]}" for c in IS_PREFERRED])
def test_kueue_is_preferred_case(source: str, a: tuple[int, int], b: tuple[int, int],
                                 preemption_over_borrowing: bool, want: bool) -> None:
    assert fa.preferred(*a, *b, preemption_over_borrowing) is want, source
