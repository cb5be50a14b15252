"""Show a Job submitted to the MultiKueue manager running on a worker (``make demo-multikueue``).

Expects ``python -m hack.multikueue up`` to have run. Installs the queues (the manager's
ClusterQueue carries a MultiKueue AdmissionCheck; the workers' do not), submits one Job to the
manager, and prints, each time something changes, the manager's view (its Workload's check,
``status.clusterName``, the Job's mirrored status) next to each worker's (its copy of the
Workload, its Job and pods), until the Job has finished on the manager.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from typing import Any

from hack import multikueue as mk

NAMESPACE = "mk-demo"
TIMEOUT_SECONDS = 240


def _get(cluster: Any, *args: str) -> list[dict[str, Any]]:
    result = cluster.kubectl("get", *args, "-o", "json", check=False)
    if result.returncode != 0:
        return []
    return list(json.loads(result.stdout).get("items") or [])


def _describe_manager(manager: Any, job_name: str) -> str:
    jobs = [j for j in _get(manager, "jobs", "-n", NAMESPACE) if j["metadata"]["name"] == job_name]
    workloads = [
        w for w in _get(manager, "workloads", "-n", NAMESPACE)
        if any(o.get("name") == job_name for o in w["metadata"].get("ownerReferences") or [])
    ]
    if not jobs:
        return "manager: no Job"
    status = jobs[0].get("status") or {}
    done = [c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"]
    line = f"manager: Job managedBy={jobs[0]['spec'].get('managedBy')} active={status.get('active', 0)} " \
           f"succeeded={status.get('succeeded', 0)} {'/'.join(done)}"  # fmt: skip
    for wl in workloads:
        checks = ",".join(f"{c['name']}={c['state']}" for c in (wl.get("status") or {}).get("admissionChecks") or [])
        line += f" | Workload {wl['metadata']['name']} check {checks} clusterName={wl['status'].get('clusterName')}"
    return line


def _describe_worker(name: str, worker: Any) -> str:
    workloads = [w["metadata"]["name"] for w in _get(worker, "workloads", "-n", NAMESPACE)]
    jobs = _get(worker, "jobs", "-n", NAMESPACE)
    pods = _get(worker, "pods", "-n", NAMESPACE)
    running = sorted(f"{p['metadata']['name']}@{p['spec'].get('nodeName')}:{p['status'].get('phase')}" for p in pods)
    return f"{name}: workloads={workloads} jobs={[j['metadata']['name'] for j in jobs]} pods={running}"


def main() -> int:
    setup = mk.clusters()
    workers = list(setup.workers)
    mk.apply(setup.manager, *mk.queues("mk-check", workers, namespace=NAMESPACE))
    for worker in setup.workers.values():
        mk.apply(worker, *mk.queues(None, namespace=NAMESPACE))
    job_name = f"demo-{uuid.uuid4().hex[:5]}"
    mk.apply(setup.manager, mk.job(job_name, NAMESPACE, pods=2, run_seconds=8))
    print(f"submitted Job {NAMESPACE}/{job_name} to the manager {setup.manager.name}", flush=True)
    deadline = time.monotonic() + TIMEOUT_SECONDS
    last = ""
    while time.monotonic() < deadline:
        lines = [_describe_manager(setup.manager, job_name)]
        lines += [_describe_worker(n, w) for n, w in setup.workers.items()]
        text = "\n".join(lines)
        if text != last:
            print(f"--- {time.strftime('%H:%M:%S')}\n{text}", flush=True)
            last = text
        if "Complete" in lines[0]:
            print("the Job ran on one worker and finished; the manager shows it Complete")
            return 0
        time.sleep(1)
    print("timed out waiting for the Job to finish", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
