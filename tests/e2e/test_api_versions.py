"""kueue.x-k8s.io/v1beta2 beside v1beta1 on a real apiserver, converted by the webhook's ``/convert``.

Objects are stored in STORAGE_VERSION (docs/design/api-versions.md). What a user sees: an object written
in either version reads back in the other with Kueue's spelling, fields the other version lacks
survive the trip, Kueue's concurrentAdmissionPolicy runs as the concurrent-admission policy it
corresponds to, Kueue-documentation-style examples apply with strict field validation, and with
the conversion webhook down the other version's requests fail with the apiserver's clear error while nothing
stored is lost, and objects stored in v1beta1 by an earlier pykueue migrate to v1beta2 storage.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from pykueue.api.constants import STORAGE_VERSION
from pykueue.api.conversion import CONVERSION_DATA_ANNOTATION, convert
from pykueue.api.schema import KINDS
from tests.builders import ClusterQueueBuilder, LocalQueueBuilder, ResourceFlavorBuilder
from tests.e2e.helpers.kueue import GROUP, KueueApi, unique
from tests.e2e.helpers.kueue import PLURALS as HELPER_PLURALS
from tests.e2e.helpers.wait import wait_for
from tests.e2e.test_concurrent_admission import World, world  # noqa: F401  (the stories' world and its fixture)

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "v1beta2"
PLURALS = {**HELPER_PLURALS, "MultiKueueCluster": "multikueueclusters", "MultiKueueConfig": "multikueueconfigs"}
NAMESPACED = {"LocalQueue", "Workload"}


class Versions:
    """The same objects through either version, with the plain client (no conversion of our own)."""

    def __init__(self, kube: k8s.ApiClient) -> None:
        self.custom = k8s.CustomObjectsApi(kube)
        self.cluster_scoped: list[tuple[str, str]] = []

    def create(self, version: str, obj: dict[str, Any], **kw: Any) -> dict[str, Any]:
        obj = {**obj, "apiVersion": f"{GROUP}/{version}"}
        kind, plural = obj["kind"], PLURALS[obj["kind"]]
        if kind in NAMESPACED:
            return self.custom.create_namespaced_custom_object(GROUP, version, obj["metadata"]["namespace"], plural, obj, **kw)
        created = self.custom.create_cluster_custom_object(GROUP, version, plural, obj, **kw)
        self.cluster_scoped.append((kind, obj["metadata"]["name"]))
        return created

    def get(self, version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        if kind in NAMESPACED:
            return self.custom.get_namespaced_custom_object(GROUP, version, namespace, PLURALS[kind], name)
        return self.custom.get_cluster_custom_object(GROUP, version, PLURALS[kind], name)

    def names(self, version: str, kind: str) -> set[str]:
        items = self.custom.list_cluster_custom_object(GROUP, version, PLURALS[kind])["items"]
        return {f"{i['metadata'].get('namespace', '')}/{i['metadata']['name']}" for i in items}

    def cleanup(self) -> None:
        for kind, name in reversed(self.cluster_scoped):
            try:
                self.custom.delete_cluster_custom_object(GROUP, "v1beta1", PLURALS[kind], name)
            except ApiException as err:
                if err.status != 404:
                    raise


@pytest.fixture
def versions(kube: k8s.ApiClient, webhook: Any) -> Iterator[Versions]:
    api = Versions(kube)
    try:
        yield api
    finally:
        api.cleanup()


def _pod_set(name: str = "main", cpu: str = "1") -> dict[str, Any]:
    return {"name": name, "count": 1, "template": {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": {"cpu": cpu}}}]}}}


def test_every_crd_serves_both_versions_through_the_running_webhook(cluster: Any, webhook: Any) -> None:
    for info in KINDS.values():
        crd = json.loads(cluster.kubectl("get", "crd", info.crd_name, "-o", "json").stdout)
        served = {v["name"]: (v["served"], v["storage"]) for v in crd["spec"]["versions"]}
        assert served == {"v1beta1": (True, STORAGE_VERSION == "v1beta1"), "v1beta2": (True, STORAGE_VERSION == "v1beta2")}, info.kind
        conversion = crd["spec"]["conversion"]
        assert conversion["strategy"] == "Webhook"
        client_config = conversion["webhook"]["clientConfig"]
        assert client_config.get("caBundle"), f"{info.crd_name}: no CA bundle injected"
        if webhook.local_url:
            assert client_config.get("url") == webhook.local_url + "/convert"
        else:
            assert client_config["service"]["path"] == "/convert"


def test_objects_written_in_v1beta1_read_back_in_v1beta2(versions: Versions, namespace: str, cluster: Any) -> None:
    flavor, cq, cohort, wpc = unique("rf"), unique("cq"), unique("cohort"), unique("wpc")
    versions.create("v1beta1", ResourceFlavorBuilder(flavor).obj())
    versions.create("v1beta1", {"kind": "WorkloadPriorityClass", "metadata": {"name": wpc}, "value": 100})
    versions.create("v1beta1", ClusterQueueBuilder(cq).flavor(flavor, cpu="4").cohort(cohort).obj())
    versions.create("v1beta1", LocalQueueBuilder("lq", namespace, cq).obj())
    versions.create("v1beta1", {
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": namespace},
        "spec": {"queueName": "lq", "priorityClassName": wpc, "priority": 100,
                 "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass", "podSets": [_pod_set()]},
    })

    got = versions.get("v1beta2", "ClusterQueue", cq)
    assert got["apiVersion"] == f"{GROUP}/v1beta2"
    assert got["spec"]["cohortName"] == cohort and "cohort" not in got["spec"]
    wl = versions.get("v1beta2", "Workload", "wl", namespace)
    assert wl["spec"]["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": wpc}
    assert "priorityClassName" not in wl["spec"]
    assert CONVERSION_DATA_ANNOTATION not in (wl["metadata"].get("annotations") or {})
    # Listing in either version returns this test's objects (only those are compared: objects of
    # earlier tests may finish their deletion between two lists), with each version's columns.
    ours = {
        "ClusterQueue": {f"/{cq}"},
        "ResourceFlavor": {f"/{flavor}"},
        "LocalQueue": {f"{namespace}/lq"},
        "Workload": {f"{namespace}/wl"},
    }
    for kind, names in ours.items():
        assert versions.names("v1beta1", kind) & names == versions.names("v1beta2", kind) & names == names, kind
    for version in ("v1beta1", "v1beta2"):
        table = cluster.kubectl("get", f"clusterqueues.{version}.{GROUP}", cq).stdout.splitlines()
        assert table[0].split()[:2] == ["NAME", "COHORT"] and table[1].split()[:2] == [cq, cohort], (version, table)


def test_objects_written_in_v1beta2_read_back_in_v1beta1_and_keep_what_it_lacks(
    versions: Versions, namespace: str
) -> None:
    flavor, cq, cohort, worker = unique("rf"), unique("cq"), unique("cohort"), unique("worker")
    versions.create("v1beta2", ResourceFlavorBuilder(flavor).obj())
    versions.create("v1beta2", {
        "kind": "ClusterQueue",
        "metadata": {"name": cq},
        "spec": {"cohortName": cohort, "namespaceSelector": {},
                 "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                     {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}],
                 "concurrentAdmissionPolicy": {"migration": {"mode": "TryPreferredFlavors"}}},
    })
    versions.create("v1beta2", {"kind": "MultiKueueCluster", "metadata": {"name": worker},
                                "spec": {"clusterSource": {"kubeConfig": {"location": f"{worker}-kubeconfig"}}}})
    versions.create("v1beta2", LocalQueueBuilder("lq", namespace, cq).obj())
    versions.create("v1beta2", {
        "kind": "Workload",
        "metadata": {"name": "gated", "namespace": namespace},
        "spec": {"queueName": "lq", "active": False, "preemptionGates": [{"name": "example.com/gate"}],
                 "podSets": [_pod_set()]},
    })

    stored_cq = versions.get("v1beta1", "ClusterQueue", cq)
    assert stored_cq["spec"]["cohort"] == cohort
    assert stored_cq["spec"]["concurrentAdmission"] == {"onSuccess": "RemoveLower"}
    assert "concurrentAdmissionPolicy" not in stored_cq["spec"]
    assert versions.get("v1beta1", "MultiKueueCluster", worker)["spec"]["kubeConfig"] == {
        "location": f"{worker}-kubeconfig", "locationType": "Secret"}
    wl = versions.get("v1beta1", "Workload", "gated", namespace)
    assert "preemptionGates" not in wl["spec"]
    assert "preemptionGates" in wl["metadata"]["annotations"][CONVERSION_DATA_ANNOTATION]

    # A v1beta1 writer (pykueue's own controller is one) does not lose the v1beta2-only field.
    versions.custom.patch_namespaced_custom_object(
        GROUP, "v1beta1", namespace, "workloads", "gated", {"metadata": {"labels": {"touched": "v1beta1"}}})
    again = versions.get("v1beta2", "Workload", "gated", namespace)
    assert again["spec"]["preemptionGates"] == [{"name": "example.com/gate"}]
    assert again["metadata"]["labels"]["touched"] == "v1beta1"
    assert CONVERSION_DATA_ANNOTATION not in (again["metadata"].get("annotations") or {})
    assert versions.get("v1beta2", "ClusterQueue", cq)["spec"]["concurrentAdmissionPolicy"] == {
        "migration": {"mode": "TryPreferredFlavors"}}


def test_both_concurrent_admission_spellings_are_refused_naming_both(versions: Versions) -> None:
    flavor = unique("rf")
    versions.create("v1beta2", ResourceFlavorBuilder(flavor).obj())
    cq = ClusterQueueBuilder(unique("cq")).flavor(flavor, cpu="4").obj()
    cq["spec"]["concurrentAdmission"] = {"onSuccess": "RemoveOther"}
    cq["spec"]["concurrentAdmissionPolicy"] = {"migration": {"mode": "RetainFirstAdmission"}}
    with pytest.raises(ApiException) as refused:
        versions.create("v1beta2", cq)
    assert refused.value.status == 422
    body = json.loads(refused.value.body)
    assert "spec.concurrentAdmission and spec.concurrentAdmissionPolicy may not be set together" in body["message"]


# The apiserver's count of conversion-webhook calls per CRD (a histogram's _count, one series per
# from/to version and outcome).
CONVERSION_CALLS = "apiserver_crd_conversion_webhook_duration_seconds_count{"


def _conversion_calls(cluster: Any, crd_name: str) -> float:
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    series = [line for line in text.splitlines() if line.startswith(CONVERSION_CALLS) and f'crd_name="{crd_name}"' in line]
    return sum(float(line.rsplit(" ", 1)[1]) for line in series)


def _calls_for(cluster: Any, kind: str, write: Any) -> float:
    """How many conversion-webhook calls the apiserver made for ``kind`` while ``write()`` ran."""
    crd_name = KINDS[kind].crd_name
    before = _conversion_calls(cluster, crd_name)
    write()
    return _conversion_calls(cluster, crd_name) - before


def test_admission_hooks_cost_no_conversion_in_v1beta2_and_none_beyond_storage_in_v1beta1(
    cluster: Any, versions: Versions, namespace: str
) -> None:
    """The Kueue-kind hooks read the version their client wrote (webhook/registry.py): a v1beta2
    create costs no conversion-webhook call, and a v1beta1 create what storing it costs a kind no
    hook sees (WorkloadPriorityClass), nothing more.

    Server-side dry runs: admission runs in full and the object is encoded for storage and decoded
    back, but nothing is written, so no watch event or controller write adds calls of its own.
    Other clients of v1beta1 (the invariant checks list in it) may still add calls for the same
    kind meanwhile, never remove one: each create is counted three times and the fewest calls kept.
    """
    flavor, cq = unique("rf"), unique("cq")

    def cost(kind: str, version: str, obj: dict[str, Any]) -> float:
        sent = convert({**obj, "apiVersion": f"{GROUP}/v1beta1"}, version)
        return min(_calls_for(cluster, kind, lambda: versions.create(version, sent, dry_run="All")) for _ in range(3))

    storage = {version: cost("WorkloadPriorityClass", version, {"kind": "WorkloadPriorityClass",
                                                                "metadata": {"name": unique("wpc")}, "value": 1})
               for version in ("v1beta1", "v1beta2")}
    assert storage["v1beta2"] == 0
    assert storage["v1beta1"] >= 1  # v1beta1 is not the storage version: storing it converts
    for version in ("v1beta1", "v1beta2"):
        calls = {
            "ResourceFlavor": cost("ResourceFlavor", version, ResourceFlavorBuilder(flavor).obj()),
            "ClusterQueue": cost("ClusterQueue", version, ClusterQueueBuilder(cq).cohort("co").flavor(flavor, cpu="4").obj()),
            "LocalQueue": cost("LocalQueue", version, LocalQueueBuilder("lq", namespace, cq).obj()),
            "Workload": cost("Workload", version, {"kind": "Workload", "metadata": {"name": "wl", "namespace": namespace},
                                                   "spec": {"queueName": "lq", "podSets": [_pod_set()]}}),
        }
        assert calls == dict.fromkeys(calls, storage[version]), (version, storage)


def test_a_v1beta2_client_is_denied_in_v1beta2_field_names(versions: Versions) -> None:
    """The webhook's denial names Kueue's v1beta2 field the client wrote, not the v1beta1 field it
    is stored as; the same queue sent in v1beta1 is denied naming v1beta1's."""
    flavor = unique("rf")
    versions.create("v1beta2", ResourceFlavorBuilder(flavor).obj())
    queue = convert(ClusterQueueBuilder(unique("cq")).flavor(flavor, cpu="4").obj(), "v1beta2")
    queue["spec"]["concurrentAdmissionPolicy"] = {
        "migration": {"mode": "TryPreferredFlavors", "constraints": {"lastAcceptableFlavorName": "not-a-flavor"}}}
    with pytest.raises(ApiException) as refused:
        versions.create("v1beta2", queue)
    assert refused.value.status == 403
    message = json.loads(refused.value.body)["message"]
    assert message == (
        'admission webhook "vclusterqueue.kb.io" denied the request: '
        'spec.concurrentAdmissionPolicy.migration.constraints.lastAcceptableFlavorName: Invalid value: "not-a-flavor": '
        f"must be one of the flavors defined in the ClusterQueue: [{flavor}]"
    )
    with pytest.raises(ApiException) as refused_v1:
        versions.create("v1beta1", convert(queue, "v1beta1"))
    assert refused_v1.value.status == 403
    assert 'spec.concurrentAdmission.removeBelowTargetConfig.targetResourceFlavor: Unsupported value: "not-a-flavor"' in (
        json.loads(refused_v1.value.body)["message"])


