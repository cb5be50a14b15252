"""The baseline shape is read from bench/baseline.yaml and turned into the objects Kueue's test uses."""

from __future__ import annotations

import copy

import pytest
import yaml

from bench.baseline_shape import (
    CLASS_LABEL,
    RUN_LABEL,
    SHAPE_FILE,
    Names,
    ShapeError,
    cluster_queue,
    load_shape,
    local_queue,
    parse_shape,
    workload,
)


def _document() -> dict:
    with SHAPE_FILE.open() as fh:
        return yaml.safe_load(fh)


def test_baseline_config_matches_kueues_test() -> None:
    shape = load_shape("baseline")
    assert (shape.cohorts, shape.queues_per_cohort, shape.cluster_queues) == (5, 6, 30)
    assert {c.name: (c.count, c.cpu, c.runtime_ms, c.priority, c.every_ms) for c in shape.classes} == {
        "small": (350, 1, 200, 50, 100),
        "medium": (100, 5, 500, 100, 500),
        "large": (50, 20, 1000, 200, 1200),
    }
    assert shape.total_workloads == 15_000
    assert shape.anchor.wall_s == pytest.approx(351.1)
    assert shape.anchor.mean_time_to_admission_s["large"] == pytest.approx(16.5)


def test_scale_shrinks_counts_but_keeps_intervals_and_every_class() -> None:
    shape = load_shape("baseline")
    tenth = shape.scaled(0.1)
    assert [c.count for c in tenth.classes] == [35, 10, 5]
    assert [c.every_ms for c in tenth.classes] == [c.every_ms for c in shape.classes]
    assert tenth.cluster_queues == 30
    tiny = shape.scaled(0.001)
    assert [c.count for c in tiny.classes] == [1, 1, 1], "every class is still measured"


@pytest.mark.parametrize("scale", [0, -1, float("nan"), float("inf")])
def test_scale_must_be_positive_and_finite(scale: float) -> None:
    with pytest.raises(ShapeError, match="scale"):
        load_shape("baseline").scaled(scale)


def test_a_bad_field_is_named() -> None:
    document = copy.deepcopy(_document())
    document["configs"]["baseline"]["classes"]["medium"]["every_ms"] = "often"
    with pytest.raises(ShapeError, match=r"configs\.baseline\.classes\.medium\.every_ms: must be a positive integer"):
        parse_shape(document)
    with pytest.raises(ShapeError, match=r"configs\.nope: not found \(known: baseline, large_scale\)"):
        parse_shape(_document(), "nope")
    with pytest.raises(ShapeError, match=r"configs\.baseline: not found"):
        parse_shape([])


def test_cluster_queue_carries_the_shapes_quota_cohort_and_preemption() -> None:
    shape = load_shape("baseline")
    names = Names("abc123")
    cq = cluster_queue(shape, names, 13)
    assert cq["metadata"]["name"] == "bench-abc123-cq-013"
    assert cq["metadata"]["labels"] == {RUN_LABEL: "abc123"}
    assert cq["spec"]["cohort"] == "bench-abc123-cohort-2"  # 13 // 6
    flavor = cq["spec"]["resourceGroups"][0]["flavors"][0]
    assert flavor["name"] == names.flavor
    assert flavor["resources"] == [{"name": "cpu", "nominalQuota": "20", "borrowingLimit": "100"}]
    assert cq["spec"]["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    assert local_queue(names, 13)["spec"]["clusterQueue"] == "bench-abc123-cq-013"


def test_workload_is_standalone_with_the_class_request_and_priority() -> None:
    shape = load_shape("baseline")
    large = next(c for c in shape.classes if c.name == "large")
    wl = workload(Names("r1"), 4, large, 7)
    assert wl["metadata"]["namespace"] == "bench-r1-ns-004"
    assert wl["metadata"]["name"] == "large-7"
    assert wl["metadata"]["labels"] == {RUN_LABEL: "r1", CLASS_LABEL: "large"}
    assert "ownerReferences" not in wl["metadata"]
    assert wl["spec"]["priority"] == 200
    pod_set = wl["spec"]["podSets"][0]
    assert pod_set["count"] == 1
    assert pod_set["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "20"}
