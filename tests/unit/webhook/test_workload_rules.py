"""Workload rules (Kueue's, and concurrent admission's controller-only workload modes) and Cohort/ResourceFlavor rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.builders import ResourceFlavorBuilder, WorkloadBuilder
from tests.unit.webhook.conftest import CONTROLLER, post
from tests.unit.webhook.reviews import review
from webhook.rules.cohort_flavor import validate_cohort, validate_resource_flavor
from webhook.rules.workload import validate_workload

Obj = dict[str, Any]
VALIDATE = "/validate-kueue-x-k8s-io-v1beta1-workload"


def errors(obj: Obj, old: Obj | None = None, username: str = CONTROLLER) -> list[str]:
    return [str(e) for e in validate_workload(obj, old, username=username, controller_username=CONTROLLER)]


def with_mode(obj: Obj, mode: str) -> Obj:
    obj["spec"]["workloadMode"] = {"type": mode}
    return obj


def test_plain_workload_is_valid() -> None:
    assert errors(WorkloadBuilder("wl", "ns").queue("lq").podset(cpu="1").obj(), username="alice") == []


@pytest.mark.parametrize("mode", ["Parent", "ResourceFlavorOption"])
def test_controller_only_modes_are_denied_to_users(mode: str) -> None:
    wl = with_mode(WorkloadBuilder("wl", "ns").podset(cpu="1").obj(), mode)
    assert errors(wl, username="alice") == [
        f"spec.workloadMode.type: Forbidden: {mode} workloads are managed by the pykueue controller ({CONTROLLER}); "
        "user 'alice' may not create or change them"
    ]
    assert errors(wl, username=CONTROLLER) == []


def test_user_may_not_turn_a_workload_into_an_option() -> None:
    old = WorkloadBuilder("wl", "ns").podset(cpu="1").obj()
    new = with_mode(copy.deepcopy(old), "ResourceFlavorOption")
    assert any("Forbidden" in e for e in errors(new, old, username="alice"))


def test_user_may_deactivate_and_reactivate_a_parent_but_not_an_option() -> None:
    """Deactivating a job's workload is an ordinary user action (kubectl patch spec.active); the
    options of a parent stay the controller's."""
    for mode, allowed in (("Parent", True), ("ResourceFlavorOption", False)):
        old = with_mode(WorkloadBuilder("wl", "ns").podset(cpu="1").obj(), mode)
        new = copy.deepcopy(old)
        new["spec"]["active"] = False
        assert (errors(new, old, username="alice") == []) is allowed, mode
        back = copy.deepcopy(new)
        back["spec"]["active"] = True
        assert (errors(back, new, username="alice") == []) is allowed, mode
    old = with_mode(WorkloadBuilder("wl", "ns").podset(cpu="1").obj(), "Parent")
    new = copy.deepcopy(old)
    new["spec"]["active"] = False
    new["spec"]["priority"] = 5
    assert any("Forbidden" in e for e in errors(new, old, username="alice"))


def test_user_may_relabel_a_parent_workload() -> None:
    old = with_mode(WorkloadBuilder("wl", "ns").podset(cpu="1").obj(), "Parent")
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "a"}
    assert errors(new, old, username="alice") == []


def test_an_admission_check_controller_may_report_its_state_on_an_option_and_nothing_else() -> None:
    """Options run their assigned flavors' checks like any workload, so a check controller with
    its own identity (Kueue's contract) writes status.admissionChecks; other status stays the
    controller's."""
    old = with_mode(WorkloadBuilder("wl", "ns").podset(cpu="1").reserved("cq").obj(), "ResourceFlavorOption")
    old["status"]["admissionChecks"] = [{"name": "prov", "state": "Pending", "message": ""}]
    ready = copy.deepcopy(old)
    ready["status"]["admissionChecks"][0].update(state="Ready", message="provisioned")
    assert errors(ready, old, username="system:serviceaccount:kube-system:check-controller") == []
    forged = copy.deepcopy(ready)
    forged["status"]["admission"]["clusterQueue"] = "other"
    assert any("Forbidden" in e for e in errors(forged, old, username="system:serviceaccount:kube-system:check-controller"))