def _examples() -> list[dict[str, Any]]:
    return [doc for path in sorted(EXAMPLES.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text())]


def test_the_v1beta2_examples_apply_with_strict_field_validation(cluster: Any, kueue: KueueApi) -> None:
    docs = _examples()
    try:
        result = cluster.kubectl("apply", "--validate=strict", "-f", str(EXAMPLES), check=False)
        assert result.returncode == 0, result.stderr
        assert "unknown field" not in result.stderr and "Warning" not in result.stderr, result.stderr
        for doc in docs:
            if doc["kind"] not in KINDS:
                continue
            target = [f"{PLURALS[doc['kind']]}.v1beta2.{GROUP}/{doc['metadata']['name']}"]
            if "namespace" in doc["metadata"]:
                target += ["-n", doc["metadata"]["namespace"]]
            live = json.loads(cluster.kubectl("get", *target, "-o", "json").stdout)
            for field in ("spec", "value", "description"):
                if field in doc:
                    assert _contains(live[field], doc[field]), f"{doc['kind']}/{doc['metadata']['name']}: {field}"
            # ... and the same object in v1beta1, under its v1beta1 name.
            v1 = [target[0].replace(".v1beta2.", ".v1beta1."), *target[1:]]
            assert json.loads(cluster.kubectl("get", *v1, "-o", "json").stdout)["metadata"]["uid"] == live["metadata"]["uid"]
        # Listing too answers in both versions. Only the examples' queues are compared: queues
        # of earlier tests may still be finishing their deletion between the two lists.
        ours = {f"clusterqueue.{GROUP}/{d['metadata']['name']}" for d in docs if d["kind"] == "ClusterQueue"}
        listed = {
            version: sorted(set(cluster.kubectl("get", f"clusterqueues.{version}.{GROUP}", "-o", "name").stdout.split()) & ours)
            for version in ("v1beta2", "v1beta1")
        }
        assert listed["v1beta2"] == listed["v1beta1"] == sorted(ours)
    finally:
        cluster.kubectl("delete", "-f", str(EXAMPLES), "--ignore-not-found", "--wait=false", check=False)


