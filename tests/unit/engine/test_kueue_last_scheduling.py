"""Kueue's two-cycle scheduler cases: what the first cycle decides, and what the second decides
after some workloads are gone.

Each case names its source case of ``TestLastSchedulingContext`` in
kueue/pkg/scheduler/scheduler_test.go (v0.19.2): ClusterQueues of one Cohort that borrow, try the
next flavor or stop the search, and preempt, scheduled twice. Built on the ``TestSchedule``
fixture of ``test_kueue_scheduler.py`` (one head per ClusterQueue per cycle = one Kueue cycle).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests.builders import FungibleClusterQueueBuilder
from tests.unit.engine.test_kueue_scheduler import Case, W, _msg, build_world, one, outcome

LOCAL_QUEUES = [("default", "main", "eng-alpha"), ("default", "main-alpha", "eng-cohort-alpha"),
                ("default", "main-beta", "eng-cohort-beta"), ("default", "main-theta", "eng-cohort-theta")]


def _cohort_queue(name: str, fungibility: str) -> FungibleClusterQueueBuilder:
    return (
        FungibleClusterQueueBuilder(name).cohort("cohort").strategy("StrictFIFO")
        .preemption(within_cluster_queue="Never", reclaim_within_cohort="LowerPriority")
        .fungibility(fungibility, fungibility)
        .flavor("on-demand", borrowing_limit={"cpu": "50"}, cpu="50")
        .flavor("spot", borrowing_limit={"cpu": "0"}, cpu="100")
    )


COHORT = [_cohort_queue("eng-cohort-alpha", "MayStopSearch"), _cohort_queue("eng-cohort-beta", "MayStopSearch"),
          _cohort_queue("eng-cohort-theta", "TryNextFlavor")]


def _shared_cohort_queue(name: str, on_demand: str) -> FungibleClusterQueueBuilder:
    return (
        FungibleClusterQueueBuilder(name).cohort("cohort")
        .preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")
        .fungibility("TryNextFlavor", "TryNextFlavor")
        .flavor("on-demand", borrowing_limit={"cpu": on_demand}, cpu="0" if name.endswith("alpha") else "30")
        .flavor("spot", borrowing_limit={"cpu": "30"}, cpu="30")
    )


@dataclass
class TwoCycles:
    first: Case
    deleted: list[str] = field(default_factory=list)
    admitted_second: dict[str, list[dict[str, str]]] = field(default_factory=dict)


def _reserved(key: str, cq: str, flavor: str, cpu: str, reserved_at: int = 0, priority: int = 0) -> W:
    return W(key, "main-alpha", one(cpu=cpu), reserved=cq, flavors=[{"cpu": flavor}], priority=priority,
             reserved_at=reserved_at)


CASES = [
    TwoCycles(
        Case("scheduling on the first flavor is unblocked after some workloads were deleted",
             [_reserved("default/low-1", "eng-alpha", "on-demand", "50"), W("default/preemptor", "main", one(cpu="20"), created=1)],
             messages={"default/preemptor": _msg(
                 "main",
                 "insufficient quota for cpu in flavor spot, previously considered podsets requests (0) + current podset "
                 "request (20) > maximum capacity (10)",
                 "insufficient unused quota for cpu in flavor on-demand, 20 more needed")},
             queues=[FungibleClusterQueueBuilder("eng-alpha").preemption(within_cluster_queue="LowerPriority")
                     .fungibility(None, "MayStopSearch")
                     .flavor("on-demand", borrowing_limit={"cpu": "50"}, cpu="50")
                     .flavor("spot", borrowing_limit={"cpu": "0"}, cpu="10")],
             local_queues=LOCAL_QUEUES),
        deleted=["default/low-1"],
        admitted_second={"default/preemptor": [{"cpu": "on-demand"}]},
    ),
    TwoCycles(
        Case("borrow before next flavor",
             [_reserved("default/placeholder", "eng-cohort-alpha", "on-demand", "50"),
              W("default/borrower", "main-alpha", one(cpu="20"), created=1),
              W("default/workload1", "main-beta", one(cpu="20"), created=2)],
             admitted={"default/borrower": [{"cpu": "on-demand"}], "default/workload1": [{"cpu": "on-demand"}]},
             queues=COHORT, local_queues=LOCAL_QUEUES),
    ),
    TwoCycles(
        Case("borrow after all flavors",
             [_reserved("default/placeholder", "eng-cohort-alpha", "on-demand", "50"),
              _reserved("default/placeholder1", "eng-cohort-theta", "on-demand", "50"),
              W("default/workload", "main-theta", one(cpu="20"), created=1)],
             admitted={"default/workload": [{"cpu": "spot"}]},
             queues=COHORT, local_queues=LOCAL_QUEUES),
    ),
    TwoCycles(
        Case("when the next flavor is full, but can borrow on first",
             [_reserved("default/placeholder", "eng-cohort-alpha", "on-demand", "40"),
              _reserved("default/placeholder1", "eng-cohort-theta", "on-demand", "40"),
              _reserved("default/placeholder2", "eng-cohort-theta", "spot", "100"),
              W("default/workload", "main-theta", one(cpu="20"), created=1)],
             admitted={"default/workload": [{"cpu": "on-demand"}]},
             queues=COHORT, local_queues=LOCAL_QUEUES),
    ),
    TwoCycles(
        Case("when the next flavor is full, but can preempt on first",
             [_reserved("default/placeholder-alpha", "eng-cohort-alpha", "on-demand", "150", priority=-1),
              _reserved("default/placeholder-theta-spot", "eng-cohort-theta", "spot", "100"),
              W("default/new", "main-theta", one(cpu="20"), created=1)],
             preempted={("default/placeholder-alpha", "InCohortReclamation")},
             messages={"default/new": _msg("main", "insufficient unused quota for cpu in flavor on-demand, 20 more needed",
                                           "insufficient unused quota for cpu in flavor spot, 20 more needed")
                       + ". Pending the preemption of 1 workload(s)"},
             queues=COHORT, local_queues=LOCAL_QUEUES),
        deleted=["default/placeholder-alpha"],
        admitted_second={"default/new": [{"cpu": "on-demand"}]},
    ),
    TwoCycles(
        Case("TryNextFlavor, but second flavor is full and can preempt on first",
             [_reserved("default/alpha1", "eng-cohort-alpha", "on-demand", "22", reserved_at=-1),
              _reserved("default/alpha2", "eng-cohort-alpha", "on-demand", "22"),
              _reserved("default/alpha3", "eng-cohort-alpha", "spot", "22"),
              _reserved("default/beta1", "eng-cohort-beta", "spot", "22"),
              W("default/new", "main-beta", one(cpu="22"), created=1)],
             preempted={("default/alpha2", "InCohortReclamation")},
             messages={"default/new": _msg("main", "insufficient unused quota for cpu in flavor on-demand, 6 more needed",
                                           "insufficient unused quota for cpu in flavor spot, 6 more needed")
                       + ". Pending the preemption of 1 workload(s)"},
             queues=[_shared_cohort_queue("eng-cohort-alpha", "60"), _shared_cohort_queue("eng-cohort-beta", "30"),
                     FungibleClusterQueueBuilder("eng-cohort-shared").cohort("cohort").flavor("on-demand", cpu="30")],
             local_queues=LOCAL_QUEUES),
        deleted=["default/alpha2"],
        admitted_second={"default/new": [{"cpu": "on-demand"}]},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.first.source for c in CASES])
def test_kueue_last_scheduling_context_case(case: TwoCycles) -> None:
    world = build_world(case.first)
    admitted, preempted, messages, _counts = outcome(world.cycle())
    assert admitted == case.first.admitted
    assert preempted == case.first.preempted
    assert {k: v for k, v in messages.items() if k in case.first.messages} == case.first.messages
    for key in admitted:
        world.engine.confirm(key)
    for key in case.deleted:
        world.finish(key)
    second, _, _, _ = outcome(world.cycle())
    assert second == case.admitted_second
