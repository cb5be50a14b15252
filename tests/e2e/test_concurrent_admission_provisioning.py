"""Concurrent admission with a real, long-running admission check: the ProvisioningRequest check
(``controller/provisioning/``) answered by the simulated cluster-autoscaler
(``hack/autoscaler_sim.py``), one node group per flavor.

The original design's story 3 with long-running checks: a Reservation flavor (no quota yet) and
three homogeneous flavors 2a/2b/2c, each guarded by its own ProvisioningRequest check
(``admissionChecksStrategy.onFlavors``). Every option reserves quota first, then its check asks
the autoscaler for nodes of *its assigned* flavor; the requests race, the first to be provisioned
wins, and the losers are deactivated: their quota is back within seconds and their requests are
deleted. Then ``Retry`` on one option while another races, and ``Rejected`` on every option.

The race rules are watched throughout by the same watcher as the other concurrent-admission
stories (``test_concurrent_admission.py``), and the admission invariants after each test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from hack.autoscaler_sim import AutoscalerSim, NodeGroup
from pykueue.kube.client import KubeClient
from tests.builders import ProvisioningRequestConfigBuilder, provisioning_admission_check
from tests.e2e import test_concurrent_admission as stories
from tests.e2e.helpers.kueue import KueueApi, condition, holds_quota, is_true, unique
from tests.e2e.helpers.wait import wait_for
from tests.e2e.test_concurrent_admission import CONVERGE, FLAVOR_LABEL, World, _cpu, stays

world = stories.world  # the stories' fixture: flavors, queues, Jobs and the race watcher

ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
PROVISIONED = 90.0  # seconds: reserve, request, simulated delay, admit, start


@pytest.fixture
def autoscaled(cluster: Any, world: World) -> Iterator[AutoscalerSim]:
    """Story 3's flavors, each on a node group of its own that the simulated autoscaler grows."""
    world.flavors("reservation")  # a reservation: its node exists, no check guards it
    world.flavors("2a", "2b", "2c", nodes=False)  # nodes only once the autoscaler provisions them
    sim = AutoscalerSim(
        KubeClient.from_config(cluster.kubeconfig, user_agent="autoscaler-sim"),
        [
            NodeGroup(f"group-{name}", labels={FLAVOR_LABEL: world.flavor[name]}, capacity={"cpu": "4", "pods": "10"})
            for name in ("2a", "2b", "2c")
        ],
        period=0.3,
    )
    sim.start()
    try:
        yield sim
    finally:
        sim.stop()


def _checks(kueue: KueueApi, world: World, behavior: dict[str, str], retry: dict[str, int]) -> dict[str, str]:
    """One ProvisioningRequest check per flavor of ``behavior`` (flavor -> SimBehavior); returns
    check -> flavor for :meth:`World.cluster_queue`."""
    checks = {}
    for flavor, sim_behavior in behavior.items():
        config = unique(f"prc-{flavor}")
        builder = ProvisioningRequestConfigBuilder(config, ATOMIC).retry(**retry)
        if sim_behavior:
            builder.parameters(SimBehavior=sim_behavior)
        kueue.create(builder.obj())
        check = unique(f"prov-{flavor}")
        kueue.create(provisioning_admission_check(check, config))
        checks[check] = flavor
    for check in checks:
        wait_for(
            lambda check=check: (condition(kueue.get("AdmissionCheck", check) or {}, "Active") or {}).get("status")
            == "True",
            timeout=CONVERGE,
            message=f"the provisioning controller marks {check} Active",
        )
    return checks


