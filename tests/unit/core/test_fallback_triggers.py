"""The workload controller writes the fallback trigger record after the fallback's status patch.

docs/design/fallbacks.md "Which trigger ended each flavor": the status write (the history) is what
decides; the annotation is written after it, guarded by the resourceVersion that write returned,
and a failure there never undoes or repeats the fallback.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from controller.core.workload_controller import WorkloadController
from controller.runtime.events import RecordingEvents
from pykueue.api.timestamps import format_time
from pykueue.kube.errors import Invalid
from tests.builders import (
    LocalQueueBuilder,
    ResourceFlavorBuilder,
    SeedClusterQueueBuilder,
    SeedWorkloadBuilder,
)
from tests.unit.core.fakes import FakeApi, FakeInformer

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
AT = format_time(T0)
TRIGGERS = "pykueue.x-k8s.io/flavor-fallback-triggers"
PLURALS = ("workloads", "localqueues", "clusterqueues", "resourceflavors", "workloadpriorityclasses", "priorityclasses")


def _setup(wl: dict[str, Any]) -> tuple[FakeApi, WorkloadController, RecordingEvents]:
    informers = {p: FakeInformer() for p in PLURALS}
    api = FakeApi(informers)
    for flavor in ("spot", "on-demand"):
        api.put("resourceflavors", ResourceFlavorBuilder(flavor).obj())
    cq = (
        SeedClusterQueueBuilder("cq").flavor("spot", cpu="10").flavor("on-demand", cpu="10")
        .fallback("DeactivateWorkload").fallback_rule("*", timeout="1m")
    )
    api.put("clusterqueues", cq.obj())
    api.put("localqueues", LocalQueueBuilder("lq", "ns", "cq").obj())
    api.put("workloads", wl)
    events = RecordingEvents()
    ctrl = WorkloadController(
        api,
        workloads=informers["workloads"],
        local_queues=informers["localqueues"],
        cluster_queues=informers["clusterqueues"],
        events=events,
        clock=lambda: T0 + timedelta(seconds=61),
    )
    return api, ctrl, events


def _on(flavor: str) -> SeedWorkloadBuilder:
    return (
        SeedWorkloadBuilder("w", "ns").queue("lq").podset(cpu="1").owner("Job", "j", "u")
        .reserved("cq", {"cpu": flavor}, at=AT).flavor_assigned(flavor, AT)
    )


def test_the_record_is_written_after_the_status_patch_with_its_resource_version() -> None:
    api, ctrl, _events = _setup(_on("spot").obj())
    ctrl.reconcile("ns/w")
    (_, _, status), (_, _, meta) = api.patches
    assert status["status"]["conditions"]  # the fallback itself: Evicted FlavorFallback
    assert "annotations" not in status.get("metadata", {})
    assert meta["metadata"]["annotations"] == {TRIGGERS: "spot=TimeoutForPodsReadyExceeded"}
    assert int(meta["metadata"]["resourceVersion"]) > int(status["metadata"]["resourceVersion"])
    wl = api.objects[("workloads", "ns/w")]
    assert wl["metadata"]["annotations"][TRIGGERS] == "spot=TimeoutForPodsReadyExceeded"


def test_exhaustion_names_every_flavor_with_its_trigger() -> None:
    wl = _on("on-demand").annotation(TRIGGERS, "spot=AdmissionCheckRejected").obj()
    wl["status"]["flavorAssignmentHistory"].insert(0, {"resourceFlavor": "spot", "assignmentTime": AT})
    api, ctrl, events = _setup(wl)
    ctrl.reconcile("ns/w")
    stored = api.objects[("workloads", "ns/w")]
    target = next(c for c in stored["status"]["conditions"] if c["type"] == "DeactivationTarget")
    assert target["message"].startswith(
        "Every flavor was tried: spot (AdmissionCheckRejected), on-demand (TimeoutForPodsReadyExceeded);"
    ), target["message"]
    assert stored["metadata"]["annotations"][TRIGGERS] == (
        "on-demand=TimeoutForPodsReadyExceeded,spot=AdmissionCheckRejected"
    )
    ctrl.reconcile("ns/w")  # spec.active=false
    ctrl.reconcile("ns/w")  # Evicted DeactivatedDueToFlavorsExhausted, with the same message
    stored = api.objects[("workloads", "ns/w")]
    evicted = next(c for c in stored["status"]["conditions"] if c["type"] == "Evicted")
    assert evicted["reason"] == "DeactivatedDueToFlavorsExhausted"
    assert evicted["message"] == target["message"]
    event = ("ns/w", "Normal", "EvictedDueToDeactivatedDueToFlavorsExhausted", target["message"])
    assert event in events.events, events.events


def test_a_refused_record_write_keeps_the_fallback() -> None:
    api, ctrl, _events = _setup(_on("spot").obj())
    real_patch = api.patch

    def refuse_metadata(res: Any, name: str, patch: dict[str, Any], namespace: str | None = None, **kw: Any) -> Any:
        if "annotations" in patch.get("metadata", {}):
            raise Invalid(422, "Invalid", "annotation refused")
        return real_patch(res, name, patch, namespace, **kw)

    api.patch = refuse_metadata  # type: ignore[method-assign]
    assert ctrl.reconcile("ns/w") is None
    stored = api.objects[("workloads", "ns/w")]
    evicted = next(c for c in stored["status"]["conditions"] if c["type"] == "Evicted")
    assert evicted["reason"] == "FlavorFallback"
    assert TRIGGERS not in stored["metadata"].get("annotations", {})


def test_a_conflicting_record_write_is_retried_on_a_fresh_copy_that_still_has_the_history() -> None:
    api, ctrl, _events = _setup(_on("spot").obj())
    real_patch = api.patch

    def someone_writes_between(
        res: Any, name: str, patch: dict[str, Any], namespace: str | None = None, **kw: Any
    ) -> Any:
        if "annotations" in patch.get("metadata", {}) and api.conflicts == 0:
            api.put("workloads", api.objects[("workloads", "ns/w")])  # another writer bumps the version
        return real_patch(res, name, patch, namespace, **kw)

    api.patch = someone_writes_between  # type: ignore[method-assign]
    ctrl.reconcile("ns/w")
    assert api.conflicts == 1
    assert api.objects[("workloads", "ns/w")]["metadata"]["annotations"][TRIGGERS] == "spot=TimeoutForPodsReadyExceeded"


def test_the_record_survives_several_conflicts_in_a_row() -> None:
    """Under load the scheduler writes the workload again right after a fallback, sometimes more
    than once before the record lands: a few conflicts in a row must not lose the trigger."""
    api, ctrl, _events = _setup(_on("spot").obj())
    real_patch = api.patch

    def others_write_between(
        res: Any, name: str, patch: dict[str, Any], namespace: str | None = None, **kw: Any
    ) -> Any:
        if "annotations" in patch.get("metadata", {}) and api.conflicts < 3:
            api.put("workloads", api.objects[("workloads", "ns/w")])
        return real_patch(res, name, patch, namespace, **kw)

    api.patch = others_write_between  # type: ignore[method-assign]
    ctrl.reconcile("ns/w")
    assert api.conflicts == 3
    assert api.objects[("workloads", "ns/w")]["metadata"]["annotations"][TRIGGERS] == "spot=TimeoutForPodsReadyExceeded"
