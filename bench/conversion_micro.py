"""CPU per in-process conversion of one Kueue object between v1beta1 and v1beta2.

    python -m bench.conversion_micro [--repeat 7] [--calls 300] [--compare REF] [--scale 0.1]

The client converts every Kueue object it reads or writes when the storage version differs from
the programs' (pykueue/kube/versions.py), so a conversion is paid per watch event in the
controller's hot path (docs/design/api-versions.md). This times :func:`pykueue.api.conversion.convert`
(the public call: the result shares nothing with its input), :func:`~pykueue.api.conversion.convert_shared`
(the webhook's and the client's call: the result shares the subtrees it does not rewrite with
its input) and the client's read path (:meth:`pykueue.kube.versions.KueueWire.read`) on three
representative objects, both directions:

* an admitted Workload whose pod template has the size of a real Job's (two containers with
  env, probes, mounts; volumes, affinity, tolerations), a two-host topology assignment, a
  priority class and conditions;
* a ClusterQueue with four flavors of three resources, a cohort, ``whenCanBorrow: Borrow`` and
  an admission check list, v1beta1 spellings v1beta2 lacks, so its v1beta2 form carries the
  conversion-data annotation and the benchmark times reading and writing it;
* a LocalQueue with per-flavor usage in its status.

Every figure is process CPU time per call in µs (so it means "on one core" on a busy machine),
the median of ``--repeat`` runs of ``--calls`` calls. ``--compare REF`` loads
``pykueue/api/conversion.py`` as it is at the git revision REF and times it in the same run, side
by side, after checking that both give the same result for every object.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pykueue.api import conversion
from pykueue.api.constants import GROUP, V1BETA2_VERSION, VERSION
from pykueue.kube.resources import Resource
from pykueue.kube.versions import KueueWire

REPO = Path(__file__).resolve().parent.parent


def _container(name: str, image: str) -> dict[str, Any]:
    return {
        "name": name, "image": image, "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/sh", "-c"], "args": ["python train.py --epochs 10 --data /data --out /out"],
        "env": [{"name": f"ENV_{i}", "value": f"value-{i}"} for i in range(8)]
        + [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}},
        "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "out", "mountPath": "/out"},
                         {"name": "config", "mountPath": "/etc/app", "readOnly": True}],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
    }


def pod_template() -> dict[str, Any]:
    """A Job's pod template of realistic size (about 3 kB of JSON)."""
    return {
        "metadata": {"labels": {"app": "trainer", "batch.kubernetes.io/job-name": "trainer"},
                     "annotations": {"kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"}},
        "spec": {
            "restartPolicy": "Never", "serviceAccountName": "trainer", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
            "containers": [_container("main", "registry.example/trainer:1.4.2"),
                           _container("sidecar", "registry.example/metrics:0.9")],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                        {"name": "out", "emptyDir": {}}, {"name": "config", "configMap": {"name": "trainer"}}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                       "values": ["m5.2xlarge", "m5.4xlarge"]}]}]}}},
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}],
            "securityContext": {"runAsNonRoot": True, "fsGroup": 1000},
        },
    }


