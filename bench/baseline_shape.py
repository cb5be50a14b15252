"""The scheduler baseline's shape, read from ``bench/baseline.yaml``, and the objects it creates.

The YAML is the single record of Kueue's scheduler performance test (queues, workload classes,
creation intervals, runtimes and Kueue's published means); this module turns one of its configs
into typed values and into the plain JSON objects the benchmark sends to the API server. Keeping
the numbers in data rather than code means the benchmark and the documentation quote the same
figures.

``--scale`` multiplies the *counts* of workloads and keeps the creation intervals and runtimes,
as Kueue's own smaller runs do: a 0.1 run creates a tenth of the workloads at the same arrival
rate, so it exercises the same steady state for a shorter time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pykueue.api.constants import API_VERSION

SHAPE_FILE = Path(__file__).with_name("baseline.yaml")
RUN_LABEL = "bench.pykueue.dev/run"
CLASS_LABEL = "bench.pykueue.dev/class"
LOCAL_QUEUE_NAME = "main"
PAUSE_IMAGE = "registry.k8s.io/pause:3.9"


class ShapeError(ValueError):
    """The YAML does not describe a usable shape; the message names the field."""


@dataclass(frozen=True)
class WorkloadClass:
    """One workload class of the shape; ``count`` is per ClusterQueue."""

    name: str
    count: int
    cpu: int
    runtime_ms: int
    priority: int
    every_ms: int


@dataclass(frozen=True)
class Anchor:
    """Kueue's published calibration means for this config."""

    wall_s: float
    cq_utilisation_pct: float
    mean_time_to_admission_s: dict[str, float]


@dataclass(frozen=True)
class Shape:
    config: str
    cohorts: int
    queues_per_cohort: int
    classes: tuple[WorkloadClass, ...]
    anchor: Anchor
    nominal_cpu: int = 20
    borrowing_limit_cpu: int = 100

    @property
    def cluster_queues(self) -> int:
        return self.cohorts * self.queues_per_cohort

    @property
    def workloads_per_queue(self) -> int:
        return sum(c.count for c in self.classes)

    @property
    def total_workloads(self) -> int:
        return self.cluster_queues * self.workloads_per_queue

    def scaled(self, scale: float) -> Shape:
        """The same shape with every class's count multiplied by ``scale`` (at least one each,
        so every class is still measured; intervals and runtimes unchanged)."""
        if not (scale > 0 and math.isfinite(scale)):
            raise ShapeError(f"scale: must be a positive number, got {scale!r}")
        classes = tuple(
            WorkloadClass(c.name, max(1, round(c.count * scale)), c.cpu, c.runtime_ms, c.priority, c.every_ms)
            for c in self.classes
        )
        return Shape(
            self.config,
            self.cohorts,
            self.queues_per_cohort,
            classes,
            self.anchor,
            self.nominal_cpu,
            self.borrowing_limit_cpu,
        )


