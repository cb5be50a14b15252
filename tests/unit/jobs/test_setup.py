"""Configuration → Job integration settings, and Workload → Job key mapping."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controller.jobs.controller import owner_job_index
from controller.jobs.setup import framework_enabled, settings_from_config
from tests.builders import WorkloadBuilder


def test_defaults_without_configuration() -> None:
    settings = settings_from_config(None)
    assert not settings.management.manage_jobs_without_queue_name
    assert settings.management.namespace_matches({"kubernetes.io/metadata.name": "anything"})
    assert not settings.wait_for_pods_ready


def test_camel_case_dict_configuration() -> None:
    settings = settings_from_config(
        {
            "manageJobsWithoutQueueName": True,
            "managedJobsNamespaceSelector": {
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
                ]
            },
            "waitForPodsReady": {"enable": True, "timeout": "5m"},
        }
    )
    assert settings.management.manage_jobs_without_queue_name
    assert not settings.management.namespace_matches({"kubernetes.io/metadata.name": "kube-system"})
    assert settings.management.namespace_matches({"kubernetes.io/metadata.name": "team-a"})
    assert settings.wait_for_pods_ready


def test_wait_for_pods_ready_disabled_by_enable_false() -> None:
    assert not settings_from_config({"waitForPodsReady": {"enable": False}}).wait_for_pods_ready


@dataclass
class _Selector:
    match_labels: dict[str, str] = field(default_factory=dict)
    match_expressions: list[Any] = field(default_factory=list)


@dataclass
class _Config:
    manage_jobs_without_queue_name: bool = True
    managed_jobs_namespace_selector: _Selector | None = None


def test_dataclass_configuration() -> None:
    settings = settings_from_config(_Config(managed_jobs_namespace_selector=_Selector({"team": "a"})))
    assert settings.management.namespace_matches({"team": "a"})
    assert not settings.management.namespace_matches({"team": "b"})


def test_framework_switch() -> None:
    assert framework_enabled(None)
    assert framework_enabled({"integrations": {"frameworks": ["batch/job", "pod"]}})
    assert not framework_enabled({"integrations": {"frameworks": ["pod"]}})


def test_owner_job_index_maps_a_workload_to_its_job_key() -> None:
    wl = WorkloadBuilder("wl", "ns").owner("Job", "my-job", "uid-1").obj()
    assert owner_job_index(wl) == ["ns/my-job"]
    assert owner_job_index(WorkloadBuilder("wl", "ns").obj()) == []
    assert (
        owner_job_index(
            WorkloadBuilder("wl", "ns").owner("JobSet", "x", "u", "jobset.x-k8s.io/v1alpha2").obj()
        )
        == []
    )