def workload_v1beta1() -> dict[str, Any]:
    """An admitted Workload as the programs see it (v1beta1)."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Workload",
        "metadata": {"name": "job-trainer-3f2a1", "namespace": "team-a", "uid": "0b8e1c1e-8a4b-4d0e-9a34-5d1c7f0e2a11",
                     "resourceVersion": "123456", "generation": 2, "creationTimestamp": "2026-01-01T00:00:00Z",
                     "labels": {"kueue.x-k8s.io/job-uid": "5e0b3a9c-1f8f-4e43-8d1c-0e2f1c3b4a55"},
                     "finalizers": ["kueue.x-k8s.io/resource-in-use"],
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "trainer", "controller": True,
                                          "blockOwnerDeletion": True, "uid": "5e0b3a9c-1f8f-4e43-8d1c-0e2f1c3b4a55"}]},
        "spec": {
            "queueName": "lq", "priority": 100, "priorityClassName": "high",
            "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass", "active": True,
            "podSets": [{"name": "main", "count": 2, "template": pod_template(),
                         "topologyRequest": {"required": "kubernetes.io/hostname"}}],
        },
        "status": {
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{
                "name": "main", "count": 2, "flavors": {"cpu": "on-demand", "memory": "on-demand"},
                "resourceUsage": {"cpu": "4", "memory": "8Gi"},
                "topologyAssignment": {"levels": ["zone", "kubernetes.io/hostname"],
                                       "domains": [{"values": ["z1", "h1"], "count": 1}, {"values": ["z1", "h2"], "count": 1}]},
            }]},
            "conditions": [
                {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z",
                 "observedGeneration": 2} for t in ("QuotaReserved", "Admitted", "PodsReady")
            ],
            "resourceRequests": [{"name": "main", "resources": {"cpu": "4", "memory": "8Gi"}}],
        },
    }


def cluster_queue_v1beta1() -> dict[str, Any]:
    """A ClusterQueue with four flavors of three resources, a cohort and admission checks."""
    flavors = ["on-demand", "spot", "reserved", "gpu-a100"]
    resources = ["cpu", "memory", "nvidia.com/gpu"]
    return {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "ClusterQueue",
        "metadata": {"name": "cq", "uid": "7d2f0a4e-2c1b-4a7e-9c7a-1f3e5d7b9a01", "resourceVersion": "42", "generation": 3},
        "spec": {
            "cohort": "all", "namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [{"coveredResources": resources, "flavors": [
                {"name": f, "resources": [{"name": r, "nominalQuota": "100", "borrowingLimit": "50"} for r in resources]}
                for f in flavors]}],
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority",
                           "borrowWithinCohort": {"policy": "Never"}},
            "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "TryNextFlavor"},
            "admissionChecks": ["prov"], "stopPolicy": "None",
        },
        "status": {
            "pendingWorkloads": 3, "reservingWorkloads": 5, "admittedWorkloads": 5,
            "flavorsReservation": [{"name": f, "resources": [{"name": r, "total": "10", "borrowed": "0"} for r in resources]}
                                   for f in flavors],
            "flavorsUsage": [{"name": f, "resources": [{"name": r, "total": "10", "borrowed": "0"} for r in resources]}
                             for f in flavors],
            "conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit new workloads",
                            "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 3}],
        },
    }


def local_queue_v1beta1() -> dict[str, Any]:
    """A LocalQueue with per-flavor usage in its status."""
    usage = [{"name": f, "resources": [{"name": r, "total": "4"} for r in ("cpu", "memory")]} for f in ("on-demand", "spot")]
    return {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": "team-a", "uid": "1c5e7a9b-3d2f-4b6a-8e0c-9f1a2b3c4d5e", "resourceVersion": "77"},
        "spec": {"clusterQueue": "cq", "stopPolicy": "None"},
        "status": {"pendingWorkloads": 1, "reservingWorkloads": 2, "admittedWorkloads": 2,
                   "flavorsReservation": usage, "flavorUsage": copy.deepcopy(usage),
                   "conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "",
                                   "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}]},
    }


OBJECTS: dict[str, Callable[[], dict[str, Any]]] = {
    "Workload": workload_v1beta1, "ClusterQueue": cluster_queue_v1beta1, "LocalQueue": local_queue_v1beta1,
}
RESOURCES = {
    "Workload": Resource(GROUP, VERSION, "workloads", "Workload", True),
    "ClusterQueue": Resource(GROUP, VERSION, "clusterqueues", "ClusterQueue", False),
    "LocalQueue": Resource(GROUP, VERSION, "localqueues", "LocalQueue", True),
}


def load_module_at(ref: str) -> types.ModuleType:
    """``pykueue/api/conversion.py`` as it is at git revision ``ref``, as a module of its own."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{ref}:pykueue/api/conversion.py"],
                            check=True, capture_output=True, text=True).stdout
    module = types.ModuleType(f"conversion_at_{ref}")
    module.__file__ = f"{ref}:pykueue/api/conversion.py"
    sys.modules[module.__name__] = module  # dataclasses and typing look modules up by name
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def cpu_us_per_call(call: Callable[[], Any], calls: int, repeat: int) -> float:
    """Median over ``repeat`` runs of the process CPU time of one call, in µs."""
    call()  # warm-up
    runs = []
    for _ in range(repeat):
        started = time.process_time_ns()
        for _ in range(calls):
            call()
        runs.append((time.process_time_ns() - started) / calls / 1000)
    return statistics.median(runs)


