"""Randomised runs over nested Cohorts with borrowing and lending limits at every level.

Whatever happens (arrivals, finishes, preemptions, rolled-back reservations), after every step:
every ClusterQueue's usage is what its admitted workloads hold; each workload that holds quota
holds it once, in one ClusterQueue; and the usage fits the tree's limits, checked against a model
built from the generated specs alone (not from the engine's quota forest): no ClusterQueue or
Cohort subtree takes more from its parent than its ``borrowingLimit`` allows, no node lends more
than its ``lendingLimit``, and no tree uses more than it has.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from controller.engine import Reservation, quota
from controller.engine.afs import flatten
from pykueue.api.config import AdmissionFairSharing
from tests.builders import (
    CohortBuilder,
    FungibleClusterQueueBuilder,
    LocalQueueBuilder,
    PlacementWorkloadBuilder,
    condition,
)
from tests.unit.engine.harness import World

Obj = dict[str, Any]
FLAVORS = ("default", "spot")
FRS = tuple((flavor, "cpu") for flavor in FLAVORS)
CLUSTER_QUEUES = 6
MILLI = 1000  # engine units of cpu per core

# The Cohort tree every run uses; each Cohort's quotas and limits, and each ClusterQueue's place,
# are drawn per seed. "root" has no parent, so it may not have limits (Kueue's validation).
COHORT_PARENTS = {"root": None, "left": "root", "right": "root", "left-a": "left", "left-b": "left"}


@dataclass
class ModelNode:
    """A ClusterQueue or Cohort as the test generated it, in engine units."""

    parent: str | None
    is_cluster_queue: bool
    nominal: dict[tuple[str, str], int] = field(default_factory=dict)
    borrowing_limit: dict[tuple[str, str], int] = field(default_factory=dict)
    lending_limit: dict[tuple[str, str], int] = field(default_factory=dict)
    children: list[str] = field(default_factory=list)


@dataclass
class DrawnQuota:
    """One flavor's cpu quota as the builders take it."""

    nominal: str
    borrowing_limit: dict[str, str] | None = None
    lending_limit: dict[str, str] | None = None


def _draw_quota(
    rng: random.Random, node: ModelNode, fr: tuple[str, str], *, max_nominal: int, lend_within_nominal: bool
) -> DrawnQuota:
    """Draw nominal quota and limits for ``fr`` and record them in ``node``. Only a node with a
    parent may have limits (Kueue's validation)."""
    nominal = rng.randint(0, max_nominal)
    node.nominal[fr] = nominal * MILLI
    drawn = DrawnQuota(str(nominal))
    if node.parent is not None and rng.random() < 0.5:
        limit = rng.randint(0, 3)
        node.borrowing_limit[fr] = limit * MILLI
        drawn.borrowing_limit = {"cpu": str(limit)}
    if node.parent is not None and rng.random() < 0.5:
        # A ClusterQueue may not lend more than its nominal quota; a Cohort lends from its subtree.
        limit = rng.randint(0, nominal if lend_within_nominal else 4)
        node.lending_limit[fr] = limit * MILLI
        drawn.lending_limit = {"cpu": str(limit)}
    return drawn


FAIR_STRATEGY_LISTS = (
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
)


