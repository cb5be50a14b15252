"""What goes into a ProvisioningRequest and its PodTemplates (Kueue's ``controller_test.go``:
managed resources, parameters from annotations, flavors in templates, merge policies, podSetUpdates)."""

from __future__ import annotations

from typing import Any

from controller.provisioning.config import ProvisioningConfig, parse_config
from controller.provisioning.requests import (
    build_pod_template,
    build_request,
    pod_set_updates,
    request_pod_sets,
    synced_with_config,
)
from tests.builders import (
    ProvisioningRequestBuilder,
    ProvisioningRequestConfigBuilder,
    ResourceFlavorBuilder,
    WorkloadBuilder,
)


def _config(builder: ProvisioningRequestConfigBuilder) -> ProvisioningConfig:
    config = parse_config(builder.obj())
    assert config is not None
    return config


def _gpu_and_cpu_workload() -> dict[str, Any]:
    return (
        WorkloadBuilder("wl", "ns")
        .podset("launcher", count=1, cpu="1")
        .podset("workers", count=4, cpu="1", **{"example.com/gpu": "1"})
        .reserved("cq", flavors={"cpu": "gpu-nodes"})
        .obj()
    )


def test_only_pod_sets_using_managed_resources_are_requested() -> None:
    wl = _gpu_and_cpu_workload()
    gpu_only = _config(ProvisioningRequestConfigBuilder("prc").managed_resources("example.com/gpu"))
    assert [(p.name, p.count) for p in request_pod_sets(wl, gpu_only)] == [("workers", 4)]
    everything = _config(ProvisioningRequestConfigBuilder("prc"))
    assert [p.name for p in request_pod_sets(wl, everything)] == ["launcher", "workers"]
    nothing = _config(ProvisioningRequestConfigBuilder("prc").managed_resources("example.com/tpu"))
    assert request_pod_sets(wl, nothing) == []


def test_a_limit_counts_as_using_a_resource() -> None:
    wl = WorkloadBuilder("wl", "ns").podset(cpu="1").reserved("cq").obj()
    wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["limits"] = {"example.com/gpu": "1"}
    config = _config(ProvisioningRequestConfigBuilder("prc").managed_resources("example.com/gpu"))
    assert [p.name for p in request_pod_sets(wl, config)] == ["main"]


def test_the_admitted_count_is_requested_and_empty_pod_sets_are_skipped() -> None:
    wl = WorkloadBuilder("wl", "ns").podset(count=5, cpu="1").podset("idle", count=1, cpu="1").reserved("cq").obj()
    wl["status"]["admission"]["podSetAssignments"][0]["count"] = 3
    wl["status"]["admission"]["podSetAssignments"][1]["count"] = 0
    assert [(p.name, p.count) for p in request_pod_sets(wl, _config(ProvisioningRequestConfigBuilder("prc")))] == [
        ("main", 3)
    ]


