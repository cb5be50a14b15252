"""Job features Kueue users rely on, on real Jobs: partial admission
(``kueue.x-k8s.io/job-min-parallelism``), prebuilt Workloads, repeated env names.

A Job that does not fit with all its pods but may run with fewer is admitted with as many as the
ClusterQueue can hold, runs with that parallelism on the flavor's nodes and completes; a Job that
may not shrink waits. Pods are real pods on simulated (kwok) nodes.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.e2e.helpers.jobs import Jobs, make_queues, queued, wait_for
from tests.e2e.helpers.kueue import KueueApi, is_admitted, is_true, unique

# Every test here needs both programs: the webhook suspends Jobs, the controller admits them.
pytestmark = pytest.mark.usefixtures("webhook", "controller")


def _admitted_count(workload: dict[str, Any]) -> int:
    (assignment,) = workload["status"]["admission"]["podSetAssignments"]
    return int(assignment["count"])


def test_a_job_that_may_shrink_runs_with_the_pods_that_fit(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str
) -> None:
    make_queues(kueue, namespace, flavor_nodes, cpu="3")
    jobs.create(queued("shrinks", namespace, pods=5, seconds=2).min_parallelism(2))
    workload = wait_for(lambda: (wl := jobs.workload("shrinks")) and is_admitted(wl) and wl,
                        message="the Job admitted with fewer pods")
    assert workload["spec"]["podSets"][0]["minCount"] == 2
    assert _admitted_count(workload) == 3  # 3 cpu of quota, 1 cpu per pod
    job = wait_for(lambda: (j := jobs.get("shrinks")) and not j["spec"].get("suspend") and j,
                   message="the Job started")
    assert job["spec"]["parallelism"] == 3
    running = wait_for(lambda: [p for p in jobs.pods("shrinks") if p.spec.node_name] or None,
                       message="pods scheduled")
    assert all(p.spec.node_name.startswith(flavor_nodes) for p in running)
    assert len(jobs.pods("shrinks")) <= 3
    wait_for(lambda: jobs.succeeded("shrinks"), message="the Job completes with 3 pods at a time")
    wait_for(lambda: (wl := jobs.workload("shrinks")) and is_true(wl, "Finished"), message="Finished")


def test_a_job_that_may_not_shrink_below_its_minimum_waits(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str
) -> None:
    make_queues(kueue, namespace, flavor_nodes, cpu="1")
    jobs.create(queued("too-big", namespace, pods=4, seconds=2).min_parallelism(2))
    pending = wait_for(
        lambda: (wl := jobs.workload("too-big")) and any(
            c["type"] == "QuotaReserved" and c["status"] == "False" and c.get("message")
            for c in wl.get("status", {}).get("conditions") or []) and wl,
        message="the Job's Workload pending with a reason")
    assert not is_admitted(pending)
    assert jobs.get("too-big")["spec"]["suspend"] is True
    assert jobs.pods("too-big") == []


def test_the_webhook_refuses_a_minimum_not_below_the_parallelism(jobs: Jobs, namespace: str) -> None:
    try:
        jobs.create(queued("bad-min", namespace, pods=2).min_parallelism(2))
    except ApiException as err:
        assert err.status == 403, err.body
        assert "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: 2: should be between 0 and 1" in err.body
    else:
        raise AssertionError("the webhook accepted job-min-parallelism equal to the parallelism")


def test_a_job_naming_a_prebuilt_workload_runs_under_it(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str
) -> None:
    """``kueue.x-k8s.io/prebuilt-workload-name``: the Job adopts the Workload created for it
    beforehand (as Kueue's MultiKueue and users with their own tooling do) instead of composing one."""
    make_queues(kueue, namespace, flavor_nodes, cpu="2")
    builder = queued("prebuilt", namespace, pods=2, seconds=2)
    name = unique("prebuilt-wl")
    template = builder.obj()["spec"]["template"]
    kueue.create({
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": template}]},
    })
    job = jobs.create(builder.label("kueue.x-k8s.io/prebuilt-workload-name", name))
    # The Workload is admitted on its own; the Job's controller adopts it (owner reference).
    adopted = wait_for(
        lambda: (wl := kueue.workload(namespace, name)) and is_admitted(wl) and wl["metadata"].get("ownerReferences") and wl,
        message="the prebuilt Workload admitted and adopted",
    )
    owners = adopted["metadata"]["ownerReferences"]
    assert [(o["kind"], o["uid"]) for o in owners] == [("Job", job["metadata"]["uid"])]
    wait_for(lambda: jobs.succeeded("prebuilt"), message="the Job runs and completes under it")
    wait_for(lambda: is_true(kueue.workload(namespace, name), "Finished"), message="the prebuilt Workload Finished")
    assert [w["metadata"]["name"] for w in kueue.workloads(namespace)] == [name]


def test_a_prebuilt_workload_out_of_sync_with_its_job_is_finished_and_the_job_never_runs(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str
) -> None:
    """A prebuilt Workload that describes another shape of the Job (3 pods for a Job of 2) is
    finished ``OutOfSync`` (Kueue's ensurePrebuiltWorkloadInSync); the Job stays suspended."""
    make_queues(kueue, namespace, flavor_nodes, cpu="4")
    builder = queued("stale", namespace, pods=2, seconds=2)
    name = unique("stale-wl")
    template = builder.obj()["spec"]["template"]
    kueue.create({
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 3, "template": template}]},
    })
    jobs.create(builder.label("kueue.x-k8s.io/prebuilt-workload-name", name))
    finished = wait_for(
        lambda: (wl := kueue.workload(namespace, name)) and is_true(wl, "Finished") and wl,
        message="the out-of-sync Workload finished",
    )
    (cond,) = [c for c in finished["status"]["conditions"] if c["type"] == "Finished"]
    assert (cond["reason"], cond["message"]) == ("OutOfSync", "The prebuilt workload is out of sync with its user job")
    assert jobs.get("stale")["spec"]["suspend"] is True
    assert jobs.pods("stale") == []