def test_identity_is_checked_through_the_http_endpoint(client: FlaskClient) -> None:
    wl = with_mode(WorkloadBuilder("wl", "ns").queue("lq").podset(cpu="1").obj(), "Parent")
    denied = post(client, VALIDATE, review("Workload", wl, username="bob"))["response"]
    assert denied["allowed"] is False
    assert "user 'bob' may not create or change them" in denied["status"]["message"]
    allowed = post(client, VALIDATE, review("Workload", wl, username=CONTROLLER))["response"]
    assert allowed["allowed"] is True


INVALID = [
    ("reserved pod name", lambda: WorkloadBuilder("wl", "ns").podset(pods="1").obj(),
     'spec.podSets[0].template.spec.containers[0].resources.requests[pods]: Invalid value: "pods": the key is '
     "reserved for internal kueue use"),
    ("negative request", lambda: WorkloadBuilder("wl", "ns").podset(cpu="-1").obj(),
     'spec.podSets[0].template.spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater '
     "than or equal to 0"),
    ("duplicate allowed flavors", lambda: _allowed(["a", "a"]),
     'spec.podSets[0].allowedResourceFlavors[1]: Duplicate value: "a"'),
    ("two podsets with minCount", lambda: _min_counts(),
     "spec.podSets[1].minCount: Forbidden: at most one podSet can use minCount"),
    ("reserved without admission", lambda: _reserved_without_admission(),
     "status.admission: Required value: a workload with QuotaReserved=True must have an admission"),
    ("assignment for unknown podset", lambda: _assignment_for("other"),
     'status.admission.podSetAssignments[0].name: Not found: "other"'),
    ("reclaimable above count", lambda: _reclaimable(5),
     "status.reclaimablePods[0].count: Invalid value: 5: should be less or equal to 2"),
    ("unknown workload mode", lambda: with_mode(WorkloadBuilder("wl", "ns").podset(cpu="1").obj(), "Child"),
     'spec.workloadMode.type: Unsupported value: "Child": supported values: "Default", "ResourceFlavorOption", '
     '"Parent"'),
]


def _allowed(flavors: list[str]) -> Obj:
    wl = WorkloadBuilder("wl", "ns").podset(cpu="1").obj()
    wl["spec"]["podSets"][0]["allowedResourceFlavors"] = flavors
    return wl


def _min_counts() -> Obj:
    wl = WorkloadBuilder("wl", "ns").podset("a", 2, cpu="1").podset("b", 2, cpu="1").obj()
    for pod_set in wl["spec"]["podSets"]:
        pod_set["minCount"] = 1
    return wl


def _reserved_without_admission() -> Obj:
    wl = WorkloadBuilder("wl", "ns").podset(cpu="1").reserved("cq").obj()
    del wl["status"]["admission"]
    return wl


def _assignment_for(name: str) -> Obj:
    wl = WorkloadBuilder("wl", "ns").podset(cpu="1").reserved("cq").obj()
    wl["status"]["admission"]["podSetAssignments"][0]["name"] = name
    return wl


def _reclaimable(count: int) -> Obj:
    wl = WorkloadBuilder("wl", "ns").podset(count=2, cpu="1").obj()
    wl["status"] = {"reclaimablePods": [{"name": "main", "count": count}]}
    return wl


@pytest.mark.parametrize(("description", "make", "message"), INVALID, ids=[i[0] for i in INVALID])
def test_invalid_workloads(description: str, make: Any, message: str) -> None:
    assert message in errors(make())


def test_pod_sets_and_queue_are_immutable_while_reserved() -> None:
    old = WorkloadBuilder("wl", "ns").queue("a").podset(cpu="1").reserved("cq").obj()
    new = copy.deepcopy(old)
    new["spec"]["queueName"] = "b"
    new["spec"]["podSets"][0]["count"] = 3
    found = errors(new, old)
    assert any(e.startswith('spec.podSets: Invalid value: "array": field is immutable while the workload holds a quota')
               for e in found)
    assert 'spec.queueName: Invalid value: "b": field is immutable while the workload holds a quota reservation' in found


def test_queue_may_change_before_reservation() -> None:
    old = WorkloadBuilder("wl", "ns").queue("a").podset(cpu="1").obj()
    new = copy.deepcopy(old)
    new["spec"]["queueName"] = "b"
    assert errors(new, old) == []