def _contains(big: Any, small: Any) -> bool:
    """``big`` holds everything of ``small`` (the apiserver adds defaults)."""
    if isinstance(small, dict):
        return isinstance(big, dict) and all(k in big and _contains(big[k], v) for k, v in small.items())
    if isinstance(small, list):
        return isinstance(big, list) and len(big) == len(small) and all(map(_contains, big, small))
    return bool(big == small or str(big) == str(small))


@pytest.mark.needs_local_cluster
def test_with_the_conversion_webhook_down_the_other_version_fails_clearly_and_nothing_is_lost(
    versions: Versions, webhook: Any, namespace: str
) -> None:
    """Reads in the storage version need no webhook; the other version's reads get the
    apiserver's error naming the conversion webhook, and read again once it is back."""
    stored_version, other = STORAGE_VERSION, next(v for v in ("v1beta1", "v1beta2") if v != STORAGE_VERSION)
    flavor, cq = unique("rf"), unique("cq")
    versions.create("v1beta2", ResourceFlavorBuilder(flavor).obj())
    versions.create("v1beta2", ClusterQueueBuilder(cq).flavor(flavor, cpu="4").obj())
    versions.create("v1beta2", LocalQueueBuilder("lq", namespace, cq).obj())
    versions.create("v1beta2", {
        "kind": "Workload",
        "metadata": {"name": "kept", "namespace": namespace},
        "spec": {"queueName": "lq", "active": False, "preemptionGates": [{"name": "example.com/gate"}],
                 "podSets": [_pod_set()]},
    })
    before = versions.get(other, "Workload", "kept", namespace)

    webhook.stop()
    try:
        with pytest.raises(ApiException) as failed:
            versions.get(other, "Workload", "kept", namespace)
        assert failed.value.status >= 500
        assert f"conversion webhook for kueue.x-k8s.io/{stored_version}, Kind=Workload failed" in failed.value.body
        with pytest.raises(ApiException) as refused:
            versions.create(other, {"kind": "Workload", "metadata": {"name": "new", "namespace": namespace},
                                    "spec": {"queueName": "lq", "podSets": [_pod_set()]}})
        assert "webhook" in refused.value.body
        # The stored version needs no conversion: its readers (the programs among them) carry on.
        stored = versions.get(stored_version, "Workload", "kept", namespace)
        if stored_version == "v1beta2":
            assert stored["spec"]["preemptionGates"] == [{"name": "example.com/gate"}]
        else:
            assert CONVERSION_DATA_ANNOTATION in stored["metadata"]["annotations"]
    finally:
        webhook.start()

    def readable() -> dict[str, Any] | None:
        try:
            return versions.get(other, "Workload", "kept", namespace)
        except ApiException:
            return None

    after = wait_for(readable, timeout=60, message=f"{other} reads work again once the webhook is back")
    assert after["spec"] == before["spec"]
    assert after["metadata"]["uid"] == before["metadata"]["uid"]