def cases() -> list[tuple[str, str, str, dict[str, Any]]]:
    """(kind, from, to, object in ``from``) for every object and direction."""
    out = []
    for kind, make in OBJECTS.items():
        v1beta1 = make()
        v1beta2 = conversion.convert(v1beta1, V1BETA2_VERSION)
        out.append((kind, V1BETA2_VERSION, VERSION, v1beta2))
        out.append((kind, VERSION, V1BETA2_VERSION, v1beta1))
    return out


def measure(kind: str, source: str, target: str, obj: dict[str, Any], calls: int, repeat: int,
            old: types.ModuleType | None) -> dict[str, Any]:
    """The figures of one object and direction."""
    wire = KueueWire(V1BETA2_VERSION)
    text = json.dumps(obj)
    row: dict[str, Any] = {"kind": kind, "from": source, "to": target, "bytes": len(text)}
    row["convert_us"] = round(cpu_us_per_call(functools.partial(conversion.convert, obj, target), calls, repeat), 1)
    row["shared_us"] = round(cpu_us_per_call(functools.partial(conversion.convert_shared, obj, target), calls, repeat), 1)
    if source == V1BETA2_VERSION:
        # The client's read path, on an object as the JSON decoder hands it over.
        decoded = json.loads(text)
        row["wire_read_us"] = round(cpu_us_per_call(functools.partial(wire.read, RESOURCES[kind], decoded), calls, repeat), 1)
    if old is not None:
        if old.convert(obj, target) != conversion.convert_shared(obj, target):
            raise SystemExit(f"{kind} {source}->{target}: the compared revision and the working tree convert differently")
        row["compare_us"] = round(cpu_us_per_call(functools.partial(old.convert, obj, target), calls, repeat), 1)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per figure; the median is printed")
    parser.add_argument("--calls", type=int, default=300, help="calls per run")
    parser.add_argument("--compare", metavar="REF", help="also time conversion.py as it is at git revision REF")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the calls (a smoke run uses 0.05)")
    args = parser.parse_args(argv)
    calls = max(1, int(args.calls * args.scale))
    old = load_module_at(args.compare) if args.compare else None
    print(f"pykueue conversion micro-benchmark: process CPU µs per call, median of {args.repeat} x {calls} calls")
    header = f"{'object':<13} {'direction':<17} {'bytes':>6} {'convert':>8} {'shared':>8} {'wire read':>10}"
    if old is not None:
        header += f" {args.compare[:12] + ' convert':>21} {'speed-up convert/shared':>24}"
    print(header)
    rows = []
    for kind, source, target, obj in cases():
        row = measure(kind, source, target, obj, calls, args.repeat, old)
        wire = f"{row['wire_read_us']:.1f}" if "wire_read_us" in row else ""
        line = (f"{kind:<13} {source + '->' + target:<17} {row['bytes']:>6} {row['convert_us']:>8.1f} "
                f"{row['shared_us']:>8.1f} {wire:>10}")
        if old is not None:
            line += (f" {row['compare_us']:>21.1f} {row['compare_us'] / row['convert_us']:>11.1f}x /"
                     f"{row['compare_us'] / row['shared_us']:>6.1f}x")
        rows.append(row)
        print(line, flush=True)
    print(json.dumps({"benchmark": "conversion_micro", "calls": calls, "repeat": args.repeat,
                      "compare": args.compare, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
