"""Kueue's scheduler cases, re-expressed against one cycle of pykueue's engine.

Each case names its source case of ``TestSchedule`` in kueue/pkg/scheduler/scheduler_test.go
(v0.19.2). Kueue's scheduler takes one head per ClusterQueue per cycle; the engine here runs with
``heads_per_cluster_queue=1`` so that one ``schedule`` call is one Kueue cycle. A case checks what
that cycle decides: the reservations (and their flavors), the evictions (and their reasons) and the
pending messages Kueue writes on the workloads it leaves.

The ClusterQueues, LocalQueues and namespaces are those of ``TestSchedule`` (the ``sales``,
``eng-alpha``/``eng-beta`` and ``lend`` teams); cases add their own queues as Kueue's do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from controller.engine import CycleResult
from controller.engine.cycle import NO_LONGER_FITS
from tests.builders import (
    CohortBuilder,
    FungibleClusterQueueBuilder,
    LocalQueueBuilder,
    PlacementWorkloadBuilder,
    TaintedFlavorBuilder,
)
from tests.unit.engine.harness import World

GPU = "example.com/gpu"
NAMESPACES = {"default": {}, "eng-alpha": {"dep": "eng"}, "eng-beta": {"dep": "eng"}, "eng-gamma": {"dep": "eng"},
              "sales": {"dep": "sales"}, "lend": {"dep": "lend"}}


def _dep(team: str) -> dict[str, object]:
    return {"matchExpressions": [{"key": "dep", "operator": "In", "values": [team]}]}


def _default_queues() -> list[FungibleClusterQueueBuilder]:
    return [
        FungibleClusterQueueBuilder("sales").namespace_selector(_dep("sales")).strategy("StrictFIFO")
        .flavor("default", borrowing_limit={"cpu": "0"}, cpu="50"),
        FungibleClusterQueueBuilder("eng-alpha").cohort("eng").namespace_selector(_dep("eng")).strategy("StrictFIFO")
        .flavor("on-demand", borrowing_limit={"cpu": "50"}, cpu="50").flavor("spot", borrowing_limit={"cpu": "0"}, cpu="100"),
        FungibleClusterQueueBuilder("eng-beta").cohort("eng").namespace_selector(_dep("eng")).strategy("StrictFIFO")
        .preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")
        .flavor("on-demand", borrowing_limit={"cpu": "10"}, cpu="50").flavor("spot", borrowing_limit={"cpu": "100"}, cpu="0")
        .flavor("model-a", borrowing_limit={GPU: "0"}, **{GPU: "20"}),
        FungibleClusterQueueBuilder("flavor-nonexistent-cq").strategy("StrictFIFO").flavor("nonexistent-flavor", cpu="50"),
        FungibleClusterQueueBuilder("lend-a").cohort("lend").namespace_selector(_dep("lend"))
        .flavor("default", lending_limit={"cpu": "2"}, cpu="3"),
        FungibleClusterQueueBuilder("lend-b").cohort("lend").namespace_selector(_dep("lend"))
        .flavor("default", lending_limit={"cpu": "2"}, cpu="2"),
    ]


DEFAULT_LOCAL_QUEUES = [
    ("sales", "main", "sales"), ("sales", "blocked", "eng-alpha"), ("eng-alpha", "main", "eng-alpha"),
    ("eng-beta", "main", "eng-beta"), ("sales", "flavor-nonexistent-queue", "flavor-nonexistent-cq"),
    ("sales", "cq-nonexistent-queue", "nonexistent-cq"), ("lend", "lend-a-queue", "lend-a"),
    ("lend", "lend-b-queue", "lend-b"),
]

PodSets = list[tuple[str, int, dict[str, str]]]


@dataclass
class W:
    """A workload of a case: pending, or holding quota when ``reserved`` names its ClusterQueue."""

    key: str
    queue: str
    podsets: PodSets
    priority: int = 0
    created: int = 0  # seconds relative to the case's "now"
    reserved: str | None = None  # ClusterQueue holding its quota
    flavors: list[dict[str, str]] | None = None  # per podSet: resource -> flavor of the reservation
    min_counts: dict[str, int] = field(default_factory=dict)  # podSet -> minCount (partial admission)
    reserved_at: int | None = None  # seconds relative to "now" of its QuotaReserved time, when it matters


def one(**requests: str) -> PodSets:
    return [("main", 1, requests)]


@dataclass
class Case:
    source: str
    workloads: list[W]
    admitted: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # key -> flavors per podSet
    preempted: set[tuple[str, str]] = field(default_factory=set)
    messages: dict[str, str] = field(default_factory=dict)  # key -> pending message written
    counts: dict[str, list[int]] = field(default_factory=dict)  # key -> admitted pod count per podSet
    queues: list[FungibleClusterQueueBuilder] = field(default_factory=list)
    local_queues: list[tuple[str, str, str]] = field(default_factory=list)
    cohorts: list[CohortBuilder] = field(default_factory=list)


def _at(second: int) -> str:
    minute, sec = divmod(600 + second, 60)
    return f"2026-01-01T00:{minute:02d}:{sec:02d}Z"


Outcome = tuple[dict[str, list[dict[str, str]]], set[tuple[str, str]], dict[str, str], dict[str, list[int]]]


def _run(case: Case) -> Outcome:
    return outcome(build_world(case).cycle())


def build_world(case: Case) -> World:
    """The engine of ``TestSchedule``'s fixture with the case's queues and workloads fed in."""
    world = World(heads=1)
    world.flavors("default", "on-demand", "spot", "model-a")
    for flavor in (TaintedFlavorBuilder("spot-tainted").taint("key", "val"), TaintedFlavorBuilder("spot-tainted-2").taint("key", "val2")):
        world.engine.upsert_resource_flavor(flavor.obj())
    for name, labels in NAMESPACES.items():
        world.engine.set_namespace(name, labels)
    for cohort in case.cohorts:
        world.engine.upsert_cohort(cohort.obj())
    for cq in [*_default_queues(), *case.queues]:
        world.engine.upsert_cluster_queue(cq.obj())
    for namespace, name, cq_name in [*DEFAULT_LOCAL_QUEUES, *case.local_queues]:
        world.engine.upsert_local_queue(LocalQueueBuilder(name, namespace, cq_name).obj())
    for wl in case.workloads:
        namespace, name = wl.key.split("/")
        builder = PlacementWorkloadBuilder(name, namespace).queue(wl.queue).priority(wl.priority).created(_at(wl.created))
        for ps_name, count, requests in wl.podsets:
            builder.podset(ps_name, count, **requests)
        obj = builder.obj()
        for podset in obj["spec"]["podSets"]:
            if podset["name"] in wl.min_counts:
                podset["minCount"] = wl.min_counts[podset["name"]]
        if wl.reserved is not None:
            flavors = wl.flavors or [{}] * len(wl.podsets)
            at = {} if wl.reserved_at is None else {"at": _at(wl.reserved_at)}
            obj = builder.reserved(wl.reserved, **at).admitted().obj()
            for assignment, (_ps, count, requests), ps_flavors in zip(
                obj["status"]["admission"]["podSetAssignments"], wl.podsets, flavors, strict=True
            ):
                assignment["flavors"] = dict(ps_flavors)
                assignment["resourceUsage"] = {res: _times(count, qty) for res, qty in requests.items()}
        world.add(obj)
    return world


def outcome(result: CycleResult) -> Outcome:
    """What one cycle decided: reservations (flavors per podSet), evictions, pending messages, counts."""
    admitted = {
        r.workload: [dict(ps["flavors"]) for ps in r.admission["podSetAssignments"]]  # type: ignore[index, union-attr]
        for r in result.reservations
    }
    preempted = {(p.victim, p.reason) for p in result.preemptions}
    messages = {p.workload: p.message for p in result.pending}
    counts = {
        r.workload: [ps["count"] for ps in r.admission["podSetAssignments"]]  # type: ignore[index, union-attr]
        for r in result.reservations
    }
    return admitted, preempted, messages, counts


def _times(count: int, quantity: str) -> str:
    from pykueue.api.quantity import format_quantity, parse_quantity

    return format_quantity(count * parse_quantity(quantity, "cpu"), "cpu")


def _msg(podset: str, *reasons: str) -> str:
    return f"couldn't assign flavors to pod set {podset}: {', '.join(reasons)}"


OTHER_LQS = [("eng-alpha", "other", "other-alpha"), ("eng-beta", "other", "other-beta")]


def _other(name: str, *, within: str | None = None, reclaim: str | None = None) -> FungibleClusterQueueBuilder:
    return FungibleClusterQueueBuilder(name).cohort("other").preemption(within_cluster_queue=within,
                                                                         reclaim_within_cohort=reclaim)


CASES = [
    Case("single clusterQueue full",
         [W("sales/new", "main", [("one", 11, {"cpu": "1"})]),
          W("sales/assigned", "main", [("one", 40, {"cpu": "1"})], reserved="sales", flavors=[{"cpu": "default"}])],
         messages={"sales/new": _msg("one", "insufficient unused quota for cpu in flavor default, 1 more needed")}),
    Case("admit in different cohorts",
         [W("sales/new", "main", [("one", 1, {"cpu": "1"})]), W("eng-alpha/new", "main", [("one", 51, {"cpu": "1"})])],
         admitted={"sales/new": [{"cpu": "default"}], "eng-alpha/new": [{"cpu": "on-demand"}]}),
    Case("admit in same cohort with no borrowing",
         [W("eng-alpha/new", "main", [("one", 40, {"cpu": "1"})]), W("eng-beta/new", "main", [("one", 40, {"cpu": "1"})])],
         admitted={"eng-alpha/new": [{"cpu": "on-demand"}], "eng-beta/new": [{"cpu": "on-demand"}]}),
    Case("assign multiple resources and flavors",
         [W("eng-beta/new", "main", [("one", 10, {"cpu": "6", GPU: "1"}), ("two", 40, {"cpu": "1"})])],
         admitted={"eng-beta/new": [{"cpu": "on-demand", GPU: "model-a"}, {"cpu": "spot"}]}),
    Case("cannot borrow if cohort was assigned and would result in overadmission",
         [W("eng-alpha/new", "main", [("one", 45, {"cpu": "1"})]), W("eng-beta/new", "main", [("one", 56, {"cpu": "1"})])],
         admitted={"eng-alpha/new": [{"cpu": "on-demand"}]}, messages={"eng-beta/new": NO_LONGER_FITS}),
    Case("can borrow if cohort was assigned and will not result in overadmission",
         [W("eng-alpha/new", "main", [("one", 45, {"cpu": "1"})]), W("eng-beta/new", "main", [("one", 55, {"cpu": "1"})])],
         admitted={"eng-alpha/new": [{"cpu": "on-demand"}], "eng-beta/new": [{"cpu": "on-demand"}]}),
    Case("can borrow if needs reclaim from cohort in different flavor",
         [W("eng-alpha/can-reclaim", "main", one(cpu="100")), W("eng-beta/needs-to-borrow", "main", one(cpu="1")),
          W("eng-beta/user-on-demand", "main", one(cpu="50"), reserved="eng-beta", flavors=[{"cpu": "on-demand"}]),
          W("eng-beta/user-spot", "main", one(cpu="1"), reserved="eng-beta", flavors=[{"cpu": "spot"}])],
         admitted={"eng-beta/needs-to-borrow": [{"cpu": "on-demand"}]},
         messages={"eng-alpha/can-reclaim": _msg("main", "insufficient unused quota for cpu in flavor on-demand, 50 more needed",
                                                 "insufficient unused quota for cpu in flavor spot, 1 more needed")}),
    Case("workload exceeds lending limit when borrow in cohort",
         [W("lend/a", "lend-b-queue", one(cpu="2"), reserved="lend-b", flavors=[{"cpu": "default"}]),
          W("lend/b", "lend-b-queue", one(cpu="3"))],
         messages={"lend/b": _msg("main", "insufficient unused quota for cpu in flavor default, 1 more needed")}),
    Case("preempt workloads in ClusterQueue and cohort",
         [W("eng-beta/preemptor", "main", one(cpu="20")),
          W("eng-alpha/use-all-spot", "main", one(cpu="100"), reserved="eng-alpha", flavors=[{"cpu": "spot"}]),
          W("eng-beta/low-1", "main", one(cpu="30"), -1, reserved="eng-beta", flavors=[{"cpu": "on-demand"}]),
          W("eng-beta/low-2", "main", one(cpu="10"), -2, reserved="eng-beta", flavors=[{"cpu": "on-demand"}]),
          W("eng-alpha/borrower", "main", one(cpu="60"), reserved="eng-alpha", flavors=[{"cpu": "on-demand"}])],
         preempted={("eng-alpha/borrower", "InCohortReclamation"), ("eng-beta/low-2", "InClusterQueue")},
         messages={"eng-beta/preemptor": _msg("main", "insufficient unused quota for cpu in flavor on-demand, 20 more needed",
                                              "insufficient unused quota for cpu in flavor spot, 20 more needed")
                   + ". Pending the preemption of 2 workload(s)"}),
    Case("cannot borrow resource not listed in clusterQueue",
         [W("eng-alpha/new", "main", one(**{GPU: "1"}))],
         messages={"eng-alpha/new": _msg("main", "resource example.com/gpu unavailable in ClusterQueue")}),
    Case("not enough resources to borrow, fallback to next flavor; WhenCanPreempt: TryNextFlavor",
         [W("eng-alpha/new", "main", [("one", 60, {"cpu": "1"})]),
          W("eng-beta/existing", "main", [("one", 45, {"cpu": "1"})], reserved="eng-beta", flavors=[{"cpu": "on-demand"}])],
         admitted={"eng-alpha/new": [{"cpu": "spot"}]}),
    Case("workload should not fit in nonexistent clusterQueue", [W("sales/foo", "cq-nonexistent-queue", one(cpu="1"))]),
    Case("workload should not fit in clusterQueue with nonexistent flavor",
         [W("sales/foo", "flavor-nonexistent-queue", one(cpu="1"))]),
    Case("not enough resources",
         [W("sales/new", "main", [("one", 1, {"cpu": "100"})])],
         messages={"sales/new": _msg("one", "insufficient quota for cpu in flavor default, previously considered podsets "
                                            "requests (0) + current podset request (100) > maximum capacity (50)")}),
    Case("partial admission disabled, multiple variable pod sets",
         [W("sales/new", "main", [("one", 20, {"cpu": "1"}), ("two", 30, {"cpu": "1"}), ("three", 15, {"cpu": "1"})])],
         messages={"sales/new": _msg("three", "insufficient quota for cpu in flavor default, previously considered "
                                              "podsets requests (50) + current podset request (15) > maximum capacity (50)")}),
    Case("hierarchical cohort respects lending limit when borrowing",
         [W("eng-alpha/wl-existing", "lq-borrower", one(cpu="5"), reserved="cq-borrower", flavors=[{"cpu": "on-demand"}]),
          W("eng-alpha/wl-pending", "lq-borrower", one(cpu="4"))],
         messages={"eng-alpha/wl-pending": _msg("main", "insufficient unused quota for cpu in flavor on-demand, 1 more needed")},
         queues=[FungibleClusterQueueBuilder("cq-lender").cohort("child").flavor("on-demand", lending_limit={"cpu": "3"}, cpu="10"),
                 FungibleClusterQueueBuilder("cq-borrower").cohort("child").flavor("on-demand", borrowing_limit={"cpu": "10"}, cpu="5")],
         local_queues=[("eng-alpha", "lq-lender", "cq-lender"), ("eng-alpha", "lq-borrower", "cq-borrower")],
         cohorts=[CohortBuilder("root"), CohortBuilder("child").parent("root")]),
    Case("hierarchical cohort allows borrowing up to lending limit",
         [W("eng-alpha/wl-existing", "lq-borrower", one(cpu="5"), reserved="cq-borrower", flavors=[{"cpu": "on-demand"}]),
          W("eng-alpha/wl-borrowing", "lq-borrower", one(cpu="5"))],
         admitted={"eng-alpha/wl-borrowing": [{"cpu": "on-demand"}]},
         queues=[FungibleClusterQueueBuilder("cq-lender").cohort("child").flavor("on-demand", lending_limit={"cpu": "5"}, cpu="10"),
                 FungibleClusterQueueBuilder("cq-borrower").cohort("child").flavor("on-demand", borrowing_limit={"cpu": "10"}, cpu="5")],
         local_queues=[("eng-alpha", "lq-lender", "cq-lender"), ("eng-alpha", "lq-borrower", "cq-borrower")],
         cohorts=[CohortBuilder("root"), CohortBuilder("child").parent("root")]),
    Case("multiple CQs need preemption",
         [W("eng-beta/preemptor", "other", one(cpu="1"), -1), W("eng-alpha/pending", "other", one(cpu="1"), 1),
          W("eng-alpha/use-all", "other", one(cpu="100"), reserved="other-alpha", flavors=[{"cpu": "on-demand"}])],
         preempted={("eng-alpha/use-all", "InCohortReclamation")},
         messages={"eng-alpha/pending": _msg("main", "insufficient unused quota for cpu in flavor on-demand, 1 more needed"),
                   "eng-beta/preemptor": _msg("main", "insufficient unused quota for cpu in flavor on-demand, 1 more needed")
                   + ". Pending the preemption of 1 workload(s)"},
         queues=[_other("other-alpha").flavor("on-demand", borrowing_limit={"cpu": "50"}, cpu="50"),
                 _other("other-beta", within="LowerPriority", reclaim="Any")
                 .flavor("on-demand", borrowing_limit={"cpu": "10"}, cpu="50")],
         local_queues=OTHER_LQS),
    Case("multiple preemptions without borrowing",
         [W("eng-alpha/a1", "other", one(cpu="2"), reserved="other-alpha", flavors=[{"cpu": "default"}]),
          W("eng-beta/b1", "other", one(cpu="2"), reserved="other-beta", flavors=[{"cpu": "default"}]),
          W("eng-alpha/preemptor", "other", one(cpu="2"), 100), W("eng-beta/preemptor", "other", one(cpu="2"), 100)],
         preempted={("eng-alpha/a1", "InClusterQueue"), ("eng-beta/b1", "InClusterQueue")},
         messages={key: _msg("main", "insufficient unused quota for cpu in flavor default, 2 more needed")
                   + ". Pending the preemption of 1 workload(s)" for key in ("eng-alpha/preemptor", "eng-beta/preemptor")},
         queues=[_other("other-alpha", within="LowerPriority").flavor("default", cpu="2"),
                 _other("other-beta", within="LowerPriority").flavor("default", cpu="2")],
         local_queues=OTHER_LQS),
    Case("multiple preemptions preemption possible after earlier workload fits",
         [W("eng-beta/b1", "other", one(cpu="2"), reserved="other-beta", flavors=[{"cpu": "default"}]),
          W("eng-alpha/fit", "other", one(cpu="1"), 100), W("eng-beta/preemptor", "other", one(cpu="2"), 99)],
         admitted={"eng-alpha/fit": [{"cpu": "default"}]},
         preempted={("eng-beta/b1", "InClusterQueue")},
         queues=[_other("other-alpha", within="LowerPriority").flavor("default", cpu="1"),
                 _other("other-beta", within="LowerPriority").flavor("default", cpu="2")],
         local_queues=OTHER_LQS),
    Case("prefer reclamation over cq priority based preemption",
         [W("eng-alpha/a1", "other", one(gpu="5"), 50, reserved="other-alpha", flavors=[{"gpu": "on-demand"}]),
          W("eng-beta/b1", "other", one(gpu="5"), 50, reserved="other-beta", flavors=[{"gpu": "spot"}]),
          W("eng-alpha/preemptor", "other", one(gpu="6"), 100)],
         preempted={("eng-beta/b1", "InCohortReclamation")},
         messages={"eng-alpha/preemptor": _msg("main", "insufficient unused quota for gpu in flavor on-demand, 1 more needed",
                                               "insufficient unused quota for gpu in flavor spot, 1 more needed")
                   + ". Pending the preemption of 1 workload(s)"},
         queues=[_other("other-alpha", within="LowerPriority", reclaim="LowerPriority")
                 .flavor("on-demand", gpu="10").flavor("spot", gpu="10"),
                 _other("other-beta", within="LowerPriority", reclaim="LowerPriority")
                 .flavor("on-demand", gpu="0").flavor("spot", gpu="0")],
         local_queues=OTHER_LQS),
    Case("prefer first preemption flavor when second flavor requires both reclaim and cq priority preemption",
         [W("eng-alpha/a1", "other", one(gpu="5"), 50, reserved="other-alpha", flavors=[{"gpu": "on-demand"}]),
          W("eng-alpha/a2", "other", one(gpu="5"), 50, reserved="other-alpha", flavors=[{"gpu": "spot"}]),
          W("eng-beta/b1", "other", one(gpu="5"), 50, reserved="other-beta", flavors=[{"gpu": "spot"}]),
          W("eng-alpha/preemptor", "other", one(gpu="6"), 100)],
         preempted={("eng-alpha/a1", "InClusterQueue")},
         messages={"eng-alpha/preemptor": _msg("main", "insufficient unused quota for gpu in flavor on-demand, 1 more needed",
                                               "insufficient unused quota for gpu in flavor spot, 6 more needed")
                   + ". Pending the preemption of 1 workload(s)"},
         queues=[_other("other-alpha", within="LowerPriority", reclaim="LowerPriority")
                 .flavor("on-demand", gpu="10").flavor("spot", gpu="10"),
                 _other("other-beta").flavor("on-demand", gpu="0").flavor("spot", gpu="0")],
         local_queues=OTHER_LQS),
    Case("prefer first preemption flavor when second flavor also requires cq preemption",
         [W("eng-alpha/a1", "other", one(gpu="6"), 50, reserved="other-alpha", flavors=[{"gpu": "on-demand"}]),
          W("eng-alpha/a2", "other", one(gpu="5"), 50, reserved="other-alpha", flavors=[{"gpu": "spot"}]),
          W("eng-beta/b1", "other", one(gpu="5"), 9001, reserved="other-beta", flavors=[{"gpu": "spot"}]),
          W("eng-alpha/preemptor", "other", one(gpu="5"), 100)],
         preempted={("eng-alpha/a1", "InClusterQueue")},
         messages={"eng-alpha/preemptor": _msg("main", "insufficient unused quota for gpu in flavor on-demand, 1 more needed",
                                               "insufficient unused quota for gpu in flavor spot, 5 more needed")
                   + ". Pending the preemption of 1 workload(s)"},
         queues=[_other("other-alpha", within="LowerPriority", reclaim="LowerPriority")
                 .flavor("on-demand", gpu="10").flavor("spot", gpu="10"),
                 _other("other-beta").flavor("on-demand", gpu="0").flavor("spot", gpu="0")],
         local_queues=OTHER_LQS),
    Case("minimal preemptions when target queue is exhausted",
         [W("eng-alpha/a1", "other", one(cpu="1"), -2, reserved="other-alpha", flavors=[{"cpu": "on-demand"}]),
          W("eng-alpha/a2", "other", one(cpu="1"), -2, reserved="other-alpha", flavors=[{"cpu": "on-demand"}]),
          W("eng-alpha/a3", "other", one(cpu="1"), -1, reserved="other-alpha", flavors=[{"cpu": "on-demand"}]),
          W("eng-beta/b1", "other", one(cpu="1"), reserved="other-beta", flavors=[{"cpu": "on-demand"}]),
          W("eng-beta/b2", "other", one(cpu="1"), reserved="other-beta", flavors=[{"cpu": "on-demand"}]),
          W("eng-beta/b3", "other", one(cpu="1"), reserved="other-beta", flavors=[{"cpu": "on-demand"}]),
          W("eng-alpha/incoming", "other", one(cpu="2"))],
         preempted={("eng-alpha/a1", "InClusterQueue"), ("eng-alpha/a2", "InClusterQueue")},
         messages={"eng-alpha/incoming": _msg("main", "insufficient unused quota for cpu in flavor on-demand, 2 more needed")
                   + ". Pending the preemption of 2 workload(s)"},
         queues=[_other("other-alpha", within="LowerPriority", reclaim="Any").flavor("on-demand", cpu="2"),
                 _other("other-beta").flavor("on-demand", cpu="2"), _other("other-gamma").flavor("on-demand", cpu="2")],
         local_queues=[*OTHER_LQS, ("eng-gamma", "other", "other-gamma")]),
    Case("A workload is only eligible to do preemptions if it fits fully within nominal quota",
         [W("eng-alpha/a1", "other", one(cpu="1"), -1, reserved="other-alpha", flavors=[{"cpu": "on-demand"}]),
          W("eng-beta/b1", "other", one(cpu="1"), -1, reserved="other-beta", flavors=[{"cpu": "on-demand"}]),
          W("eng-alpha/incoming", "other", one(cpu="3"), 1)],
         messages={"eng-alpha/incoming": _msg("main", "insufficient unused quota for cpu in flavor on-demand, 1 more needed")},
         queues=[_other("other-alpha", within="LowerPriority", reclaim="Any").flavor("on-demand", cpu="2"),
                 _other("other-beta").flavor("on-demand", cpu="2")],
         local_queues=OTHER_LQS),
    Case("workload requiring reclaimation prioritized over wl in another full cq",
         [W("eng-alpha/Admitted-Workload-1", "lq", one(gpu="5"), reserved="CQ1", flavors=[{"gpu": "on-demand"}]),
          W("eng-alpha/WL1", "lq", one(gpu="10"), created=0), W("eng-beta/WL2", "lq", one(gpu="10"), created=1),
          W("eng-gamma/Admitted-Workload-2", "lq", one(gpu="5"), reserved="CQ3", flavors=[{"gpu": "on-demand"}]),
          W("eng-gamma/Admitted-Workload-3", "lq", one(gpu="5"), 1, reserved="CQ3", flavors=[{"gpu": "on-demand"}])],
         preempted={("eng-gamma/Admitted-Workload-2", "InCohortReclamation")},
         messages={"eng-alpha/WL1": _msg("main", "insufficient unused quota for gpu in flavor on-demand, 5 more needed"),
                   "eng-beta/WL2": _msg("main", "insufficient unused quota for gpu in flavor on-demand, 5 more needed")
                   + ". Pending the preemption of 1 workload(s)"},
         queues=[_other("CQ1").flavor("on-demand", gpu="10"), _other("CQ2", reclaim="Any").flavor("on-demand", gpu="10"),
                 _other("CQ3").flavor("on-demand", gpu="0")],
         local_queues=[("eng-alpha", "lq", "CQ1"), ("eng-beta", "lq", "CQ2"), ("eng-gamma", "lq", "CQ3")]),
    *[
        Case(f"capacity {blocked} when lending clusterqueue {how} (ReclaimWithinCohort={policy})",
             [W("eng-alpha/a1-admitted", "lq", one(gpu="1"), reserved="ClusterQueueA", flavors=[{"gpu": "on-demand"}]),
              W("eng-alpha/a2-pending", "lq", one(gpu="2")), W("eng-beta/b1-pending", "lq", one(gpu="1"), created=1)],
             admitted=admitted,
             messages={"eng-alpha/a2-pending": _msg("main", "insufficient unused quota for gpu in flavor on-demand, 1 more needed"),
                       **extra_messages},
             queues=[FungibleClusterQueueBuilder("ClusterQueueA").cohort("root").flavor("on-demand", gpu="2")
                     .preemption(reclaim_within_cohort=policy),
                     FungibleClusterQueueBuilder("ClusterQueueB").cohort("root").flavor("on-demand", gpu="0")],
             local_queues=[("eng-alpha", "lq", "ClusterQueueA"), ("eng-beta", "lq", "ClusterQueueB")])
        for blocked, how, policy, admitted, extra_messages in [
            ("not blocked", "can reclaim", "Any", {"eng-beta/b1-pending": [{"gpu": "on-demand"}]}, {}),
            ("blocked", "not guaranteed to reclaim", "LowerPriority", {}, {"eng-beta/b1-pending": NO_LONGER_FITS}),
            ("blocked", "not guaranteed to reclaim", "Never", {}, {"eng-beta/b1-pending": NO_LONGER_FITS}),
        ]
    ],
    Case("in a hierarchical cohort, workload borrowing less is scheduled first",
         [W("eng-alpha/guaranteed", "lq-guaranteed", [("one", 1, {"cpu": "4"})]),
          W("eng-alpha/best-effort", "lq-best-effort", [("one", 1, {"cpu": "4"})], 3)],
         admitted={"eng-alpha/guaranteed": [{"cpu": "default"}]}, messages={"eng-alpha/best-effort": NO_LONGER_FITS},
         queues=[FungibleClusterQueueBuilder("guaranteed").cohort("guaranteed").flavor("default", cpu="0"),
                 FungibleClusterQueueBuilder("best-effort").cohort("root").flavor("default", cpu="0")],
         local_queues=[("eng-alpha", "lq-guaranteed", "guaranteed"), ("eng-alpha", "lq-best-effort", "best-effort")],
         cohorts=[CohortBuilder("root"), CohortBuilder("guaranteed").parent("root").flavor("default", cpu="4")]),
    Case("don't assign flavor if there are no candidates for preemption",
         [W("eng-alpha/admitted", "lq2", one(cpu="1"), reserved="cq2", flavors=[{"cpu": "on-demand"}]),
          W("eng-alpha/new", "lq1", one(cpu="1"), 100)],
         admitted={"eng-alpha/new": [{"cpu": "spot"}]},
         queues=[FungibleClusterQueueBuilder("cq1").cohort("cohort")
                 .preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any",
                             borrow_within_cohort="LowerPriority")
                 .fungibility("MayStopSearch", "MayStopSearch")
                 .flavor("on-demand", borrowing_limit={"cpu": "1"}, cpu="0").flavor("spot", borrowing_limit={"cpu": "1"}, cpu="0"),
                 FungibleClusterQueueBuilder("cq2").cohort("cohort").flavor("on-demand", cpu="1").flavor("spot", cpu="1")],
         local_queues=[("eng-alpha", "lq1", "cq1"), ("eng-alpha", "lq2", "cq2")]),
    Case("PreemptionOverBorrowing preference: select fitting second flavor over first flavor with no preemption candidates",
         [W("default/admitted-nopc", "nopc-queue", one(cpu="5"), reserved="nopc-cq", flavors=[{"cpu": "on-demand"}]),
          W("default/pending-nopc", "nopc-queue", one(cpu="5"))],
         admitted={"default/pending-nopc": [{"cpu": "spot"}]},
         queues=[FungibleClusterQueueBuilder("nopc-cq").cohort("nopc-mid").preemption(within_cluster_queue="LowerPriority")
                 .fungibility("TryNextFlavor", "TryNextFlavor", "PreemptionOverBorrowing")
                 .flavor("on-demand", borrowing_limit={"cpu": "0"}, cpu="5").flavor("spot", cpu="0"),
                 FungibleClusterQueueBuilder("nopc-sibling").cohort("nopc-mid").flavor("on-demand", cpu="5").flavor("spot", cpu="0")],
         local_queues=[("default", "nopc-queue", "nopc-cq")],
         cohorts=[CohortBuilder("nopc-root").flavor("on-demand", cpu="0").flavor("spot", cpu="5"),
                  CohortBuilder("nopc-mid").parent("nopc-root")]),
    *[
        Case(source, [*existing, W(f"sales/{name}", "custom-q", one(cpu=cpu))],
             messages={f"sales/{name}": _msg("main", *reasons)},
             queues=[FungibleClusterQueueBuilder("custom-cq").strategy("StrictFIFO")
                     .flavor(first, borrowing_limit={"cpu": first_quota}, cpu=first_quota)
                     .flavor(second, borrowing_limit={"cpu": second_quota}, cpu=second_quota)],
             local_queues=[("sales", "custom-q", "custom-cq")])
        for source, name, cpu, first, first_quota, second, second_quota, existing, reasons in [
            ("flavors with mixed misconfiguration and insufficient quota", "new-job", "10", "spot-tainted", "20",
             "on-demand", "15",
             [W("sales/existing-on-demand-job", "custom-q", one(cpu="10"), reserved="custom-cq",
                flavors=[{"cpu": "on-demand"}])],
             ["insufficient unused quota for cpu in flavor on-demand, 5 more needed",
              "untolerated taint {key val NoSchedule <nil>} in flavor spot-tainted"]),
            ("flavors with mixed taint mismatch and exceeding limits", "new-job2", "10", "spot-tainted", "20",
             "on-demand", "5", [],
             ["insufficient quota for cpu in flavor on-demand, previously considered podsets requests (0) + current "
              "podset request (10) > maximum capacity (5)",
              "untolerated taint {key val NoSchedule <nil>} in flavor spot-tainted"]),
            ("flavors are structurally incompatible", "new-job3", "1", "spot-tainted", "20", "spot-tainted-2", "5", [],
             ["untolerated taint {key val NoSchedule <nil>} in flavor spot-tainted",
              "untolerated taint {key val2 NoSchedule <nil>} in flavor spot-tainted-2"]),
        ]
    ],
    Case("failed to match clusterQueue selector", [W("sales/new", "blocked", [("one", 1, {"cpu": "1"})])]),
    Case("skip workload with missing or deleted ClusterQueue (NoFit)",
         [W("sales/missing-cq-workload", "non-existent-queue", [("set", 1, {"cpu": "1"})])]),
    Case("admit to second flavor when first needs preemption; WhenCanPreempt: TryNextFlavor",
         [W("eng-alpha/blocker", "preempt-attempts-lq", one(cpu="1"), 50, reserved="preempt-attempts-cq",
            flavors=[{"cpu": "on-demand"}]),
          W("eng-alpha/test-wl", "preempt-attempts-lq", one(cpu="1"), 100)],
         admitted={"eng-alpha/test-wl": [{"cpu": "spot"}]},
         queues=[FungibleClusterQueueBuilder("preempt-attempts-cq").preemption(within_cluster_queue="LowerPriority")
                 .fungibility(None, "TryNextFlavor").flavor("on-demand", cpu="1").flavor("spot", cpu="1")],
         local_queues=[("eng-alpha", "preempt-attempts-lq", "preempt-attempts-cq")]),
    Case("admit workload with zero-quantity request for resource not in ClusterQueue",
         [W("sales/zero-resource-wl", "main", one(cpu="1", **{GPU: "0"}))],
         admitted={"sales/zero-resource-wl": [{"cpu": "default"}]}),
    Case("preempt when workload requests zero of a resource not defined in ClusterQueue",
         [W("sales/preemptor", "preempt-zero-gpu-lq", one(cpu="2", **{GPU: "0"})),
          W("sales/low-priority", "preempt-zero-gpu-lq", one(cpu="4"), -1, reserved="preempt-zero-gpu-cq",
            flavors=[{"cpu": "default"}])],
         preempted={("sales/low-priority", "InClusterQueue")},
         messages={"sales/preemptor": _msg("main", "insufficient unused quota for cpu in flavor default, 2 more needed")
                   + ". Pending the preemption of 1 workload(s)"},
         queues=[FungibleClusterQueueBuilder("preempt-zero-gpu-cq").preemption(within_cluster_queue="LowerPriority")
                 .flavor("default", cpu="4")],
         local_queues=[("sales", "preempt-zero-gpu-lq", "preempt-zero-gpu-cq")]),
    *[
        Case(f"{preference} preference: {what}",
             [W(f"default/low-{tag}", f"{tag}-queue", one(cpu="5"), -1, reserved=f"{tag}-cq", flavors=[{"cpu": "on-demand"}]),
              W(f"default/high-{tag}", f"{tag}-queue", one(cpu="5"))],
             admitted=admitted, preempted=preempted,
             queues=[FungibleClusterQueueBuilder(f"{tag}-cq").cohort(f"{tag}-cohort")
                     .preemption(within_cluster_queue="LowerPriority")
                     .fungibility("TryNextFlavor", "TryNextFlavor", preference)
                     .flavor("on-demand", borrowing_limit={"cpu": "0"}, cpu="5")
                     .flavor("spot", borrowing_limit={"cpu": "5"}, cpu="0"),
                     FungibleClusterQueueBuilder(f"{tag}-lender").cohort(f"{tag}-cohort")
                     .flavor("on-demand", cpu="0").flavor("spot", cpu="5")],
             local_queues=[("default", f"{tag}-queue", f"{tag}-cq")])
        for preference, what, tag, admitted, preempted in [
            ("PreemptionOverBorrowing", "preempt in first flavor instead of borrowing in second", "pob", {},
             {("default/low-pob", "InClusterQueue")}),
            ("BorrowingOverPreemption", "borrow in second flavor instead of preempting in first", "bop",
             {"default/high-bop": [{"cpu": "spot"}]}, set()),
        ]
    ],
    Case("preemption while borrowing, workload waiting for preemption should not block a borrowing workload in "
         "another CQ",
         [W("eng-alpha/a", "lq_a", one(cpu="3"), created=1), W("eng-beta/b", "lq_b", one(cpu="1"), created=2),
          W("eng-alpha/admitted_a", "lq_a", one(cpu="2"), reserved="cq_a", flavors=[{"cpu": "default"}])],
         admitted={"eng-beta/b": [{"cpu": "default"}]},
         messages={"eng-alpha/a": _msg("main", "insufficient unused quota for cpu in flavor default, 2 more needed")},
         queues=[FungibleClusterQueueBuilder("cq_shared").cohort("preemption-while-borrowing")
                 .flavor("default", borrowing_limit={"cpu": "0"}, cpu="4"),
                 FungibleClusterQueueBuilder("cq_a").cohort("preemption-while-borrowing")
                 .preemption(reclaim_within_cohort="LowerPriority", borrow_within_cohort="LowerPriority")
                 .flavor("default", borrowing_limit={"cpu": "3"}, cpu="0"),
                 FungibleClusterQueueBuilder("cq_b").cohort("preemption-while-borrowing")
                 .preemption(reclaim_within_cohort="LowerPriority", borrow_within_cohort="LowerPriority")
                 .flavor("default", cpu="0")],
         local_queues=[("eng-alpha", "lq_a", "cq_a"), ("eng-beta", "lq_b", "cq_b")]),
    Case("use second flavor when the first has no preemption candidates; WhenCanPreempt: MayStopSearch",
         [W("eng-alpha/admitted", "other", one(cpu="50"), reserved="other-alpha", flavors=[{"cpu": "on-demand"}]),
          W("eng-alpha/new", "other", one(cpu="20"))],
         admitted={"eng-alpha/new": [{"cpu": "spot"}]},
         queues=[FungibleClusterQueueBuilder("other-alpha").preemption(within_cluster_queue="LowerPriority")
                 .fungibility(None, "MayStopSearch")
                 .flavor("on-demand", borrowing_limit={"cpu": "50"}, cpu="50")
                 .flavor("spot", borrowing_limit={"cpu": "0"}, cpu="100")],
         local_queues=[("eng-alpha", "other", "other-alpha")]),
    Case("partial admission single variable pod set",
         [W("sales/new", "main", [("one", 50, {"cpu": "2"})], min_counts={"one": 20})],
         admitted={"sales/new": [{"cpu": "default"}]}, counts={"sales/new": [25]}),
    Case("partial admission single variable pod set, preempt first",
         [W("eng-beta/new", "main", [("one", 20, {GPU: "1"})], 4, min_counts={"one": 10}),
          W("eng-beta/old", "main", [("one", 10, {GPU: "1"})], -4, reserved="eng-beta", flavors=[{GPU: "model-a"}])],
         preempted={("eng-beta/old", "InClusterQueue")},
         messages={"eng-beta/new": _msg("one", "insufficient unused quota for example.com/gpu in flavor model-a, "
                                               "10 more needed") + ". Pending the preemption of 1 workload(s)"}),
    Case("partial admission single variable pod set, preempt with partial admission",
         [W("eng-beta/new", "main", [("one", 30, {GPU: "1"})], 4, min_counts={"one": 10}),
          W("eng-beta/old", "main", [("one", 10, {GPU: "1"})], -4, reserved="eng-beta", flavors=[{GPU: "model-a"}])],
         preempted={("eng-beta/old", "InClusterQueue")},
         messages={"eng-beta/new": _msg("one", "insufficient unused quota for example.com/gpu in flavor model-a, "
                                               "10 more needed") + ". Pending the preemption of 1 workload(s)"}),
    Case("partial admission multiple variable pod sets",
         [W("sales/new", "main", [("one", 20, {"cpu": "1"}), ("two", 30, {"cpu": "1"}), ("three", 15, {"cpu": "1"})],
            min_counts={"two": 10, "three": 5})],
         admitted={"sales/new": [{"cpu": "default"}] * 3}, counts={"sales/new": [20, 20, 10]}),
]


@pytest.mark.parametrize("case", CASES, ids=[case.source for case in CASES])
def test_kueue_schedule_case(case: Case) -> None:
    admitted, preempted, messages, counts = _run(case)
    assert admitted == case.admitted
    for key, want in case.counts.items():
        assert counts[key] == want, key
    assert preempted == case.preempted
    for key, message in case.messages.items():
        assert messages.get(key) == message, key