def test_kueues_concurrent_admission_policy_migrates_a_job_to_a_preferred_flavor(
    world: World, kueue: KueueApi, namespace: str, kube: k8s.ApiClient,  # noqa: F811  (the imported fixture)
) -> None:
    """Story 1 of the concurrent-admission e2e, with the queue written as Kueue's v1beta2 documents it."""
    world.flavors("reservation", "on-demand", "spot")
    name = unique("cq")
    flavors = [("reservation", "0"), ("on-demand", "0"), ("spot", "4")]
    cq = {
        "apiVersion": f"{GROUP}/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": world.flavor[f], "resources": [{"name": "cpu", "nominalQuota": q}]} for f, q in flavors]}],
            "concurrentAdmissionPolicy": {"migration": {"mode": "TryPreferredFlavors"}},
        },
    }
    k8s.CustomObjectsApi(kube).create_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", cq)
    kueue.created.append(("ClusterQueue", name))
    kueue.create(LocalQueueBuilder("lq", namespace, name).obj())
    world.queues["lq"] = name

    world.job("train")
    parent = world.parent_of_job("train")
    world.wait_running_on("train", "spot")
    world.set_quota("on-demand", "cpu", "4")
    world.wait_running_on("train", "on-demand")
    world.wait_option_statuses(parent, {"reservation": "Pending", "on-demand": "Admitted", "spot": "Removed"})
    # The queue still reads as Kueue's policy after the controller and the test wrote it in v1beta1.
    live = k8s.CustomObjectsApi(kube).get_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", name)
    assert live["spec"]["concurrentAdmissionPolicy"] == {"migration": {"mode": "TryPreferredFlavors"}}
    assert "concurrentAdmission" not in live["spec"]


