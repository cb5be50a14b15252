"""Manifests of simulated (kwok-managed) nodes."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .components import KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE

DEFAULT_CAPACITY: Mapping[str, str] = {"cpu": "32", "memory": "128Gi", "pods": "110"}
# Label every simulated node carries, so tests and tools can select them (and only them).
SIMULATED_NODE_LABEL = "pykueue.dev/simulated-node"
# The node set every fresh cluster starts with: two flavours of capacity, like the two
# worker pools (on-demand and spot) of Kueue's own e2e kind cluster.
DEFAULT_NODE_POOLS: tuple[tuple[str, int, Mapping[str, str]], ...] = (
    ("kwok-on-demand", 2, {"instance-type": "on-demand"}),
    ("kwok-spot", 2, {"instance-type": "spot"}),
)


def node_manifest(
    name: str,
    *,
    prefix: str,
    labels: Mapping[str, str] | None = None,
    capacity: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """A Node object kwok will manage; its capacity is reported as allocatable too."""
    resources = dict(capacity or DEFAULT_CAPACITY)
    all_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
        SIMULATED_NODE_LABEL: prefix,
        **(labels or {}),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": all_labels,
            "annotations": {KWOK_NODE_ANNOTATION: KWOK_NODE_ANNOTATION_VALUE},
        },
        "spec": {"taints": [dict(t) for t in taints]} if taints else {},
        "status": {"capacity": resources, "allocatable": dict(resources)},
    }


def node_list(
    prefix: str,
    count: int,
    *,
    labels: Mapping[str, str] | None = None,
    capacity: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """A v1 List of `count` nodes named `<prefix>-0` … `<prefix>-<count-1>`."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    items = [
        node_manifest(f"{prefix}-{i}", prefix=prefix, labels=labels, capacity=capacity, taints=taints)
        for i in range(count)
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def apply_node_list(
    kubectl: Callable[..., Any],
    prefix: str,
    count: int,
    *,
    labels: Mapping[str, str] | None = None,
    capacity: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
) -> list[str]:
    """Apply :func:`node_list` with ``kubectl`` (a cluster's ``kubectl(*args, input=...)``) and
    return the node names. Shared by the local cluster and an existing one, so simulated nodes are
    the same objects wherever the tests run."""
    manifest = node_list(prefix, count, labels=labels, capacity=capacity or DEFAULT_CAPACITY, taints=taints)
    names = [item["metadata"]["name"] for item in manifest["items"]]
    if names:
        kubectl("apply", "-f", "-", input=json.dumps(manifest))
    return names


def is_kwok_managed(node: Mapping[str, Any]) -> bool:
    """Whether kwok (local process or in-cluster Deployment) plays `node`: it carries kwok's annotation."""
    annotations = node.get("metadata", {}).get("annotations") or {}
    return annotations.get(KWOK_NODE_ANNOTATION) == KWOK_NODE_ANNOTATION_VALUE


def ready_node_names(nodes: Iterable[Mapping[str, Any]]) -> set[str]:
    """Names of the nodes (as returned by the API) whose Ready condition is True."""
    return {
        node["metadata"]["name"]
        for node in nodes
        if any(
            condition.get("type") == "Ready" and condition.get("status") == "True"
            for condition in node.get("status", {}).get("conditions") or []
        )
    }