def test_a_job_repeating_an_env_name_gets_a_workload_with_one_entry_per_name(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str
) -> None:
    """The Job API accepts a repeated env name; a Workload's template keys env by name, so the
    Workload carries each name once with its last value (Kueue's SanitizePodSets) and the Job runs."""
    make_queues(kueue, namespace, flavor_nodes, cpu="2")
    jobs.create(queued("env", namespace, pods=1, seconds=1).env("MODE", "first").env("OTHER", "x").env("MODE", "last"))
    workload = wait_for(lambda: jobs.workload("env"), message="the Workload created")
    env = workload["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "MODE", "value": "last"}, {"name": "OTHER", "value": "x"}]
    wait_for(lambda: jobs.succeeded("env"), message="the Job runs and completes")


def test_the_quota_of_pods_that_will_never_run_again_goes_back_while_the_job_runs(
    jobs: Jobs, kueue: KueueApi, namespace: str, flavor_nodes: str
) -> None:
    """Reclaimable pods: a Job of parallelism 2 and 3 completions runs its last pod alone; the
    other pod's quota goes back then (``status.reclaimablePods``), not when the Job finishes, so a
    waiting Job starts beside that last pod."""
    make_queues(kueue, namespace, flavor_nodes, cpu="2")
    jobs.create(queued("first", namespace, pods=2, seconds=8).completions(3))
    wait_for(lambda: (wl := jobs.workload("first")) and is_admitted(wl), message="first admitted")
    jobs.create(queued("second", namespace, pods=1, seconds=2))
    wait_for(lambda: (wl := jobs.workload("second")) and wl, message="second's Workload")

    def second_admitted() -> bool:
        wl = jobs.workload("second")
        return bool(wl and is_admitted(wl))

    reclaimed = wait_for(
        lambda: (wl := jobs.workload("first")) and wl.get("status", {}).get("reclaimablePods") and wl,
        message="one pod of the first Job reclaimable once two of its three completions are done",
    )
    assert reclaimed["status"]["reclaimablePods"] == [{"name": "main", "count": 1}]
    assert not is_true(reclaimed, "Finished")
    wait_for(second_admitted, message="the second Job admitted into the reclaimed quota")
    first = jobs.workload("first")
    assert first is not None and not is_true(first, "Finished"), "admitted only once the first Job finished"
    assert not jobs.succeeded("first")
    wait_for(lambda: jobs.succeeded("first") and jobs.succeeded("second"), message="both Jobs complete")
