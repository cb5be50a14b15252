"""The shared test builders produce objects the API schema accepts (or they would mislead tests)."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api.validation import schema_errors
from tests.builders import (
    CohortBuilder,
    MultiKueueClusterBuilder,
    MultiKueueConfigBuilder,
    ProvisioningRequestBuilder,
    ProvisioningRequestConfigBuilder,
    SeedWorkloadBuilder,
    multikueue_admission_check,
    provisioning_admission_check,
)

OBJECTS: list[tuple[str, Any]] = [
    ("cohort", CohortBuilder("co").parent("root").flavor("on-demand", cpu="8", memory="1Gi",
                                                         borrowing_limit={"cpu": "2"}).weight("2").obj()),
    ("prc", ProvisioningRequestConfigBuilder("prc").parameters(a="b").managed_resources("nvidia.com/gpu")
     .retry(limit=1, base_seconds=5, max_seconds=10).node_selector_update("k", "d")
     .merge_policy("IdenticalPodTemplates").obj()),
    ("prov check", provisioning_admission_check("prov", "prc")),
    ("mk check", multikueue_admission_check("mk", "workers")),
    ("mk config", MultiKueueConfigBuilder("workers", "east", "west").obj()),
    ("mk cluster secret", MultiKueueClusterBuilder("east").active().obj()),
    ("mk cluster path", MultiKueueClusterBuilder("west").path("/etc/multikueue/kubeconfigs/west").obj()),
    ("provreq", ProvisioningRequestBuilder("pr", "ns").pod_set("ppt-pr-main", 2).details(a="b").obj()),
    ("parent workload", SeedWorkloadBuilder("wl", "ns").queue("lq").podset(count=2, cpu="1").mode("Parent")
     .option_status("wl-option-spot", "Pending", "spot").flavor_assigned("spot").nominated("east").obj()),
    ("option workload", SeedWorkloadBuilder("wl-option-spot", "ns").queue("lq").podset(cpu="1")
     .mode("ResourceFlavorOption").allowed_flavors("main", "spot").cluster_name("east").obj()),
]


@pytest.mark.parametrize("obj", [o for _, o in OBJECTS], ids=[n for n, _ in OBJECTS])
def test_builder_output_is_schema_valid(obj: dict[str, Any]) -> None:
    assert [str(e) for e in schema_errors(obj["kind"], obj)] == []


def test_cluster_name_clears_nominations() -> None:
    wl = SeedWorkloadBuilder("wl", "ns").podset(cpu="1").nominated("a", "b").cluster_name("a").obj()
    assert wl["status"] == {"clusterName": "a"}


def test_allowed_flavors_needs_an_existing_pod_set() -> None:
    with pytest.raises(KeyError, match="no pod set"):
        SeedWorkloadBuilder("wl", "ns").allowed_flavors("main", "spot")