def test_admission_is_immutable_while_set_but_may_be_cleared() -> None:
    old = WorkloadBuilder("wl", "ns").podset(cpu="1").reserved("cq").obj()
    changed = copy.deepcopy(old)
    changed["status"]["admission"]["clusterQueue"] = "other"
    assert 'status.admission: Invalid value: "object": field is immutable' in errors(changed, old)
    cleared = copy.deepcopy(old)
    cleared["status"] = {}
    assert errors(cleared, old) == []


def test_cluster_name_must_be_nominated() -> None:
    old = WorkloadBuilder("wl", "ns").podset(cpu="1").obj()
    old["status"] = {"nominatedClusterNames": ["w1"]}
    new = copy.deepcopy(old)
    new["status"] = {"clusterName": "w2"}
    assert ('status.clusterName: Invalid value: "w2": when setting clusterName it must be one of the '
            "nominatedClusterNames") in errors(new, old)
    new["status"] = {"clusterName": "w1"}
    assert errors(new, old) == []


# --- Cohort and ResourceFlavor ---------------------------------------------------------------------

def cohort(spec: Obj, name: str = "co") -> Obj:
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


GROUP_WITH_LIMIT = [{"coveredResources": ["cpu"], "flavors": [
    {"name": "f", "resources": [{"name": "cpu", "nominalQuota": "4", "lendingLimit": "8"}]}]}]


def test_cohort_limits_need_a_parent() -> None:
    assert [str(e) for e in validate_cohort(cohort({"resourceGroups": GROUP_WITH_LIMIT}), None)] == [
        'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "8": must be nil when parent is '
        "empty"
    ]


def test_cohort_lending_is_not_capped_by_nominal() -> None:
    assert validate_cohort(cohort({"parentName": "root", "resourceGroups": GROUP_WITH_LIMIT}), None) == []


def test_cohort_cannot_be_its_own_parent() -> None:
    assert [str(e) for e in validate_cohort(cohort({"parentName": "co"}), None)] == [
        'spec.parentName: Invalid value: "co": a cohort cannot be its own parent'
    ]


def test_resource_flavor_rules() -> None:
    flavor = ResourceFlavorBuilder("rf").node_labels(**{"zone": "a"}).obj()
    assert validate_resource_flavor(flavor, None) == []
    flavor["spec"]["nodeLabels"] = {"bad key!": "x", "ok": "not valid!"}
    flavor["spec"]["nodeTaints"] = [{"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "NoSchedule"}]
    found = [str(e) for e in validate_resource_flavor(flavor, None)]
    assert any(e.startswith('spec.nodeLabels: Invalid value: "bad key!"') for e in found)
    assert any(e.startswith('spec.nodeLabels[ok]: Invalid value: "not valid!"') for e in found)
    assert 'spec.nodeTaints[1]: Duplicate value: "k:NoSchedule": taints must be unique by key and effect pair' in found


def test_workload_admission_gates_follow_the_same_rules() -> None:
    gates = "kueue.x-k8s.io/admission-gated-by"
    old = WorkloadBuilder("wl", "ns").queue("q").podset(cpu="1").annotation(gates, "example.com/a").obj()
    bad = WorkloadBuilder("wl", "ns").queue("q").podset(cpu="1").annotation(gates, "a,a").obj()
    assert any("is listed twice" in e for e in errors(bad))
    more = copy.deepcopy(old)
    more["metadata"]["annotations"][gates] = "example.com/a,example.com/b"
    assert any("can only be removed" in e for e in errors(more, old))


def test_status_entries_naming_a_pod_set_by_a_non_string_are_denied_not_a_crash() -> None:
    """Found by the fuzz test: a list where a pod set name belongs made the status rules build a
    dict keyed by it (TypeError, a 500). Now such an entry is a pod set that is not found."""
    wl = WorkloadBuilder("w", "ns").queue("lq").podset(cpu="1").obj()
    wl["spec"]["podSets"].append({**copy.deepcopy(wl["spec"]["podSets"][0]), "name": ["x"]})
    wl["status"] = {
        "reclaimablePods": [{"name": ["x"], "count": 1}],
        "admissionChecks": [{"name": "ac", "podSetUpdates": [{"name": {"y": 1}}]}],
    }
    found = errors(wl)
    assert any(e.startswith("status.reclaimablePods[0].name: Not found") for e in found), found
    assert any(e.startswith("status.admissionChecks[0].podSetUpdates[0].name: Not found") for e in found), found
