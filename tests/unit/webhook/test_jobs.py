"""batch/v1 Job hooks: suspension, queue defaulting, queue immutability and the never-fits warning."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from tests.builders import (
    AdmissionCheckBuilder,
    ClusterQueueBuilder,
    JobBuilder,
    LocalQueueBuilder,
    WorkloadPriorityClassBuilder,
)
from tests.unit.webhook.conftest import post
from tests.unit.webhook.fakes import FakeClusterState
from tests.unit.webhook.reviews import decoded_patch, review
from webhook.app import create_app
from webhook.handlers import WebhookContext, build_endpoints
from webhook.jobs import JobPolicy, max_capacity, pod_requests
from webhook.patch import apply_patch

MUTATE = "/mutate-batch-v1-job"
VALIDATE = "/validate-batch-v1-job"
QUEUE = "kueue.x-k8s.io/queue-name"


def mutate(client: FlaskClient, job: dict) -> dict:
    body = post(client, MUTATE, review("Job", job))
    assert body["response"]["allowed"] is True
    return apply_patch(job, decoded_patch(body)) if "patch" in body["response"] else job


def test_queued_job_is_suspended(client: FlaskClient) -> None:
    job = JobBuilder("j", "ns").queue("team").obj()
    assert mutate(client, job)["spec"]["suspend"] is True


def test_already_suspended_job_gets_no_patch(client: FlaskClient) -> None:
    job = JobBuilder("j", "ns").queue("team").suspend(True).obj()
    assert "patch" not in post(client, MUTATE, review("Job", job))["response"]


def test_unqueued_job_is_left_alone(client: FlaskClient) -> None:
    job = JobBuilder("j", "ns").obj()
    assert "patch" not in post(client, MUTATE, review("Job", job))["response"]


def test_default_local_queue_fills_in_the_queue_label(client: FlaskClient, state: FakeClusterState) -> None:
    state.add(LocalQueueBuilder("default", "ns", "cq").obj())
    job = JobBuilder("j", "ns").obj()
    assert "labels" not in job["metadata"]
    body = post(client, MUTATE, review("Job", job))
    assert decoded_patch(body) == [
        {"op": "add", "path": "/metadata/labels", "value": {}},
        {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "default"},
        {"op": "add", "path": "/spec/suspend", "value": True},
    ]


def test_default_queue_is_not_applied_in_excluded_namespaces(state: FakeClusterState) -> None:
    state.add(LocalQueueBuilder("default", "kube-system", "cq").obj())
    policy = JobPolicy(False, {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]})
    app = create_app(build_endpoints(WebhookContext(state, policy, "c", lambda kind, obj: [])))
    body = post(app.test_client(), MUTATE, review("Job", JobBuilder("j", "kube-system").obj()))
    assert "patch" not in body["response"]


@pytest.mark.parametrize(("namespace", "suspended"), [("team-ns", True), ("kube-system", False)])
def test_manage_jobs_without_queue_name_follows_namespace_selector(
    state: FakeClusterState, namespace: str, suspended: bool
) -> None:
    policy = JobPolicy(True, {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]})
    app = create_app(build_endpoints(WebhookContext(state, policy, "c", lambda kind, obj: [])))
    job = JobBuilder("j", namespace).obj()
    body = post(app.test_client(), MUTATE, review("Job", job))
    patched = apply_patch(job, decoded_patch(body)) if "patch" in body["response"] else job
    assert patched["spec"].get("suspend", False) is suspended


def test_job_owned_by_a_queued_job_is_left_alone(client: FlaskClient, state: FakeClusterState) -> None:
    state.add(JobBuilder("parent", "ns").queue("team").obj())
    child = JobBuilder("child", "ns").queue("team").owner("Job", "parent", "uid-1").obj()
    child["metadata"]["ownerReferences"][0]["controller"] = True
    assert "patch" not in post(client, MUTATE, review("Job", child))["response"]


def test_job_owned_by_a_jobset_is_left_alone(client: FlaskClient) -> None:
    child = JobBuilder("child", "ns").queue("team").owner("JobSet", "js", "uid-2", api_version="jobset.x-k8s.io/v1alpha2").obj()
    child["metadata"]["ownerReferences"][0]["controller"] = True
    assert "patch" not in post(client, MUTATE, review("Job", child))["response"]


def test_job_owned_by_a_cronjob_is_queued(client: FlaskClient) -> None:
    child = JobBuilder("child", "ns").queue("team").owner("CronJob", "cron", "uid-3").obj()
    child["metadata"]["ownerReferences"][0]["controller"] = True
    assert mutate(client, child)["spec"]["suspend"] is True


def test_mutation_is_idempotent(client: FlaskClient, state: FakeClusterState) -> None:
    state.add(LocalQueueBuilder("default", "ns", "cq").obj())
    once = mutate(client, JobBuilder("j", "ns").obj())
    assert "patch" not in post(client, MUTATE, review("Job", once))["response"]


# --- validation ---------------------------------------------------------------------------------

def validate(client: FlaskClient, job: dict, old: dict | None = None) -> dict:
    operation = "UPDATE" if old is not None else "CREATE"
    return post(client, VALIDATE, review("Job", job, old=old, operation=operation))["response"]


def test_queue_name_change_denied_while_running(client: FlaskClient) -> None:
    old = JobBuilder("j", "ns").queue("a").suspend(False).obj()
    new = JobBuilder("j", "ns").queue("b").suspend(False).obj()
    response = validate(client, new, old)
    assert response["allowed"] is False
    assert response["status"]["message"] == (
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "b": field is '
        "immutable while the job is running (not suspended)")


def test_queue_name_change_allowed_while_suspended(client: FlaskClient) -> None:
    old = JobBuilder("j", "ns").queue("a").suspend(True).obj()
    new = JobBuilder("j", "ns").queue("b").suspend(True).obj()
    assert validate(client, new, old)["allowed"] is True


def test_removing_queue_name_denied_where_a_default_queue_exists(client: FlaskClient, state: FakeClusterState) -> None:
    state.add(LocalQueueBuilder("default", "ns", "cq").obj())
    old = JobBuilder("j", "ns").queue("a").suspend(True).obj()
    new = JobBuilder("j", "ns").suspend(True).obj()
    new["metadata"]["labels"] = {}
    response = validate(client, new, old)
    assert "queue-name must not be empty in namespace with default queue" in response["status"]["message"]


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ({QUEUE: "Team_A"}, 'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "Team_A": a lowercase RFC '
                            "1123 subdomain"),
        ({QUEUE: "a", "kueue.x-k8s.io/max-exec-time-seconds": "0"},
         'metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: "0": should be greater than 0'),
    ],
)
def test_label_formats_on_create(client: FlaskClient, labels: dict, message: str) -> None:
    job = JobBuilder("j", "ns").obj()
    job["metadata"]["labels"] = labels
    response = validate(client, job)
    assert response["allowed"] is False
    assert message in response["status"]["message"]


def test_priority_class_label_cannot_be_removed(client: FlaskClient) -> None:
    old = JobBuilder("j", "ns").queue("a").workload_priority_class("high").obj()
    new = JobBuilder("j", "ns").queue("a").obj()
    assert "the priority class label cannot be removed" in validate(client, new, old)["status"]["message"]


# --- never fits ----------------------------------------------------------------------------------

def test_warning_when_job_exceeds_nominal_quota(client: FlaskClient, state: FakeClusterState) -> None:
    state.add(LocalQueueBuilder("lq", "ns", "cq").obj()).add(ClusterQueueBuilder("cq").flavor("a", cpu="2").flavor("b", cpu="2").obj())
    job = JobBuilder("j", "ns").queue("lq").parallelism(5).completions(5).requests(cpu="1").obj()
    response = validate(client, job)
    assert response["allowed"] is True
    assert response["warnings"] == [
        'this job requests 5 cpu in total but ClusterQueue "cq" can provide at most 4 (nominal quota plus '
        "borrowing); it can never be admitted"
    ]
    fits = JobBuilder("j", "ns").queue("lq").parallelism(4).completions(4).requests(cpu="1").obj()
    assert "warnings" not in validate(client, fits)


def test_warning_for_resource_the_queue_does_not_cover(client: FlaskClient, state: FakeClusterState) -> None:
    state.add(LocalQueueBuilder("lq", "ns", "cq").obj()).add(ClusterQueueBuilder("cq").flavor("a", cpu="8").obj())
    job = JobBuilder("j", "ns").queue("lq").requests(cpu="1", **{"nvidia.com/gpu": "1"}).obj()
    assert validate(client, job)["warnings"] == [
        'resource "nvidia.com/gpu" is not covered by ClusterQueue "cq"; this job can never be admitted'
    ]


def test_capacity_counts_what_the_cohort_can_lend(state: FakeClusterState) -> None:
    cq = ClusterQueueBuilder("cq").cohort("co").flavor("a", cpu="2", borrowing_limit={"cpu": "3"}).obj()
    state.add(cq)
    state.add(ClusterQueueBuilder("other").cohort("co").flavor("a", cpu="10", lending_limit={"cpu": "1"}).obj())
    assert max_capacity(cq, state) == {"cpu": 3}  # 2 nominal + 1 lendable (borrowing limit 3 not reached)


def test_capacity_unknown_under_a_parent_cohort(state: FakeClusterState) -> None:
    cq = ClusterQueueBuilder("cq").cohort("child").flavor("a", cpu="2").obj()
    state.add({"kind": "Cohort", "metadata": {"name": "child"}, "spec": {"parentName": "root"}})
    assert max_capacity(cq, state) is None


def test_pod_requests_take_limits_init_containers_and_overhead() -> None:
    spec = {
        "containers": [{"resources": {"limits": {"cpu": "2"}}}, {"resources": {"requests": {"cpu": "500m"}}}],
        "initContainers": [{"resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}],
        "overhead": {"cpu": "100m"},
    }
    requests = pod_requests(spec)
    assert requests["cpu"] * 1000 == 3100
    assert requests["memory"] == 1024**3


def test_default_priority_class_is_applied_to_queued_jobs(client: FlaskClient, state: FakeClusterState) -> None:
    state.add(WorkloadPriorityClassBuilder("default", 100).obj())
    queued = mutate(client, JobBuilder("j", "ns").queue("team").obj())
    assert queued["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "default"
    explicit = mutate(client, JobBuilder("j", "ns").queue("team").workload_priority_class("high").obj())
    assert explicit["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "high"
    unqueued = mutate(client, JobBuilder("j", "ns").obj())
    assert "labels" not in unqueued["metadata"]


def test_jobs_of_a_multikueue_queue_are_handed_to_multikueue(client: FlaskClient, state: FakeClusterState) -> None:
    state.add(LocalQueueBuilder("remote", "ns", "manager").obj())
    state.add(ClusterQueueBuilder("manager").flavor("a", cpu="8").admission_check_strategy("mk").obj())
    state.add(AdmissionCheckBuilder("mk", controller_name="kueue.x-k8s.io/multikueue").obj())
    state.add(LocalQueueBuilder("local", "ns", "plain").obj())
    state.add(ClusterQueueBuilder("plain").flavor("a", cpu="8").admission_checks("prov").obj())
    state.add(AdmissionCheckBuilder("prov", controller_name="kueue.x-k8s.io/provisioning-request").obj())
    assert mutate(client, JobBuilder("j", "ns").queue("remote").obj())["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert "managedBy" not in mutate(client, JobBuilder("j", "ns").queue("local").obj())["spec"]
    custom = JobBuilder("j", "ns").queue("remote").obj()
    custom["spec"]["managedBy"] = "example.com/other"
    assert mutate(client, custom)["spec"]["managedBy"] == "example.com/other"


GATES = "kueue.x-k8s.io/admission-gated-by"


@pytest.mark.parametrize(
    ("gates", "message"),
    [
        ("example.com/a,,example.com/b", "gate names must not be empty"),
        ("example.com/a,example.com/a", 'gate "example.com/a" is listed twice'),
        ("my-gate", 'gate "my-gate" must be a domain-prefixed path such as example.com/my-gate'),
        ("example.com/" + "g" * 60, "must be no more than 63 characters"),
    ],
)
def test_admission_gate_format(client: FlaskClient, gates: str, message: str) -> None:
    job = JobBuilder("j", "ns").queue("q").annotation(GATES, gates).obj()
    response = validate(client, job)
    assert response["allowed"] is False
    assert f"metadata.annotations[{GATES}]: Invalid value: " in response["status"]["message"]
    assert message in response["status"]["message"]


def test_admission_gates_can_only_be_removed(client: FlaskClient) -> None:
    two = JobBuilder("j", "ns").queue("q").suspend().annotation(GATES, "example.com/a,example.com/b").obj()
    one = JobBuilder("j", "ns").queue("q").suspend().annotation(GATES, "example.com/a").obj()
    none = JobBuilder("j", "ns").queue("q").suspend().obj()
    assert validate(client, one, two)["allowed"] is True
    assert validate(client, none, one)["allowed"] is True
    added = validate(client, two, one)["status"]["message"]
    assert f"metadata.annotations[{GATES}]: Forbidden: admission gates can only be removed, not added: example.com/b" in added
    late = validate(client, one, none)["status"]["message"]
    assert "admission gates cannot be added after creation" in late


def test_warning_when_the_queue_does_not_exist(client: FlaskClient, state: FakeClusterState) -> None:
    job = JobBuilder("j", "ns").queue("nowhere").obj()
    assert validate(client, job)["warnings"] == [
        'LocalQueue "nowhere" does not exist in namespace "ns"; the job stays suspended until it does'
    ]
    state.add(LocalQueueBuilder("nowhere", "ns", "gone").obj())
    assert validate(client, job)["warnings"] == [
        'ClusterQueue "gone" of LocalQueue "nowhere" does not exist; the job stays suspended until it does'
    ]
