"""MultiKueue edges on real clusters (a manager and two workers, as ``test_multikueue.py``).

Stories: both workers admit their copies at the same moment (their ClusterQueues held, then
released together) and exactly one runs the Job; a worker whose admission control refuses the
copy (a ValidatingAdmissionPolicy, standing for any webhook that says no) never gets it and the
Job runs on the other; a MultiKueueCluster naming its kubeconfig by file ``Path`` connects and
dispatches, and a missing file leaves it inactive with ``BadConfig``.
docs/design/multikueue.md.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from hack import multikueue as mk
from hack.localcluster import LocalCluster
from tests.e2e.helpers.wait import wait_for
from tests.e2e.test_multikueue import (  # noqa: F401  (mk_namespace is a fixture)
    CHECK,
    TIMEOUT,
    condition,
    dispatched_to,
    get,
    mk_namespace,
    wait_active,
    where_it_runs,
)

pytestmark = pytest.mark.needs_local_cluster


def hold(worker: LocalCluster, policy: str | None) -> None:
    worker.kubectl("patch", "clusterqueue", "mk-cq", "--type=merge", "-p", json.dumps({"spec": {"stopPolicy": policy}}))


def test_two_workers_admitting_together_run_the_job_once(
    cluster: Any, multikueue_workers: dict[str, LocalCluster], mk_namespace: str  # noqa: F811
) -> None:
    workers = list(multikueue_workers.values())
    for worker in workers:
        hold(worker, "Hold")
    try:
        mk.apply(cluster, mk.job("together", mk_namespace, pods=2, run_seconds=4))
        wait_for(lambda: all(get(w, "workloads", namespace=mk_namespace) for w in workers), timeout=TIMEOUT,
                 interval=0.3, message="a pending copy on both workers")  # fmt: skip
        releases = [threading.Thread(target=hold, args=(w, None)) for w in workers]
        for thread in releases:
            thread.start()
        for thread in releases:
            thread.join()
    finally:
        for worker in workers:
            hold(worker, None)
    winner = wait_for(lambda: dispatched_to(cluster, mk_namespace), timeout=TIMEOUT, interval=0.3, message="dispatched")
    loser = next(name for name in multikueue_workers if name != winner)

    def settled() -> bool:
        return where_it_runs(multikueue_workers, mk_namespace, "together") == [winner] and not get(
            multikueue_workers[loser], "workloads", namespace=mk_namespace
        )

    wait_for(settled, timeout=TIMEOUT, interval=0.5, message="one Job, on the winner; the other copy gone")
    wait_for(lambda: condition(get(cluster, "job", "together", mk_namespace), "Complete"), timeout=TIMEOUT,
             message="the Job finished on the manager")  # fmt: skip
    assert get(multikueue_workers[loser], "pods", namespace=mk_namespace) == []
    assert get(cluster, "job", "together", mk_namespace)["status"]["succeeded"] == 2


def refusing_policy(namespace: str) -> list[dict[str, Any]]:
    name = f"refuse-copies-{namespace}"
    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": name},
         "spec": {"failurePolicy": "Fail",
                  "matchConstraints": {"resourceRules": [{"apiGroups": ["kueue.x-k8s.io"], "apiVersions": ["*"],
                                                          "operations": ["CREATE"], "resources": ["workloads"]}]},
                  "validations": [{"expression": "false", "message": "this worker takes no MultiKueue copies"}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": name},
         "spec": {"policyName": name, "validationActions": ["Deny"],
                  "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}}},
    ]  # fmt: skip


def test_a_worker_refusing_the_copy_leaves_the_job_to_the_other(
    cluster: Any, controller: Any, multikueue_workers: dict[str, LocalCluster], mk_namespace: str  # noqa: F811
) -> None:
    refusing = multikueue_workers["worker1"]
    policy = refusing_policy(mk_namespace)
    mk.apply(refusing, *policy)
    probe = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
             "metadata": {"name": "probe", "namespace": mk_namespace},
             "spec": {"queueName": "mk-lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                 "containers": [{"name": "c", "image": "busybox"}]}}}]}}  # fmt: skip

    def refused() -> bool:
        result = refusing.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(probe), check=False)
        return result.returncode != 0 and "takes no MultiKueue copies" in result.stderr

    wait_for(refused, timeout=TIMEOUT, interval=0.5, message="the policy in force on worker1")
    try:
        mk.apply(cluster, mk.job("refused", mk_namespace, run_seconds=2))
        assert wait_for(lambda: dispatched_to(cluster, mk_namespace), timeout=TIMEOUT, interval=0.5,
                        message="dispatched") == "worker2"  # fmt: skip
        wait_for(lambda: condition(get(cluster, "job", "refused", mk_namespace), "Complete"), timeout=TIMEOUT,
                 message="the Job finished via worker2")  # fmt: skip
        assert get(refusing, "workloads", namespace=mk_namespace) == []
        assert controller.alive()
        assert "cannot copy workload to worker" in controller.log_tail(100000)
    finally:
        for obj in policy:
            refusing.kubectl("delete", obj["kind"].lower(), obj["metadata"]["name"], "--ignore-not-found", check=False)


def path_cluster(name: str, path: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "MultiKueueCluster", "metadata": {"name": name},
            "spec": {"kubeConfig": {"locationType": "Path", "location": path}}}  # fmt: skip


def test_a_kubeconfig_named_by_path_connects_and_dispatches(
    cluster: Any, multikueue_workers: dict[str, LocalCluster], mk_namespace: str  # noqa: F811
) -> None:
    worker1 = multikueue_workers["worker1"]
    kubeconfig = str(Path(worker1.kubeconfig).resolve())
    mk.apply(cluster, path_cluster("by-path", kubeconfig), path_cluster("by-missing-path", kubeconfig + ".absent"))
    try:
        assert wait_active(cluster, "by-path")["reason"] == "Active"
        missing = wait_active(cluster, "by-missing-path", "False")
        assert missing["reason"] == "BadConfig" and "cannot read the kubeconfig file" in missing["message"]
        # Only the Path-configured cluster in the check's config: the Job goes through it.
        mk.apply(cluster, *mk.queues(CHECK, ["by-path"], namespace=mk_namespace))
        mk.apply(cluster, mk.job("by-path", mk_namespace, run_seconds=2))
        assert wait_for(lambda: dispatched_to(cluster, mk_namespace), timeout=TIMEOUT, interval=0.5,
                        message="dispatched") == "by-path"  # fmt: skip
        assert where_it_runs(multikueue_workers, mk_namespace, "by-path") == ["worker1"]
        wait_for(lambda: condition(get(cluster, "job", "by-path", mk_namespace), "Complete"), timeout=TIMEOUT,
                 message="the Job finished via the Path-configured cluster")  # fmt: skip
    finally:
        mk.apply(cluster, *mk.queues(CHECK, list(multikueue_workers), namespace=mk_namespace))
        cluster.kubectl("delete", "multikueuecluster", "by-path", "by-missing-path", "--ignore-not-found", check=False)