@pytest.mark.needs_local_cluster
def test_objects_stored_before_the_upgrade_read_in_both_versions_after_it(
    cluster: Any, versions: Versions, webhook: Any
) -> None:
    """The upgrade from a pykueue that served only v1beta1 (docs/install.md, "Upgrade").

    The MultiKueueCluster CRD is put back to its earlier form (v1beta1 alone, no conversion) while
    an object is written, then the current CRD returns (as `kubectl apply` of the new CRDs and the
    webhook's sync leave it). The object, still stored in v1beta1, reads in both versions right
    away; the storage migration that rewrites it in v1beta2 is the next test.
    """
    name = "multikueueclusters.kueue.x-k8s.io"
    current = json.loads(cluster.kubectl("get", "crd", name, "-o", "json").stdout)
    v1beta1 = next(v for v in current["spec"]["versions"] if v["name"] == "v1beta1")
    versions_then = [{**{k: v for k, v in v1beta1.items() if k not in ("deprecated", "deprecationWarning")}, "storage": True}]
    if "v1beta2" in current["status"]["storedVersions"]:
        # The apiserver keeps a version that was ever stored in spec.versions; unserved, it is invisible.
        v1beta2 = next(v for v in current["spec"]["versions"] if v["name"] == "v1beta2")
        versions_then.append({**v1beta2, "served": False, "storage": False})
    earlier = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name, "resourceVersion": current["metadata"]["resourceVersion"]},
        "spec": {
            **{k: v for k, v in current["spec"].items() if k not in ("versions", "conversion")},
            "conversion": {"strategy": "None"},
            "versions": versions_then,
        },
    }
    worker = unique("before-upgrade")
    cluster.kubectl("replace", "-f", "-", input=json.dumps(earlier))
    try:
        wait_for(lambda: cluster.kubectl("get", f"multikueueclusters.v1beta2.{GROUP}", check=False).returncode != 0,
                 timeout=30, message="v1beta2 is no longer served")
        versions.create("v1beta1", {"kind": "MultiKueueCluster", "metadata": {"name": worker},
                                    "spec": {"kubeConfig": {"location": f"{worker}-kubeconfig", "locationType": "Secret"}}})
    finally:
        latest = json.loads(cluster.kubectl("get", "crd", name, "-o", "json").stdout)
        restored = {**current, "metadata": {"name": name, "resourceVersion": latest["metadata"]["resourceVersion"]}}
        restored.pop("status", None)
        cluster.kubectl("replace", "-f", "-", input=json.dumps(restored))

    def upgraded() -> dict[str, Any] | None:
        try:
            return versions.get("v1beta2", "MultiKueueCluster", worker)
        except ApiException:
            return None

    after = wait_for(upgraded, timeout=60, message="the object stored before the upgrade reads in v1beta2")
    assert after["spec"]["clusterSource"] == {"kubeConfig": {"location": f"{worker}-kubeconfig", "locationType": "Secret"}}
    assert versions.get("v1beta1", "MultiKueueCluster", worker)["spec"]["kubeConfig"]["location"] == f"{worker}-kubeconfig"
    stored = json.loads(cluster.kubectl("get", "crd", name, "-o", "json").stdout)["status"]["storedVersions"]
    # Until the migration (next test) rewrites them, objects of the earlier CRD stay stored in v1beta1.
    assert set(stored) == {"v1beta1", STORAGE_VERSION}


