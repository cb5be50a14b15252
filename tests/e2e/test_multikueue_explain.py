"""``explain`` on a MultiKueue manager (a manager serving the visibility API, and two workers, as
``test_multikueue.py``): the answer says which workers the Workload was nominated for and what
each holds, then which worker it was dispatched to, and that the worker turned inactive —
the MultiKueue controller's own record (docs/design/visibility.md, docs/design/multikueue.md).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from hack import multikueue as mk
from hack.localcluster import LocalCluster
from tests.e2e.helpers.wait import wait_for
from tests.e2e.test_multikueue import (  # noqa: F401  (mk_namespace is a fixture)
    TIMEOUT,
    dispatched_to,
    get,
    mk_namespace,
    wait_active,
)

pytestmark = pytest.mark.needs_local_cluster

GROUP = "visibility.kueue.x-k8s.io"


def explain(cluster: Any, namespace: str) -> dict[str, Any] | None:
    workloads = get(cluster, "workloads", namespace=namespace) or []
    if not workloads:
        return None
    name = workloads[0]["metadata"]["name"]
    result = cluster.kubectl("get", "--raw", f"/apis/{GROUP}/v1beta1/namespaces/{namespace}/workloads/{name}/explain",
                             check=False)  # fmt: skip
    return json.loads(result.stdout) if result.returncode == 0 else None


def hold(worker: LocalCluster, policy: str | None) -> None:
    worker.kubectl("patch", "clusterqueue", "mk-cq", "--type=merge", "-p", json.dumps({"spec": {"stopPolicy": policy}}))


def workers_of(body: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {w["name"]: w for w in ((body or {}).get("multiKueue") or {}).get("workers") or []}


def test_explain_names_the_nominated_workers_then_the_one_running_it_then_its_loss(
    cluster: Any, visibility: Any, multikueue_workers: dict[str, LocalCluster], mk_namespace: str  # noqa: F811
) -> None:
    for name in multikueue_workers:
        wait_active(cluster, name)  # the visibility fixture restarted the manager's controller
    for worker in multikueue_workers.values():
        hold(worker, "Hold")
    try:
        mk.apply(cluster, mk.job("explained", mk_namespace, run_seconds=-1))

        def both_copies_pending() -> dict[str, Any] | None:
            body = explain(cluster, mk_namespace)
            workers = workers_of(body)
            ok = set(workers) == {"worker1", "worker2"} and all(
                w["active"] and w["nominated"] and w["copy"] and not w["quotaReserved"] for w in workers.values())
            return body if ok else None

        body = wait_for(both_copies_pending, timeout=TIMEOUT, interval=0.5,
                        message="explain lists both workers nominated, each with a pending copy")  # fmt: skip
        assert body is not None and body["state"] == "HoldsQuota" and body["multiKueue"]["clusterName"] == ""
        assert "nominated worker1, worker2" in body["suggestion"], body["suggestion"]
        assert "worker1 holds a pending copy; worker2 holds a pending copy" in body["suggestion"]
        assert body["multiKueue"]["admissionCheck"] == "mk-check"

        hold(multikueue_workers["worker2"], None)  # only worker2 can reserve: it wins
        wait_for(lambda: dispatched_to(cluster, mk_namespace) == "worker2", timeout=TIMEOUT, interval=0.5,
                 message="dispatched to worker2")  # fmt: skip

        def running_on_worker2() -> dict[str, Any] | None:
            body = explain(cluster, mk_namespace)
            w2 = workers_of(body).get("worker2") or {}
            ok = body is not None and body["multiKueue"]["clusterName"] == "worker2" and w2.get("admitted") and w2.get("job")
            return body if ok else None

        body = wait_for(running_on_worker2, timeout=TIMEOUT, interval=0.5, message="explain says it runs on worker2")
        assert body is not None and list(workers_of(body)) == ["worker2"]
        assert "MultiKueue dispatched it to worker2; its Job runs there" in body["suggestion"]
    finally:
        for worker in multikueue_workers.values():
            hold(worker, None)

    lost = multikueue_workers["worker2"]
    lost.stop_apiserver()
    try:
        wait_active(cluster, "worker2", "False")

        def says_inactive() -> dict[str, Any] | None:
            body = explain(cluster, mk_namespace)
            w2 = workers_of(body).get("worker2") or {}
            return body if w2.get("active") is False else None

        body = wait_for(says_inactive, timeout=TIMEOUT, interval=0.5, message="explain says worker2 is inactive")
        assert body is not None
        assert "dispatched it to worker2, which is inactive" in body["suggestion"], body["suggestion"]
    finally:
        lost.start_apiserver()
    wait_active(cluster, "worker2")
    cluster.kubectl("delete", "job", "explained", "-n", mk_namespace, "--wait=false", check=False)