def _positive_int(value: Any, field: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ShapeError(f"{field}: must be a positive integer, got {value!r}")
    return value


def _number(value: Any, field: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ShapeError(f"{field}: must be a number, got {value!r}")
    return float(value)


def parse_shape(document: Any, config: str = "baseline") -> Shape:
    """A :class:`Shape` from the parsed YAML document; :class:`ShapeError` names a bad field."""
    configs = document.get("configs") if isinstance(document, dict) else None
    if not isinstance(configs, dict) or config not in configs:
        known = sorted(configs) if isinstance(configs, dict) else []
        raise ShapeError(f"configs.{config}: not found (known: {', '.join(known) or 'none'})")
    raw = configs[config]
    prefix = f"configs.{config}"
    if not isinstance(raw, dict):
        raise ShapeError(f"{prefix}: must be a mapping")
    raw_classes = raw.get("classes")
    if not isinstance(raw_classes, dict) or not raw_classes:
        raise ShapeError(f"{prefix}.classes: must be a non-empty mapping")
    classes = []
    for name, spec in raw_classes.items():
        where = f"{prefix}.classes.{name}"
        if not isinstance(spec, dict):
            raise ShapeError(f"{where}: must be a mapping")
        classes.append(
            WorkloadClass(
                name=str(name),
                count=_positive_int(spec.get("count"), f"{where}.count"),
                cpu=_positive_int(spec.get("cpu"), f"{where}.cpu"),
                runtime_ms=_positive_int(spec.get("runtime_ms"), f"{where}.runtime_ms"),
                priority=int(_number(spec.get("priority"), f"{where}.priority")),
                every_ms=_positive_int(spec.get("every_ms"), f"{where}.every_ms"),
            )
        )
    raw_anchor = raw.get("anchor_kueue")
    if not isinstance(raw_anchor, dict):
        raise ShapeError(f"{prefix}.anchor_kueue: must be a mapping")
    tta = raw_anchor.get("mean_time_to_admission_s")
    if not isinstance(tta, dict):
        raise ShapeError(f"{prefix}.anchor_kueue.mean_time_to_admission_s: must be a mapping")
    anchor = Anchor(
        wall_s=_number(raw_anchor.get("wall_s"), f"{prefix}.anchor_kueue.wall_s"),
        cq_utilisation_pct=_number(
            raw_anchor.get("cq_utilisation_pct"), f"{prefix}.anchor_kueue.cq_utilisation_pct"
        ),
        mean_time_to_admission_s={
            str(k): _number(v, f"{prefix}.anchor_kueue.mean_time_to_admission_s.{k}") for k, v in tta.items()
        },
    )
    return Shape(
        config=config,
        cohorts=_positive_int(raw.get("cohorts"), f"{prefix}.cohorts"),
        queues_per_cohort=_positive_int(raw.get("cluster_queues_per_cohort"), f"{prefix}.cluster_queues_per_cohort"),
        classes=tuple(classes),
        anchor=anchor,
    )


def load_shape(config: str = "baseline", path: Path = SHAPE_FILE) -> Shape:
    with path.open(encoding="utf-8") as fh:
        return parse_shape(yaml.safe_load(fh), config)


# --- objects --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Names:
    """Every object name of one run, derived from its run id so runs never collide on a cluster
    that other tests (or an earlier run still being deleted) share."""

    run_id: str

    @property
    def flavor(self) -> str:
        return f"bench-{self.run_id}-flavor"

    def cohort(self, index: int) -> str:
        return f"bench-{self.run_id}-cohort-{index}"

    def cluster_queue(self, index: int) -> str:
        return f"bench-{self.run_id}-cq-{index:03d}"

    def namespace(self, index: int) -> str:
        return f"bench-{self.run_id}-ns-{index:03d}"


def _meta(name: str, run_id: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {RUN_LABEL: run_id}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def resource_flavor(names: Names) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": _meta(names.flavor, names.run_id), "spec": {}}


def cluster_queue(shape: Shape, names: Names, index: int) -> dict[str, Any]:
    """ClusterQueue ``index``: cohort ``index // queues_per_cohort``, cpu only, the shape's
    preemption policy (``reclaimWithinCohort: Any``, ``withinClusterQueue: LowerPriority``)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterQueue",
        "metadata": _meta(names.cluster_queue(index), names.run_id),
        "spec": {
            "cohort": names.cohort(index // shape.queues_per_cohort),
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {
                            "name": names.flavor,
                            "resources": [
                                {
                                    "name": "cpu",
                                    "nominalQuota": str(shape.nominal_cpu),
                                    "borrowingLimit": str(shape.borrowing_limit_cpu),
                                }
                            ],
                        }
                    ],
                }
            ],
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        },
    }


def namespace(names: Names, index: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(names.namespace(index), names.run_id)}


def local_queue(names: Names, index: int) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": _meta(LOCAL_QUEUE_NAME, names.run_id, names.namespace(index)),
        "spec": {"clusterQueue": names.cluster_queue(index)},
    }


def workload(names: Names, queue_index: int, klass: WorkloadClass, ordinal: int) -> dict[str, Any]:
    """A standalone Workload (no owner Job), one pod of ``klass.cpu`` cpu, as Kueue's generator
    writes them."""
    meta = _meta(f"{klass.name}-{ordinal}", names.run_id, names.namespace(queue_index))
    meta["labels"][CLASS_LABEL] = klass.name
    return {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": meta,
        "spec": {
            "queueName": LOCAL_QUEUE_NAME,
            "priority": klass.priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "c",
                                    "image": PAUSE_IMAGE,
                                    "resources": {"requests": {"cpu": str(klass.cpu)}},
                                }
                            ],
                        }
                    },
                }
            ],
        },
    }