def _world(
    rng: random.Random, fair: bool = False, afs: bool = False, grace: float = 0.0
) -> tuple[World, dict[str, ModelNode]]:
    """The random tree; with ``fair``, fair sharing on (a random strategy list) and random
    weights, 0 included, on queues and Cohorts (docs/design/fair-sharing.md); with ``afs``,
    admission fair sharing on (random half-life, 0 included), most queues in its admission mode,
    and a second LocalQueue per ClusterQueue with a random weight."""
    strategies = rng.choice(FAIR_STRATEGY_LISTS) if fair else None
    admission_fair_sharing = (
        AdmissionFairSharing(rng.choice([0.0, 2.0, 30.0]), rng.choice([0.5, 1.0, 5.0])) if afs else None
    )
    world = World(heads=rng.choice([1, 3, 8]), batch=rng.choice([0.0, 1.0]), fair_sharing=strategies,
                  admission_fair_sharing=admission_fair_sharing, preemption_grace=grace)
    world.flavors(*FLAVORS)
    model: dict[str, ModelNode] = {}
    for name, parent in COHORT_PARENTS.items():
        node = model[name] = ModelNode(parent, is_cluster_queue=False)
        if name == "root" and rng.random() < 0.5:
            continue  # an implicit Cohort: named by its children, never created
        cohort = CohortBuilder(name)
        if parent is not None:
            cohort.parent(parent)
        for fr in FRS:
            if rng.random() < 0.6:
                q = _draw_quota(rng, node, fr, max_nominal=2, lend_within_nominal=False)
                cohort.flavor(fr[0], cpu=q.nominal, borrowing_limit=q.borrowing_limit, lending_limit=q.lending_limit)
        if fair:
            cohort.weight(rng.choice(["0", "0.5", "1", "2"]))
        world.engine.upsert_cohort(cohort.obj())
    for i in range(CLUSTER_QUEUES):
        name = f"cq{i}"
        parent = rng.choice(sorted(COHORT_PARENTS))
        node = model[name] = ModelNode(parent, is_cluster_queue=True)
        cq = FungibleClusterQueueBuilder(name).cohort(parent)
        for fr in FRS:
            q = _draw_quota(rng, node, fr, max_nominal=3, lend_within_nominal=True)
            cq.flavor(fr[0], cpu=q.nominal, borrowing_limit=q.borrowing_limit, lending_limit=q.lending_limit)
        cq.preemption(
            within_cluster_queue=rng.choice(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]),
            reclaim_within_cohort=rng.choice(["Never", "LowerPriority", "Any"]),
        )
        if rng.random() < 0.3:
            cq.strategy("StrictFIFO")
        if afs and rng.random() < 0.8:
            cq.admission_mode()
        obj = cq.obj()
        if fair:
            obj["spec"]["fairSharing"] = {"weight": rng.choice(["0", "0.5", "1", "2"])}
        world.queue(obj)
        if afs:
            world.engine.upsert_local_queue(
                LocalQueueBuilder(f"lq2-{name}", "ns", name).weight(rng.choice(["0", "1", "3"])).obj()
            )
    for name, node in model.items():
        if node.parent is not None:
            model[node.parent].children.append(name)
    return world, model


def _needs_from_parent(
    name: str, model: dict[str, ModelNode], usage: dict[str, dict[tuple[str, str], int]], fr: tuple[str, str]
) -> int:
    """The least the subtree of ``name`` must take of ``fr`` from outside it (negative: what it can
    lend out), asserting on the way that every node of the subtree keeps to its limits.

    A node's subtree has its own nominal quota and what its children can lend; a child lends at
    most its ``lendingLimit`` of what it does not use (quota beyond that stays private, so it is
    not counted as available to anyone else: a node that lent more than its limit shows up as a
    deficit above it). What the subtree uses beyond that must come from the parent, and may not
    exceed the node's ``borrowingLimit``. This is Kueue's semantics of the limits
    (pkg/cache/resource_node.go, KEP-79 hierarchical cohorts), computed from the specs directly.
    """
    node = model[name]
    if node.is_cluster_queue:
        demand = usage[name].get(fr, 0)
    else:
        demand = sum(_needs_from_parent(child, model, usage, fr) for child in node.children)
    need = demand - node.nominal.get(fr, 0)
    if need < 0 and fr in node.lending_limit:
        need = max(need, -node.lending_limit[fr])
    if need > 0 and fr in node.borrowing_limit:
        assert need <= node.borrowing_limit[fr], f"{name} borrows {need} of {fr} over its limit"
    return need


def _check_invariants(world: World, model: dict[str, ModelNode], holding: dict[str, str]) -> None:
    engine = world.engine
    # Each workload the run saw reserved (and not finished, rolled back or preempted since) holds
    # quota exactly once, with the uid it was reserved with; nothing else holds quota.
    held_by: dict[str, list[str]] = {}
    usage: dict[str, dict[tuple[str, str], int]] = {}
    for name, admitted in engine.admitted.items():
        usage[name] = {}
        for key, info in admitted.items():
            assert info.admission is not None, key
            held_by.setdefault(key, []).append(name)
            assert holding.get(key) == info.uid, (key, "holds quota the run did not give it")
            for fr, amount in info.admission.usage.items():
                usage[name][fr] = usage[name].get(fr, 0) + amount
    assert {key: len(queues) for key, queues in held_by.items()} == dict.fromkeys(holding, 1)

    for name, node in engine.forest.cluster_queues.items():
        for fr in FRS:
            assert node.usage.get(fr, 0) == usage[name].get(fr, 0), (name, fr)
            assert node.usage.get(fr, 0) <= quota.potential_available(node, fr), (name, fr)
        # The borrowing index used by preemption matches the usage.
        expected = {fr for fr, used in node.usage.items() if used > node.nominal(fr)}
        assert node.borrowing == expected, name
        assert (node in node.tree_borrowers) == bool(expected), name

    afs = engine.afs
    if afs is not None:
        # Admission fair sharing: the admitted usage kept incrementally per LocalQueue is the sum
        # over its Admitted holders, and no workload the engine forgot (deleted, finished, rolled
        # back to nothing) still carries a penalty.
        expected_admitted: dict[str, dict[str, float]] = {}
        for members in engine.admitted.values():
            for info in members.values():
                if info.admission is not None and info.admission.admitted:
                    per_lq = expected_admitted.setdefault(info.local_queue_key, {})
                    for name, amount in flatten(info.admission.usage).items():
                        per_lq[name] = per_lq.get(name, 0.0) + amount
        for lq in {*expected_admitted, *afs.local_queues()}:
            got = afs.admitted_usage(lq)
            want = expected_admitted.get(lq, {})
            for name in got.keys() | want.keys():
                assert got.get(name, 0.0) == pytest.approx(want.get(name, 0.0), abs=1e-6), (lq, name)
            entry = afs.entry(lq)
            for wl_key in entry.penalties if entry is not None else ():
                assert wl_key in engine.workloads, f"{wl_key}: a penalty outlived its workload"

    for fr in FRS:
        # The engine's own arithmetic agrees that nothing is over its limits: the topology never
        # changes here, so no node can be left with negative headroom.
        for name, qnode in [*engine.forest.cluster_queues.items(), *engine.forest.cohorts.items()]:
            assert quota.available(qnode, fr) >= 0, (name, fr)
        assert _needs_from_parent("root", model, usage, fr) <= 0, f"the tree over-commits {fr}"