def _with_storage(crd: dict[str, Any], version: str, resource_version: str) -> dict[str, Any]:
    """``crd`` (as read) storing ``version``, ready for ``kubectl replace``."""
    spec = json.loads(json.dumps(crd["spec"]))
    for served in spec["versions"]:
        served["storage"] = served["name"] == version
    return {"apiVersion": crd["apiVersion"], "kind": crd["kind"],
            "metadata": {"name": crd["metadata"]["name"], "resourceVersion": resource_version}, "spec": spec}


@pytest.mark.needs_local_cluster
def test_objects_stored_in_v1beta1_are_migrated_to_v1beta2_storage_with_nothing_lost(
    cluster: Any, versions: Versions, webhook: Any
) -> None:
    """The storage migration of docs/install.md ("Upgrade"), step by step on a real apiserver.

    Objects are written while their CRDs store v1beta1 (an earlier pykueue); the CRDs then store
    v1beta2; the documented steps (a no-op ``kubectl replace`` of every object, then
    ``status.storedVersions`` trimmed to ``[v1beta2]``) rewrite them. etcd itself is read to
    show the version each object is stored in, and every field survives in both versions,
    including one v1beta2 lacks (AdmissionCheck ``retryDelayMinutes``, kept in the
    conversion-data annotation).
    """
    crds = {"MultiKueueCluster": "multikueueclusters.kueue.x-k8s.io", "AdmissionCheck": "admissionchecks.kueue.x-k8s.io"}
    current = {kind: json.loads(cluster.kubectl("get", "crd", name, "-o", "json").stdout) for kind, name in crds.items()}

    def store(version: str) -> None:
        for kind, name in crds.items():
            live = json.loads(cluster.kubectl("get", "crd", name, "-o", "json").stdout)
            cluster.kubectl("replace", "-f", "-", input=json.dumps(
                _with_storage(current[kind], version, live["metadata"]["resourceVersion"])))

    def stored_as(plural: str, name: str) -> str:
        raw = cluster.etcd_value(f"/registry/{GROUP}/{plural}/{name}")
        assert raw is not None, f"{plural}/{name} is not in etcd"
        return str(json.loads(raw)["apiVersion"])

    worker, check = unique("migrated-worker"), unique("migrated-check")
    try:
        store("v1beta1")
        versions.create("v1beta1", {"kind": "MultiKueueCluster", "metadata": {"name": worker},
                                    "spec": {"kubeConfig": {"location": f"{worker}-kubeconfig", "locationType": "Secret"}}})
        versions.create("v1beta1", {"kind": "AdmissionCheck", "metadata": {"name": check},
                                    "spec": {"controllerName": "example.com/not-pykueue", "retryDelayMinutes": 7}})
        assert stored_as("multikueueclusters", worker) == f"{GROUP}/v1beta1"
        assert stored_as("admissionchecks", check) == f"{GROUP}/v1beta1"

        store("v1beta2")
        for name in crds.values():
            stored = json.loads(cluster.kubectl("get", "crd", name, "-o", "json").stdout)["status"]["storedVersions"]
            assert set(stored) == {"v1beta1", "v1beta2"}
        # The documented migration: rewrite every object, then forget v1beta1 as a stored version;
        # a kind whose replace met a conflict (the controller wrote a MultiKueueCluster's status
        # between the get and the replace; CI saw it) goes round the loop again, as the guide says.
        for name in crds.values():
            for _attempt in range(5):
                listed = cluster.kubectl("get", name, "-o", "json").stdout
                replaced = cluster.kubectl("replace", "-f", "-", input=listed, check=False)
                if replaced.returncode == 0:
                    break
                assert "Conflict" in replaced.stderr, replaced.stderr
            else:
                raise AssertionError(f"{name}: kubectl replace met a conflict 5 times running")
            cluster.kubectl("patch", "crd", name, "--subresource=status", "--type=merge",
                            "-p", json.dumps({"status": {"storedVersions": ["v1beta2"]}}))
        assert stored_as("multikueueclusters", worker) == f"{GROUP}/v1beta2"
        assert stored_as("admissionchecks", check) == f"{GROUP}/v1beta2"
        for name in crds.values():
            stored = json.loads(cluster.kubectl("get", "crd", name, "-o", "json").stdout)["status"]["storedVersions"]
            assert stored == ["v1beta2"]

        location = {"location": f"{worker}-kubeconfig", "locationType": "Secret"}
        assert versions.get("v1beta2", "MultiKueueCluster", worker)["spec"]["clusterSource"] == {"kubeConfig": location}
        assert versions.get("v1beta1", "MultiKueueCluster", worker)["spec"]["kubeConfig"] == location
        as_v1beta2 = versions.get("v1beta2", "AdmissionCheck", check)
        assert "retryDelayMinutes" not in as_v1beta2["spec"]
        assert as_v1beta2["spec"]["controllerName"] == "example.com/not-pykueue"
        assert versions.get("v1beta1", "AdmissionCheck", check)["spec"]["retryDelayMinutes"] == 7
    finally:
        for kind, name in crds.items():
            live = json.loads(cluster.kubectl("get", "crd", name, "-o", "json").stdout)
            restored = {**current[kind], "metadata": {"name": name, "resourceVersion": live["metadata"]["resourceVersion"]}}
            restored.pop("status", None)
            cluster.kubectl("replace", "-f", "-", input=json.dumps(restored))
