"""Job → Workload: the object Kueue's job framework would create, and when it goes stale."""

from __future__ import annotations

import pytest

from controller.jobs.compose import ComposeError, compose_workload, job_podsets, owned_by, podsets_match
from controller.jobs.priority import SOURCE_WORKLOAD_PRIORITY_CLASS, Priority
from controller.jobs.template import encode_snapshot
from pykueue.api.constants import (
    JOB_UID_LABEL,
    ORIGINAL_TEMPLATE_ANNOTATION,
    PODSET_LABEL,
    RESOURCE_IN_USE_FINALIZER,
)
from tests.builders import JobBuilder

UID = "0b5a2e3c-5c1e-4a39-9a3b-2b6a6f7e9d10"


def base_job() -> JobBuilder:
    return (
        JobBuilder("sample-job", "team-a")
        .uid(UID)
        .queue("lq")
        .parallelism(3)
        .completions(2)
        .requests(cpu="1")
    )


def test_workload_identity_owner_and_finalizer() -> None:
    wl = compose_workload(base_job().obj(), queue_name="lq", priority=Priority(0))
    meta = wl["metadata"]
    assert wl["apiVersion"] == "kueue.x-k8s.io/v1beta1" and wl["kind"] == "Workload"
    assert meta["name"] == "job-sample-job-06f29"
    assert meta["namespace"] == "team-a"
    assert meta["labels"] == {JOB_UID_LABEL: UID}
    assert meta["finalizers"] == [RESOURCE_IN_USE_FINALIZER]
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "sample-job",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_spec_from_job() -> None:
    job = base_job().label("kueue.x-k8s.io/max-exec-time-seconds", "600").obj()
    wl = compose_workload(
        job, queue_name="lq", priority=Priority(100, "high", SOURCE_WORKLOAD_PRIORITY_CLASS)
    )
    spec = wl["spec"]
    assert spec["queueName"] == "lq"
    assert spec["active"] is True
    assert spec["priority"] == 100
    assert spec["priorityClassName"] == "high"
    assert spec["priorityClassSource"] == SOURCE_WORKLOAD_PRIORITY_CLASS
    assert spec["maximumExecutionTimeSeconds"] == 600
    [podset] = spec["podSets"]
    assert podset["name"] == "main"
    assert podset["count"] == 2  # parallelism 3 capped by completions 2
    assert podset["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}


def test_no_class_means_no_class_fields() -> None:
    spec = compose_workload(base_job().obj(), queue_name="lq", priority=Priority(0))["spec"]
    assert spec["priority"] == 0
    assert "priorityClassName" not in spec and "priorityClassSource" not in spec


def test_only_provreq_annotations_are_copied() -> None:
    job = (
        base_job().annotation("provreq.kueue.x-k8s.io/ValidUntilSeconds", "60").annotation("other", "x").obj()
    )
    assert compose_workload(job, queue_name="lq", priority=Priority(0))["metadata"]["annotations"] == {
        "provreq.kueue.x-k8s.io/ValidUntilSeconds": "60"
    }


def test_invalid_max_exec_time_is_ignored() -> None:
    job = base_job().label("kueue.x-k8s.io/max-exec-time-seconds", "-5").obj()
    assert (
        "maximumExecutionTimeSeconds"
        not in compose_workload(job, queue_name="lq", priority=Priority(0))["spec"]
    )


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda j: j["metadata"].pop("uid"), "metadata.uid: Required value"),
        (lambda j: j["spec"].pop("template"), "spec.template: Required value"),
        (lambda j: j["spec"]["template"].update(spec=None), "spec.template.spec: Required value"),
        (
            lambda j: j["spec"]["template"]["spec"].update(containers=[]),
            "spec.template.spec.containers: Required value",
        ),
        (
            lambda j: j["spec"]["template"]["spec"]["containers"].__setitem__(0, "x"),
            "spec.template.spec.containers[0]: Invalid value",
        ),
        (
            lambda j: j["spec"]["template"]["spec"]["containers"][0].update(resources=[1]),
            "containers[0].resources: Invalid value",
        ),
    ],
)
def test_malformed_jobs_raise_compose_error_naming_the_field(mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    job = base_job().obj()
    mutate(job)
    with pytest.raises(ComposeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        compose_workload(job, queue_name="lq", priority=Priority(0))


def test_podsets_use_the_original_template_of_a_started_job() -> None:
    job = base_job().node_selector(disk="ssd").obj()
    original = job_podsets(job)
    # What a start leaves on the job: the flavor's label injected, the original saved.
    started = (
        base_job().node_selector(disk="ssd", **{"cloud/zone": "a"}).pod_label(PODSET_LABEL, "main").obj()
    )
    started["metadata"]["annotations"] = {
        ORIGINAL_TEMPLATE_ANNOTATION: encode_snapshot(
            {"nodeSelector": {"disk": "ssd"}, "tolerations": [], "labels": {}, "annotations": {}}
        )
    }
    assert job_podsets(started) == original


def test_match_ignores_fields_the_workload_crd_may_not_keep() -> None:
    job = base_job().obj()
    wl = compose_workload(job, queue_name="lq", priority=Priority(0))
    wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["terminationMessagePath"] = "/dev/x"
    assert podsets_match(job, wl)


@pytest.mark.parametrize(
    "change",
    [
        lambda b: b.completions(1),
        lambda b: b.requests(cpu="2"),
        lambda b: b.node_selector(zone="b"),
        lambda b: b.toleration("gpu"),
        lambda b: b.init_container("init", cpu="1"),
    ],
)
def test_match_detects_changes_that_affect_admission(change) -> None:  # type: ignore[no-untyped-def]
    wl = compose_workload(base_job().obj(), queue_name="lq", priority=Priority(0))
    assert not podsets_match(change(base_job()).obj(), wl)


def test_owned_by_matches_uid_not_only_name() -> None:
    job = base_job().obj()
    wl = compose_workload(job, queue_name="lq", priority=Priority(0))
    assert owned_by(wl, job)
    assert not owned_by(wl, base_job().uid("other").obj())


def test_composed_requests_are_counted_as_kueue_counts_them() -> None:
    """Containers sum, an init container counts when larger, overhead adds, limits stand in for
    missing requests — the engine reads exactly what compose copied from the Job."""
    from controller.engine.parse import pod_requests

    job = (
        base_job()
        .requests(cpu="500m")
        .container("sidecar-like", cpu="250m", memory="1Gi")
        .init_container("setup", cpu="2", memory="512Mi")
        .overhead(cpu="100m")
        .obj()
    )
    job["spec"]["template"]["spec"]["containers"][1]["resources"] = {
        "limits": {"cpu": "250m", "memory": "1Gi"}
    }
    [podset] = compose_workload(job, queue_name="lq", priority=Priority(0))["spec"]["podSets"]
    requests = pod_requests(podset["template"]["spec"], "spec.podSets[0].template.spec")
    assert requests["cpu"] == 2000 + 100  # the init container's 2 CPUs beat 0.75 of containers
    assert requests["memory"] == 1024**3  # containers' 1Gi beat the init container's 512Mi


@pytest.mark.parametrize("podsets", [None, "x", ["x"], [{"name": "main", "template": "x"}]])
def test_unreadable_workload_podsets_never_match(podsets: object) -> None:
    wl = compose_workload(base_job().obj(), queue_name="lq", priority=Priority(0))
    wl["spec"]["podSets"] = podsets
    assert not podsets_match(base_job().obj(), wl)


def test_repeated_env_names_collapse_to_one_entry_with_the_last_value() -> None:
    """Kueue's SanitizePodSets: a Workload's template keys env by name, so duplicates would be
    refused; each name keeps its first position and its last value."""
    job = base_job().obj()
    job["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "A", "value": "3"},
    ]
    job["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "init", "image": "i", "env": [{"name": "X", "value": "a"}, {"name": "X", "value": "b"}]}
    ]
    (podset,) = job_podsets(job)
    spec = podset["template"]["spec"]
    assert spec["containers"][0]["env"] == [{"name": "A", "value": "3"}, {"name": "B", "value": "2"}]
    assert spec["initContainers"][0]["env"] == [{"name": "X", "value": "b"}]
    assert job["spec"]["template"]["spec"]["containers"][0]["env"][2] == {"name": "A", "value": "3"}  # the Job is untouched
