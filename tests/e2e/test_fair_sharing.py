"""Fair sharing on a real control plane: the controller restarted with ``fairSharing`` in its
Configuration (docs/design/fair-sharing.md).

Two ClusterQueues with no quota of their own, weights 1 and 2, share a sibling Cohort's six
borrowed cpus. The first takes all six; the newcomer reclaims by preemption until the borrowed
capacity is split 1:2 and then stops (each further preemption would make its own share the larger
one), under each accepted list of preemption strategies. Both queues' and the Cohort's
``status.fairSharing.weightedShare`` show the shares: 2 and 4 cpus of 6 lendable are 333.3 and
666.7 per thousand, 334 after the weights of 1 and 2; the Cohort borrows all 6 of the 6 its parent
can lend, 1000.

The workloads are batch Jobs of one 1-cpu pod that runs until it is stopped: a preempted Job is
suspended and gives its quota back once its pod is gone, and the survivors keep running.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    ClusterQueueBuilder,
    CohortBuilder,
    JobBuilder,
    LocalQueueBuilder,
    ResourceFlavorBuilder,
)
from tests.e2e.fixtures.controller import ControllerHandle, configuration
from tests.e2e.helpers.jobs import Jobs
from tests.e2e.helpers.kueue import KueueApi, holds_for, holds_quota, unique
from tests.e2e.helpers.wait import wait_for

pytestmark = pytest.mark.needs_local_cluster


def _job_of(wl: dict[str, Any]) -> str:
    owners = wl["metadata"].get("ownerReferences") or []
    return str(owners[0].get("name", "")) if owners else ""


def _holding(kueue: KueueApi, namespace: str, prefix: str) -> int:
    """Workloads of the Jobs named ``<prefix>N`` that hold quota."""
    return sum(1 for wl in kueue.workloads(namespace) if _job_of(wl).startswith(prefix) and holds_quota(wl))


def _submit(jobs: Jobs, namespace: str, name: str, queue: str) -> None:
    jobs.create(JobBuilder(name, namespace).queue(queue).parallelism(1).completions(1).requests(cpu="1").run_seconds(-1))


def _share(kueue: KueueApi, kind: str, name: str) -> Any:
    return (((kueue.get(kind, name) or {}).get("status") or {}).get("fairSharing") or {}).get("weightedShare")


def _tree(kueue: KueueApi, namespace: str) -> tuple[str, str, str]:
    """root Cohort (lender queue with 6 cpu) and its child Cohort holding queues a (weight 1) and
    b (weight 2) with no quota, both allowed to reclaim within the cohort."""
    flavor, root, team = unique("default"), unique("root"), unique("team")
    kueue.create(ResourceFlavorBuilder(flavor).obj())
    kueue.create(CohortBuilder(root).obj())
    kueue.create(CohortBuilder(team).parent(root).obj())
    lender = ClusterQueueBuilder(unique("lender")).cohort(root).flavor(flavor, cpu="6")
    kueue.create(lender.obj())
    names = []
    for lq, weight in (("lq-a", "1"), ("lq-b", "2")):
        name = unique(f"cq-{lq[-1]}")
        cq = ClusterQueueBuilder(name).cohort(team).flavor(flavor, cpu="0").weight(weight)
        kueue.create(cq.preemption(None, "Any").obj())
        kueue.create(LocalQueueBuilder(lq, namespace, name).obj())
        names.append(name)
    return names[0], names[1], team


@pytest.mark.parametrize(
    "strategies",
    [None, ["LessThanOrEqualToFinalShare"], ["LessThanInitialShare"]],
    ids=["default-strategies", "LessThanOrEqualToFinalShare", "LessThanInitialShare"],
)
def test_weights_one_and_two_split_the_borrowed_capacity_one_to_two(
    kueue: KueueApi, jobs: Jobs, namespace: str, controller: ControllerHandle, strategies: list[str] | None
) -> None:
    fair: dict[str, Any] = {"enable": True}
    if strategies is not None:
        fair["preemptionStrategies"] = strategies
    with controller.configured(configuration(fairSharing=fair)):
        cq_a, cq_b, team = _tree(kueue, namespace)
        for i in range(6):
            _submit(jobs, namespace, f"a{i}", "lq-a")
        wait_for(lambda: _holding(kueue, namespace, "a") == 6, timeout=60,
                 message="queue a borrows all six cpus while b is idle")
        for i in range(6):
            _submit(jobs, namespace, f"b{i}", "lq-b")

        def split() -> tuple[int, int]:
            return _holding(kueue, namespace, "a"), _holding(kueue, namespace, "b")

        wait_for(lambda: split() == (2, 4), timeout=150,
                 message="b (weight 2) reclaims by preemption until the split is 1:2")
        holds_for(lambda: split() == (2, 4), 6, "no further preemption: the split is fair")
        wait_for(lambda: (_share(kueue, "ClusterQueue", cq_a), _share(kueue, "ClusterQueue", cq_b)) == (334, 334),
                 timeout=30, message="both queues show the same weighted share")
        wait_for(lambda: _share(kueue, "Cohort", team) == 1000, timeout=30,
                 message="the team Cohort borrows everything its parent can lend")
