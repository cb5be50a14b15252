"""The visibility API's answers: routes, paging options, authorization, leader-only reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.core.engine_reads import EngineReads, NotLeading
from controller.engine import Engine
from controller.visibility import api
from controller.visibility.auth import Authorizer, UserInfo
from controller.visibility.service import VisibilityService
from tests.builders import FungibleClusterQueueBuilder, LocalQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World

ALICE = UserInfo("alice", ("system:authenticated",))
CQ_PATH = "/apis/visibility.kueue.x-k8s.io/v1beta1/clusterqueues/cq/pendingworkloads"
LQ_PATH = "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/ns/localqueues/lq/pendingworkloads"


class FakeReviews:
    """The apiserver's SubjectAccessReview endpoint: allows what ``allow`` says."""

    def __init__(self, allow: Callable[[dict[str, Any]], bool]) -> None:
        self.allow = allow
        self.specs: list[dict[str, Any]] = []

    def create(self, res: Any, obj: dict[str, Any]) -> dict[str, Any]:
        self.specs.append(obj["spec"])
        return {"status": {"allowed": self.allow(obj["spec"])}}


class InlineReads:
    """EngineReads served at once on the caller's thread (the loop's part, without the loop)."""

    def __init__(self, engine: Engine | None) -> None:
        self.engine = engine

    def submit(self, read: Callable[[Engine], Any], timeout: float = 5.0) -> Any:
        if self.engine is None:
            raise NotLeading()
        return read(self.engine)


def _world() -> World:
    world = World().flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="0").obj(), lq="lq")
    world.engine.upsert_local_queue(LocalQueueBuilder("other", "ns", "cq").obj())
    world.add(PlacementWorkloadBuilder("w1", "ns").queue("lq").podset(cpu="1").at(0).obj())
    world.add(PlacementWorkloadBuilder("w2", "ns").queue("other").podset(cpu="1").at(1).obj())
    world.add(PlacementWorkloadBuilder("w3", "ns").queue("lq").podset(cpu="1").priority(5).at(2).obj())
    return world


def _service(world: World | None, allow: Callable[[dict[str, Any]], bool] = lambda spec: True) -> tuple[VisibilityService, FakeReviews]:
    reviews = FakeReviews(allow)
    objects = world.objects if world is not None else {}
    service = VisibilityService(InlineReads(world.engine if world else None), Authorizer(reviews), objects.get)
    return service, reviews


