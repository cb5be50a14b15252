"""ResourceFlavor fallbacks on real Jobs (docs/design/fallbacks.md).

A flavor "stocks out" the way a cloud does: its ResourceFlavor's nodeLabels match no node, so the
pods the Job creates on it stay Pending and never become ready. Flavors with capacity point at
fresh simulated (kwok) nodes, whose pods are Running and Ready at once. A standalone Workload
admitted with no pods plays a job that saturates a flavor's quota.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest

from tests.builders import (
    AdmissionCheckBuilder,
    LocalQueueBuilder,
    ResourceFlavorBuilder,
    SeedClusterQueueBuilder,
)
from tests.e2e.fixtures.controller import ControllerHandle, configuration, wait_for_pods_ready
from tests.e2e.helpers.check_controller import flavor_check_controller
from tests.e2e.helpers.jobs import FLAVOR_LABEL, Jobs, queued, wait_for
from tests.e2e.helpers.kueue import KueueApi, condition, holds_quota, is_admitted, now_rfc3339, submit, unique

# Every test here needs both programs: the webhook suspends Jobs, the controller admits them.
pytestmark = pytest.mark.usefixtures("webhook", "controller")


def _flavors(kueue: KueueApi, pools: dict[str, str]) -> dict[str, str]:
    """ResourceFlavors named after the keys (made unique), pinned to the node label values."""
    names = {}
    for key, pool in pools.items():
        name = unique(key)
        kueue.create(ResourceFlavorBuilder(name).node_labels(**{FLAVOR_LABEL: pool}).obj())
        names[key] = name
    return names


def _queues(kueue: KueueApi, namespace: str, cq: SeedClusterQueueBuilder) -> str:
    obj = cq.obj()
    kueue.create(obj)
    kueue.create(LocalQueueBuilder("lq", namespace, obj["metadata"]["name"]).obj())
    return str(obj["metadata"]["name"])


def _assigned(wl: dict[str, Any] | None) -> set[str]:
    admission = ((wl or {}).get("status") or {}).get("admission") or {}
    return {f for ps in admission.get("podSetAssignments") or [] for f in (ps.get("flavors") or {}).values()}


def _history(wl: dict[str, Any]) -> dict[str, str]:
    return {e["resourceFlavor"]: e.get("assignmentTime", "") for e in wl["status"].get("flavorAssignmentHistory") or []}


def _fallback_messages(jobs: Jobs, wl_name: str) -> list[str]:
    items = jobs.core.list_namespaced_event(
        jobs.namespace, field_selector=f"involvedObject.name={wl_name},involvedObject.kind=Workload"
    ).items
    ordered = sorted(items, key=lambda e: str(e.metadata.creation_timestamp))  # RFC 3339 in UTC sorts as text
    return [str(e.message) for e in ordered if e.reason == "FlavorFallback"]


def _saturate(kueue: KueueApi, namespace: str, flavor: str) -> None:
    """A pod-less standalone Workload holding the whole quota of ``flavor`` (the first flavor)."""
    submit(kueue, namespace, "saturating", cpu="2")
    wl = wait_for(
        lambda: (wl := kueue.workload(namespace, "saturating")) and _assigned(wl) == {flavor} and wl,
        message=f"the saturating workload holds {flavor}",
    )
    # Its "pods" are ready (as a job integration would report): its own fallback clock stops.
    conditions = [c for c in wl["status"].get("conditions") or [] if c["type"] != "PodsReady"]
    conditions.append({"type": "PodsReady", "status": "True", "reason": "Started",
                       "message": "ready (set by the test)", "lastTransitionTime": now_rfc3339()})
    kueue.patch_status(
        "Workload", "saturating",
        {"metadata": {"resourceVersion": wl["metadata"]["resourceVersion"]}, "status": {"conditions": conditions}},
        namespace,
    )


def test_story_spot_stocks_out_and_the_job_ends_on_on_demand_never_again_on_spot(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str, controller: ControllerHandle
) -> None:
    """Reservation (full), Spot (no node: stocked out), On-demand (nodes)."""
    f = _flavors(kueue, {"reservation": flavor_nodes, "spot": unique("stocked-out"), "on-demand": flavor_nodes})
    cq = _queues(
        kueue,
        namespace,
        SeedClusterQueueBuilder(unique("cq"))
        .flavor(f["reservation"], cpu="2").flavor(f["spot"], cpu="100").flavor(f["on-demand"], cpu="100")
        .fallback("DeactivateWorkload")
        .fallback_rule(f["reservation"], timeout="10m")
        .fallback_rule(f["spot"], timeout="8s"),
    )
    _saturate(kueue, namespace, f["reservation"])
    jobs.create(queued("story", namespace, pods=2, seconds=3))

    on_spot = wait_for(lambda: (wl := jobs.workload("story")) and _assigned(wl) == {f["spot"]} and wl,
                       message="first reserved on Spot (Reservation is full)")
    assert f["spot"] in _history(on_spot), on_spot["status"]
    wait_for(lambda: len(jobs.pods("story")) == 2, message="its pods exist on Spot, Pending")

    def on_demand() -> dict[str, Any] | None:
        wl = jobs.workload("story")
        return wl if wl and _assigned(wl) == {f["on-demand"]} and is_admitted(wl) else None

    wl = wait_for(on_demand, message="after the Spot timeout, reserved on On-demand")
    history = _history(wl)
    assert set(history) == {f["spot"], f["on-demand"]}, history
    wait_for(lambda: "Stopped" in jobs.events("story"), message="the Job was stopped when Spot fell back")
    wait_for(lambda: jobs.succeeded("story"), message="the Job completes on On-demand")
    # The controller marks the Workload Finished once it has seen the Job succeed: wait for it.
    final = wait_for(lambda: (wl := jobs.workload("story")) and condition(wl, "Finished") and wl,
                     message="its Workload is Finished")
    assert condition(final, "Finished")["reason"] == "Succeeded"  # type: ignore[index]
    messages = _fallback_messages(jobs, final["metadata"]["name"])
    assert len(messages) == 1 and f["spot"] in messages[0], messages
    assert "TimeoutForPodsReadyExceeded" in messages[0], messages
    metrics = controller.metrics()
    assert (
        f'pykueue_flavor_fallbacks_total{{cluster_queue="{cq}",flavor="{f["spot"]}",'
        f'trigger="TimeoutForPodsReadyExceeded"}} 1.0'
    ) in metrics


def test_a_then_b_then_c_a_freed_earlier_flavor_is_tried_before_the_last(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str
) -> None:
    """A full; B is tried and stocks out while A frees; A is tried (and stocks out too); then C."""
    f = _flavors(kueue, {"a": unique("stocked-out"), "b": unique("stocked-out"), "c": flavor_nodes})
    _queues(
        kueue,
        namespace,
        SeedClusterQueueBuilder(unique("cq"))
        .flavor(f["a"], cpu="2").flavor(f["b"], cpu="100").flavor(f["c"], cpu="100")
        .fallback().fallback_rule("*", timeout="8s").fallback_rule(f["c"], timeout="10m"),
    )
    _saturate(kueue, namespace, f["a"])
    jobs.create(queued("abc", namespace, pods=1, seconds=2))
    wait_for(lambda: _assigned(jobs.workload("abc")) == {f["b"]}, message="B first: A is full")
    kueue.finish(kueue.workload(namespace, "saturating"))
    wait_for(lambda: _assigned(jobs.workload("abc")) == {f["a"]}, message="A next: it freed, B is excluded")
    wait_for(lambda: _assigned(jobs.workload("abc")) == {f["c"]}, message="then C")
    wait_for(lambda: jobs.succeeded("abc"), message="the Job completes on C")
    wl = jobs.workload("abc")
    assert wl is not None
    messages = _fallback_messages(jobs, wl["metadata"]["name"])
    assert [f["b"] in messages[0], f["a"] in messages[1]] == [True, True] and len(messages) == 2, messages


def _event_messages(jobs: Jobs, wl_name: str, reason: str) -> list[str]:
    items = jobs.core.list_namespaced_event(
        jobs.namespace, field_selector=f"involvedObject.name={wl_name},involvedObject.kind=Workload"
    ).items
    return [str(e.message) for e in items if e.reason == reason]


def test_deactivate_workload_when_every_flavor_failed(jobs: Jobs, kueue: KueueApi, namespace: str) -> None:
    """A is rejected by an admission check, B's pods never start: the deactivation names both
    flavors, each with the trigger that ended it, in ClusterQueue order."""
    f = _flavors(kueue, {"a": unique("stocked-out"), "b": unique("stocked-out")})
    check = unique("capacity")
    kueue.create(AdmissionCheckBuilder(check).obj())
    kueue.set_active_condition("AdmissionCheck", check, True)
    _queues(
        kueue,
        namespace,
        SeedClusterQueueBuilder(unique("cq")).flavor(f["a"], cpu="10").flavor(f["b"], cpu="10")
        .admission_checks(check).fallback("DeactivateWorkload")
        .fallback_rule(f["a"], "AdmissionCheckRejected").fallback_rule("*", timeout="6s"),
    )

    def deactivated() -> dict[str, Any] | None:
        wl = jobs.workload("doomed")
        return wl if wl and wl["spec"].get("active") is False and not holds_quota(wl) else None

    with flavor_check_controller(kueue, namespace, check, {f["a"]}):
        jobs.create(queued("doomed", namespace, pods=1, seconds=2))
        wl = wait_for(deactivated, message="deactivated once A and B both failed")
    tried = f"Every flavor was tried: {f['a']} (AdmissionCheckRejected), {f['b']} (TimeoutForPodsReadyExceeded);"
    evicted = condition(wl, "Evicted")
    assert evicted is not None and evicted["reason"] == "DeactivatedDueToFlavorsExhausted", evicted
    assert evicted["message"].startswith(tried), evicted
    assert wl["metadata"]["annotations"]["pykueue.x-k8s.io/flavor-fallback-triggers"] == ",".join(
        sorted([f"{f['a']}=AdmissionCheckRejected", f"{f['b']}=TimeoutForPodsReadyExceeded"])
    )
    assert set(_history(wl)) == {f["a"], f["b"]}
    # Events are sent from a queue after the write they report: wait for it, then count.
    events = wait_for(
        lambda: _event_messages(jobs, wl["metadata"]["name"], "EvictedDueToDeactivatedDueToFlavorsExhausted"),
        message="the deactivation's Event",
    )
    assert len(events) == 1 and events[0].startswith(tried), events
    wait_for(lambda: jobs.get("doomed")["spec"]["suspend"] is True and not jobs.live_pods("doomed"),
             message="the Job is suspended without pods")


@pytest.mark.needs_local_cluster  # restarts the controller on another Configuration
def test_retry_all_flavors_clears_the_history_and_tries_again(
    jobs: Jobs, kueue: KueueApi, namespace: str, controller: ControllerHandle
) -> None:
    """The requeue backoff comes from waitForPodsReady's requeuingStrategy (2 s base here); its own
    10 min timeout never fires."""
    config = configuration(waitForPodsReady=wait_for_pods_ready(timeout="10m", backoff_base_seconds=2))
    with controller.configured(config):
        f = _flavors(kueue, {"a": unique("stocked-out"), "b": unique("stocked-out")})
        _queues(
            kueue,
            namespace,
            SeedClusterQueueBuilder(unique("cq")).flavor(f["a"], cpu="10").flavor(f["b"], cpu="10")
            .fallback("RetryAllFlavors").fallback_rule("*", timeout="6s"),
        )
        jobs.create(queued("retry", namespace, pods=1, seconds=2))
        wait_for(lambda: _assigned(jobs.workload("retry")) == {f["a"]}, message="A first")
        wait_for(lambda: _assigned(jobs.workload("retry")) == {f["b"]}, message="then B")

        def reset() -> dict[str, Any] | None:
            wl = jobs.workload("retry")
            state = ((wl or {}).get("status") or {}).get("requeueState") or {}
            return wl if wl and state.get("count", 0) >= 1 else None

        wl = wait_for(reset, message="both failed: the history is cleared and a backoff set")
        assert wl["spec"].get("active") is not False
        wait_for(lambda: _assigned(jobs.workload("retry")) == {f["a"]}, message="A tried again after the backoff")
        jobs.delete("retry")


def test_admission_check_rejected_on_one_flavor_falls_back_to_the_next(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str
) -> None:
    f = _flavors(kueue, {"spot": flavor_nodes, "on-demand": flavor_nodes})
    check = unique("capacity")
    kueue.create(AdmissionCheckBuilder(check).obj())
    kueue.set_active_condition("AdmissionCheck", check, True)
    cq = (
        SeedClusterQueueBuilder(unique("cq")).flavor(f["spot"], cpu="10").flavor(f["on-demand"], cpu="10")
        .admission_checks(check).fallback().fallback_rule(f["spot"], "AdmissionCheckRejected")
    )
    _queues(kueue, namespace, cq)
    with flavor_check_controller(kueue, namespace, check, {f["spot"]}) as checker:
        jobs.create(queued("checked", namespace, pods=1, seconds=2))
        wait_for(lambda: jobs.succeeded("checked"), message="the Job completes on On-demand")
    wl = jobs.workload("checked")
    assert wl is not None and _assigned(wl) == {f["on-demand"]}
    states = [d[2] for d in checker.decisions]
    assert states == ["Rejected", "Ready"], checker.decisions
    messages = _fallback_messages(jobs, wl["metadata"]["name"])
    assert len(messages) == 1 and "AdmissionCheckRejected" in messages[0], messages


@pytest.mark.needs_local_cluster  # kills and restarts the controller process
def test_after_a_controller_restart_mid_attempt_the_timeout_fires_at_the_recorded_time(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str, controller: ControllerHandle
) -> None:
    """The history in the API is the only memory: the new process times Spot from its recorded
    assignment, not from its own start."""
    timeout = 25
    f = _flavors(kueue, {"spot": unique("stocked-out"), "on-demand": flavor_nodes})
    _queues(
        kueue,
        namespace,
        SeedClusterQueueBuilder(unique("cq")).flavor(f["spot"], cpu="10").flavor(f["on-demand"], cpu="10")
        .fallback().fallback_rule(f["spot"], timeout=f"{timeout}s"),
    )
    jobs.create(queued("restarted", namespace, pods=1, seconds=2))
    wait_for(lambda: _assigned(jobs.workload("restarted")) == {f["spot"]}, message="reserved on Spot")
    killed = time.monotonic()
    controller.kill()
    time.sleep(10)  # down long enough that timing from the restart would be visibly late
    controller.start()
    assert time.monotonic() - killed < timeout, "the controller must be back before Spot's deadline"
    wait_for(lambda: _assigned(jobs.workload("restarted")) == {f["on-demand"]}, message="fell back to On-demand")
    wait_for(lambda: jobs.succeeded("restarted"), message="the Job completes on On-demand")
    wl = jobs.workload("restarted")
    assert wl is not None
    assigned = datetime.fromisoformat(_history(wl)[f["spot"]])

    def fallbacks() -> list[Any]:
        events = jobs.core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.name={wl['metadata']['name']},involvedObject.kind=Workload"
        ).items
        return [e for e in events if e.reason == "FlavorFallback"]

    # Sent from the Event queue after the fallback's write; its creation time is when it was sent.
    (fallback,) = wait_for(fallbacks, message="the FlavorFallback Event")
    created = fallback.metadata.creation_timestamp
    assert created is not None
    elapsed = (created - assigned).total_seconds()
    # Not before the recorded deadline, and well before the restart + timeout (>= timeout + 10).
    assert timeout - 1 <= elapsed < timeout + 8, elapsed


@pytest.mark.needs_local_cluster  # restarts the controller on another Configuration
def test_waitforpodsready_firing_first_evicts_without_excluding_the_flavor(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str, controller: ControllerHandle
) -> None:
    """The two timeouts stay separate: waitForPodsReady (5 s) runs out before Spot's fallback
    timeout (10 min), so the user sees PodsReadyTimeout and Spot is tried again after the backoff."""
    config = configuration(waitForPodsReady=wait_for_pods_ready(timeout="5s", backoff_base_seconds=2))
    with controller.configured(config):
        f = _flavors(kueue, {"spot": unique("stocked-out"), "on-demand": flavor_nodes})
        _queues(
            kueue,
            namespace,
            SeedClusterQueueBuilder(unique("cq")).flavor(f["spot"], cpu="10").flavor(f["on-demand"], cpu="10")
            .fallback().fallback_rule(f["spot"], timeout="10m"),
        )
        jobs.create(queued("separate", namespace, pods=1, seconds=2))
        on_spot = wait_for(
            lambda: (wl := jobs.workload("separate")) and _assigned(wl) == {f["spot"]} and wl,
            message="reserved on Spot",
        )
        first = datetime.fromisoformat(_history(on_spot)[f["spot"]])

        def evicted_by_pods_ready() -> dict[str, Any] | None:
            wl = jobs.workload("separate")
            evicted = condition(wl, "Evicted") if wl else None
            return wl if evicted and evicted["reason"] == "PodsReadyTimeout" else None

        wl = wait_for(evicted_by_pods_ready, message="evicted by the waitForPodsReady timeout")

        def on_spot_again() -> bool:
            current = jobs.workload("separate") or {}
            history = _history(current) if current.get("status") else {}
            return _assigned(current) == {f["spot"]} and f["spot"] in history and (
                datetime.fromisoformat(history[f["spot"]]) > first
            )

        wait_for(on_spot_again, message="Spot is not excluded: reserved there again after the backoff")
        assert _fallback_messages(jobs, wl["metadata"]["name"]) == []
        jobs.delete("separate")
