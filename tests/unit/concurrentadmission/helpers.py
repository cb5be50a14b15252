"""Parents and options as the API would serve them, for the concurrent-admission unit tests."""

from __future__ import annotations

import copy
from typing import Any

from controller.concurrentadmission.naming import option_name
from controller.concurrentadmission.option_specs import ConcurrentConfig, concurrent_config
from controller.concurrentadmission.option_workloads import build_option
from tests.builders import SeedClusterQueueBuilder, SeedWorkloadBuilder, condition

Obj = dict[str, Any]
CREATED = "2026-01-01T00:00:00Z"


def three_flavor_queue(policy: str = "RemoveLower", target: str | None = None) -> Obj:
    return (
        SeedClusterQueueBuilder("cq")
        .flavor("reservation", cpu="4")
        .flavor("on-demand", cpu="4")
        .flavor("spot", cpu="4")
        .concurrent(policy, target=target)
        .obj()
    )


def config_of(cq: Obj) -> ConcurrentConfig:
    config = concurrent_config(cq)
    assert config is not None
    return config


def parent(name: str = "job-a-12345", *, with_job: bool = True, cpu: str = "2", queue: str = "lq") -> Obj:
    wl = SeedWorkloadBuilder(name, "ns").queue(queue).podset(cpu=cpu).mode("Parent").created(CREATED).obj()
    if with_job:
        wl["metadata"]["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "a", "uid": "job-uid", "controller": True}
        ]
    return wl


def option(parent_obj: Obj, config: ConcurrentConfig, suffix: str) -> Obj:
    spec = config.by_suffix(suffix)
    assert spec is not None
    obj = build_option(parent_obj, spec, option_name(parent_obj["metadata"]["name"], suffix))
    obj["metadata"]["uid"] = f"uid-{obj['metadata']['name']}"
    obj["metadata"]["resourceVersion"] = "1"
    obj["metadata"]["creationTimestamp"] = CREATED
    return obj


def reserved(obj: Obj, flavor: str, *, admitted: bool = True, cpu: str = "2") -> Obj:
    obj = copy.deepcopy(obj)
    status = obj.setdefault("status", {})
    status["admission"] = {
        "clusterQueue": "cq",
        "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": flavor}, "resourceUsage": {"cpu": cpu}, "count": 1}
        ],
    }
    conds = [condition("QuotaReserved", True, "QuotaReserved", "Quota reserved in ClusterQueue cq")]
    if admitted:
        conds.append(condition("Admitted", True, "Admitted", "The workload is admitted"))
    status["conditions"] = conds
    return obj


def evicted(obj: Obj, reason: str = "Preempted", message: str = "preempted by x") -> Obj:
    obj = copy.deepcopy(obj)
    conds = obj.setdefault("status", {}).setdefault("conditions", [])
    conds[:] = [c for c in conds if c["type"] != "Evicted"]
    conds.append(condition("Evicted", True, reason, message))
    return obj