def test_request_carries_class_parameters_annotations_owner_and_templates() -> None:
    wl = _gpu_and_cpu_workload()
    wl["metadata"]["annotations"] = {"provreq.kueue.x-k8s.io/ValidUntilSeconds": "60", "other": "x"}
    config = _config(
        ProvisioningRequestConfigBuilder("prc", "best-effort-atomic-scale-up.autoscaling.x-k8s.io").parameters(
            BookingDurationSeconds="300"
        )
    )
    request = build_request(wl, "wl-check-1", config)
    assert request["apiVersion"] == "autoscaling.x-k8s.io/v1"
    assert request["metadata"]["labels"] == {"kueue.x-k8s.io/managed": "true"}
    owner = request["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("Workload", "wl", "uid-ns-wl", True)
    assert request["spec"] == {
        "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
        "podSets": [
            {"podTemplateRef": {"name": "ppt-wl-check-1-launcher"}, "count": 1},
            {"podTemplateRef": {"name": "ppt-wl-check-1-workers"}, "count": 4},
        ],
        "parameters": {"BookingDurationSeconds": "300", "ValidUntilSeconds": "60"},
    }
    assert synced_with_config(request, wl, config)
    other_class = _config(ProvisioningRequestConfigBuilder("prc", "check-capacity.autoscaling.x-k8s.io"))
    assert not synced_with_config(request, wl, other_class)
    more_params = _config(
        ProvisioningRequestConfigBuilder("prc", "best-effort-atomic-scale-up.autoscaling.x-k8s.io").parameters(
            BookingDurationSeconds="600"
        )
    )
    assert not synced_with_config(request, wl, more_params)


def test_pod_template_gets_flavor_placement_and_requests_from_limits() -> None:
    wl = WorkloadBuilder("wl", "ns").podset(count=2, cpu="1").reserved("cq", flavors={"cpu": "spot"}).obj()
    container = wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]
    container["resources"]["limits"] = {"memory": "1Gi"}
    flavor = ResourceFlavorBuilder("spot").obj()
    flavor["spec"] = {
        "nodeLabels": {"pool": "spot"},
        "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
    }
    config = _config(ProvisioningRequestConfigBuilder("prc"))
    request = build_request(wl, "wl-check-1", config)
    request["metadata"]["uid"] = "pr-uid"
    template = build_pod_template(request, request_pod_sets(wl, config)[0], {"spot": flavor})
    assert template["metadata"]["name"] == "ppt-wl-check-1-main"
    assert template["metadata"]["ownerReferences"][0]["uid"] == "pr-uid"
    pod = template["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "spot"}
    assert pod["tolerations"] == [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    # the workload itself is untouched
    assert "nodeSelector" not in wl["spec"]["podSets"][0]["template"]["spec"]


def test_identical_templates_merge_into_the_first_pod_set() -> None:
    wl = WorkloadBuilder("wl", "ns").podset("a", count=1, cpu="1").podset("b", count=2, cpu="1").podset(
        "c", count=1, cpu="2"
    ).reserved("cq", flavors={"cpu": "f"}).obj()
    config = _config(ProvisioningRequestConfigBuilder("prc").merge_policy("IdenticalPodTemplates"))
    assert [(p.name, p.count) for p in request_pod_sets(wl, config)] == [("a", 3), ("c", 1)]
    unmerged = _config(ProvisioningRequestConfigBuilder("prc"))
    assert [(p.name, p.count) for p in request_pod_sets(wl, unmerged)] == [("a", 1), ("b", 2), ("c", 1)]


def test_identical_scheduling_requirements_merge_despite_other_differences() -> None:
    wl = WorkloadBuilder("wl", "ns").podset("leader", count=1, cpu="1").podset("worker", count=3, cpu="1").reserved(
        "cq", flavors={"cpu": "f"}
    ).obj()
    wl["spec"]["podSets"][1]["template"]["spec"]["containers"][0]["image"] = "worker:1"
    by_template = _config(ProvisioningRequestConfigBuilder("prc").merge_policy("IdenticalPodTemplates"))
    assert [(p.name, p.count) for p in request_pod_sets(wl, by_template)] == [("leader", 1), ("worker", 3)]
    by_requirements = _config(
        ProvisioningRequestConfigBuilder("prc").merge_policy("IdenticalWorkloadSchedulingRequirements")
    )
    assert [(p.name, p.count) for p in request_pod_sets(wl, by_requirements)] == [("leader", 4)]
    wl["spec"]["podSets"][1]["template"]["spec"]["tolerations"] = [{"key": "x", "operator": "Exists"}]
    assert [(p.name, p.count) for p in request_pod_sets(wl, by_requirements)] == [("leader", 1), ("worker", 3)]


def test_pod_set_updates_annotate_and_select_nodes_from_class_details() -> None:
    wl = _gpu_and_cpu_workload()
    config = _config(
        ProvisioningRequestConfigBuilder("prc", "queued-provisioning.gke.io")
        .node_selector_update("cloud.google.com/gke-nodepool", "NodePoolName")
        .node_selector_update("example.com/zone", "Zone")
    )
    request = (
        ProvisioningRequestBuilder("wl-check-1", "ns", "queued-provisioning.gke.io")
        .pod_set("ppt-wl-check-1-workers", 4)
        .details(NodePoolName="pool-7")
        .obj()
    )
    updates, missing = pod_set_updates(wl, request, config)
    assert updates == [
        {
            "name": "workers",
            "annotations": {
                "autoscaling.x-k8s.io/consume-provisioning-request": "wl-check-1",
                "autoscaling.x-k8s.io/provisioning-class-name": "queued-provisioning.gke.io",
            },
            "nodeSelector": {"cloud.google.com/gke-nodepool": "pool-7"},
        }
    ]
    assert missing == ["Zone"]


def test_a_request_made_for_other_flavors_is_out_of_sync() -> None:
    config = _config(ProvisioningRequestConfigBuilder("prc"))
    spot = WorkloadBuilder("wl", "ns").podset(cpu="1").reserved("cq", flavors={"cpu": "spot"}).obj()
    request = build_request(spot, "wl-check-1", config)
    assert request["metadata"]["annotations"] == {"provisioning.pykueue.dev/flavors": "main:cpu=spot"}
    assert synced_with_config(request, spot, config)
    on_demand = WorkloadBuilder("wl", "ns").podset(cpu="1").reserved("cq", flavors={"cpu": "on-demand"}).obj()
    assert not synced_with_config(request, on_demand, config)
    del request["metadata"]["annotations"]  # made before the annotation existed: judged as Kueue does
    assert synced_with_config(request, on_demand, config)
