"""Kueue kinds on the wire in the storage version (pykueue/kube/versions.py).

Two kinds of facts: the client addresses, sends and reads Kueue kinds in the wire version while
callers keep v1beta1; and every merge patch shape the programs send means the same thing in
v1beta2: applying the converted patch to the stored v1beta2 object gives what storing the
v1beta1 result would give.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from controller.concurrentadmission.option_workloads import sync_patch
from pykueue.api.conversion import CONVERSION_DATA_ANNOTATION, ConversionError, convert, convert_patch
from pykueue.kube.client import KubeClient
from pykueue.kube.resources import (
    ADMISSION_CHECKS,
    CLUSTER_QUEUES,
    COHORTS,
    JOBS,
    LOCAL_QUEUES,
    MULTIKUEUE_CLUSTERS,
    RESOURCE_FLAVORS,
    WORKLOADS,
)
from pykueue.kube.versions import KueueWire
from tests.builders import (
    AdmissionCheckBuilder,
    ClusterQueueBuilder,
    LocalQueueBuilder,
    ResourceFlavorBuilder,
    WorkloadBuilder,
    condition,
)
from tests.unit.concurrentadmission.helpers import config_of, option, parent, three_flavor_queue
from tests.unit.kube.fake_transport import ChunkStream, ScriptedTransport

Obj = dict[str, Any]
V1 = "kueue.x-k8s.io/v1beta1"
V2 = "kueue.x-k8s.io/v1beta2"


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, as the apiserver applies it."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def without_annotation(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    annotations = out.get("metadata", {}).get("annotations", {})
    annotations.pop(CONVERSION_DATA_ANNOTATION, None)
    if not annotations:
        out.get("metadata", {}).pop("annotations", None)
    return out


def assert_same_in_both_versions(stored_v1: Obj, patch: Obj) -> Obj:
    """The converted patch applied to the v1beta2 object stores what the v1beta1 patch does."""
    kind = stored_v1["kind"]
    expected = convert(merge(stored_v1, patch), "v1beta2")
    got = merge(convert(stored_v1, "v1beta2"), convert_patch(kind, patch, "v1beta1", "v1beta2"))
    assert without_annotation(got) == without_annotation(expected)
    # ... and the patch never writes the conversion-data annotation itself.
    assert CONVERSION_DATA_ANNOTATION not in json.dumps(convert_patch(kind, patch, "v1beta1", "v1beta2"))
    return got


def topology(*hosts: str) -> Obj:
    return {"levels": ["zone", "kubernetes.io/hostname"], "domains": [{"values": ["z1", h], "count": 1} for h in hosts]}


def admitted_workload() -> Obj:
    wl = WorkloadBuilder("wl", "ns").queue("lq").podset("main", 2, cpu="1").priority_class("high").priority(10)
    obj = wl.reserved("cq", {"cpu": "on-demand"}, {"cpu": "2"}).admitted().obj()
    obj["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = topology("h1", "h2")
    obj["status"]["accumulatedPastExexcutionTimeSeconds"] = 30
    return obj


WORKLOAD_PATCHES: dict[str, Obj] = {
    # scheduler: admission (with a topology assignment) and its conditions, compare-and-swap
    "admit": {
        "metadata": {"resourceVersion": "7"},
        "status": {
            **WorkloadBuilder("wl", "ns").podset("main", 2, cpu="1").reserved("cq", {"cpu": "spot"}).obj()["status"],
        },
    },
    "admit-with-topology": {
        "status": {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": "main", "flavors": {"cpu": "a"}, "count": 2, "topologyAssignment": topology("h3", "h4")}],
            }
        }
    },
    # workload controller: eviction clears the admission and records the time it ran
    "evict": {
        "status": {
            "admission": None,
            "conditions": [condition("Evicted", True, "Preempted", "preempted", at="2026-01-01T00:01:00Z")],
            "accumulatedPastExexcutionTimeSeconds": 95,
            "requeueState": {"count": 1, "requeueAt": "2026-01-01T00:02:00Z"},
        }
    },
    "requeue-state-cleared": {"status": {"requeueState": None}},
    "admission-checks": {"status": WorkloadBuilder("wl").check("prov", "Retry", retry_count=1).obj()["status"]},
    "reclaimable": {"status": {"reclaimablePods": [{"name": "main", "count": 1}]}},
    # job reconciler / concurrent admission: spec.active, priority that follows its class
    "deactivate": {"spec": {"active": False}},
    "priority-follows-class": {
        "spec": {"priority": 100, "priorityClassName": "urgent", "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass"}
    },
    "priority-class-removed": {"spec": {"priorityClassName": None, "priorityClassSource": None}},
    "priority-only": {"spec": {"priority": 3}},
    # finalizers, labels, annotations (fallback triggers), owner references
    "finalizer-release": {"metadata": {"finalizers": None, "resourceVersion": "9"}},
    "annotation": {"metadata": {"annotations": {"pykueue.x-k8s.io/flavor-fallback-triggers": "a=Preempted"}}},
    "labels": {"metadata": {"labels": {"kueue.x-k8s.io/concurrent-admission-parent": "p"}}},
}


@pytest.mark.parametrize("shape", sorted(WORKLOAD_PATCHES))
def test_workload_patches_mean_the_same_in_v1beta2(shape: str) -> None:
    assert_same_in_both_versions(admitted_workload(), WORKLOAD_PATCHES[shape])


def test_a_patch_without_priority_fields_leaves_the_reference_alone() -> None:
    stored = admitted_workload()
    got = assert_same_in_both_versions(stored, {"spec": {"active": False}})
    assert got["spec"]["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
    assert convert_patch("Workload", {"spec": {"active": False}}, "v1beta1", "v1beta2") == {"spec": {"active": False}}


def test_an_option_following_its_parents_new_class_sends_the_class_as_a_pair() -> None:
    """The option controller's sync of the priority (controller/concurrentadmission): only the
    class name changed, yet the patch names the source too, so that v1beta2's priorityClassRef
    can be built; a patch naming one of the pair is refused, never sent without it (found in e2e:
    the options kept their old class)."""
    config = config_of(three_flavor_queue())
    p = parent()
    p["spec"].update(priority=1, priorityClassName="low", priorityClassSource="kueue.x-k8s.io/workloadpriorityclass")
    opt = option(p, config, "spot")
    p["spec"].update(priority=100, priorityClassName="high")
    patch = sync_patch(opt, p, config.by_suffix("spot"))
    assert patch is not None
    got = assert_same_in_both_versions(convert(opt, "v1beta1"), patch)
    assert got["spec"]["priorityClassRef"]["name"] == "high" and got["spec"]["priority"] == 100
    with pytest.raises(ConversionError, match=r"priorityClassName and spec\.priorityClassSource"):
        convert_patch("Workload", {"spec": {"priorityClassName": "high"}}, "v1beta1", "v1beta2")


def test_renamed_and_re_encoded_fields_of_a_patch() -> None:
    assert convert_patch("Workload", WORKLOAD_PATCHES["priority-class-removed"], "v1beta1", "v1beta2") == {
        "spec": {"priorityClassRef": None}
    }
    assert convert_patch("Workload", {"status": {"accumulatedPastExexcutionTimeSeconds": 5}}, "v1beta1", "v1beta2") == {
        "status": {"accumulatedPastExecutionTimeSeconds": 5}
    }
    assert convert_patch("LocalQueue", {"status": {"flavorUsage": []}}, "v1beta1", "v1beta2") == {
        "status": {"flavorsUsage": []}
    }
    assert convert_patch("ClusterQueue", {"spec": {"cohort": None}}, "v1beta1", "v1beta2") == {"spec": {"cohortName": None}}
    # the other way, as a v1beta2 client's patch would read in v1beta1
    assert convert_patch("Workload", {"spec": {"priorityClassRef": None}}, "v1beta2", "v1beta1") == {
        "spec": {"priorityClassName": None, "priorityClassSource": None}
    }
    assert convert_patch("Workload", {"spec": {"active": True}}, "v1beta2", "v1beta1") == {"spec": {"active": True}}


def queue_status(counts: int) -> Obj:
    usage = [{"name": "on-demand", "resources": [{"name": "cpu", "total": str(counts)}]}]
    return {
        "pendingWorkloads": counts,
        "reservingWorkloads": 1,
        "admittedWorkloads": 1,
        "flavorsReservation": usage,
        "conditions": [condition("Active", True, "Ready", "Can admit new workloads")],
    }


QUEUE_PATCHES: list[tuple[Obj, Obj]] = [
    # queue status controller: ClusterQueue status, the flavor finalizer's release, fair share
    (ClusterQueueBuilder("cq").cohort("all").flavor("on-demand", cpu="4").obj(), {"status": {**queue_status(2), "flavorsUsage": []}}),
    (ClusterQueueBuilder("cq").cohort("all").obj(), {"metadata": {"finalizers": ["kueue.x-k8s.io/resource-in-use"]}}),
    (ClusterQueueBuilder("cq").admission_checks("prov").obj(), {"metadata": {"finalizers": None}}),
    # a client dropping a queue's checks (found with the e2e suite writing v1beta2)
    (ClusterQueueBuilder("cq").admission_checks("prov").obj(), {"spec": {"admissionChecks": None}}),
    (ClusterQueueBuilder("cq").obj(), {"status": {"fairSharing": {"weightedShare": 250}}}),
    (LocalQueueBuilder("lq", "ns", "cq").obj(), {"status": {**queue_status(3), "flavorUsage": queue_status(1)["flavorsReservation"]}}),
    (ResourceFlavorBuilder("on-demand").obj(), {"metadata": {"finalizers": None}}),
    (AdmissionCheckBuilder("prov").obj(), {"status": {"conditions": [condition("Active", True, "Active", "ok")]}}),
    (
        {"apiVersion": V1, "kind": "Cohort", "metadata": {"name": "all"}, "spec": {}},
        {"status": {"fairSharing": {"weightedShare": 0}}},
    ),
    (
        {"apiVersion": V1, "kind": "MultiKueueCluster", "metadata": {"name": "w1"}, "spec": {"kubeConfig": {"location": "w1", "locationType": "Secret"}}},
        {"status": {"conditions": [condition("Active", False, "BadConfig", "no secret")]}},
    ),
]


@pytest.mark.parametrize(("stored", "patch"), QUEUE_PATCHES, ids=lambda v: v.get("kind", "patch") if "kind" in v else "")
def test_queue_check_and_cluster_patches_mean_the_same_in_v1beta2(stored: Obj, patch: Obj) -> None:
    assert_same_in_both_versions(stored, patch)


def test_a_json_patch_of_a_converted_kind_is_refused_before_it_is_sent() -> None:
    transport = ScriptedTransport([])
    client = KubeClient(transport, qps=0, kueue_wire=KueueWire("v1beta2"))
    with pytest.raises(ValueError, match="merge patch"):
        client.patch(WORKLOADS, "wl", [{"op": "remove", "path": "/spec/active"}], "ns", patch_type="json")
    assert transport.sent == []


def test_a_json_patch_of_conditions_or_metadata_only_passes_as_it_is() -> None:
    """Those paths mean the same in both versions (the baseline driver appends Finished this way);
    one operation elsewhere makes the whole patch refused."""
    wl = admitted_workload()
    transport = ScriptedTransport([stored_v2(wl)])
    client = KubeClient(transport, qps=0, kueue_wire=KueueWire("v1beta2"))
    ops = [
        {"op": "add", "path": "/status/conditions/-", "value": condition("Finished", True, "Succeeded", "done")},
        {"op": "add", "path": "/metadata/labels/x", "value": "y"},
    ]
    client.patch_status(WORKLOADS, "wl", ops, "ns", patch_type="json")
    assert transport.sent[0].path.startswith("/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl")
    assert transport.sent[0].body == ops
    with pytest.raises(ValueError, match="merge patch"):
        client.patch(WORKLOADS, "wl", [*ops, {"op": "remove", "path": "/spec/active"}], "ns", patch_type="json")
    assert len(transport.sent) == 1


def stored_v2(obj: Obj) -> Obj:
    return convert(obj, "v1beta2")


def test_the_client_speaks_the_wire_version_and_hands_back_v1beta1() -> None:
    wl = admitted_workload()
    cq = ClusterQueueBuilder("cq").cohort("all").obj()
    transport = ScriptedTransport(
        [
            stored_v2(wl),
            {"apiVersion": V2, "kind": "ClusterQueueList", "metadata": {"resourceVersion": "5"},
             "items": [{k: v for k, v in stored_v2(cq).items() if k not in ("apiVersion", "kind")}]},
            stored_v2(cq),
            stored_v2(wl),
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}},
        ]
    )
    client = KubeClient(transport, qps=0, kueue_wire=KueueWire("v1beta2"))
    assert without_annotation(client.get(WORKLOADS, "wl", "ns") or {}) == without_annotation(wl)
    listed = client.list(CLUSTER_QUEUES)
    assert listed["items"][0]["spec"]["cohort"] == "all" and listed["items"][0]["apiVersion"] == V1
    created = client.create(CLUSTER_QUEUES, cq)
    assert created["spec"]["cohort"] == "all"
    client.patch_status(WORKLOADS, "wl", {"status": {"accumulatedPastExexcutionTimeSeconds": 31}}, "ns")
    client.get(JOBS, "j", "ns")
    assert [s.path for s in transport.sent] == [
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl",
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl/status",
        "/apis/batch/v1/namespaces/ns/jobs/j",
    ]
    sent_cq = transport.sent[2].body
    assert sent_cq["apiVersion"] == V2 and sent_cq["spec"]["cohortName"] == "all" and "cohort" not in sent_cq["spec"]
    assert transport.sent[3].body == {"status": {"accumulatedPastExecutionTimeSeconds": 31}}


def test_watch_events_arrive_in_v1beta1_and_errors_and_bookmarks_pass() -> None:
    lq = LocalQueueBuilder("lq", "ns", "cq").obj()
    lq["status"] = {"flavorUsage": []}
    events = [
        {"type": "ADDED", "object": stored_v2(lq)},
        {"type": "BOOKMARK", "object": {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"resourceVersion": "12"}}},
        {"type": "ERROR", "object": {"apiVersion": "v1", "kind": "Status", "code": 410}},
    ]
    stream = ChunkStream([("\n".join(json.dumps(e) for e in events) + "\n").encode()])
    from pykueue.kube.transport import HttpResponse

    transport = ScriptedTransport([HttpResponse(200, {}, b"", stream=stream)])
    client = KubeClient(transport, qps=0, kueue_wire=KueueWire("v1beta2"))
    got = list(client.watch(LOCAL_QUEUES, resource_version="1", timeout_seconds=5, read_timeout=10))
    assert transport.sent[0].path == "/apis/kueue.x-k8s.io/v1beta2/localqueues"
    assert got[0]["object"]["apiVersion"] == V1 and got[0]["object"]["status"] == {"flavorUsage": []}
    assert got[1]["object"] == {"apiVersion": V1, "kind": "LocalQueue", "metadata": {"resourceVersion": "12"}}
    assert got[2] == events[2]


def test_nothing_is_converted_when_the_wire_is_the_programs_version() -> None:
    wire = KueueWire("v1beta1")
    cq = ClusterQueueBuilder("cq").cohort("all").obj()
    for res in (CLUSTER_QUEUES, WORKLOADS, COHORTS, ADMISSION_CHECKS, MULTIKUEUE_CLUSTERS, RESOURCE_FLAVORS):
        assert not wire.converts(res) and wire.on_wire(res) is res
    assert wire.write(CLUSTER_QUEUES, cq) is cq
    assert KueueWire("v1beta2").on_wire(JOBS) is JOBS


def test_an_unknown_wire_version_is_refused() -> None:
    with pytest.raises(ValueError, match="v1beta3"):
        KueueWire("v1beta3")


def test_reads_and_writes_leave_their_input_alone() -> None:
    """The wire converts without copying (conversion.convert_shared): a read's input is the JSON the
    transport just decoded and is dropped, a write's result is only serialised, so sharing the
    untouched subtrees is safe; neither may edit its input, which a caller may still hold."""
    wire = KueueWire("v1beta2")
    wl = admitted_workload()
    caller_copy = copy.deepcopy(wl)
    body = wire.write(WORKLOADS, wl)
    assert wl == caller_copy
    assert body == convert(wl, "v1beta2")
    stored = json.loads(json.dumps(stored_v2(wl)))
    decoded = copy.deepcopy(stored)
    read = wire.read(WORKLOADS, stored)
    assert stored == decoded
    assert read == convert(decoded, "v1beta1")


def test_a_client_speaking_v1beta1_addresses_and_sends_kueue_kinds_in_it() -> None:
    """The baseline's Kueue variant: Kueue v0.14's CRDs serve only v1beta1."""
    lq = LocalQueueBuilder("lq", "ns", "cq").obj()
    transport = ScriptedTransport([lq])
    client = KubeClient(transport, qps=0, kueue_wire=KueueWire("v1beta2")).speaking("v1beta1")
    client.create(LOCAL_QUEUES, lq, "ns")
    assert transport.sent[0].path == "/apis/kueue.x-k8s.io/v1beta1/namespaces/ns/localqueues"
    assert transport.sent[0].body == lq


def test_v1beta1s_empty_class_source_is_no_class_not_half_a_pair() -> None:
    """A parent read back in v1beta1 carries priorityClassSource "" (no class): its options have
    nothing to follow, and a patch carrying that "" converts to no reference (found in e2e: the
    option controller's reconcile failed on it after a parent's reactivation)."""
    config = config_of(three_flavor_queue())
    p = parent()
    opt = option(p, config, "spot")
    p["spec"]["priorityClassSource"] = ""
    assert sync_patch(opt, p, config.by_suffix("spot")) is None
    patch = {"spec": {"priorityClassSource": "", "priorityClassName": None}}
    assert convert_patch("Workload", patch, "v1beta1", "v1beta2") == {"spec": {"priorityClassRef": None}}
