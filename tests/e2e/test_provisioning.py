"""The ProvisioningRequest admission check end to end: real Jobs, the simulated autoscaler
(``hack/autoscaler_sim.py``) answering the requests through the API and creating kwok nodes.

What a Kueue user sees (docs/design/provisioning.md): a Job whose ClusterQueue requires the check
waits with quota reserved while a ProvisioningRequest ``<workload>-<check>-<attempt>`` is open;
each new ETA is an Event; once provisioned the Job starts and its pods, carrying the
consume-provisioning-request annotation and the flavor's node selector, run on the new nodes.
A failing request is retried with a growing backoff (Retry → eviction → requeue → next attempt)
until the limit, then the check is Rejected and the workload deactivated; a booking that expires
before admission is retried too; revoked capacity deactivates a running Job. Requests of evicted,
deactivated or finished workloads are deleted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from hack.autoscaler_sim import BEHAVIOR_ANNOTATION, NODE_GROUP_LABEL, AutoscalerSim, NodeGroup, node_prefix
from pykueue.kube.client import KubeClient
from tests.builders import (
    ClusterQueueBuilder,
    JobBuilder,
    LocalQueueBuilder,
    ProvisioningRequestConfigBuilder,
    ResourceFlavorBuilder,
    SeedClusterQueueBuilder,
    WorkloadBuilder,
    WorkloadPriorityClassBuilder,
    provisioning_admission_check,
)
from tests.e2e.fixtures.controller import ControllerHandle
from tests.e2e.helpers.kueue import KueueApi, condition, holds_for, is_admitted, unique
from tests.e2e.helpers.wait import wait_for as _wait_for

POOL_LABEL = "pykueue.dev/e2e-provisioned-pool"
POOL = "provisioned"
ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
CONSUME = "autoscaling.x-k8s.io/consume-provisioning-request"
TIMEOUT = 120.0


def wait_for(predicate: Any, timeout: float = TIMEOUT, **kwargs: Any) -> Any:
    return _wait_for(predicate, timeout=timeout, **kwargs)


@pytest.fixture(scope="module")
def autoscaler(cluster: Any) -> Iterator[AutoscalerSim]:
    """The simulated autoscaler, growing one node group whose nodes carry ``POOL_LABEL=POOL``."""
    sim = AutoscalerSim(
        KubeClient.from_config(cluster.kubeconfig, user_agent="autoscaler-sim"),
        [NodeGroup("pool-a", labels={POOL_LABEL: POOL}, capacity={"cpu": "2", "memory": "4Gi", "pods": "10"})],
        period=0.3,
    )
    sim.start()
    try:
        yield sim
    finally:
        sim.stop()


class World:
    """A flavor bound to the provisioned pool, a ClusterQueue requiring the check, LocalQueue ``lq``."""

    def __init__(
        self,
        kube: k8s.ApiClient,
        kueue: KueueApi,
        namespace: str,
        config: ProvisioningRequestConfigBuilder,
        *,
        cpu: str = "8",
        within_cluster_queue: str | None = None,
    ) -> None:
        self.kueue = kueue
        self.namespace = namespace
        self.custom = k8s.CustomObjectsApi(kube)
        self.batch = k8s.BatchV1Api(kube)
        self.core = k8s.CoreV1Api(kube)
        self.check = unique("prov")
        prc = self.config = unique("prc")
        prc_obj = config.obj()
        prc_obj["metadata"]["name"] = prc
        kueue.create(prc_obj)
        kueue.create(provisioning_admission_check(self.check, prc))
        flavor = unique("flavor")
        kueue.create(ResourceFlavorBuilder(flavor).node_labels(**{POOL_LABEL: POOL}).obj())
        cq = self.cluster_queue = unique("cq")
        cq_builder = ClusterQueueBuilder(cq).flavor(flavor, cpu=cpu).admission_checks(self.check)
        if within_cluster_queue:
            cq_builder.preemption(within_cluster_queue=within_cluster_queue)
        kueue.create(cq_builder.obj())
        kueue.create(LocalQueueBuilder("lq", namespace, cq).obj())
        wait_for(
            lambda: (condition(kueue.get("AdmissionCheck", self.check) or {}, "Active") or {}).get("status") == "True",
            message="the controller marks the check Active",
        )
        wait_for(
            lambda: (condition(kueue.get("ClusterQueue", cq) or {}, "Active") or {}).get("status") == "True",
            message="the ClusterQueue is active",
        )

    def job(self, name: str, pods: int = 2, seconds: float = 2, priority_class: str | None = None) -> None:
        job = JobBuilder(name, self.namespace).queue("lq").parallelism(pods).completions(pods).requests(cpu="1")
        if priority_class:
            job.workload_priority_class(priority_class)
        self.batch.create_namespaced_job(self.namespace, job.run_seconds(seconds).obj())

    def workload(self, job: str) -> dict[str, Any] | None:
        found = [
            w for w in self.kueue.workloads(self.namespace)
            if any(o.get("name") == job for o in w["metadata"].get("ownerReferences") or [])
        ]
        return found[0] if found else None

    def check_state(self, job: str) -> dict[str, Any] | None:
        wl = self.workload(job) or {}
        return next((s for s in (wl.get("status") or {}).get("admissionChecks") or [] if s["name"] == self.check), None)

    def requests(self) -> dict[str, dict[str, Any]]:
        items = self.custom.list_namespaced_custom_object(
            "autoscaling.x-k8s.io", "v1", self.namespace, "provisioningrequests"
        )["items"]
        return {r["metadata"]["name"]: r for r in items}

    def annotate_request(self, name: str, behavior: str) -> None:
        self.custom.patch_namespaced_custom_object(
            "autoscaling.x-k8s.io", "v1", self.namespace, "provisioningrequests", name,
            {"metadata": {"annotations": {BEHAVIOR_ANNOTATION: behavior}}},
        )

    def events(self, name: str, kind: str = "Workload") -> list[k8s.CoreV1Event]:
        return self.core.list_namespaced_event(
            self.namespace, field_selector=f"involvedObject.name={name},involvedObject.kind={kind}"
        ).items

    def job_succeeded(self, name: str) -> bool:
        try:
            job = self.batch.read_namespaced_job(name, self.namespace)
        except ApiException:
            return False
        return any(c.type == "Complete" and c.status == "True" for c in job.status.conditions or [])

    def pods(self, job: str) -> list[k8s.V1Pod]:
        return self.core.list_namespaced_pod(self.namespace, label_selector=f"batch.kubernetes.io/job-name={job}").items


@pytest.fixture
def world_factory(kube: k8s.ApiClient, kueue: KueueApi, namespace: str, autoscaler: AutoscalerSim,
                  controller: ControllerHandle, webhook: Any) -> Any:
    def make(config: ProvisioningRequestConfigBuilder, **queue: Any) -> World:
        return World(kube, kueue, namespace, config, **queue)

    return make


def test_provisioned_job_runs_on_the_new_nodes_after_eta_events(world_factory: Any) -> None:
    world: World = world_factory(ProvisioningRequestConfigBuilder("x", ATOMIC).parameters(SimBehavior="eta=2"))
    world.job("train", pods=2, seconds=2)
    wl = wait_for(lambda: world.workload("train"), message="the Job's workload")
    request_name = f"{wl['metadata']['name']}-{world.check}-1"
    request = wait_for(lambda: world.requests().get(request_name), message="attempt 1 is requested")
    assert request["spec"]["provisioningClassName"] == ATOMIC
    assert request["spec"]["podSets"] == [{"podTemplateRef": {"name": f"ppt-{request_name}-main"}, "count": 2}]
    assert request["metadata"]["ownerReferences"][0]["name"] == wl["metadata"]["name"]
    # The request comes first and its PodTemplates, owned by it, right after (as in Kueue).
    template = wait_for(
        lambda: world.core.read_namespaced_pod_template(f"ppt-{request_name}-main", world.namespace),
        message="the request's PodTemplate is created",
    )
    assert template.template.spec.node_selector == {POOL_LABEL: POOL}

    # Two ETA messages from the autoscaler → two Events; quota is held, not admitted yet.
    def etas() -> list[str]:
        return [e.message for e in world.events(wl["metadata"]["name"]) if e.reason == "ProvisioningRequestETA"]

    seen = wait_for(lambda: (m := etas()) and len(m) >= 2 and m, message="an Event per new ETA")
    assert len(set(seen)) == 2, seen

    wait_for(lambda: world.job_succeeded("train"), message="the Job runs to success once provisioned")
    state = world.check_state("train")
    assert state is not None and state["state"] == "Ready"
    assert state["podSetUpdates"][0]["annotations"][CONSUME] == request_name
    pods = world.pods("train")
    assert len(pods) == 2
    for pod in pods:
        assert pod.metadata.annotations[CONSUME] == request_name
        # on a node made for this request (they are scaled down once the request is gone)
        assert pod.spec.node_name.startswith(node_prefix(request["metadata"]["uid"]) + "-"), pod.spec.node_name
    wait_for(lambda: "ProvisioningRequestCreated" in [e.reason for e in world.events(wl["metadata"]["name"])],
             message="the ProvisioningRequestCreated Event")

    # Finished → its request is deleted (and the simulated nodes scale down).
    wait_for(lambda: request_name not in world.requests(), message="the finished workload's request is deleted")


def test_failing_requests_retry_with_growing_backoff_then_reject_and_deactivate(world_factory: Any) -> None:
    world: World = world_factory(
        ProvisioningRequestConfigBuilder("x", ATOMIC).parameters(SimBehavior="fail,delay=1").retry(limit=2, base_seconds=2, max_seconds=30)
    )
    world.job("doomed", pods=1)
    first_seen: dict[str, float] = {}

    def deactivated() -> bool:
        now = time.monotonic()
        for request in world.requests():
            first_seen.setdefault(request, now)
        if len(first_seen) < 3:
            return False  # cheap polling while the attempts come and go
        current = world.workload("doomed") or {}
        return (current.get("spec") or {}).get("active") is False

    # Retry and Rejected are short-lived states (the eviction puts the check back to Pending), so
    # the story is read from the requests as they appear and from the Events.
    wait_for(deactivated, interval=0.05, message="the workload is deactivated after the last attempt fails")
    name = (world.workload("doomed") or {})["metadata"]["name"]
    attempts = [f"{name}-{world.check}-{n}" for n in (1, 2, 3)]
    assert sorted(first_seen) == attempts, first_seen
    gaps = [first_seen[attempts[1]] - first_seen[attempts[0]], first_seen[attempts[2]] - first_seen[attempts[1]]]
    # Each gap is the simulated 1 s answer delay plus the backoff (2 s, then 4 s), give or take the
    # second precision of lastTransitionTime.
    assert gaps[0] >= 2 and gaps[1] >= 4 and gaps[1] - gaps[0] >= 1, gaps

    def messages(reason: str) -> list[str]:
        return [str(e.message) for e in world.events(name) if e.reason == reason]

    updates = wait_for(lambda: (m := messages("AdmissionCheckUpdated")) and any("to Rejected" in x for x in m) and m,
                       message="the check's transitions are reported")
    assert sum("to Retry" in m for m in updates) == 2, updates
    assert any("Retrying after failure: simulated: no capacity for attempt 1" in m for m in updates), updates
    rejected = wait_for(lambda: messages("AdmissionCheckRejected"), message="the rejection is reported")
    assert any(f"ProvisioningRequest {attempts[2]} failed" in m for m in rejected), rejected
    wait_for(
        lambda: (condition(world.workload("doomed") or {}, "Evicted") or {}).get("reason")
        == "DeactivatedDueToAdmissionCheck",
        message="evicted as deactivated by the admission check",
    )
    wait_for(lambda: not world.requests(), message="the deactivated workload's requests are deleted")


def test_booking_expired_before_admission_is_retried(world_factory: Any) -> None:
    world: World = world_factory(
        ProvisioningRequestConfigBuilder("x", ATOMIC).parameters(SimBehavior="expire-first=1").retry(base_seconds=1)
    )
    world.job("later", pods=1, seconds=1)
    wl = wait_for(lambda: world.workload("later"), message="the Job's workload")
    second = f"{wl['metadata']['name']}-{world.check}-2"
    wait_for(lambda: second in world.requests(), message="a second attempt after the booking expired")
    wait_for(lambda: world.job_succeeded("later"), message="the Job runs on the second attempt's nodes")
    state = world.check_state("later")
    assert state is not None and state["state"] == "Ready" and state.get("retryCount") == 1, state


def test_revoked_capacity_deactivates_the_running_job(world_factory: Any) -> None:
    world: World = world_factory(ProvisioningRequestConfigBuilder("x", ATOMIC))
    world.job("long", pods=1, seconds=600)
    wl = wait_for(lambda: (w := world.workload("long")) and is_admitted(w) and w, message="admitted")
    name = f"{wl['metadata']['name']}-{world.check}-1"
    wait_for(lambda: [p for p in world.pods("long") if p.spec.node_name], message="the pod runs")
    world.annotate_request(name, "revoke")
    wait_for(lambda: (w := world.workload("long")) and w["spec"].get("active") is False, message="deactivated")
    wait_for(lambda: world.batch.read_namespaced_job("long", world.namespace).spec.suspend, message="the Job is suspended")
    wait_for(lambda: "AdmissionCheckRejected" in [e.reason for e in world.events(wl["metadata"]["name"])],
             message="the AdmissionCheckRejected Event")


def test_node_selector_from_class_details_steers_the_pods(world_factory: Any) -> None:
    world: World = world_factory(
        ProvisioningRequestConfigBuilder("x", ATOMIC).node_selector_update(NODE_GROUP_LABEL, "NodeGroup")
    )
    world.job("steered", pods=1, seconds=1)
    wait_for(lambda: world.job_succeeded("steered"), message="the Job runs")
    state = world.check_state("steered") or {}
    assert state["podSetUpdates"][0]["nodeSelector"] == {NODE_GROUP_LABEL: "pool-a"}, state
    (pod,) = world.pods("steered")
    assert pod.spec.node_selector == {POOL_LABEL: POOL, NODE_GROUP_LABEL: "pool-a"}


def test_no_pod_set_of_interest_is_admitted_without_a_request(world_factory: Any) -> None:
    world: World = world_factory(ProvisioningRequestConfigBuilder("x", ATOMIC).managed_resources("example.com/gpu"))
    world.job("cpu-only", pods=1)
    wl = wait_for(lambda: (w := world.workload("cpu-only")) and is_admitted(w) and w, message="admitted at once")
    state = world.check_state("cpu-only") or {}
    assert state["state"] == "Ready" and state["message"] == "the provisioning request is not needed", state
    assert world.requests() == {}
    assert "ProvisioningRequestCreated" not in [e.reason for e in world.events(wl["metadata"]["name"])]


def test_deactivating_a_running_job_suspends_it_and_deletes_its_request(world_factory: Any) -> None:
    world: World = world_factory(ProvisioningRequestConfigBuilder("x", ATOMIC))
    world.job("stopped", pods=1, seconds=600)
    wl = wait_for(lambda: (w := world.workload("stopped")) and is_admitted(w) and w, message="admitted")
    request = f"{wl['metadata']['name']}-{world.check}-1"
    assert request in world.requests()
    world.kueue.patch("Workload", wl["metadata"]["name"], {"spec": {"active": False}}, world.namespace)
    wait_for(lambda: world.batch.read_namespaced_job("stopped", world.namespace).spec.suspend, message="suspended")
    wait_for(lambda: request not in world.requests(), message="the request of the evicted workload is deleted")


def test_deleting_the_job_garbage_collects_its_request_and_templates(world_factory: Any) -> None:
    world: World = world_factory(ProvisioningRequestConfigBuilder("x", ATOMIC).parameters(SimBehavior="delay=600"))
    world.job("gone", pods=1)
    wl = wait_for(lambda: world.workload("gone"), message="the Job's workload")
    request = f"{wl['metadata']['name']}-{world.check}-1"
    wait_for(lambda: request in world.requests(), message="requested")
    wait_for(lambda: world.core.list_namespaced_pod_template(world.namespace).items, message="templates made")
    world.batch.delete_namespaced_job("gone", world.namespace, propagation_policy="Background")
    wait_for(lambda: not world.requests(), message="the request goes with its workload")
    wait_for(lambda: not world.core.list_namespaced_pod_template(world.namespace).items, message="and its templates")


def test_a_config_change_replaces_the_pending_request(world_factory: Any, kueue: KueueApi) -> None:
    world: World = world_factory(ProvisioningRequestConfigBuilder("x", ATOMIC).parameters(SimBehavior="delay=600"))
    world.job("reconfigured", pods=1, seconds=1)
    wl = wait_for(lambda: world.workload("reconfigured"), message="the Job's workload")
    request = f"{wl['metadata']['name']}-{world.check}-1"
    old = wait_for(lambda: world.requests().get(request), message="requested")
    kueue.patch("ProvisioningRequestConfig", world.config, {"spec": {"parameters": {"SimBehavior": "eta=1"}}})
    new = wait_for(
        lambda: (r := world.requests().get(request)) and r["metadata"]["uid"] != old["metadata"]["uid"] and r,
        message="the request is made again from the new config",
    )
    assert new["spec"]["parameters"] == {"SimBehavior": "eta=1"}
    wait_for(lambda: world.job_succeeded("reconfigured"), message="the Job runs once provisioned")


def test_removing_the_config_deactivates_the_check_and_deletes_the_request(world_factory: Any, kueue: KueueApi) -> None:
    world: World = world_factory(ProvisioningRequestConfigBuilder("x", ATOMIC).parameters(SimBehavior="delay=600"))
    world.job("orphaned", pods=1)
    wait_for(lambda: world.requests(), message="requested")
    kueue.custom.delete_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "provisioningrequestconfigs", world.config)
    active = wait_for(
        lambda: (c := condition(kueue.get("AdmissionCheck", world.check) or {}, "Active")) and c["status"] == "False" and c,
        message="the check is inactive without its config",
    )
    assert active["reason"] == "BadParametersRef"
    wait_for(lambda: not world.requests(), message="the request is deleted")
    wait_for(lambda: (world.check_state("orphaned") or {}).get("message") == "the check is not active",
             message="the check waits, inactive")


def test_the_queue_dropping_the_check_deletes_the_request_and_admits(world_factory: Any, kueue: KueueApi) -> None:
    world: World = world_factory(ProvisioningRequestConfigBuilder("x", ATOMIC).parameters(SimBehavior="delay=600"))
    world.job("unchecked", pods=1)
    wait_for(lambda: world.requests(), message="requested")
    kueue.patch("ClusterQueue", world.cluster_queue, {"spec": {"admissionChecks": None}})
    wait_for(lambda: (w := world.workload("unchecked")) and is_admitted(w), message="admitted without the check")
    wait_for(lambda: not world.requests(), message="the request is deleted")


@pytest.mark.needs_local_cluster
def test_a_killed_controller_makes_exactly_one_request_per_attempt(world_factory: Any, controller: ControllerHandle) -> None:
    world: World = world_factory(ProvisioningRequestConfigBuilder("x", ATOMIC).parameters(SimBehavior="delay=8"))
    world.job("survivor", pods=1, seconds=1)
    wl = wait_for(lambda: world.workload("survivor"), message="the Job's workload")
    request = f"{wl['metadata']['name']}-{world.check}-1"
    before = wait_for(lambda: world.requests().get(request), message="requested")

    def created() -> list[k8s.CoreV1Event]:
        return [e for e in world.events(wl["metadata"]["name"]) if e.reason == "ProvisioningRequestCreated"]

    # Events are sent from a queue after the write they report: a kill before the queue drains loses
    # that one (best effort, as client-go's recorder). Kill only once it is on the server, so the
    # count below tells whether the restarted controller announced a second creation.
    wait_for(created, message="the creation's Event is sent")
    controller.kill()
    controller.start()
    uid = before["metadata"]["uid"]
    holds_for(
        lambda: {n: r["metadata"]["uid"] for n, r in world.requests().items()} == {request: uid},
        3,
        "the restarted controller keeps the one request it made (no duplicate, no replacement)",
    )
    wait_for(lambda: world.job_succeeded("survivor"), message="the Job runs after the restart")
    events = created()
    assert len(events) == 1 and (events[0].count or 1) == 1, events


def test_a_booking_expiring_after_admission_changes_nothing(world_factory: Any) -> None:
    world: World = world_factory(ProvisioningRequestConfigBuilder("x", ATOMIC))
    world.job("booked", pods=1, seconds=600)
    wl = wait_for(lambda: (w := world.workload("booked")) and is_admitted(w) and w, message="admitted")
    request = f"{wl['metadata']['name']}-{world.check}-1"
    wait_for(lambda: [p for p in world.pods("booked") if p.spec.node_name], message="the pod runs")
    world.annotate_request(request, "expire-booking")
    wait_for(
        lambda: (condition(world.requests().get(request) or {}, "BookingExpired") or {}).get("status") == "True",
        message="the booking expires",
    )
    holds_for(
        lambda: (world.check_state("booked") or {}).get("state") == "Ready"
        and is_admitted(world.workload("booked") or {})
        and list(world.requests()) == [request],
        3,
        "an expired booking of an admitted workload is ignored",
    )


def test_check_capacity_is_answered_from_the_existing_nodes(world_factory: Any, cluster: Any) -> None:
    pool = unique("existing")
    cluster.create_nodes(pool, 1, labels={POOL_LABEL: POOL})
    try:
        world: World = world_factory(ProvisioningRequestConfigBuilder("x", "check-capacity.autoscaling.x-k8s.io"))
        world.job("fits", pods=1, seconds=1)
        wait_for(lambda: world.job_succeeded("fits"), message="runs on the capacity that was there")
        (pod,) = world.pods("fits")
        assert pod.spec.node_name.startswith(pool), pod.spec.node_name
        assert pod.metadata.annotations["autoscaling.x-k8s.io/provisioning-class-name"] == (
            "check-capacity.autoscaling.x-k8s.io"
        )
    finally:
        cluster.delete_nodes(pool)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [("IdenticalPodTemplates", [("a", 3), ("c", 1)]), ("IdenticalWorkloadSchedulingRequirements", [("a", 4)])],
)
def test_merge_policies_merge_pod_sets_of_a_workload(
    world_factory: Any, kueue: KueueApi, policy: str, expected: list[tuple[str, int]]
) -> None:
    world: World = world_factory(
        ProvisioningRequestConfigBuilder("x", ATOMIC).merge_policy(policy).parameters(SimBehavior="delay=600")
    )
    # No job kind here has several pod sets, so the Workload is created directly: a and b are
    # identical, c differs only in its image.
    wl = WorkloadBuilder("multi", world.namespace).queue("lq").podset("a", count=1, cpu="1").podset(
        "b", count=2, cpu="1"
    ).podset("c", count=1, cpu="1").obj()
    for key in ("uid", "creationTimestamp", "generation"):
        wl["metadata"].pop(key, None)
    wl["spec"]["podSets"][2]["template"]["spec"]["containers"][0]["image"] = "registry.k8s.io/pause:3.10"
    kueue.create(wl)
    request = wait_for(lambda: world.requests().get(f"multi-{world.check}-1"), message="requested")
    got = [(ps["podTemplateRef"]["name"].rsplit("-", 1)[1], ps["count"]) for ps in request["spec"]["podSets"]]
    assert got == expected


def test_a_provisioned_job_preempted_goes_back_to_suspended_and_loses_its_request(
    world_factory: Any, kueue: KueueApi
) -> None:
    world: World = world_factory(ProvisioningRequestConfigBuilder("x", ATOMIC), cpu="1", within_cluster_queue="LowerPriority")
    low, high = unique("low"), unique("high")
    kueue.create(WorkloadPriorityClassBuilder(low, 10).obj())
    kueue.create(WorkloadPriorityClassBuilder(high, 1000).obj())
    world.job("low", pods=1, seconds=600, priority_class=low)
    low_wl = wait_for(lambda: (w := world.workload("low")) and is_admitted(w) and w, message="low admitted")
    low_request = f"{low_wl['metadata']['name']}-{world.check}-1"
    first_uid = world.requests()[low_request]["metadata"]["uid"]
    wait_for(lambda: [p for p in world.pods("low") if p.spec.node_name], message="low runs")

    world.job("high", pods=1, seconds=1, priority_class=high)
    wait_for(lambda: world.batch.read_namespaced_job("low", world.namespace).spec.suspend, message="low suspended")
    wait_for(lambda: low_request not in world.requests(), message="the preempted workload's request is deleted")
    evicted = condition(world.workload("low") or {}, "Evicted") or {}
    assert evicted.get("reason") == "Preempted", evicted
    wait_for(lambda: world.job_succeeded("high"), message="high is provisioned and runs")
    # low comes back with a fresh request once high is done (attempt 1 again: a preemption is not a
    # failed attempt, so retryCount stays 0)
    wait_for(lambda: (w := world.workload("low")) and is_admitted(w), message="low admitted again")
    again = world.requests()[low_request]
    assert again["metadata"]["uid"] != first_uid


def test_a_flavor_the_autoscaler_cannot_provision_falls_back_to_the_next(
    world_factory: Any, kueue: KueueApi, namespace: str
) -> None:
    """With a ResourceFlavor fallback rule (docs/design/fallbacks.md): the request for Spot fails
    for good (no node group has Spot's label, no retries), the check is Rejected, and the workload
    is requeued without Spot; On-demand is provisioned and the Job runs there."""
    world: World = world_factory(ProvisioningRequestConfigBuilder("x", ATOMIC).retry(limit=0))
    spot, on_demand = unique("spot"), unique("on-demand")
    kueue.create(ResourceFlavorBuilder(spot).node_labels(**{POOL_LABEL: "no-such-pool"}).obj())
    kueue.create(ResourceFlavorBuilder(on_demand).node_labels(**{POOL_LABEL: POOL}).obj())
    cq = unique("cq")
    kueue.create(
        SeedClusterQueueBuilder(cq).flavor(spot, cpu="4").flavor(on_demand, cpu="4")
        .admission_checks(world.check).fallback().fallback_rule(spot, "AdmissionCheckRejected").obj()
    )
    kueue.create(LocalQueueBuilder("fallback", namespace, cq).obj())
    job = JobBuilder("fallback", namespace).queue("fallback").requests(cpu="1").run_seconds(1)
    world.batch.create_namespaced_job(namespace, job.obj())
    wait_for(lambda: world.job_succeeded("fallback"), message="the Job runs on On-demand's new nodes")
    wl = world.workload("fallback") or {}
    flavors = {f for a in wl["status"]["admission"]["podSetAssignments"] for f in a["flavors"].values()}
    assert flavors == {on_demand}

    def rejected_then_ready() -> bool:
        transitions = [str(e.message) for e in world.events(wl["metadata"]["name"])
                       if e.reason == "AdmissionCheckUpdated"]
        return any("to Rejected" in m for m in transitions) and any("to Ready" in m for m in transitions)

    wait_for(rejected_then_ready, message="AdmissionCheckUpdated Events to Rejected and to Ready")