def _echo(world: World, reservation: Reservation, submitted: Obj) -> None:
    """The informer shows the reservation the controller wrote (the queues have no checks)."""
    obj = copy.deepcopy(submitted)
    at = datetime.fromtimestamp(world.now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # the run's clock
    obj["status"] = {
        "admission": copy.deepcopy(reservation.admission),
        "conditions": [
            condition("QuotaReserved", True, "QuotaReserved", reservation.message, at=at),
            condition("Admitted", True, "Admitted", "The workload is admitted", at=at),
        ],
    }
    world.add(obj)


@pytest.mark.parametrize("seed", range(40))
def test_random_operations_keep_invariants(seed: int) -> None:
    _random_operations(seed, fair=False)


@pytest.mark.parametrize("seed", range(40))
def test_random_operations_keep_invariants_with_fair_sharing(seed: int) -> None:
    """The same invariants hold when fair sharing orders the heads and chooses the victims."""
    _random_operations(seed, fair=True)


@pytest.mark.parametrize("seed", range(30))
def test_random_operations_keep_invariants_with_admission_fair_sharing(seed: int) -> None:
    """The same invariants hold when LocalQueue usage orders the queues and the victims."""
    _random_operations(seed, fair=seed % 2 == 0, afs=True)


@pytest.mark.parametrize("seed", range(30))
def test_random_operations_keep_invariants_with_a_preemption_grace(seed: int) -> None:
    """The same invariants hold when preemptors wait for their victims' grace, holding quota."""
    _random_operations(seed, fair=seed % 3 == 0, grace=2.0)


def _random_operations(seed: int, fair: bool, afs: bool = False, grace: float = 0.0) -> None:
    rng = random.Random(seed)
    world, model = _world(rng, fair, afs, grace)
    submitted: dict[str, Obj] = {}  # key -> the workload as created, pending
    holding: dict[str, str] = {}  # key -> uid holding quota
    counter = 0
    for _step in range(100):
        action = rng.random()
        if action < 0.45:
            counter += 1
            cq = f"cq{rng.randrange(CLUSTER_QUEUES)}"
            lq = f"lq2-{cq}" if afs and rng.random() < 0.5 else f"lq-{cq}"
            wl = world.add(PlacementWorkloadBuilder(f"w{counter}", "ns").queue(lq).podset(cpu=rng.choice(["500m", "1", "2", "3"]))
                           .priority(rng.choice([0, 5, 10])).at(counter % 3600).obj())
            submitted[f"ns/w{counter}"] = copy.deepcopy(wl)
        elif action < 0.6 and holding:
            key = rng.choice(sorted(holding))
            world.finish(key)
            holding.pop(key)
        else:
            result = world.cycle(advance=rng.choice([0.1, 0.5, 1.5]))
            for reservation in result.reservations:
                assert reservation.workload not in holding, "admitted twice"
                holding[reservation.workload] = reservation.uid
                if rng.random() < 0.15:
                    world.engine.rollback(reservation.workload)
                    holding.pop(reservation.workload)
                else:
                    world.engine.confirm(reservation.workload)
                    _echo(world, reservation, submitted[reservation.workload])
            for preemption in result.preemptions:
                assert preemption.victim in holding or preemption.victim not in world.engine.workloads
                if preemption.victim in holding:
                    # The eviction completes: the victim is pending again, without quota.
                    world.add(copy.deepcopy(submitted[preemption.victim]))
                    holding.pop(preemption.victim)
        _check_invariants(world, model, holding)
