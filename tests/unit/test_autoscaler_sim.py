"""The simulated cluster-autoscaler's pure parts: steering tokens, node groups, the fake API walk."""

from __future__ import annotations

import copy
from typing import Any

from hack.autoscaler_sim import (
    ATOMIC,
    BEHAVIOR_ANNOTATION,
    CHECK_CAPACITY,
    NODE_GROUP_LABEL,
    REQUEST_LABEL,
    TO_BE_DELETED_TAINT,
    AutoscalerSim,
    NodeGroup,
    attempt_of,
    behavior_of,
    load_node_groups,
    node_prefix,
)
from pykueue.kube.errors import NotFound
from tests.builders import ProvisioningRequestBuilder


class Api:
    """Just enough of KubeClient: objects by (plural, namespace, name)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}

    def add(self, plural: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.objects[(plural, meta.get("namespace", ""), meta["name"])] = copy.deepcopy(obj)

    def list(self, res: Any, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None, **_: Any) -> dict[str, Any]:
        items = [o for (p, _, _), o in self.objects.items() if p == res.plural]
        if label_selector:
            key, _, value = label_selector.partition("=")
            items = [o for o in items if key in (o["metadata"].get("labels") or {})
                     and (not value or o["metadata"]["labels"][key] == value)]
        if field_selector:
            field, _, value = field_selector.partition("=")
            assert field == "spec.nodeName", field_selector
            items = [o for o in items if (o.get("spec") or {}).get("nodeName") == value]
        return {"items": copy.deepcopy(items)}

    def get(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return copy.deepcopy(self.objects.get((res.plural, namespace or "", name)))

    def create(self, res: Any, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        self.add(res.plural, obj)
        return obj

    def delete(self, res: Any, name: str, namespace: str | None = None, **_: Any) -> bool:
        if self.objects.pop((res.plural, namespace or "", name), None) is None:
            raise NotFound(404, "NotFound", name)
        return True

    def patch(self, res: Any, name: str, patch: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        obj = self.objects.get((res.plural, namespace or "", name))
        if obj is None:
            raise NotFound(404, "NotFound", name)
        for section, fields in patch.items():
            obj.setdefault(section, {}).update(copy.deepcopy(fields))  # one level: enough for spec.taints
        return copy.deepcopy(obj)

    def patch_status(self, res: Any, name: str, patch: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        obj = self.objects[(res.plural, namespace or "", name)]
        obj["status"] = patch["status"]
        return obj


def _world(behavior: str = "", count: int = 2) -> tuple[Api, AutoscalerSim]:
    api = Api()
    request = ProvisioningRequestBuilder("wl-check-2", "ns", ATOMIC).pod_set("ppt-wl-check-2-main", count).obj()
    request["metadata"]["uid"] = "req-uid"
    if behavior:
        request["spec"]["parameters"] = {"SimBehavior": behavior}
    api.add("provisioningrequests", request)
    api.add("podtemplates", {"metadata": {"name": "ppt-wl-check-2-main", "namespace": "ns"},
                             "template": {"spec": {"nodeSelector": {"pool": "gpu"}, "containers": []}}})
    groups = [NodeGroup("cpu", labels={"pool": "cpu"}), NodeGroup("gpu", labels={"pool": "gpu"})]
    return api, AutoscalerSim(api, groups)  # type: ignore[arg-type]


def _status(api: Api) -> dict[str, str]:
    request = api.objects[("provisioningrequests", "ns", "wl-check-2")]
    return {c["type"]: c["status"] for c in (request.get("status") or {}).get("conditions") or []}


def test_tokens_come_from_parameters_and_the_annotation_wins() -> None:
    request = ProvisioningRequestBuilder("r-1", "ns").obj()
    request["spec"]["parameters"] = {"SimBehavior": "eta=2, fail-first=1"}
    assert behavior_of(request) == {"eta": "2", "fail-first": "1"}
    request["metadata"]["annotations"] = {BEHAVIOR_ANNOTATION: "revoke"}
    assert behavior_of(request) == {"revoke": ""}
    assert attempt_of("wl-check-12") == 12 and attempt_of("odd") == 1


def test_node_groups_load_from_yaml() -> None:
    (group,) = load_node_groups("- name: gpu\n  labels: {pool: gpu}\n  capacity: {cpu: '4'}\n")
    assert group.name == "gpu" and dict(group.labels) == {"pool": "gpu"} and dict(group.capacity) == {"cpu": "4"}


def test_atomic_scale_up_makes_a_node_per_pod_of_the_matching_group() -> None:
    api, sim = _world()
    sim.step()
    assert _status(api) == {"Accepted": "True", "Provisioned": "True"}
    nodes = [o for (p, _, _), o in api.objects.items() if p == "nodes"]
    assert sorted(n["metadata"]["name"] for n in nodes) == [f"{node_prefix('req-uid')}-{i}" for i in (0, 1)]
    labels = nodes[0]["metadata"]["labels"]
    assert labels["pool"] == "gpu" and labels[NODE_GROUP_LABEL] == "gpu" and labels[REQUEST_LABEL] == "req-uid"
    request = api.objects[("provisioningrequests", "ns", "wl-check-2")]
    assert request["status"]["provisioningClassDetails"] == {"NodeGroup": "gpu"}
    # the request gone, its nodes are tainted first, then go
    del api.objects[("provisioningrequests", "ns", "wl-check-2")]
    sim.step()
    assert {t["key"] for n in _nodes(api) for t in n["spec"]["taints"]} == {TO_BE_DELETED_TAINT}
    sim.step()
    assert not _nodes(api)


def _nodes(api: Api) -> list[dict[str, Any]]:
    return [o for (p, _, _), o in api.objects.items() if p == "nodes"]


def test_a_gone_requests_node_takes_no_new_pod_and_stays_until_no_pod_is_left_on_it() -> None:
    # A real autoscaler taints a node it removes (nothing new lands there) and never deletes it
    # under a pod that runs or is shutting down: the pod would be stranded until the PodGC
    # controller force-deletes it, about a minute later.
    api, sim = _world()
    sim.step()
    busy, idle = sorted(n["metadata"]["name"] for n in _nodes(api))
    api.add("pods", {"metadata": {"name": "train-x", "namespace": "ns", "deletionTimestamp": "2026-01-01T00:00:00Z"},
                     "spec": {"nodeName": busy}, "status": {"phase": "Running"}})  # shutting down
    api.add("pods", {"metadata": {"name": "done", "namespace": "ns"}, "spec": {"nodeName": idle},
                     "status": {"phase": "Succeeded"}})
    del api.objects[("provisioningrequests", "ns", "wl-check-2")]
    sim.step()
    assert len(_nodes(api)) == 2, "tainted first, deleted at a later step"
    assert all(t["effect"] == "NoSchedule" for n in _nodes(api) for t in n["spec"]["taints"])
    sim.step()
    assert [n["metadata"]["name"] for n in _nodes(api)] == [busy]  # a finished pod holds nothing
    sim.step()
    assert [n["metadata"]["name"] for n in _nodes(api)] == [busy]
    del api.objects[("pods", "ns", "train-x")]
    sim.step()
    assert not _nodes(api)


def test_check_capacity_does_not_count_a_node_being_removed() -> None:
    api, sim = _world()
    sim.step()  # two gpu nodes for the atomic request
    for node in _nodes(api):  # as kwok reports them
        node["status"] = {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"cpu": "4", "pods": "10"}}

    def answer(name: str) -> dict[str, str]:
        request = ProvisioningRequestBuilder(name, "ns", CHECK_CAPACITY).pod_set("ppt-wl-check-2-main", 1).obj()
        request["metadata"]["uid"] = name
        api.add("provisioningrequests", request)
        sim.handle(api.objects[("provisioningrequests", "ns", name)])
        return {c["type"]: c["status"] for c in api.objects[("provisioningrequests", "ns", name)]["status"]["conditions"]}

    assert answer("wl-check-3")["Provisioned"] == "True", "the ready nodes have room"
    del api.objects[("provisioningrequests", "ns", "wl-check-2")]
    sim.step()  # the atomic request's nodes are tainted, not deleted yet
    assert len(_nodes(api)) == 2
    assert answer("wl-check-4")["Failed"] == "True", "nodes being removed are not capacity"


def test_eta_steps_then_provisioned() -> None:
    api, sim = _world("eta=2")
    messages = []
    for _ in range(3):
        sim.step()
        request = api.objects[("provisioningrequests", "ns", "wl-check-2")]
        messages.append(next(c["message"] for c in request["status"]["conditions"] if c["type"] == "Provisioned"))
    assert messages[:2] == ["simulated: ETA 2 step(s)", "simulated: ETA 1 step(s)"]
    assert _status(api)["Provisioned"] == "True"


def test_failures_are_per_attempt() -> None:
    api, sim = _world("fail-first=1")  # attempt 2 is past the failing ones
    sim.step()
    assert _status(api)["Provisioned"] == "True"
    api, sim = _world("fail-first=2")
    sim.step()
    assert _status(api) == {"Accepted": "True", "Failed": "True"}


def test_expired_booking_and_revoked_capacity() -> None:
    api, sim = _world("expire-booking")
    sim.step()
    assert _status(api)["BookingExpired"] == "True"
    api, sim = _world()
    sim.step()
    api.objects[("provisioningrequests", "ns", "wl-check-2")]["metadata"]["annotations"] = {BEHAVIOR_ANNOTATION: "revoke"}
    sim.step()
    assert _status(api)["CapacityRevoked"] == "True"
    assert not [k for k in api.objects if k[0] == "nodes"]


def test_no_matching_group_fails_the_request() -> None:
    api, sim = _world()
    sim.node_groups = [NodeGroup("cpu", labels={"pool": "cpu"})]
    sim.step()
    assert _status(api)["Failed"] == "True"


def test_a_booking_expires_later_on_request() -> None:
    api, sim = _world()
    sim.step()
    assert "BookingExpired" not in _status(api)
    api.objects[("provisioningrequests", "ns", "wl-check-2")]["metadata"]["annotations"] = {
        BEHAVIOR_ANNOTATION: "expire-booking"
    }
    sim.step()
    assert _status(api) == {"Accepted": "True", "Provisioned": "True", "BookingExpired": "True"}
