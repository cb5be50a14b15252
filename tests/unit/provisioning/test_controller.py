"""The provisioning controller against an in-memory API: requests and templates created, check
states written with the resourceVersion guard, retries, cleanup, the AdmissionCheck's Active."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import REGISTRY

from controller.provisioning.controller import ProvisioningController
from controller.runtime.events import RecordingEvents
from pykueue.kube.errors import AlreadyExists, ApiError, NotFound
from pykueue.kube.resources import PROVISIONING_REQUESTS
from tests.builders import (
    ProvisioningRequestConfigBuilder,
    ResourceFlavorBuilder,
    WorkloadBuilder,
    provisioning_admission_check,
)
from tests.unit.core.fakes import FakeApi, FakeInformer

NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
PLURALS = ("workloads", "admissionchecks", "provisioningrequestconfigs", "provisioningrequests", "podtemplates",
           "resourceflavors")


class Api(FakeApi):
    def create(self, res: Any, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        key = f"{namespace}/{obj['metadata']['name']}" if namespace else obj["metadata"]["name"]
        if (res.plural, key) in self.objects:
            raise AlreadyExists(409, "AlreadyExists", key)
        obj = copy.deepcopy(obj)
        obj["metadata"]["uid"] = f"uid-{obj['metadata']['name']}"
        return self.put(res.plural, obj)

    def delete(self, res: Any, name: str, namespace: str | None = None, **kw: Any) -> bool:
        key = f"{namespace}/{name}" if namespace else name
        if self.objects.pop((res.plural, key), None) is None:
            raise NotFound(404, "NotFound", key)
        self.informers[res.plural].store.delete(key)
        return True


class World:
    def __init__(self, config: ProvisioningRequestConfigBuilder | None = None) -> None:
        self.informers = {p: FakeInformer() for p in PLURALS}
        self.api = Api(self.informers)
        self.api.put("admissionchecks", provisioning_admission_check("check", "prc"))
        if config is not None:
            self.api.put("provisioningrequestconfigs", config.obj())
        flavor = ResourceFlavorBuilder("gpu").obj()
        flavor["spec"] = {"nodeLabels": {"pool": "gpu"}}
        self.api.put("resourceflavors", flavor)
        self.events = RecordingEvents()
        self.controller = ProvisioningController(
            self.api,
            workloads=self.informers["workloads"],
            admission_checks=self.informers["admissionchecks"],
            configs=self.informers["provisioningrequestconfigs"],
            requests=self.informers["provisioningrequests"],
            pod_templates=self.informers["podtemplates"],
            flavors=self.informers["resourceflavors"],
            events=self.events,
            clock=lambda: NOW,
        )

    def submit(self, builder: WorkloadBuilder) -> None:
        self.api.put("workloads", builder.obj())

    def workload(self) -> dict[str, Any]:
        return self.api.objects[("workloads", "ns/wl")]

    def check(self) -> dict[str, Any]:
        return next(s for s in self.workload()["status"]["admissionChecks"] if s["name"] == "check")

    def requests(self) -> list[str]:
        return sorted(k.split("/")[1] for p, k in self.api.objects if p == "provisioningrequests")

    def templates(self) -> list[str]:
        return sorted(k.split("/")[1] for p, k in self.api.objects if p == "podtemplates")

    def set_request_conditions(self, name: str, *conditions: tuple[str, str, str]) -> None:
        request = copy.deepcopy(self.api.objects[("provisioningrequests", f"ns/{name}")])
        request["status"] = {
            "conditions": [
                {"type": t, "status": s, "reason": t, "message": m, "lastTransitionTime": "2026-01-01T00:05:00Z"}
                for t, s, m in conditions
            ]
        }
        self.api.put("provisioningrequests", request)

    def reconcile(self) -> None:
        self.controller.reconcile("ns/wl")


def _reserved(**checks: Any) -> WorkloadBuilder:
    return (
        WorkloadBuilder("wl", "ns")
        .podset(count=2, cpu="1")
        .reserved("cq", flavors={"cpu": "gpu"})
        .check("check", "Pending", **checks)
    )


def test_a_reserved_workload_gets_a_request_and_templates_then_ready_when_provisioned() -> None:
    world = World(ProvisioningRequestConfigBuilder("prc", "best-effort-atomic-scale-up.autoscaling.x-k8s.io"))
    world.submit(_reserved())
    world.reconcile()
    assert world.requests() == ["wl-check-1"]
    assert world.templates() == ["ppt-wl-check-1-main"]
    template = world.api.objects[("podtemplates", "ns/ppt-wl-check-1-main")]
    assert template["template"]["spec"]["nodeSelector"] == {"pool": "gpu"}
    assert template["metadata"]["ownerReferences"][0]["name"] == "wl-check-1"
    assert "ProvisioningRequestCreated" in world.events.reasons()

    world.set_request_conditions("wl-check-1", ("Accepted", "True", ""), ("Provisioned", "False", "ETA 5m"))
    world.reconcile()
    assert world.check()["state"] == "Pending" and world.check()["message"] == "ETA 5m"
    assert world.events.reasons().count("ProvisioningRequestETA") == 1
    world.reconcile()
    assert world.events.reasons().count("ProvisioningRequestETA") == 1

    world.set_request_conditions("wl-check-1", ("Provisioned", "True", "provisioned"))
    world.reconcile()
    check = world.check()
    assert check["state"] == "Ready"
    assert check["podSetUpdates"][0]["annotations"]["autoscaling.x-k8s.io/consume-provisioning-request"] == "wl-check-1"
    # every status write carried the resourceVersion it was decided from
    status_patches = [p for plural, _, p in world.api.patches if plural == "workloads"]
    assert status_patches and all(p["metadata"]["resourceVersion"] for p in status_patches)
    assert "AdmissionCheckUpdated" in world.events.reasons()


def test_failure_retries_then_the_next_attempt_replaces_the_old_request() -> None:
    world = World(ProvisioningRequestConfigBuilder("prc"))
    world.submit(_reserved())
    world.reconcile()
    world.set_request_conditions("wl-check-1", ("Failed", "True", "stockout"))
    world.reconcile()
    assert world.check()["state"] == "Retry" and world.check()["requeueAfterSeconds"] == 60

    # The workload controller evicts (requests deleted), then quota comes back with retryCount 1.
    evicted = copy.deepcopy(world.workload())
    evicted["status"]["conditions"].append(
        {"type": "Evicted", "status": "True", "reason": "AdmissionCheck", "message": "", "lastTransitionTime": "x"}
    )
    world.api.put("workloads", evicted)
    world.reconcile()
    assert world.requests() == []
    world.submit(_reserved(retry_count=1))
    world.reconcile()
    assert world.requests() == ["wl-check-2"]


def test_a_stale_attempt_is_deleted_and_the_next_created() -> None:
    world = World(ProvisioningRequestConfigBuilder("prc"))
    world.submit(_reserved(retry_count=1))
    world.reconcile()
    assert world.requests() == ["wl-check-2"]
    stale = copy.deepcopy(world.api.objects[("provisioningrequests", "ns/wl-check-2")])
    stale["metadata"]["name"] = "wl-check-1"
    world.api.create(PROVISIONING_REQUESTS, stale, "ns")
    assert world.requests() == ["wl-check-1", "wl-check-2"]
    world.reconcile()
    assert world.requests() == ["wl-check-2"]


def test_no_pod_set_of_interest_is_ready_without_a_request() -> None:
    world = World(ProvisioningRequestConfigBuilder("prc").managed_resources("example.com/gpu"))
    world.submit(_reserved())
    world.reconcile()
    assert world.requests() == []
    assert world.check()["state"] == "Ready"
    assert world.check()["message"] == "the provisioning request is not needed"


def test_missing_config_keeps_the_check_pending_and_the_admission_check_inactive() -> None:
    world = World(None)
    world.submit(_reserved())
    world.reconcile()
    assert world.requests() == [] and world.check()["message"] == "the check is not active"
    world.controller.reconcile_check("check")
    active = world.api.objects[("admissionchecks", "check")]["status"]["conditions"][0]
    assert (active["type"], active["status"], active["reason"]) == ("Active", "False", "BadParametersRef")
    world.api.put("provisioningrequestconfigs", ProvisioningRequestConfigBuilder("prc").obj())
    world.controller.reconcile_check("check")
    active = world.api.objects[("admissionchecks", "check")]["status"]["conditions"][0]
    assert (active["status"], active["reason"]) == ("True", "Active")


def test_finished_or_deactivated_workloads_lose_their_requests() -> None:
    world = World(ProvisioningRequestConfigBuilder("prc"))
    world.submit(_reserved())
    world.reconcile()
    assert world.requests() == ["wl-check-1"]
    world.submit(_reserved().finished())
    world.reconcile()
    assert world.requests() == []
    world.submit(_reserved())
    world.reconcile()
    assert world.requests() == ["wl-check-1"]
    world.submit(_reserved().active(False))
    world.reconcile()
    assert world.requests() == []


def test_config_change_replaces_the_request() -> None:
    world = World(ProvisioningRequestConfigBuilder("prc", "check-capacity.autoscaling.x-k8s.io"))
    world.submit(_reserved())
    world.reconcile()
    world.api.put(
        "provisioningrequestconfigs",
        ProvisioningRequestConfigBuilder("prc", "best-effort-atomic-scale-up.autoscaling.x-k8s.io").obj(),
    )
    world.reconcile()  # the out-of-sync request is deleted
    world.reconcile()  # and made again from the new config
    request = world.api.objects[("provisioningrequests", "ns/wl-check-1")]
    assert request["spec"]["provisioningClassName"] == "best-effort-atomic-scale-up.autoscaling.x-k8s.io"


def test_checks_of_other_controllers_are_left_alone() -> None:
    world = World(ProvisioningRequestConfigBuilder("prc"))
    world.submit(_reserved().check("other", "Pending"))
    world.reconcile()
    other = next(s for s in world.workload()["status"]["admissionChecks"] if s["name"] == "other")
    assert other["state"] == "Pending" and world.requests() == ["wl-check-1"]


def test_requests_of_a_check_the_queue_no_longer_requires_are_deleted() -> None:
    world = World(ProvisioningRequestConfigBuilder("prc"))
    world.submit(_reserved())
    world.reconcile()
    assert world.requests() == ["wl-check-1"]
    world.submit(WorkloadBuilder("wl", "ns").podset(count=2, cpu="1").reserved("cq", flavors={"cpu": "gpu"}))
    world.reconcile()
    assert world.requests() == []


def test_removing_the_config_deletes_the_request_and_parks_the_check() -> None:
    world = World(ProvisioningRequestConfigBuilder("prc"))
    world.submit(_reserved())
    world.reconcile()
    world.api.objects.pop(("provisioningrequestconfigs", "prc"))
    world.informers["provisioningrequestconfigs"].store.delete("prc")
    world.reconcile()
    assert world.requests() == []
    assert world.check()["state"] == "Pending" and world.check()["message"] == "the check is not active"


def test_a_restarted_controller_finds_its_request_instead_of_duplicating_it() -> None:
    world = World(ProvisioningRequestConfigBuilder("prc"))
    world.submit(_reserved())
    world.reconcile()
    world.api.lag = True  # a fresh cache that has not seen the request: create answers AlreadyExists
    world.informers["provisioningrequests"].store.delete("ns/wl-check-1")
    world.reconcile()
    assert world.requests() == ["wl-check-1"]


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_metrics_count_requests_and_transitions() -> None:
    created = _sample("pykueue_provisioning_requests_created_total", admission_check="check")
    deleted = _sample("pykueue_provisioning_requests_deleted_total", cause="workload")
    ready = _sample("pykueue_provisioning_check_transitions_total", admission_check="check", state="Ready")
    world = World(ProvisioningRequestConfigBuilder("prc"))
    world.submit(_reserved())
    world.reconcile()
    world.set_request_conditions("wl-check-1", ("Provisioned", "True", "ok"))
    world.reconcile()
    world.submit(_reserved().finished())
    world.reconcile()
    assert _sample("pykueue_provisioning_requests_created_total", admission_check="check") == created + 1
    assert _sample("pykueue_provisioning_requests_deleted_total", cause="workload") == deleted + 1
    assert _sample("pykueue_provisioning_check_transitions_total", admission_check="check", state="Ready") == ready + 1


def test_a_refused_create_is_reported_and_retried() -> None:
    world = World(ProvisioningRequestConfigBuilder("prc"))
    world.submit(_reserved())

    def refuse(res: Any, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        raise ApiError(422, "Invalid", "spec.podSets: Too many")

    world.api.create = refuse  # type: ignore[method-assign]
    with pytest.raises(ApiError):
        world.reconcile()
    assert world.events.reasons() == ["FailedCreate"]


def test_a_template_left_by_an_earlier_request_of_the_same_name_is_replaced() -> None:
    world = World(ProvisioningRequestConfigBuilder("prc"))
    world.submit(_reserved())
    world.reconcile()
    template = world.api.objects[("podtemplates", "ns/ppt-wl-check-1-main")]
    template = copy.deepcopy(template)
    template["metadata"]["ownerReferences"][0]["uid"] = "uid-of-a-deleted-request"
    world.api.put("podtemplates", template)
    world.reconcile()
    replaced = world.api.objects[("podtemplates", "ns/ppt-wl-check-1-main")]
    assert replaced["metadata"]["ownerReferences"][0]["uid"] == "uid-wl-check-1"