def test_cluster_queue_view_is_kueues_summary() -> None:
    world = _world()
    service, reviews = _service(world)
    code, body = service.handle(CQ_PATH, {}, ALICE)
    assert code == 200
    assert body["kind"] == "PendingWorkloadsSummary"
    assert body["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta1"
    assert [(i["metadata"]["name"], i["localQueueName"], i["priority"], i["positionInClusterQueue"],
             i["positionInLocalQueue"]) for i in body["items"]] == [
        ("w3", "lq", 5, 0, 0), ("w1", "lq", 0, 1, 1), ("w2", "other", 0, 2, 0)]
    assert body["items"][0]["metadata"]["namespace"] == "ns"
    assert body["items"][0]["metadata"]["creationTimestamp"]  # from the Workload object
    assert reviews.specs == [{
        "user": "alice", "groups": ["system:authenticated"],
        "resourceAttributes": {"group": "visibility.kueue.x-k8s.io", "version": "v1beta1",
                               "resource": "clusterqueues", "subresource": "pendingworkloads", "name": "cq",
                               "verb": "get"},
    }]
    code, body = service.handle(CQ_PATH, {"offset": ["1"], "limit": ["1"]}, ALICE)
    assert [i["metadata"]["name"] for i in body["items"]] == ["w1"]


def test_local_queue_view_pages_within_the_local_queue() -> None:
    service, reviews = _service(_world())
    code, body = service.handle(LQ_PATH, {"offset": ["1"]}, ALICE)
    assert code == 200 and body["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
    assert [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in body["items"]] == [
        ("w1", 1, 1)]
    assert reviews.specs[0]["resourceAttributes"]["namespace"] == "ns"
    assert reviews.specs[0]["resourceAttributes"]["resource"] == "localqueues"


def test_errors_as_the_apiserver_words_them() -> None:
    world = _world()
    service, _ = _service(world, allow=lambda spec: spec["resourceAttributes"]["resource"] == "localqueues")
    code, body = service.handle(CQ_PATH, {}, ALICE)
    assert code == 403 and body["reason"] == "Forbidden"
    assert body["message"] == (
        'clusterqueues.visibility.kueue.x-k8s.io "cq" is forbidden: User "alice" cannot get resource '
        '"clusterqueues/pendingworkloads" in API group "visibility.kueue.x-k8s.io" at the cluster scope')
    assert service.handle(CQ_PATH, {}, None)[0] == 401
    assert service.handle("/apis/visibility.kueue.x-k8s.io/v1beta1/clusterqueues/cq", {}, ALICE)[0] == 404
    code, body = service.handle(LQ_PATH.replace("/lq/", "/missing/"), {}, ALICE)
    assert code == 404 and body["message"] == 'localqueue.visibility.kueue.x-k8s.io "missing" not found'
    assert service.handle(LQ_PATH, {"limit": ["ten"]}, ALICE)[0] == 400
    assert service.handle(LQ_PATH, {"offset": ["-1"]}, ALICE)[0] == 400


def test_discovery_needs_authentication_only() -> None:
    service, reviews = _service(None, allow=lambda spec: False)
    code, body = service.handle("/apis/visibility.kueue.x-k8s.io/v1beta1", {}, ALICE)
    assert code == 200 and body["kind"] == "APIResourceList"
    assert {r["name"] for r in body["resources"]} == {
        "clusterqueues", "clusterqueues/pendingworkloads", "localqueues", "localqueues/pendingworkloads",
        "workloads", "workloads/explain"}
    assert service.handle("/apis/visibility.kueue.x-k8s.io", {}, ALICE)[1]["preferredVersion"]["version"] == "v1beta2"
    assert service.handle("/apis", {}, ALICE)[0] == 200
    assert reviews.specs == []


def test_a_replica_that_does_not_lead_answers_503() -> None:
    service, _ = _service(None)
    code, body = service.handle(CQ_PATH, {}, ALICE)
    assert code == 503 and body["reason"] == "ServiceUnavailable" and "not the leader" in body["message"]


def test_default_limit_is_kueues() -> None:
    assert api.page_options({}) == (0, 1000)
    assert api.page_options({"limit": ["0"]}) == (0, 1000)
    assert api.page_options({"offset": ["3"], "limit": ["7"]}) == (3, 7)


def test_authorizer_caches_answers_for_a_few_seconds() -> None:
    now = [0.0]
    reviews = FakeReviews(lambda spec: True)
    authorizer = Authorizer(reviews, clock=lambda: now[0])
    request = api.route(CQ_PATH)
    assert request is not None
    assert authorizer.allowed(ALICE, request) and authorizer.allowed(ALICE, request)
    assert authorizer.reviews == 1
    now[0] = 11.0
    assert authorizer.allowed(ALICE, request)
    assert authorizer.reviews == 2


def test_engine_reads_serve_on_the_loop_thread_and_refuse_without_an_engine() -> None:
    import threading

    woken = threading.Event()
    reads = EngineReads(woken.set)
    try:
        reads.submit(lambda engine: 1, timeout=0.1)
        raise AssertionError("expected NotLeading")
    except NotLeading:
        pass
    reads.open()
    engine = _world().engine
    result: list[Any] = []
    reader = threading.Thread(target=lambda: result.append(reads.submit(lambda e: e.pending_count("cq"), 5)))
    reader.start()
    assert woken.wait(5)
    reads.serve(engine)
    reader.join(5)
    assert result == [3]
    reads.close()
    try:
        reads.submit(lambda engine: 1, timeout=0.1)
        raise AssertionError("expected NotLeading")
    except NotLeading:
        pass


def test_explain_answers_with_the_dry_run_and_is_authorized_as_reading_the_workload() -> None:
    world = _world()
    service, reviews = _service(world)
    path = "/apis/visibility.kueue.x-k8s.io/v1beta1/namespaces/ns/workloads/w1/explain"
    code, body = service.handle(path, {}, ALICE)
    assert code == 200 and body["kind"] == "WorkloadExplanation"
    assert (body["state"], body["clusterQueue"], body["positionInClusterQueue"], body["ahead"]["count"]) == (
        "Pending", "cq", 1, 1)
    assert body["ahead"]["first"] == [{"namespace": "ns", "name": "w3"}]
    assert body["resources"][0]["missing"] == "1" and body["suggestion"].startswith("free 1 of cpu in flavor default")
    assert reviews.specs[-1]["resourceAttributes"] == {
        "group": "kueue.x-k8s.io", "version": "v1beta1", "resource": "workloads", "name": "w1", "namespace": "ns",
        "verb": "get"}
    assert service.handle(path.replace("/w1/", "/nope/"), {}, ALICE)[0] == 404


def test_explain_adds_the_stored_check_states_and_a_parents_options() -> None:
    world = World().flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="2").admission_checks("prov").obj(), lq="lq")
    world.add(PlacementWorkloadBuilder("held", "ns").queue("lq").podset(cpu="1")
              .reserved("cq", {"cpu": "default"}, {"cpu": "1"}).check("prov", "Pending", message="ETA 5m").obj())
    parent = PlacementWorkloadBuilder("job", "ns").queue("lq").podset(cpu="1").obj()
    parent["metadata"]["labels"] = {"kueue.x-k8s.io/concurrent-admission-parent": "true"}
    parent["status"] = {"options": [{"name": "job-option-default", "resourceFlavors": ["default"],
                                     "status": "Pending", "message": "Created"}]}
    world.add(parent)
    world.add(PlacementWorkloadBuilder("job-option-default", "ns").queue("lq").podset(cpu="1").obj())
    service, _ = _service(world)
    base = "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/ns/workloads"
    code, body = service.handle(f"{base}/held/explain", {}, ALICE)
    assert code == 200 and (body["state"], body["admitted"], body["admissionChecks"]) == ("HoldsQuota", False, ["prov"])
    assert body["admissionCheckStates"] == [
        {"name": "prov", "state": "Pending", "message": "ETA 5m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    assert "waits for admission check(s): prov is Pending (ETA 5m)" in body["suggestion"]
    code, body = service.handle(f"{base}/job/explain", {}, ALICE)
    assert code == 200 and body["state"] == "Parent"
    assert body["options"] == [{"name": "job-option-default", "resourceFlavors": ["default"], "status": "Pending",
                                "message": "Created", "state": "Pending", "outcome": "Fits",
                                "positionInClusterQueue": 0}]


def test_explain_on_a_multikueue_manager_adds_the_dispatch_loops_record_of_the_workers() -> None:
    from controller.multikueue.status import DispatchState, DispatchStates, WorkerState

    world = World().flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="2").admission_checks("mk").obj(), lq="lq")
    world.add(PlacementWorkloadBuilder("held", "ns").queue("lq").podset(cpu="1")
              .reserved("cq", {"cpu": "default"}, {"cpu": "1"}).check("mk", "Pending").obj())
    states = DispatchStates()
    states.record("ns/held", DispatchState("mk", "AllAtOnce", "", (
        WorkerState("worker1", True, True, True, quota_reserved=True), WorkerState("worker2", False, True, None)),
        "2026-01-01T00:00:00Z"))
    service = VisibilityService(InlineReads(world.engine), Authorizer(FakeReviews(lambda spec: True)),
                                world.objects.get, states.get)
    base = "/apis/visibility.kueue.x-k8s.io/v1beta1/namespaces/ns/workloads"
    code, body = service.handle(f"{base}/held/explain", {}, ALICE)
    assert code == 200
    assert body["multiKueue"] == {
        "admissionCheck": "mk", "dispatcher": "AllAtOnce", "clusterName": "", "observedAt": "2026-01-01T00:00:00Z",
        "workers": [{"name": "worker1", "active": True, "nominated": True, "copy": True, "quotaReserved": True,
                     "admitted": False},
                    {"name": "worker2", "active": False, "nominated": True, "copy": None, "quotaReserved": False,
                     "admitted": False}]}
    assert "waits for admission check(s): mk is Pending" in body["suggestion"]
    assert "worker1 reserved quota for its copy; worker2 is inactive (nominated)" in body["suggestion"]
    # A workload the loop has no record of (not MultiKueue's, or not looked at yet) has no section.
    world.add(PlacementWorkloadBuilder("other", "ns").queue("lq").podset(cpu="1").obj())
    code, body = service.handle(f"{base}/other/explain", {}, ALICE)
    assert code == 200 and "multiKueue" not in body


