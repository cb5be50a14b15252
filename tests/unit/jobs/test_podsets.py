"""Start and stop patches: flavors and check updates injected, the original restored exactly."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.jobs.podsets import (
    FlavorNotFound,
    PodSetMergeError,
    podset_infos,
    restore_patch,
    start_patch,
    suspend_patch,
)
from controller.jobs.template import original_pod_template
from pykueue.api.constants import (
    CLUSTER_QUEUE_NAME_LABEL,
    LOCAL_QUEUE_NAME_LABEL,
    ORIGINAL_TEMPLATE_ANNOTATION,
    PODSET_LABEL,
)
from tests.builders import JobBuilder, ResourceFlavorBuilder, WorkloadBuilder
from tests.unit.core.fakes import merge_patch  # what the apiserver ends up with after a merge patch

SPOT_TOLERATION = {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def flavors() -> dict[str, dict[str, Any]]:
    spot = ResourceFlavorBuilder("spot").node_labels(**{"instance-type": "spot"}).obj()
    spot["spec"]["tolerations"] = [SPOT_TOLERATION]
    gpu = ResourceFlavorBuilder("gpu-a100").node_labels(gpu="a100").obj()
    return {"spot": spot, "gpu-a100": gpu}


def admitted_workload(**assigned: str) -> WorkloadBuilder:
    return (
        WorkloadBuilder("wl", "ns")
        .queue("lq")
        .podset(cpu="1")
        .reserved("cq", assigned or {"cpu": "spot"})
        .admitted()
    )


def test_infos_carry_flavor_labels_tolerations_podset_and_queue_labels() -> None:
    [info] = podset_infos(admitted_workload(cpu="spot", **{"nvidia.com/gpu": "gpu-a100"}).obj(), flavors())
    assert info.node_selector == {"instance-type": "spot", "gpu": "a100"}
    assert info.tolerations == [SPOT_TOLERATION]
    assert info.labels == {PODSET_LABEL: "main", CLUSTER_QUEUE_NAME_LABEL: "cq", LOCAL_QUEUE_NAME_LABEL: "lq"}


def test_missing_flavor_is_reported() -> None:
    with pytest.raises(FlavorNotFound, match="ondemand"):
        podset_infos(admitted_workload(cpu="ondemand").obj(), flavors())


def test_admission_check_updates_are_merged_and_conflicts_fail() -> None:
    wl = admitted_workload().obj()
    wl["status"]["admissionChecks"] = [
        {
            "name": "prov",
            "state": "Ready",
            "podSetUpdates": [{"name": "main", "nodeSelector": {"pool": "x"}, "annotations": {"a": "1"}}],
        },
        {"name": "other", "state": "Ready", "podSetUpdates": [{"name": "main", "annotations": {"a": "1"}}]},
    ]
    [info] = podset_infos(wl, flavors())
    assert info.node_selector["pool"] == "x" and info.annotations == {"a": "1"}
    wl["status"]["admissionChecks"][1]["podSetUpdates"][0]["annotations"] = {"a": "2"}
    with pytest.raises(PodSetMergeError, match="admission check 'other'"):
        podset_infos(wl, flavors())


def test_start_patch_injects_saves_original_and_unsuspends() -> None:
    job = (
        JobBuilder("j", "ns")
        .suspend()
        .resource_version("7")
        .node_selector(disk="ssd")
        .pod_label("app", "x")
        .obj()
    )
    [info] = podset_infos(admitted_workload().obj(), flavors())
    patch = start_patch(job, [info])
    assert patch["metadata"]["resourceVersion"] == "7"
    assert patch["spec"]["suspend"] is False
    started = merge_patch(job, patch)
    template = started["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {"disk": "ssd", "instance-type": "spot"}
    assert template["spec"]["tolerations"] == [SPOT_TOLERATION]
    assert template["metadata"]["labels"][PODSET_LABEL] == "main"
    assert template["metadata"]["labels"]["app"] == "x"
    saved = json.loads(started["metadata"]["annotations"][ORIGINAL_TEMPLATE_ANNOTATION])
    assert saved == {
        "main": {
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [],
            "labels": {"app": "x"},
            "annotations": {},
        }
    }


def test_user_selector_conflicting_with_flavor_fails_permanently() -> None:
    job = JobBuilder("j", "ns").suspend().node_selector(**{"instance-type": "on-demand"}).obj()
    [info] = podset_infos(admitted_workload().obj(), flavors())
    with pytest.raises(PodSetMergeError, match="instance-type"):
        start_patch(job, [info])


def test_stop_then_restore_gives_back_the_original_template_exactly() -> None:
    job = (
        JobBuilder("j", "ns")
        .suspend()
        .resource_version("1")
        .node_selector(disk="ssd")
        .toleration("dedicated", "a")
        .obj()
    )
    original_template = job["spec"]["template"]
    [info] = podset_infos(admitted_workload().obj(), flavors())
    running = merge_patch(job, start_patch(job, [info]))
    stopped = merge_patch(running, suspend_patch(running))
    assert stopped["spec"]["suspend"] is True
    restored = merge_patch(stopped, restore_patch(stopped))
    assert restored["spec"]["template"] == original_template
    assert ORIGINAL_TEMPLATE_ANNOTATION not in (restored["metadata"].get("annotations") or {})
    assert restore_patch(restored) is None


def test_restart_on_another_flavor_does_not_keep_the_first_flavor() -> None:
    job = JobBuilder("j", "ns").suspend().obj()
    [spot] = podset_infos(admitted_workload(cpu="spot").obj(), flavors())
    [gpu] = podset_infos(admitted_workload(cpu="gpu-a100").obj(), flavors())
    running = merge_patch(job, start_patch(job, [spot]))
    # Suspended but not yet restored (a stop interrupted half-way): a new start works from the original.
    again = merge_patch(running, start_patch(merge_patch(running, suspend_patch(running)), [gpu]))
    assert again["spec"]["template"]["spec"]["nodeSelector"] == {"gpu": "a100"}
    assert "tolerations" not in again["spec"]["template"]["spec"]


def test_restore_falls_back_to_the_workload_template_without_annotation() -> None:
    job = JobBuilder("j", "ns").suspend().node_selector(**{"instance-type": "spot"}).obj()
    fallback = JobBuilder("j", "ns").obj()["spec"]["template"]
    restored = merge_patch(job, restore_patch(job, fallback))
    assert "nodeSelector" not in restored["spec"]["template"]["spec"]


def test_original_template_ignores_a_corrupt_annotation() -> None:
    job = JobBuilder("j").annotation(ORIGINAL_TEMPLATE_ANNOTATION, "{not json").node_selector(a="b").obj()
    assert original_pod_template(job)["spec"]["nodeSelector"] == {"a": "b"}
