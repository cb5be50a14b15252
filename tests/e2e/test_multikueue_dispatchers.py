"""MultiKueue's Incremental and External dispatchers on real clusters: the manager (the session
cluster, its controller restarted with ``multiKueue.dispatcherName``) and two workers.

Stories: with Incremental, the first round nominates the MultiKueueConfig's first three workers
(worker1, which cannot admit, and two that do not exist); once the round is over the fourth,
worker2, is nominated, gets its copy and runs the Job. With an external dispatcher (played by
the test, writing ``status.nominatedClusterNames``) nothing is copied until the test nominates,
the copies follow its changes, and once a worker won the nomination can no longer be written.
docs/design/multikueue.md ("Dispatchers").
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from hack import multikueue as mk
from hack.localcluster import LocalCluster
from tests.e2e.fixtures.controller import configuration
from tests.e2e.helpers.wait import wait_for
from tests.e2e.test_multikueue import CHECK, TIMEOUT, condition, get, wait_active, where_it_runs

pytestmark = pytest.mark.needs_local_cluster

INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
EXTERNAL = "example.com/test-dispatcher"
ROUND_SECONDS = 12


def stuck_queue(namespace: str) -> list[dict[str, Any]]:
    """The namespace and a LocalQueue ``mk-lq`` whose ClusterQueue does not exist: a copy there is
    accepted and never admitted."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
         "metadata": {"name": "mk-lq", "namespace": namespace}, "spec": {"clusterQueue": "mk-nowhere"}},
    ]  # fmt: skip


@contextlib.contextmanager
def dispatching(
    cluster: Any, controller: Any, workers: dict[str, LocalCluster], dispatcher: str, clusters: list[str]
) -> Iterator[str]:
    """The manager's controller on ``dispatcher``, the check's MultiKueueConfig listing
    ``clusters``, and a namespace where worker1 cannot admit and worker2 can. Restores all."""
    namespace = f"mkd-{uuid.uuid4().hex[:6]}"
    mk.apply(cluster, *mk.queues(CHECK, clusters, namespace=namespace))
    mk.apply(workers["worker1"], *stuck_queue(namespace))
    mk.apply(workers["worker2"], *mk.queues(None, namespace=namespace))
    controller.stop()
    controller.extra_args = [f"--multikueue-incremental-round-seconds={ROUND_SECONDS}"]
    try:
        with controller.configured(configuration(multiKueue={"dispatcherName": dispatcher})):
            for name in workers:
                wait_active(cluster, name)
            yield namespace
    finally:
        controller.stop()
        controller.extra_args = []
        controller.start()
        mk.apply(cluster, *mk.queues(CHECK, list(workers), namespace=namespace))
        for target in (cluster, *workers.values()):
            target.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def workload(cluster: Any, namespace: str) -> dict[str, Any] | None:
    items = get(cluster, "workloads", namespace=namespace) or []
    return items[0] if items else None


def holders(workers: dict[str, LocalCluster], namespace: str) -> list[str]:
    return [name for name, w in workers.items() if get(w, "workloads", namespace=namespace)]


def patch_status(cluster: Any, namespace: str, name: str, status: dict[str, Any]) -> Any:
    return cluster.kubectl(
        "patch", "workload", name, "-n", namespace, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": status}), check=False,
    )  # fmt: skip


def test_incremental_nominates_the_next_worker_once_a_round_has_passed(
    cluster: Any, controller: Any, multikueue_workers: dict[str, LocalCluster]
) -> None:
    clusters = ["worker1", "ghost-a", "ghost-b", "worker2"]
    with dispatching(cluster, controller, multikueue_workers, INCREMENTAL, clusters) as namespace:
        mk.apply(cluster, mk.job("rounds", namespace, run_seconds=2))

        def first_round() -> list[str] | None:
            wl = workload(cluster, namespace)
            return ((wl or {}).get("status") or {}).get("nominatedClusterNames")

        nominated_at = time.monotonic()
        assert wait_for(first_round, timeout=TIMEOUT, message="the first round") == ["worker1", "ghost-a", "ghost-b"]
        wait_for(lambda: holders(multikueue_workers, namespace) == ["worker1"], timeout=TIMEOUT,
                 message="a copy on worker1 only")  # fmt: skip
        time.sleep(ROUND_SECONDS / 3)
        assert first_round() == ["worker1", "ghost-a", "ghost-b"]  # the round is not over
        assert holders(multikueue_workers, namespace) == ["worker1"]

        def won() -> str | None:
            return ((workload(cluster, namespace) or {}).get("status") or {}).get("clusterName")

        assert wait_for(won, timeout=TIMEOUT, interval=0.5, message="worker2 wins in the second round") == "worker2"
        assert time.monotonic() - nominated_at >= ROUND_SECONDS - 1  # not before the round ended
        wait_for(lambda: condition(get(cluster, "job", "rounds", namespace), "Complete"), timeout=TIMEOUT,
                 message="the Job finished via worker2")  # fmt: skip
        wait_for(lambda: where_it_runs(multikueue_workers, namespace, "rounds") == [], timeout=TIMEOUT,
                 message="the worker's Job removed once finished")  # fmt: skip
        assert holders(multikueue_workers, namespace) == []  # worker1's copy went when worker2 won


def test_an_external_dispatcher_nominates_and_the_copies_follow(
    cluster: Any, controller: Any, multikueue_workers: dict[str, LocalCluster]
) -> None:
    with dispatching(cluster, controller, multikueue_workers, EXTERNAL, list(multikueue_workers)) as namespace:
        mk.apply(cluster, mk.job("external", namespace, run_seconds=2))
        wait_for(lambda: (condition(workload(cluster, namespace), "QuotaReserved") or {}).get("status") == "True",
                 timeout=TIMEOUT, message="quota reserved on the manager")  # fmt: skip
        name = workload(cluster, namespace)["metadata"]["name"]  # type: ignore[index]
        time.sleep(3)  # the dispatch loop has had several passes
        assert holders(multikueue_workers, namespace) == []  # nobody nominated, nothing copied
        assert "nominatedClusterNames" not in workload(cluster, namespace)["status"]  # type: ignore[index]

        assert patch_status(cluster, namespace, name, {"nominatedClusterNames": ["worker1"]}).returncode == 0
        wait_for(lambda: holders(multikueue_workers, namespace) == ["worker1"], timeout=TIMEOUT,
                 message="a copy on the nominated worker1")  # fmt: skip
        assert patch_status(cluster, namespace, name, {"nominatedClusterNames": ["worker2"]}).returncode == 0

        def won() -> str | None:
            return ((workload(cluster, namespace) or {}).get("status") or {}).get("clusterName")

        assert wait_for(won, timeout=TIMEOUT, interval=0.5, message="worker2 wins") == "worker2"
        assert holders(multikueue_workers, namespace) == ["worker2"]  # worker1's copy followed the change
        refused = patch_status(cluster, namespace, name, {"nominatedClusterNames": ["worker1"]})
        assert refused.returncode != 0
        assert "clusterName and nominatedClusterNames are mutually exclusive" in refused.stderr
        moved = patch_status(cluster, namespace, name, {"clusterName": "worker1"})
        assert moved.returncode != 0 and "clusterName is immutable once set" in moved.stderr
        wait_for(lambda: condition(get(cluster, "job", "external", namespace), "Complete"), timeout=TIMEOUT,
                 message="the Job finished via worker2")  # fmt: skip
        assert where_it_runs(multikueue_workers, namespace, "external") in ([], ["worker2"])