def test_explain_names_the_workloads_whose_pods_block_admission() -> None:
    """The service asks the scheduler loop (inside the read, on its thread) what blockAdmission
    waits for; the answer lists them and the suggestion says the workload is next only then."""
    world = World().flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="2").obj(), lq="lq")
    world.add(PlacementWorkloadBuilder("running", "ns").queue("lq").podset(cpu="1")
              .reserved("cq", {"cpu": "default"}, {"cpu": "1"}).admitted().obj())
    world.add(PlacementWorkloadBuilder("next", "ns").queue("lq").podset(cpu="1").obj())
    waiting: list[str] = ["ns/running"]
    service = VisibilityService(InlineReads(world.engine), Authorizer(FakeReviews(lambda spec: True)),
                                world.objects.get, admission_blocked_by=lambda: waiting)
    path = "/apis/visibility.kueue.x-k8s.io/v1beta1/namespaces/ns/workloads/next/explain"
    code, body = service.handle(path, {}, ALICE)
    assert code == 200 and body["admissionBlockedBy"] == [{"namespace": "ns", "name": "running"}]
    assert body["dryRun"]["outcome"] == "Fits" and body["positionInClusterQueue"] == 0
    assert body["suggestion"].startswith("it is next: it fits now and will be admitted once the pods of ns/running")
    waiting.clear()  # its pods are ready
    code, body = service.handle(path, {}, ALICE)
    assert "admissionBlockedBy" not in body
    assert body["suggestion"] == "it is next: it fits now and will be admitted by the next scheduling cycle"
