"""Configuration → Job integration settings; Workload → Job key mapping; a parent's options."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from controller.concurrentadmission.option_workloads import OPTION_BY_PARENT_UID, option_by_parent_uid
from controller.jobs.controller import InformerLister, owner_job_index
from controller.jobs.setup import framework_enabled, settings_from_config
from controller.runtime.store import Store
from pykueue.api.config import Configuration, Integrations, parse_config
from pykueue.kube import resources as R
from tests.builders import SeedWorkloadBuilder, WorkloadBuilder


def _config(**fields: Any) -> Configuration:
    return parse_config({"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration", **fields})


def test_defaults_without_configuration() -> None:
    settings = settings_from_config(Configuration())
    assert not settings.management.manage_jobs_without_queue_name
    assert settings.management.namespace_matches({"kubernetes.io/metadata.name": "anything"})
    assert not settings.management.namespace_matches({"kubernetes.io/metadata.name": "kube-system"})
    assert not settings.wait_for_pods_ready


def test_configuration_fields_reach_the_settings() -> None:
    settings = settings_from_config(
        _config(
            manageJobsWithoutQueueName=True,
            managedJobsNamespaceSelector={
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "pykueue-system"]}
                ]
            },
            waitForPodsReady={"enable": True, "timeout": "5m"},
        )
    )
    assert settings.management.manage_jobs_without_queue_name
    assert not settings.management.namespace_matches({"kubernetes.io/metadata.name": "kube-system"})
    assert settings.management.namespace_matches({"kubernetes.io/metadata.name": "team-a"})
    assert settings.wait_for_pods_ready


def test_wait_for_pods_ready_disabled_by_enable_false() -> None:
    assert not settings_from_config(_config(waitForPodsReady={"enable": False})).wait_for_pods_ready


def test_match_labels_selector() -> None:
    settings = settings_from_config(_config(managedJobsNamespaceSelector={"matchLabels": {"team": "a"}}))
    assert settings.management.namespace_matches({"team": "a"})
    assert not settings.management.namespace_matches({"team": "b"})


def test_framework_switch() -> None:
    assert framework_enabled(Configuration())
    assert framework_enabled(_config(integrations={"frameworks": ["batch/job"]}))
    assert not framework_enabled(replace(Configuration(), integrations=Integrations(frameworks=("pod",))))


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


class _Informer:
    def __init__(self, *objects: dict[str, Any]) -> None:
        self.store = Store()
        for obj in objects:
            self.store.upsert(obj)

    def add_indexer(self, name: str, func: Any) -> None:
        self.store.add_indexer(name, func)


class _Informers:
    """An InformerSet stand-in: one shared informer per resource, as in the controller process."""

    def __init__(self, workloads: _Informer) -> None:
        self._by_resource: dict[Any, _Informer] = {R.WORKLOADS: workloads}

    def get(self, resource: Any) -> _Informer:
        return self._by_resource.setdefault(resource, _Informer())


def _option(name: str, namespace: str, parent_uid: str) -> dict[str, Any]:
    return (
        SeedWorkloadBuilder(name, namespace)
        .mode("ResourceFlavorOption")
        .owner("Workload", "parent", parent_uid, "kueue.x-k8s.io/v1beta1")
        .obj()
    )


def test_lister_finds_a_parents_options_through_the_index_the_option_controller_shares() -> None:
    workloads = _Informer(
        _option("parent-option-a", "ns", "parent-uid"),
        _option("parent-option-b", "ns", "parent-uid"),
        _option("other-option-a", "ns", "other-uid"),
        SeedWorkloadBuilder("plain", "ns")
        .owner("Workload", "parent", "parent-uid", "kueue.x-k8s.io/v1beta1")
        .obj(),
    )
    # The option controller registers the same index on the shared informer first.
    workloads.add_indexer(OPTION_BY_PARENT_UID, option_by_parent_uid)
    lister = InformerLister(_Informers(workloads))  # type: ignore[arg-type]

    found = sorted(wl["metadata"]["name"] for wl in lister.options_of_parent("ns", "parent-uid"))
    assert found == ["parent-option-a", "parent-option-b"]
    assert lister.options_of_parent("elsewhere", "parent-uid") == []
    assert lister.options_of_parent("ns", "") == []
