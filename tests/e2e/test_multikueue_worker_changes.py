"""MultiKueue when the worker changes things under the manager (a manager and two workers, as
``test_multikueue.py``).

Stories: the worker deletes the running Job → its copy of the Workload goes with it, the
manager's check goes ``Retry`` (Kueue's "Admitting remote no longer exists", ``workload.go``), the
manager evicts and requeues the Workload and dispatches it again, and the Job then runs to the
end on one worker; the worker Job's status changes several times (pods of a Job with
``completions: 3, parallelism: 1`` finishing one by one) and the manager's Job shows each
step. docs/design/multikueue.md.
"""

from __future__ import annotations

from typing import Any

import pytest

from hack import multikueue as mk
from hack.localcluster import LocalCluster
from tests.e2e.helpers.wait import wait_for
from tests.e2e.test_multikueue import (  # noqa: F401  (mk_namespace is a fixture)
    TIMEOUT,
    condition,
    dispatched_to,
    get,
    mk_namespace,
    where_it_runs,
)

pytestmark = pytest.mark.needs_local_cluster


def manager_workload(cluster: Any, namespace: str) -> dict[str, Any] | None:
    return (get(cluster, "workloads", namespace=namespace) or [None])[0]


def test_the_worker_deleting_the_job_requeues_it_and_it_runs_again(
    cluster: Any, multikueue_workers: dict[str, LocalCluster], mk_namespace: str  # noqa: F811
) -> None:
    mk.apply(cluster, mk.job("deleted-there", mk_namespace, pods=1, run_seconds=8))
    first = wait_for(lambda: dispatched_to(cluster, mk_namespace), timeout=TIMEOUT, interval=0.3, message="dispatched")
    worker = multikueue_workers[first]
    first_uid = wait_for(lambda: get(worker, "job", "deleted-there", mk_namespace)["metadata"]["uid"], timeout=TIMEOUT,
                         interval=0.3, message="the Job on the winner")  # fmt: skip
    worker.kubectl("delete", "job", "deleted-there", "-n", mk_namespace, "--cascade=background", "--wait=false")

    def retried() -> list[str]:
        events = get(cluster, "events", namespace=mk_namespace) or []
        return [e["message"] for e in events
                if e.get("reason") == "MultiKueue" and e.get("type") == "Warning" and first in e.get("message", "")]  # fmt: skip

    [message] = wait_for(retried, timeout=TIMEOUT, interval=0.3, message="the manager's check set to Retry")
    assert "Admitting remote no longer exists" in message

    def dispatched_again() -> tuple[str, str] | None:
        where = where_it_runs(multikueue_workers, mk_namespace, "deleted-there")
        if len(where) != 1:
            return None
        remote = get(multikueue_workers[where[0]], "job", "deleted-there", mk_namespace)
        return (where[0], remote["metadata"]["uid"]) if remote and remote["metadata"]["uid"] != first_uid else None

    again, _ = wait_for(dispatched_again, timeout=TIMEOUT, interval=0.3, message="a new Job on one worker")
    wait_for(lambda: dispatched_to(cluster, mk_namespace) == again, timeout=TIMEOUT, interval=0.3,
             message="the manager's clusterName names the worker running it again")  # fmt: skip

    def finished() -> dict[str, Any] | None:
        wl = manager_workload(cluster, mk_namespace)
        cond = condition(wl, "Finished")
        return wl if cond is not None and cond["status"] == "True" else None

    wait_for(finished, timeout=TIMEOUT, interval=0.5, message="the manager's Workload Finished after the second run")
    job = get(cluster, "job", "deleted-there", mk_namespace)
    assert condition(job, "Complete")["status"] == "True"  # type: ignore[index]
    assert job["status"]["succeeded"] == 1
    wait_for(lambda: where_it_runs(multikueue_workers, mk_namespace, "deleted-there") == [], timeout=TIMEOUT,
             message="the worker's Job removed once finished")  # fmt: skip


def test_the_manager_job_follows_each_status_change_on_the_worker(
    cluster: Any, multikueue_workers: dict[str, LocalCluster], mk_namespace: str  # noqa: F811
) -> None:
    job = mk.job("steps", mk_namespace, pods=1, run_seconds=6)
    job["spec"]["completions"] = 3  # one pod at a time, three in a row: succeeded 1, 2, 3
    mk.apply(cluster, job)
    winner = wait_for(lambda: dispatched_to(cluster, mk_namespace), timeout=TIMEOUT, interval=0.3, message="dispatched")
    worker = multikueue_workers[winner]
    manager_seen: list[tuple[int, int, int]] = []
    worker_seen: list[tuple[int, int, int]] = []

    def counts(obj: dict[str, Any] | None) -> tuple[int, int, int]:
        status = (obj or {}).get("status") or {}
        return int(status.get("active") or 0), int(status.get("ready") or 0), int(status.get("succeeded") or 0)

    def record_until_complete() -> bool:
        manager_job = get(cluster, "job", "steps", mk_namespace)  # one read for counts and Complete
        for seen, obj in ((worker_seen, get(worker, "job", "steps", mk_namespace)), (manager_seen, manager_job)):
            now = counts(obj)
            if not seen or seen[-1] != now:
                seen.append(now)
        cond = condition(manager_job, "Complete")
        return cond is not None and cond["status"] == "True"

    wait_for(record_until_complete, timeout=TIMEOUT, interval=0.2, message="the manager's Job Complete")
    # The worker went through the steps (its Job is removed once the manager's finished, so
    # its last one may be gone before it is seen there) ...
    assert _in_order([s for _, _, s in worker_seen], [0, 1, 2]), worker_seen
    # ... and the manager showed each: every pod running and ready in turn, the succeeded
    # count going 1, 2, 3, and at the end the worker's final counts.
    assert _in_order([s for _, _, s in manager_seen], [1, 2, 3]), manager_seen
    ready_during = {s for active, ready, s in manager_seen if active == 1 and ready == 1}
    assert ready_during == {0, 1, 2}, manager_seen
    assert manager_seen[-1] == (0, 0, 3), manager_seen


def _in_order(values: list[int], wanted: list[int]) -> bool:
    """Whether ``wanted`` appears in ``values`` as a subsequence (each value, in order)."""
    it = iter(values)
    return all(any(v == w for v in it) for w in wanted)