def _requests(kube: k8s.ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    items = k8s.CustomObjectsApi(kube).list_namespaced_custom_object(
        "autoscaling.x-k8s.io", "v1", namespace, "provisioningrequests"
    )["items"]
    return {r["metadata"]["name"]: r for r in items}


def _requests_by_option(kube: k8s.ApiClient, namespace: str) -> dict[str, str]:
    """Request name -> the option workload that owns it."""
    return {
        name: next((o["name"] for o in r["metadata"].get("ownerReferences") or []), "")
        for name, r in _requests(kube, namespace).items()
    }


def test_story3_long_running_checks_race_across_flavors_and_the_first_provisioned_wins(
    world: World, autoscaled: AutoscalerSim, kueue: KueueApi, kube: k8s.ApiClient, namespace: str
) -> None:
    # 2b's autoscaler answers after 4 s, 2a's and 2c's only after 600 s (long-running checks).
    checks = _checks(kueue, world, {"2a": "delay=600", "2b": "delay=4", "2c": "delay=600"}, {})
    world.cluster_queue(
        "RemoveBelowTarget",
        _cpu(("reservation", "0"), ("2a", "4"), ("2b", "4"), ("2c", "4")),
        target="reservation",
        checks=checks,
    )
    world.job("train")
    parent = world.parent_of_job("train")

    # Two-phase: the three options reserve quota, and each one's check asks for nodes of its own
    # assigned flavor — one ProvisioningRequest per option, all open at once.
    options = wait_for(
        lambda: (found := world.options(parent))
        and {k for k, wl in found.items() if holds_quota(wl)} == {"2a", "2b", "2c"}
        and found,
        timeout=CONVERGE,
        message="2a, 2b and 2c all reserve quota",
    )
    names = {k: wl["metadata"]["name"] for k, wl in options.items()}
    owners = wait_for(
        lambda: (owned := set(_requests_by_option(kube, namespace).values())) >= {names[f] for f in ("2a", "2b", "2c")}
        and owned,
        timeout=CONVERGE,
        message="one ProvisioningRequest per racing option",
    )
    assert names["reservation"] not in owners, "the option without quota asks for nothing"
    assert world.holder(parent) is None and world.running_on("train") is None

    # 2b is provisioned first: it is admitted, the Job runs on 2b's new node, 2a and 2c are
    # deactivated (RemoveBelowTarget: they are below the target), their quota and requests go.
    world.wait_running_on("train", "2b")
    world.wait_option_statuses(parent, {"reservation": "Pending", "2a": "Removed", "2b": "Admitted", "2c": "Removed"})
    wait_for(
        lambda: world.reserving(parent) == {"2b"},
        timeout=15,
        message="the losers' quota is back within seconds",
    )
    wait_for(
        lambda: set(_requests_by_option(kube, namespace).values()) == {names["2b"]},
        timeout=CONVERGE,
        message="the losers' ProvisioningRequests are deleted",
    )
    current = world.refresh(parent)
    assert is_true(current, "Admitted") and is_true(current, "QuotaReserved")
    assert current["status"]["admission"]["podSetAssignments"][0]["flavors"] == {"cpu": world.flavor["2b"]}

    # Reservation frees up: RemoveBelowTarget lets the job migrate there (no check on it).
    world.set_quota("reservation", "cpu", "4")
    world.wait_running_on("train", "reservation")
    world.wait_option_statuses(parent, {"reservation": "Admitted", "2a": "Removed", "2b": "Removed", "2c": "Removed"})


def test_retry_on_one_option_while_another_races(
    world: World, autoscaled: AutoscalerSim, kueue: KueueApi, kube: k8s.ApiClient, namespace: str
) -> None:
    # 2a's first attempt fails (Retry: evicted, quota back, requeued after a 1 s backoff); its
    # second attempt is provisioned at once. 2b answers only after 600 s.
    checks = _checks(kueue, world, {"2a": "fail-first=1", "2b": "delay=600"}, {"base_seconds": 1, "limit": 3})
    world.cluster_queue("RemoveOther", _cpu(("2a", "4"), ("2b", "4")), checks=checks)
    world.job("train")
    parent = world.parent_of_job("train")
    world.wait_running_on("train", "2a")
    world.wait_option_statuses(parent, {"2a": "Admitted", "2b": "Removed"})
    option_a = world.options(parent)["2a"]
    attempts = sorted(n for n, owner in _requests_by_option(kube, namespace).items() if owner == option_a["metadata"]["name"])
    assert attempts and attempts[-1].endswith("-2"), attempts
    state = next(s for s in option_a["status"]["admissionChecks"])
    assert state["state"] == "Ready" and state.get("retryCount") == 1, state
    wait_for(lambda: "EvictedDueToAdmissionCheck" in world.events("Workload", option_a["metadata"]["name"]),
             message="option A's EvictedDueToAdmissionCheck Event")
    wait_for(lambda: world.reserving(parent) == {"2a"}, timeout=15, message="2b gives its quota back")


def test_rejected_on_every_option_leaves_the_parent_inactive_with_a_clear_message(
    world: World, autoscaled: AutoscalerSim, kueue: KueueApi, namespace: str
) -> None:
    checks = _checks(kueue, world, {"2a": "fail", "2b": "fail"}, {"limit": 0})
    world.cluster_queue("RemoveOther", _cpu(("2a", "4"), ("2b", "4")), checks=checks)
    world.job("doomed")
    parent = world.parent_of_job("doomed")
    current = wait_for(
        lambda: (p := world.refresh(parent)) and (p.get("spec") or {}).get("active") is False and p,
        timeout=CONVERGE,
        message="the parent is deactivated once every option was rejected",
    )
    message = (condition(current, "QuotaReserved") or {}).get("message") or ""
    assert message.startswith("Every option was rejected"), message
    for flavor in ("2a", "2b"):
        assert world.flavor[flavor] in message or f"option-{world.flavor[flavor]}" in message, message
    # The Event is recorded after the parent's write, asynchronously.
    wait_for(lambda: "OptionsRejected" in world.events("Workload", parent["metadata"]["name"]), timeout=CONVERGE,
             message="the parent's OptionsRejected Event")
    world.wait_option_statuses(parent, {"2a": "Removed", "2b": "Removed"})
    stays(lambda: world.running_on("doomed") is None and not world.reserving(parent), 3, "nothing runs or holds quota")
    assert world.batch.read_namespaced_job("doomed", namespace).spec.suspend
