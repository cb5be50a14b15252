"""MultiKueue on real clusters: a manager (the session cluster) and two workers, real Jobs.

Stories: a Job submitted to the manager runs on exactly one worker, its status shows on the
manager and it finishes there; a kubeconfig with an exec plugin leaves its MultiKueueCluster
inactive with the reason; a worker whose apiserver is stopped turns inactive and the next Job
runs on the other worker. After every test the admission invariants hold on the workers too
(the manager's are checked by the autouse fixture).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import config as k8s_config

from hack import multikueue as mk
from hack.localcluster import LocalCluster
from tests.e2e.helpers.invariants import check_cluster
from tests.e2e.helpers.wait import wait_for

pytestmark = pytest.mark.needs_local_cluster

CHECK = "mk-check"
TIMEOUT = 120


def get(cluster: Any, kind: str, name: str = "", namespace: str | None = None) -> Any:
    args = ["get", kind, *([name] if name else []), "-o", "json", *(["-n", namespace] if namespace else [])]
    result = cluster.kubectl(*args, check=False)
    if result.returncode != 0:
        return None
    document = json.loads(result.stdout)
    return document.get("items") if not name else document


def condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


def wait_active(manager: Any, name: str, status: str = "True") -> dict[str, Any]:
    def reached() -> dict[str, Any] | None:
        cond = condition(get(manager, "multikueuecluster", name), "Active")
        return cond if cond is not None and cond["status"] == status else None

    return wait_for(reached, timeout=TIMEOUT, interval=0.5, message=f"MultiKueueCluster {name} Active={status}")


@pytest.fixture
def mk_namespace(cluster: Any, multikueue_workers: dict[str, LocalCluster]) -> Iterator[str]:
    """A namespace with LocalQueue ``mk-lq`` on the manager (ClusterQueue with the MultiKueue
    check) and on both workers; deleted everywhere afterwards."""
    namespace = f"mk-{uuid.uuid4().hex[:6]}"
    mk.apply(cluster, *mk.queues(CHECK, list(multikueue_workers), namespace=namespace))
    for worker in multikueue_workers.values():
        mk.apply(worker, *mk.queues(None, namespace=namespace))
    for name in multikueue_workers:
        wait_active(cluster, name)
    yield namespace
    for worker in multikueue_workers.values():
        client = k8s_config.new_client_from_config(config_file=worker.kubeconfig)
        try:
            violations = check_cluster(client)
        finally:
            client.close()
        assert not violations, f"invariants violated on {worker.name}:\n" + "\n".join(violations)
    for target in (cluster, *multikueue_workers.values()):
        target.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def where_it_runs(workers: dict[str, LocalCluster], namespace: str, job: str) -> list[str]:
    return [name for name, w in workers.items() if get(w, "job", job, namespace) is not None]


def test_a_job_submitted_to_the_manager_runs_on_one_worker_and_finishes_there(
    cluster: Any, multikueue_workers: dict[str, LocalCluster], mk_namespace: str
) -> None:
    mk.apply(cluster, mk.job("story", mk_namespace, pods=2, run_seconds=6))

    def dispatched() -> str | None:
        workloads = get(cluster, "workloads", namespace=mk_namespace) or []
        return workloads[0]["status"].get("clusterName") if workloads and workloads[0].get("status") else None

    winner = wait_for(dispatched, timeout=TIMEOUT, interval=0.5, message="status.clusterName on the manager")
    assert where_it_runs(multikueue_workers, mk_namespace, "story") == [winner]
    manager_job = get(cluster, "job", "story", mk_namespace)
    assert manager_job["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"

    def running_on_manager() -> bool:
        status = get(cluster, "job", "story", mk_namespace).get("status") or {}
        return status.get("active") == 2 or status.get("succeeded", 0) > 0

    wait_for(running_on_manager, timeout=TIMEOUT, interval=0.5, message="the worker's pods counted on the manager")
    assert get(cluster, "pods", namespace=mk_namespace) == []  # nothing ran on the manager

    def finished() -> dict[str, Any] | None:
        wl = (get(cluster, "workloads", namespace=mk_namespace) or [None])[0]
        cond = condition(wl, "Finished")
        return wl if cond is not None and cond["status"] == "True" else None

    wl = wait_for(finished, timeout=TIMEOUT, interval=0.5, message="the manager's Workload Finished")
    [state] = wl["status"]["admissionChecks"]
    assert state["state"] == "Ready" and winner in state["message"]
    assert condition(get(cluster, "job", "story", mk_namespace), "Complete")["status"] == "True"  # type: ignore[index]
    assert get(cluster, "job", "story", mk_namespace)["status"]["succeeded"] == 2
    # The finished workload's remote objects are removed from the worker.
    wait_for(lambda: where_it_runs(multikueue_workers, mk_namespace, "story") == [], timeout=TIMEOUT,
             message="the worker's Job removed once finished")  # fmt: skip


def test_a_kubeconfig_with_an_exec_plugin_is_refused(cluster: Any, multikueue_workers: dict[str, LocalCluster]) -> None:
    document = yaml.safe_load(open(multikueue_workers["worker1"].kubeconfig).read())  # noqa: SIM115
    document["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/true"}}
    mk.apply(cluster, mk.kubeconfig_secret("evil-kubeconfig", yaml.safe_dump(document)),
             mk.multikueue_cluster("evil", "evil-kubeconfig"))  # fmt: skip
    try:
        cond = wait_active(cluster, "evil", "False")
        assert cond["reason"] == "BadConfig"
        assert "exec credential plugins are not allowed" in cond["message"]
    finally:
        cluster.kubectl("delete", "multikueuecluster", "evil", "--ignore-not-found", check=False)
        cluster.kubectl("delete", "secret", "-n", mk.PYKUEUE_NAMESPACE, "evil-kubeconfig", "--ignore-not-found",
                        check=False)  # fmt: skip


def test_an_unreachable_worker_turns_inactive_and_jobs_run_on_the_other(
    cluster: Any, multikueue_workers: dict[str, LocalCluster], mk_namespace: str
) -> None:
    lost = multikueue_workers["worker2"]
    lost.stop_apiserver()
    try:
        cond = wait_active(cluster, "worker2", "False")
        assert cond["reason"] == "ClientConnectionFailed"
        check = wait_for(lambda: condition(get(cluster, "admissioncheck", CHECK), "Active"), timeout=TIMEOUT,
                         message="the check's Active condition")  # fmt: skip
        wait_for(lambda: condition(get(cluster, "admissioncheck", CHECK), "Active")["reason"] == "SomeActiveClusters",  # type: ignore[index]
                 timeout=TIMEOUT, message=f"check partly active, was {check}")  # fmt: skip
        mk.apply(cluster, mk.job("elsewhere", mk_namespace, run_seconds=3))

        def dispatched() -> str | None:
            workloads = get(cluster, "workloads", namespace=mk_namespace) or []
            return workloads[0]["status"].get("clusterName") if workloads and workloads[0].get("status") else None

        assert wait_for(dispatched, timeout=TIMEOUT, interval=0.5, message="dispatched") == "worker1"
        wait_for(lambda: condition(get(cluster, "job", "elsewhere", mk_namespace), "Complete"), timeout=TIMEOUT,
                 message="the Job finished via worker1")  # fmt: skip
    finally:
        lost.start_apiserver()
    wait_active(cluster, "worker2")


def dispatched_to(cluster: Any, namespace: str) -> str | None:
    workloads = get(cluster, "workloads", namespace=namespace) or []
    return workloads[0]["status"].get("clusterName") if workloads and workloads[0].get("status") else None


def test_deleting_the_manager_job_deletes_it_on_the_worker(
    cluster: Any, multikueue_workers: dict[str, LocalCluster], mk_namespace: str
) -> None:
    mk.apply(cluster, mk.job("forever", mk_namespace, run_seconds=-1))
    winner = wait_for(lambda: dispatched_to(cluster, mk_namespace), timeout=TIMEOUT, interval=0.5, message="dispatched")
    worker = multikueue_workers[winner]
    wait_for(lambda: get(worker, "pods", namespace=mk_namespace), timeout=TIMEOUT, message="pods on the worker")
    cluster.kubectl("delete", "job", "forever", "-n", mk_namespace, "--wait=false")

    def gone() -> bool:
        return not get(worker, "jobs", namespace=mk_namespace) and not get(worker, "workloads", namespace=mk_namespace)

    wait_for(gone, timeout=TIMEOUT, interval=0.5, message="the worker's Job and Workload deleted")


def test_a_job_failing_on_the_worker_fails_on_the_manager(
    cluster: Any, multikueue_workers: dict[str, LocalCluster], mk_namespace: str
) -> None:
    job = mk.job("doomed", mk_namespace, run_seconds=-1)
    job["spec"]["activeDeadlineSeconds"] = 5
    job["spec"]["backoffLimit"] = 0
    mk.apply(cluster, job)

    def finished() -> dict[str, Any] | None:
        cond = condition((get(cluster, "workloads", namespace=mk_namespace) or [None])[0], "Finished")
        return cond if cond is not None and cond["status"] == "True" else None

    cond = wait_for(finished, timeout=TIMEOUT, interval=0.5, message="the manager's Workload Finished")
    assert cond["reason"] == "Failed"
    failed = condition(get(cluster, "job", "doomed", mk_namespace), "Failed")
    assert failed is not None and failed["reason"] == "DeadlineExceeded"


def test_a_rotated_secret_rebuilds_the_client(cluster: Any, multikueue_workers: dict[str, LocalCluster]) -> None:
    original = open(multikueue_workers["worker1"].kubeconfig).read()  # noqa: SIM115
    broken = yaml.safe_load(original)
    broken["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"  # nothing listens there
    try:
        mk.apply(cluster, mk.kubeconfig_secret("worker1-kubeconfig", yaml.safe_dump(broken)))
        assert wait_active(cluster, "worker1", "False")["reason"] == "ClientConnectionFailed"
    finally:
        mk.apply(cluster, mk.kubeconfig_secret("worker1-kubeconfig", original))
    assert wait_active(cluster, "worker1")["reason"] == "Active"


def test_a_worker_lost_past_worker_lost_timeout_hands_the_job_to_the_other_once(
    cluster: Any, controller: Any, multikueue_workers: dict[str, LocalCluster], mk_namespace: str
) -> None:
    config = {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration",
              "multiKueue": {"workerLostTimeout": "10s"}}  # fmt: skip
    with controller.configured(config):
        for name in multikueue_workers:
            wait_active(cluster, name)
        mk.apply(cluster, mk.job("survivor", mk_namespace, run_seconds=-1))
        first = wait_for(lambda: dispatched_to(cluster, mk_namespace), timeout=TIMEOUT, interval=0.5,
                         message="dispatched")  # fmt: skip
        lost = multikueue_workers[first]
        wait_for(lambda: get(lost, "pods", namespace=mk_namespace), timeout=TIMEOUT, message="pods on the first worker")
        lost.stop_apiserver()
        try:
            second = wait_for(
                lambda: (c := dispatched_to(cluster, mk_namespace)) and c != first and c,
                timeout=TIMEOUT, interval=0.5, message="the workload dispatched to the other worker",
            )  # fmt: skip
            other = multikueue_workers[second]
            wait_for(lambda: get(other, "pods", namespace=mk_namespace), timeout=TIMEOUT, message="pods elsewhere")
        finally:
            lost.start_apiserver()
        # The returning worker's stale copy and Job are removed: one copy runs.
        wait_for(lambda: not get(lost, "jobs", namespace=mk_namespace) and not get(lost, "workloads", namespace=mk_namespace),
                 timeout=TIMEOUT, interval=0.5, message="no second copy on the returning worker")  # fmt: skip
        assert where_it_runs(multikueue_workers, mk_namespace, "survivor") == [second]
        assert dispatched_to(cluster, mk_namespace) == second


def test_a_worker_without_the_namespace_cannot_take_the_job(
    cluster: Any, multikueue_workers: dict[str, LocalCluster]
) -> None:
    namespace = f"mk-{uuid.uuid4().hex[:6]}"
    mk.apply(cluster, *mk.queues(CHECK, list(multikueue_workers), namespace=namespace))
    mk.apply(multikueue_workers["worker2"], *mk.queues(None, namespace=namespace))  # worker1 has no namespace
    try:
        mk.apply(cluster, mk.job("picky", namespace, run_seconds=2))
        wait_for(lambda: condition(get(cluster, "job", "picky", namespace), "Complete"), timeout=TIMEOUT,
                 message="the Job finished")  # fmt: skip
        [wl] = get(cluster, "workloads", namespace=namespace)
        assert wl["status"]["clusterName"] == "worker2"
    finally:
        for target in (cluster, multikueue_workers["worker2"]):
            target.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def test_the_manager_controller_killed_mid_dispatch_leaves_one_job_running(
    cluster: Any, controller: Any, multikueue_workers: dict[str, LocalCluster], mk_namespace: str
) -> None:
    mk.apply(cluster, mk.job("restarted", mk_namespace, pods=2, run_seconds=-1))
    # Killed as soon as the first copy exists on a worker: nomination and copies are written,
    # the winner not yet (or just), in whichever order the kill lands.
    wait_for(lambda: any(get(w, "workloads", namespace=mk_namespace) for w in multikueue_workers.values()),
             timeout=TIMEOUT, interval=0.1, message="a copy on a worker")  # fmt: skip
    controller.kill()
    controller.start()
    winner = wait_for(lambda: dispatched_to(cluster, mk_namespace), timeout=TIMEOUT, interval=0.5, message="dispatched")

    def settled() -> bool:
        others = [w for n, w in multikueue_workers.items() if n != winner]
        return where_it_runs(multikueue_workers, mk_namespace, "restarted") == [winner] and not any(
            get(w, "workloads", namespace=mk_namespace) for w in others
        )

    wait_for(settled, timeout=TIMEOUT, interval=0.5, message="exactly one worker holds the Job and its Workload")
    # The winner's copy is admitted there and its Job controller then creates the pods: they
    # follow the Job, not with it.
    wait_for(lambda: len(get(multikueue_workers[winner], "pods", namespace=mk_namespace) or []) == 2,
             timeout=TIMEOUT, interval=0.5, message="the Job's two pods on the winner")  # fmt: skip
    assert settled(), "and still on the winner only"
    for name, worker in multikueue_workers.items():
        if name != winner:
            assert not get(worker, "pods", namespace=mk_namespace), f"no pods on {name}"
