"""The option controller against an in-memory API: parent conversion, option creation, policy
removal, status.options, Events and metrics."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import REGISTRY

from controller.concurrentadmission.controller import OptionController
from controller.runtime.events import RecordingEvents
from controller.runtime.workqueue import WorkQueue
from pykueue.api.constants import CONCURRENT_ADMISSION_PARENT_LABEL
from pykueue.kube.errors import AlreadyExists, Forbidden, NotFound
from tests.builders import (
    ClusterQueueBuilder,
    LocalQueueBuilder,
    SeedClusterQueueBuilder,
    SeedWorkloadBuilder,
)
from tests.unit.concurrentadmission.helpers import CREATED, evicted, reserved, three_flavor_queue
from tests.unit.core.fakes import FakeApi, FakeInformer

NOW = datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)


class Api(FakeApi):
    """FakeApi plus create and delete (with a UID precondition), as the controller uses them."""

    def create(self, res: Any, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        key = f"{namespace}/{obj['metadata']['name']}"
        if (res.plural, key) in self.objects:
            raise AlreadyExists(409, "AlreadyExists", key)
        obj = copy.deepcopy(obj)
        obj["metadata"].update(uid=f"uid-{obj['metadata']['name']}", creationTimestamp=CREATED)
        return self.put(res.plural, obj)

    deletes: list[tuple[str, dict[str, str]]]

    def delete(self, res: Any, name: str, namespace: str | None = None, **kw: Any) -> bool:
        key = f"{namespace}/{name}"
        if not hasattr(self, "deletes"):
            self.deletes = []
        self.deletes.append((name, dict(kw.get("preconditions") or {})))
        current = self.objects.pop((res.plural, key), None)
        if current is None:
            raise NotFound(404, "NotFound", key)
        self.informers[res.plural].store.delete(key)
        return True


class World:
    def __init__(self, cq: dict[str, Any], api: type[Api] | None = None) -> None:
        self.informers = {k: FakeInformer() for k in ("workloads", "localqueues", "clusterqueues")}
        self.api = (api or Api)(self.informers)
        self.api.put("clusterqueues", cq)
        self.api.put("localqueues", LocalQueueBuilder("lq", "ns", cq["metadata"]["name"]).obj())
        self.events = RecordingEvents()
        self.controller = OptionController(
            self.api,
            workloads=self.informers["workloads"],
            local_queues=self.informers["localqueues"],
            cluster_queues=self.informers["clusterqueues"],
            events=self.events,
            clock=lambda: NOW,
        )

    def workload(self, name: str) -> dict[str, Any]:
        return self.api.objects[("workloads", f"ns/{name}")]

    def names(self) -> set[str]:
        return {key.split("/")[1] for plural, key in self.api.objects if plural == "workloads"}


def _job_workload() -> dict[str, Any]:
    return SeedWorkloadBuilder("job-a-12345", "ns").queue("lq").podset(cpu="1").created(CREATED).obj()


def test_a_workload_of_a_concurrent_queue_becomes_a_parent_and_gets_its_options() -> None:
    world = World(three_flavor_queue("RemoveOther"))
    world.api.put("workloads", _job_workload())
    world.controller.reconcile("ns/job-a-12345")
    parent = world.workload("job-a-12345")
    assert parent["spec"]["workloadMode"] == {"type": "Parent"}
    assert parent["metadata"]["labels"]["kueue.x-k8s.io/concurrent-admission-parent"] == "true"

    world.controller.reconcile("ns/job-a-12345")
    options = {f"job-a-12345-option-{f}" for f in ("reservation", "on-demand", "spot")}
    assert options <= world.names()
    spot = world.workload("job-a-12345-option-spot")
    assert spot["spec"]["workloadMode"] == {"type": "ResourceFlavorOption"}
    assert spot["spec"]["podSets"][0]["allowedResourceFlavors"] == ["spot"]
    assert spot["metadata"]["ownerReferences"][0]["uid"] == parent["metadata"]["uid"]
    assert [e["status"] for e in world.workload("job-a-12345")["status"]["options"]] == ["Pending"] * 3
    assert world.events.reasons("ns/job-a-12345").count("CreatedOption") == 3


def test_once_an_option_is_admitted_remove_other_deactivates_the_rest_and_the_parent_shows_it() -> None:
    world = World(three_flavor_queue("RemoveOther"))
    world.api.put("workloads", _job_workload())
    world.controller.reconcile("ns/job-a-12345")
    world.controller.reconcile("ns/job-a-12345")
    before = (
        REGISTRY.get_sample_value(
            "pykueue_concurrent_admission_options_removed_total", {"cluster_queue": "cq", "cause": "policy"}
        )
        or 0.0
    )
    world.api.put("workloads", reserved(world.workload("job-a-12345-option-spot"), "spot"))
    world.controller.reconcile("ns/job-a-12345")
    # Deactivated, not deleted: their history and events stay readable.
    losers = ("job-a-12345-option-reservation", "job-a-12345-option-on-demand")
    for name in losers:
        loser = world.workload(name)
        assert loser["spec"]["active"] is False
        assert "RemoveOther" in loser["metadata"]["annotations"]["kueue.x-k8s.io/option-removed"]
    parent = world.workload("job-a-12345")
    statuses = {e["name"]: e["status"] for e in parent["status"]["options"]}
    assert statuses == {
        "job-a-12345-option-reservation": "Removed",
        "job-a-12345-option-on-demand": "Removed",
        "job-a-12345-option-spot": "Admitted",
    }
    # The parent mirrors the winner: kubectl get workloads shows the job admitted.
    conditions = {c["type"]: c["status"] for c in parent["status"]["conditions"]}
    assert conditions["QuotaReserved"] == "True" and conditions["Admitted"] == "True"
    assert parent["status"]["admission"]["podSetAssignments"][0]["flavors"] == {"cpu": "spot"}
    assert world.events.reasons("ns/job-a-12345").count("RemovedOption") == 2
    after = REGISTRY.get_sample_value(
        "pykueue_concurrent_admission_options_removed_total", {"cluster_queue": "cq", "cause": "policy"}
    )
    assert after == before + 2


def test_a_losing_option_holding_a_reservation_gives_it_back_in_the_same_reconcile() -> None:
    """Two options reserved and raced; one was admitted. The loser never ran (it was never
    Admitted, so it has no pods): one reconcile of the parent deactivates it and, in a second
    write guarded by the deactivation's resourceVersion, evicts it and releases its quota, so no
    watch round trip (workload controller, then option controller again) stands between the
    winner's admission and the loser's quota coming back."""
    world = World(three_flavor_queue("RemoveOther"))
    world.api.put("workloads", _job_workload())
    world.controller.reconcile("ns/job-a-12345")
    world.controller.reconcile("ns/job-a-12345")
    world.api.put("workloads", reserved(world.workload("job-a-12345-option-spot"), "spot"))
    world.api.put(
        "workloads", reserved(world.workload("job-a-12345-option-on-demand"), "on-demand", admitted=False)
    )
    world.controller.reconcile("ns/job-a-12345")
    loser = world.workload("job-a-12345-option-on-demand")
    assert loser["spec"]["active"] is False
    assert "admission" not in loser["status"], "the loser's quota is back within the reconcile"
    conditions = {c["type"]: c for c in loser["status"]["conditions"]}
    assert conditions["QuotaReserved"]["status"] == "False"
    assert conditions["Evicted"]["status"] == "True" and conditions["Evicted"]["reason"] == "Deactivated"
    assert "RemoveOther" in conditions["Evicted"]["message"]
    winner = world.workload("job-a-12345-option-spot")
    assert winner["status"]["admission"]["podSetAssignments"][0]["flavors"] == {"cpu": "spot"}


def test_a_losers_give_back_that_conflicts_leaves_it_to_the_usual_path() -> None:
    """The status write after the deactivation conflicts (the workload controller evicted the
    option first): the reconcile does not fail, and the next one releases the evicted loser."""
    world = World(three_flavor_queue("RemoveOther"))
    world.api.put("workloads", _job_workload())
    world.controller.reconcile("ns/job-a-12345")
    world.controller.reconcile("ns/job-a-12345")
    world.api.put("workloads", reserved(world.workload("job-a-12345-option-spot"), "spot"))
    world.api.put(
        "workloads", reserved(world.workload("job-a-12345-option-on-demand"), "on-demand", admitted=False)
    )
    real_patch = world.api.patch_status

    def evicted_first(res: Any, name: str, patch: dict[str, Any], namespace: str | None = None, **kw: Any) -> Any:
        if name == "job-a-12345-option-on-demand" and "admission" in patch.get("status", {}):
            world.api.put("workloads", evicted(world.workload(name), "Deactivated", "by the workload controller"))
        return real_patch(res, name, patch, namespace, **kw)

    world.api.patch_status = evicted_first  # type: ignore[method-assign]
    world.controller.reconcile("ns/job-a-12345")
    loser = world.workload("job-a-12345-option-on-demand")
    assert loser["spec"]["active"] is False and "admission" in loser["status"]
    world.api.patch_status = real_patch  # type: ignore[method-assign]
    world.controller.reconcile("ns/job-a-12345")
    assert "admission" not in world.workload("job-a-12345-option-on-demand")["status"]


def test_the_parent_drops_the_mirrored_admission_when_its_winner_lost_its_quota() -> None:
    world = World(three_flavor_queue("RemoveOther"))
    world.api.put("workloads", _job_workload())
    world.controller.reconcile("ns/job-a-12345")
    world.controller.reconcile("ns/job-a-12345")
    spot = world.api.put("workloads", reserved(world.workload("job-a-12345-option-spot"), "spot"))
    world.controller.reconcile("ns/job-a-12345")
    released = copy.deepcopy(spot)
    del released["status"]["admission"]
    released["status"]["conditions"] = []
    world.api.put("workloads", released)
    world.controller.reconcile("ns/job-a-12345")
    parent = world.workload("job-a-12345")
    assert parent["status"].get("admission") is None
    conditions = {c["type"]: c["status"] for c in parent["status"]["conditions"]}
    assert conditions == {"QuotaReserved": "False", "Admitted": "False"}
    # ... and the options the winner's admission had deactivated are reactivated.
    world.controller.reconcile("ns/job-a-12345")
    assert world.workload("job-a-12345-option-reservation")["spec"]["active"] is True
    assert "kueue.x-k8s.io/option-removed" not in (
        world.workload("job-a-12345-option-reservation")["metadata"].get("annotations") or {}
    )


class ImmutableAdmissionApi(Api):
    """Api whose status writes refuse to change a stored ``status.admission`` in place, as the
    Workload webhook does (Kueue's rule)."""

    def patch(self, res: Any, name: str, patch: dict[str, Any], namespace: str | None = None, **kw: Any) -> dict[str, Any]:
        current = self.objects.get((res.plural, f"{namespace}/{name}")) or {}
        before = (current.get("status") or {}).get("admission")
        after = (patch.get("status") or {}).get("admission")
        if before is not None and after is not None and after != before:
            raise Forbidden(403, "Forbidden", "status.admission: Invalid value: field is immutable")
        return super().patch(res, name, patch, namespace, **kw)


def test_a_migration_seen_in_one_step_clears_the_parents_mirror_before_showing_the_new_winner() -> None:
    """The old winner released its quota and the migration target was admitted before the
    controller looked again: the parent's mirrored admission cannot be changed in place, so it is
    cleared and then set (found in e2e: every later write of the parent was refused, and the Job,
    woken by the parent, stayed on the old flavor)."""
    world = World(three_flavor_queue("RemoveLower"), ImmutableAdmissionApi)
    world.api.put("workloads", _job_workload())
    world.controller.reconcile("ns/job-a-12345")
    world.controller.reconcile("ns/job-a-12345")
    world.api.put("workloads", reserved(world.workload("job-a-12345-option-spot"), "spot"))
    world.controller.reconcile("ns/job-a-12345")
    assert world.workload("job-a-12345")["status"]["admission"]["podSetAssignments"][0]["flavors"] == {"cpu": "spot"}
    spot = copy.deepcopy(evicted(world.workload("job-a-12345-option-spot"), "FlavorMigration", "migrating"))
    del spot["status"]["admission"]
    spot["status"]["conditions"] = [c for c in spot["status"]["conditions"] if c["type"] == "Evicted"]
    world.api.put("workloads", spot)
    world.api.put("workloads", reserved(world.workload("job-a-12345-option-reservation"), "reservation"))
    world.controller.reconcile("ns/job-a-12345")
    parent = world.workload("job-a-12345")
    assert parent["status"]["admission"]["podSetAssignments"][0]["flavors"] == {"cpu": "reservation"}
    conditions = {c["type"]: c["status"] for c in parent["status"]["conditions"]}
    assert conditions["QuotaReserved"] == "True" and conditions["Admitted"] == "True"
    written = [p["status"].get("admission", "unset") for plural, key, p in world.api.patches if key == "ns/job-a-12345" and "status" in p]
    assert written[-2:][0] is None  # cleared, then set


def test_an_option_name_taken_by_a_foreign_workload_is_reported_not_created() -> None:
    world = World(three_flavor_queue("RemoveOther"))
    world.api.put("workloads", _job_workload())
    world.controller.reconcile("ns/job-a-12345")
    world.api.put("workloads", SeedWorkloadBuilder("job-a-12345-option-spot", "ns").podset(cpu="1").obj())
    world.controller.reconcile("ns/job-a-12345")
    reasons = world.events.reasons("ns/job-a-12345")
    assert reasons.count("CreatedOption") == 2
    assert reasons.count("OptionNameTaken") == 1


def test_option_deletes_are_guarded_by_uid_and_resource_version() -> None:
    world = World(three_flavor_queue("RemoveOther"))
    world.api.put("workloads", _job_workload())
    world.controller.reconcile("ns/job-a-12345")
    world.controller.reconcile("ns/job-a-12345")
    parent = copy.deepcopy(world.workload("job-a-12345"))
    parent["status"] = {"conditions": [{"type": "Finished", "status": "True", "reason": "Succeeded"}]}
    world.api.put("workloads", parent)
    world.controller.reconcile("ns/job-a-12345")
    assert world.api.deletes
    for _name, preconditions in world.api.deletes:
        assert set(preconditions) == {"uid", "resourceVersion"}


@pytest.mark.parametrize("reserved_already", [False, True])
def test_workloads_outside_concurrent_queues_are_left_alone(reserved_already: bool) -> None:
    world = World(ClusterQueueBuilder("cq").flavor("default", cpu="4").obj())
    wl = _job_workload()
    if reserved_already:
        wl = reserved(wl, "default")
    world.api.put("workloads", wl)
    world.controller.reconcile("ns/job-a-12345")
    assert world.api.patches == []
    assert world.names() == {"job-a-12345"}


def test_an_option_event_wakes_its_parent_and_cluster_queue_spec_changes_wake_its_parents() -> None:
    world = World(three_flavor_queue("RemoveLower"))
    world.api.put("workloads", _job_workload())
    world.controller.reconcile("ns/job-a-12345")
    world.controller.reconcile("ns/job-a-12345")
    queue = world.controller.queue = WorkQueue("test")  # forget what the setup enqueued
    world.controller._workload_changed(world.workload("job-a-12345-option-spot"))
    assert queue.get(timeout=0.1) == "ns/job-a-12345"
    queue.done("ns/job-a-12345")

    cq = world.api.objects[("clusterqueues", "cq")]
    status_only = copy.deepcopy(cq)
    status_only["status"] = {"pendingWorkloads": 3}
    world.controller._cq_updated(cq, status_only)
    assert len(queue) == 0, "a status write of the ClusterQueue changes no option"
    changed = copy.deepcopy(cq)
    changed["spec"]["resourceGroups"][0]["flavors"].pop()
    world.controller._cq_updated(cq, changed)
    assert queue.get(timeout=0.1) == "ns/job-a-12345"


def test_every_option_rejected_deactivates_the_parent_with_a_message_naming_each() -> None:
    world = World(three_flavor_queue("RemoveOther"))
    world.api.put("workloads", _job_workload())
    world.controller.reconcile("ns/job-a-12345")
    world.controller.reconcile("ns/job-a-12345")
    for flavor in ("reservation", "on-demand", "spot"):
        rejected = copy.deepcopy(world.workload(f"job-a-12345-option-{flavor}"))
        rejected["spec"]["active"] = False
        rejected["status"] = {
            "conditions": [
                {
                    "type": "Evicted",
                    "status": "True",
                    "reason": "DeactivatedDueToAdmissionCheck",
                    "message": f"Admission check(s) rejected: no {flavor} capacity",
                }
            ]
        }
        world.api.put("workloads", rejected)
    world.controller.reconcile("ns/job-a-12345")
    parent = world.workload("job-a-12345")
    assert parent["spec"]["active"] is False
    (reserved_cond,) = [c for c in parent["status"]["conditions"] if c["type"] == "QuotaReserved"]
    assert reserved_cond["status"] == "False" and reserved_cond["reason"] == "Inactive"
    assert reserved_cond["message"].startswith("Every option was rejected: ")
    for flavor in ("reservation", "on-demand", "spot"):
        assert f"no {flavor} capacity" in reserved_cond["message"]
    assert "OptionsRejected" in world.events.reasons("ns/job-a-12345")


def test_a_deleted_cluster_queue_turns_the_parent_back_into_an_ordinary_workload() -> None:
    """Its options go, and the workload is queued the normal way (the engine reports the missing
    ClusterQueue) instead of waiting for ever as a parent without options; when the queue comes
    back with concurrentAdmission it becomes a parent again."""
    world = World(three_flavor_queue("RemoveOther"))
    world.api.put("workloads", _job_workload())
    world.controller.reconcile("ns/job-a-12345")
    world.controller.reconcile("ns/job-a-12345")
    cq = world.api.objects.pop(("clusterqueues", "cq"))
    world.informers["clusterqueues"].store.delete("cq")
    world.controller.reconcile("ns/job-a-12345")
    assert {n for n in world.names() if "-option-" in n} == set()
    wl = world.workload("job-a-12345")
    assert "workloadMode" not in wl["spec"]
    assert "kueue.x-k8s.io/concurrent-admission-parent" not in (wl["metadata"].get("labels") or {})
    assert wl["status"].get("options") is None
    world.api.put("clusterqueues", cq)
    world.controller.reconcile("ns/job-a-12345")
    assert world.workload("job-a-12345")["spec"]["workloadMode"] == {"type": "Parent"}


def test_workload_events_reach_the_queue_only_where_the_policy_applies() -> None:
    """Workloads of a ClusterQueue without ``concurrentAdmission`` are never queued (the
    reconcile would find nothing to do); those of a queue with it, parents and options'
    parents are. A queue that gains the policy wakes its workloads itself."""
    plain_cq = SeedClusterQueueBuilder("plain").flavor("reservation", cpu="4").obj()
    world = World(three_flavor_queue("RemoveOther"))
    world.api.put("clusterqueues", plain_cq)
    world.api.put("localqueues", LocalQueueBuilder("plain-lq", "ns", "plain").obj())
    queue = world.controller.queue = WorkQueue("test")
    elsewhere = SeedWorkloadBuilder("other-1", "ns").queue("plain-lq").podset(cpu="1").created(CREATED).obj()
    unknown_queue = SeedWorkloadBuilder("other-2", "ns").queue("nowhere").podset(cpu="1").created(CREATED).obj()
    for wl in (elsewhere, unknown_queue):
        world.controller._workload_changed(wl)
    assert len(queue) == 0

    world.controller._workload_changed(_job_workload())
    assert queue.get(timeout=0.1) == "ns/job-a-12345"
    queue.done("ns/job-a-12345")
    parent_elsewhere = copy.deepcopy(elsewhere)
    parent_elsewhere["metadata"]["labels"] = {CONCURRENT_ADMISSION_PARENT_LABEL: "true"}
    world.controller._workload_changed(parent_elsewhere)
    assert queue.get(timeout=0.1) == "ns/other-1", "a parent whose queue lost the policy is reverted by its reconcile"
    queue.done("ns/other-1")

    world.api.put("workloads", elsewhere)
    gained = copy.deepcopy(plain_cq)
    gained["spec"]["concurrentAdmission"] = three_flavor_queue("RemoveOther")["spec"]["concurrentAdmission"]
    world.controller._cq_updated(plain_cq, gained)
    assert queue.get(timeout=0.1) == "ns/other-1"
