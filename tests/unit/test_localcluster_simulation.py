"""Simulated nodes and the kwok stages that drive nodes and pods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from hack.localcluster import SIM_RUN_SECONDS_ANNOTATION
from hack.localcluster.cluster import KWOK_STAGES
from hack.localcluster.components import KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE
from hack.localcluster.nodes import DEFAULT_CAPACITY, SIMULATED_NODE_LABEL, node_list, node_manifest


@pytest.fixture(scope="module")
def stages() -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(Path(KWOK_STAGES).read_text()) if d]
    return {d["metadata"]["name"]: d for d in docs}


def _expressions(stage: dict[str, Any]) -> list[dict[str, Any]]:
    return [e["jq"] for e in stage["spec"]["selector"]["matchExpressions"]]


def test_every_stage_is_a_kwok_stage_for_nodes_or_pods(stages: dict[str, dict[str, Any]]) -> None:
    assert stages
    for stage in stages.values():
        assert stage["apiVersion"] == "kwok.x-k8s.io/v1alpha1"
        assert stage["kind"] == "Stage"
        assert stage["spec"]["resourceRef"]["kind"] in {"Node", "Pod"}


def test_pods_succeed_after_the_annotated_run_time_defaulting_to_two_seconds(
    stages: dict[str, dict[str, Any]],
) -> None:
    stage = stages["pykueue-pod-succeeded"]
    delay = stage["spec"]["delay"]
    assert delay["durationMilliseconds"] == 2000
    expression = delay["durationFrom"]["jq"]["expression"]
    assert f'.metadata.annotations["{SIM_RUN_SECONDS_ANNOTATION}"]' in expression
    assert '// "2"' in expression


def test_pods_annotated_minus_one_never_reach_the_succeeded_stage(stages: dict[str, dict[str, Any]]) -> None:
    exclusions = [
        e for e in _expressions(stages["pykueue-pod-succeeded"]) if SIM_RUN_SECONDS_ANNOTATION in e["key"]
    ]
    assert exclusions == [
        {
            "key": f'.metadata.annotations["{SIM_RUN_SECONDS_ANNOTATION}"]',
            "operator": "NotIn",
            "values": ["-1"],
        }
    ]


def test_deleted_pods_are_removed_without_a_kubelet(stages: dict[str, dict[str, Any]]) -> None:
    stage = stages["pykueue-pod-delete"]
    assert _expressions(stage) == [{"key": ".metadata.deletionTimestamp", "operator": "Exists"}]
    assert stage["spec"]["next"] == {"finalizers": {"empty": True}, "delete": True}


def test_node_manifest_is_kwok_managed_and_reports_its_capacity_as_allocatable() -> None:
    node = node_manifest("pool-0", prefix="pool", labels={"instance-type": "spot"}, capacity={"cpu": "8"})
    assert node["metadata"]["annotations"] == {KWOK_NODE_ANNOTATION: KWOK_NODE_ANNOTATION_VALUE}
    assert node["metadata"]["labels"][SIMULATED_NODE_LABEL] == "pool"
    assert node["metadata"]["labels"]["instance-type"] == "spot"
    assert node["status"] == {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "8"}}
    assert node["spec"] == {}


def test_node_list_names_nodes_by_prefix_and_applies_taints() -> None:
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    manifest = node_list("gpu", 3, taints=[taint])
    assert [n["metadata"]["name"] for n in manifest["items"]] == ["gpu-0", "gpu-1", "gpu-2"]
    assert all(n["spec"]["taints"] == [taint] for n in manifest["items"])
    assert manifest["items"][0]["status"]["capacity"] == dict(DEFAULT_CAPACITY)


def test_node_list_rejects_a_negative_count() -> None:
    with pytest.raises(ValueError, match="count must be >= 0"):
        node_list("x", -1)
