"""The Kueue-kind hooks in both served versions: each object is checked and patched as it was sent.

The hooks sit at Kueue's v1beta2 paths and are registered for v1beta2 and v1beta1, so the
apiserver sends each object in its client's version (webhook/registry.py); the v1beta1 paths of
earlier configurations answer the same way. A v1beta2 object is never converted: its patch holds
exactly the default the hook adds, and a denial names its fields as v1beta2 spells them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient

from pykueue.api import constants as c
from pykueue.api.conversion import convert
from pykueue.kube import resources as r
from pykueue.tls.certs import generate_bundle
from tests.builders import (
    AdmissionCheckBuilder,
    ClusterQueueBuilder,
    CohortBuilder,
    LocalQueueBuilder,
    ResourceFlavorBuilder,
    SeedClusterQueueBuilder,
    WorkloadBuilder,
)
from tests.unit.webhook import test_cluster_queue_rules as cq_rules
from tests.unit.webhook import test_workload_rules as wl_rules
from tests.unit.webhook.conftest import CONTROLLER, post
from tests.unit.webhook.fakes import FakeKube
from tests.unit.webhook.reviews import decoded_patch, review
from webhook.configurations import LocalConfigurations
from webhook.patch import apply_patch
from webhook.registry import HOOKS, LEGACY_KUEUE_PATHS, kueue_path

Obj = dict[str, Any]
V1, V2 = c.VERSION, c.V1BETA2_VERSION
FINALIZER_ADDED = [{"op": "add", "path": "/metadata/finalizers", "value": [c.RESOURCE_IN_USE_FINALIZER]}]
# Field names one version has and the other spells differently (or lacks): a v1beta2 denial must
# never name the v1beta1 one.
V1BETA1_ONLY_PATHS = ("spec.cohort:", "spec.cohort ", "spec.priorityClassName", "spec.priorityClassSource",
                      "spec.admissionChecks:", "status.flavorUsage", "accumulatedPastExexcutionTimeSeconds")


def v2(obj: Obj) -> Obj:
    return convert(obj, V2)


def admit(client: FlaskClient, verb: str, kind: str, obj: Obj | None, *, version: str, path_version: str = V2,
          **kw: Any) -> Obj:
    body = post(client, kueue_path(verb, kind, path_version), review(kind, obj, version=version, **kw))
    response: Obj = body["response"]
    return response


def denial(response: Obj) -> str:
    assert response["allowed"] is False, response
    assert response["status"]["code"] == 403 and response["status"]["reason"] == "Forbidden"
    message: str = response["status"]["message"]
    return message


# --- registration ---------------------------------------------------------------------------------


def test_kueue_hooks_are_registered_at_kueues_v1beta2_paths_for_both_versions() -> None:
    kueue_hooks = [hook for hook in HOOKS if hook.group == c.GROUP]
    assert kueue_hooks
    for hook in kueue_hooks:
        assert hook.path == f"/{'mutate' if hook.mutating else 'validate'}-kueue-x-k8s-io-v1beta2-{hook.kind.lower()}"
        assert hook.versions == (V2, V1)
    assert {path for path, _ in LEGACY_KUEUE_PATHS} == {hook.path.replace("-v1beta2-", "-v1beta1-") for hook in kueue_hooks}
    assert not {path for path, _ in LEGACY_KUEUE_PATHS} & {hook.path for hook in HOOKS}


def test_local_configurations_move_an_earlier_releases_v1beta1_hooks_to_v1beta2() -> None:
    """The local cluster's configurations (webhook/configurations.py) as an upgrade finds them:
    written by a release that registered v1beta1 paths, they are replaced by the v1beta2 ones."""
    kube = FakeKube()
    sync = LocalConfigurations(kube, "https://127.0.0.1:9443", own_namespace="pykueue-system",
                               manage_jobs_without_queue_name=False)
    ca = generate_bundle(dns_names=["localhost"], ip_addresses=["127.0.0.1"]).ca_cert
    sync.sync(ca)
    earlier = kube.get(r.VALIDATING_WEBHOOK_CONFIGURATIONS, "pykueue-validating-webhook-configuration")
    assert earlier is not None
    for hook in earlier["webhooks"]:
        if hook["rules"][0]["apiGroups"] == [c.GROUP]:
            hook["clientConfig"]["url"] = hook["clientConfig"]["url"].replace("-v1beta2-", "-v1beta1-")
            hook["rules"][0]["apiVersions"] = [V1]
    kube.replace(r.VALIDATING_WEBHOOK_CONFIGURATIONS, earlier)
    sync.sync(ca)
    for resource, name in ((r.MUTATING_WEBHOOK_CONFIGURATIONS, "pykueue-mutating-webhook-configuration"),
                           (r.VALIDATING_WEBHOOK_CONFIGURATIONS, "pykueue-validating-webhook-configuration")):
        configuration = kube.get(resource, name)
        assert configuration is not None
        kueue_hooks = [h for h in configuration["webhooks"] if h["rules"][0]["apiGroups"] == [c.GROUP]]
        assert kueue_hooks
        for hook in kueue_hooks:
            assert "-v1beta2-" in hook["clientConfig"]["url"], hook["clientConfig"]["url"]
            assert hook["rules"][0]["apiVersions"] == [V2, V1]
            assert hook["matchPolicy"] == "Equivalent"


@pytest.mark.parametrize("path_version", [V1, V2])
@pytest.mark.parametrize("version", [V1, V2])
def test_every_path_reads_either_version(client: FlaskClient, version: str, path_version: str) -> None:
    cq = ClusterQueueBuilder("cq").cohort("co").flavor("default", cpu="4").obj()
    sent = v2(cq) if version == V2 else cq
    assert admit(client, "validate", "ClusterQueue", sent, version=version, path_version=path_version)["allowed"] is True
    patched = admit(client, "mutate", "ClusterQueue", sent, version=version, path_version=path_version)
    assert decoded_patch({"response": patched}) == FINALIZER_ADDED


def test_a_version_the_hooks_do_not_read_is_a_malformed_review(client: FlaskClient) -> None:
    body = review("ClusterQueue", ClusterQueueBuilder("cq").obj(), version="v1alpha1")
    answer = client.post(kueue_path("validate", "ClusterQueue"), json=body)
    assert answer.status_code == 400
    assert "version 'v1alpha1' is not served" in answer.get_data(as_text=True)


# --- defaulting: exactly the default, against the object as sent ----------------------------------


def _v2_queue() -> Obj:
    """A v1beta2 queue using every field v1beta2 spells its own way, and nothing to default but the finalizer."""
    queue = v2(ClusterQueueBuilder("cq").cohort("co").flavor("a", cpu="4").flavor("b", cpu="4")
               .admission_check_strategy("prov", "b").obj())
    queue["spec"]["concurrentAdmissionPolicy"] = {"migration": {"mode": "TryPreferredFlavors",
                                                                "constraints": {"lastAcceptableFlavorName": "b"}}}
    queue["spec"]["flavorFungibility"] = {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
    queue["metadata"]["labels"] = {"team": "a/b"}
    return queue


@pytest.mark.parametrize(
    ("kind", "make"),
    [
        ("ClusterQueue", _v2_queue),
        ("ResourceFlavor", lambda: v2(ResourceFlavorBuilder("rf").node_labels(pool="x").obj())),
    ],
)
def test_a_v1beta2_object_gets_exactly_the_finalizer_and_nothing_else(
    client: FlaskClient, kind: str, make: Callable[[], Obj]
) -> None:
    sent = make()
    assert sent["apiVersion"] == f"{c.GROUP}/{V2}"
    before = copy.deepcopy(sent)
    operations = decoded_patch({"response": admit(client, "mutate", kind, sent, version=V2)})
    assert operations == FINALIZER_ADDED
    patched = apply_patch(sent, operations)
    # Every field but the finalizer is the object as sent: no conversion round trip touched it.
    assert {**patched, "metadata": {k: v for k, v in patched["metadata"].items() if k != "finalizers"}} == before
    assert patched["apiVersion"] == f"{c.GROUP}/{V2}"
    # Patched once, the object needs nothing more.
    assert "patch" not in admit(client, "mutate", kind, patched, version=V2)


def test_a_v1beta2_object_with_other_finalizers_keeps_them(client: FlaskClient) -> None:
    sent = _v2_queue()
    sent["metadata"]["finalizers"] = ["example.com/keep"]
    operations = decoded_patch({"response": admit(client, "mutate", "ClusterQueue", sent, version=V2)})
    assert operations == [{"op": "replace", "path": "/metadata/finalizers",
                           "value": ["example.com/keep", c.RESOURCE_IN_USE_FINALIZER]}]


def test_a_v1beta2_workload_is_not_patched(client: FlaskClient) -> None:
    wl = WorkloadBuilder("wl", "ns").queue("lq").podset(cpu="1").obj()
    wl["spec"].update(priorityClassName="high", priorityClassSource="kueue.x-k8s.io/workloadpriorityclass", priority=10)
    response = admit(client, "mutate", "Workload", v2(wl), version=V2)
    assert response["allowed"] is True and "patch" not in response


# --- validation: the user's version's field names -------------------------------------------------


def _v2_workload(**ref: str) -> Obj:
    wl = v2(WorkloadBuilder("wl", "ns").queue("lq").podset(cpu="1").obj())
    wl["spec"]["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high", **ref}
    wl["spec"]["priority"] = 10
    return wl


def test_a_v1beta2_workload_is_checked_against_the_v1beta2_schema(client: FlaskClient) -> None:
    assert admit(client, "validate", "Workload", _v2_workload(), version=V2)["allowed"] is True
    assert denial(admit(client, "validate", "Workload", _v2_workload(kind="PriorityClass"), version=V2)) == (
        "spec.priorityClassRef: Invalid value: only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group"
    )
    no_priority = _v2_workload()
    del no_priority["spec"]["priority"]
    assert denial(admit(client, "validate", "Workload", no_priority, version=V2)) == (
        "spec: Invalid value: priority should not be nil when priorityClassRef is set"
    )


def test_a_v1beta2_queue_is_denied_naming_cohort_name(client: FlaskClient) -> None:
    queue = _v2_queue()
    queue["spec"]["cohortName"] = "Not_A_Name"
    message = denial(admit(client, "validate", "ClusterQueue", queue, version=V2))
    assert message.startswith('spec.cohortName: Invalid value: "Not_A_Name"'), message
    # The same queue in v1beta1 names v1beta1's field.
    v1_queue = convert(queue, V1)
    assert denial(admit(client, "validate", "ClusterQueue", v1_queue, version=V1)).startswith('spec.cohort: Invalid value: "Not_A_Name"')


def _policy_queue(**spec: Any) -> Obj:
    queue = v2(SeedClusterQueueBuilder("cq").flavor("reservation", cpu="8").flavor("spot", cpu="8").obj())
    queue["spec"]["concurrentAdmissionPolicy"] = {"migration": {"mode": "TryPreferredFlavors"}}
    queue["spec"].update(spec)
    return queue


def _last_acceptable(name: str) -> Obj:
    return {"migration": {"mode": "TryPreferredFlavors", "constraints": {"lastAcceptableFlavorName": name}}}


@pytest.mark.parametrize(
    ("description", "make", "message"),
    [
        ("lastAcceptableFlavorName not a flavor of the queue",
         lambda: _policy_queue(concurrentAdmissionPolicy=_last_acceptable("gpu")),
         'spec.concurrentAdmissionPolicy.migration.constraints.lastAcceptableFlavorName: Invalid value: "gpu": '
         "must be one of the flavors defined in the ClusterQueue: [reservation spot]"),
        ("StrictFIFO", lambda: _policy_queue(queueingStrategy="StrictFIFO"),
         'spec.queueingStrategy: Invalid value: "StrictFIFO": StrictFIFO queueing strategy cannot be used when '
         "ConcurrentAdmissionPolicy is defined"),
        ("two resource groups",
         lambda: _policy_queue(resourceGroups=[
             {"coveredResources": ["cpu"], "flavors": [{"name": "reservation", "resources": [{"name": "cpu", "nominalQuota": "8"}]}]},
             {"coveredResources": ["nvidia.com/gpu"], "flavors": [
                 {"name": "gpu", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8"}]}]}]),
         "spec.resourceGroups: Invalid value: 2: must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is defined"),
        ("seventeen flavors",
         lambda: _policy_queue(resourceGroups=[{"coveredResources": ["cpu"], "flavors": [
             {"name": f"f{i}", "resources": [{"name": "cpu", "nominalQuota": "1"}]} for i in range(17)]}]),
         "spec.resourceGroups[0].flavors: Invalid value: 17: cannot have more than 16 resource flavors in the "
         "ResourceGroup when ConcurrentAdmissionPolicy is defined"),
        ("a fallback strategy beside it",
         lambda: _policy_queue(flavorFungibility={"fallbackStrategy": {"rules": [
             {"name": "spot", "trigger": "AdmissionCheckRejected"}]}}),
         "spec.flavorFungibility.fallbackStrategy: Forbidden: may not be set together with "
         "spec.concurrentAdmissionPolicy: concurrent admission tries every flavor at once through options, so there "
         "is no single attempt to fall back from"),
    ],
)
def test_kueues_concurrent_admission_policy_is_denied_in_kueues_words(
    client: FlaskClient, description: str, make: Callable[[], Obj], message: str
) -> None:
    got = denial(admit(client, "validate", "ClusterQueue", make(), version=V2))
    assert got == message, description
    assert "spec.concurrentAdmission." not in got and "spec.concurrentAdmission:" not in got


def test_kueues_policy_is_immutable_but_may_be_respelt(client: FlaskClient) -> None:
    old = _policy_queue()
    assert admit(client, "validate", "ClusterQueue", old, version=V2)["allowed"] is True
    changed = _policy_queue(concurrentAdmissionPolicy={"migration": {"mode": "RetainFirstAdmission"}})
    assert denial(admit(client, "validate", "ClusterQueue", changed, version=V2, old=old, operation="UPDATE")) == (
        'spec.concurrentAdmissionPolicy: Invalid value: "object": field is immutable'
    )
    dropped = _policy_queue()
    del dropped["spec"]["concurrentAdmissionPolicy"]
    assert denial(admit(client, "validate", "ClusterQueue", dropped, version=V2, old=old, operation="UPDATE")) == (
        "spec.concurrentAdmissionPolicy: Invalid value: null: field is immutable"
    )
    # pykueue's spelling of the same policy changes nothing the controller runs.
    respelt = _policy_queue()
    respelt["spec"]["concurrentAdmission"] = {"onSuccess": "RemoveLower"}
    del respelt["spec"]["concurrentAdmissionPolicy"]
    assert admit(client, "validate", "ClusterQueue", respelt, version=V2, old=old, operation="UPDATE")["allowed"] is True


def test_v1beta2_updates_of_the_other_kinds_name_their_fields(client: FlaskClient) -> None:
    old_lq = v2(LocalQueueBuilder("lq", "ns", "cq").obj())
    new_lq = {**old_lq, "spec": {**old_lq["spec"], "clusterQueue": "other"}}
    assert denial(admit(client, "validate", "LocalQueue", new_lq, version=V2, old=old_lq, operation="UPDATE")) == (
        'spec.clusterQueue: Invalid value: "other": field is immutable'
    )
    old_ac = v2(AdmissionCheckBuilder("ac").obj())
    new_ac = {**old_ac, "spec": {**old_ac["spec"], "controllerName": "example.com/other"}}
    assert denial(admit(client, "validate", "AdmissionCheck", new_ac, version=V2, old=old_ac, operation="UPDATE")) == (
        'spec.controllerName: Invalid value: "example.com/other": field is immutable'
    )
    cohort = v2(CohortBuilder("co").parent("co").obj())
    assert denial(admit(client, "validate", "Cohort", cohort, version=V2)) == (
        'spec.parentName: Invalid value: "co": a cohort cannot be its own parent'
    )


def test_a_v1beta2_workload_status_write_is_checked_as_sent(client: FlaskClient) -> None:
    old = v2(WorkloadBuilder("wl", "ns").queue("lq").podset(cpu="1").obj())
    new = copy.deepcopy(old)
    new["status"] = {"reclaimablePods": [{"name": "main", "count": 5}]}
    message = denial(admit(client, "validate", "Workload", new, version=V2, old=old, operation="UPDATE",
                           sub_resource="status", username=CONTROLLER))
    assert message == "status.reclaimablePods[0].count: Invalid value: 5: should be less or equal to 1"


# --- the same verdicts in both versions -----------------------------------------------------------


def _verdict(client: FlaskClient, kind: str, obj: Obj, version: str, username: str) -> Obj:
    return admit(client, "validate", kind, obj, version=version, username=username)


@pytest.mark.parametrize(("description", "make"), cq_rules.VALID, ids=[v[0] for v in cq_rules.VALID])
def test_a_valid_queue_is_valid_in_both_versions(client: FlaskClient, description: str, make: Callable[[], Obj]) -> None:
    queue = make()
    for sent, version in ((queue, V1), (v2(queue), V2)):
        assert _verdict(client, "ClusterQueue", sent, version, "alice")["allowed"] is True, (version, description)


@pytest.mark.parametrize(("description", "make", "message"), cq_rules.INVALID, ids=[v[0] for v in cq_rules.INVALID])
def test_an_invalid_queue_is_denied_in_both_versions_naming_each_versions_fields(
    client: FlaskClient, description: str, make: Callable[[], Obj], message: str
) -> None:
    queue = make()
    assert message in denial(_verdict(client, "ClusterQueue", queue, V1, "alice"))
    sent = v2(queue)
    denied = denial(_verdict(client, "ClusterQueue", sent, V2, "alice"))
    for v1_only in V1BETA1_ONLY_PATHS:
        assert v1_only not in denied, (description, denied)
    if "concurrentAdmissionPolicy" in sent["spec"]:
        # Written as Kueue's policy in v1beta2, the queue is denied on the policy's fields.
        assert "spec.concurrentAdmission." not in denied and "spec.concurrentAdmission:" not in denied, denied
    else:
        assert message.replace("spec.cohort:", "spec.cohortName:") in denied


@pytest.mark.parametrize(("description", "make", "message"), wl_rules.INVALID, ids=[v[0] for v in wl_rules.INVALID])
def test_an_invalid_workload_is_denied_in_both_versions_with_the_same_message(
    client: FlaskClient, description: str, make: Callable[[], Obj], message: str
) -> None:
    workload = make()
    assert message in denial(_verdict(client, "Workload", workload, V1, CONTROLLER))
    assert message in denial(_verdict(client, "Workload", v2(workload), V2, CONTROLLER))
