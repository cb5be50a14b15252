"""The Job reconciler: one pass of Kueue's job framework for one batch/v1 Job.

Level-based: each pass reads the Job, its Workloads and the objects they refer to from the
informer caches, makes the world one step closer to the desired state, and returns when it
wants to look again. Every write is a patch guarded by ``resourceVersion``; a conflict surfaces
as an exception and the work queue retries the key with backoff against fresh caches.

The order of checks follows Kueue's pkg/controller/jobframework/reconciler.go:

1. Job gone or being deleted → let its Workloads go (drop our finalizer; delete them when the
   Job is gone — the garbage collector would, this is just sooner).
2. Not managed → nothing. Workloads owned by an older Job of the same name → deleted.
3. Job finished → ``Finished`` on the Workload, finalizer removed.
4. Exactly one matching Workload: delete stale ones, update an unreserved one of a suspended
   Job in place, or create one (a running Job without one is stopped first — no pods before
   admission).
5. Workload evicted, deactivated, finished elsewhere, being deleted, or not admitted while the
   Job runs → stop the Job (suspend, forget ``startTime``, restore the template); once the Job
   has no pods left, release the quota (:func:`controller.workload.lifecycle.release_plan`).
6. Job running and admitted → keep ``PodsReady`` current (when waitForPodsReady is on).
7. Job suspended and Workload admitted → start it with the flavors injected.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from controller.concurrentadmission.jobview import followed_workload, is_parent
from controller.runtime.events import EventSink
from controller.workload import view as wv
from controller.workload.fallbacks import history as workload_history
from controller.workload.lifecycle import (
    back_to_pending_plan,
    failed_to_start_plan,
    finish_plan,
    out_of_sync_plan,
    pods_ready_plan,
    release_plan,
)
from controller.workload.patches import workload_status_patch
from controller.workload.status_plan import EventSpec, WorkloadPlan
from pykueue.api import constants as C
from pykueue.api.timestamps import utcnow
from pykueue.kube import resources as R
from pykueue.kube.errors import AlreadyExists, Invalid, NotFound

from . import job as jobs
from . import metrics
from .compose import ComposeError, compose_workload, job_podsets, owned_by, podsets_match
from .management import ManagementPolicy, queue_name_for
from .podsets import (
    FlavorNotFound,
    PodSetMergeError,
    clear_start_time_patch,
    is_started,
    podset_infos,
    restore_patch,
    start_patch,
    suspend_patch,
)
from .priority import SOURCE_WORKLOAD_PRIORITY_CLASS, Priority, PriorityClassNotFound, resolve_priority

log = logging.getLogger(__name__)

Obj = dict[str, Any]
# The source component of the Job integration's Events (jobs.setup asks for its recorder).
COMPONENT = "pykueue-job-controller"
JOB_UID_POD_LABEL = "batch.kubernetes.io/controller-uid"
TERMINAL_POD_PHASES = frozenset({"Succeeded", "Failed"})

# How soon to look again while waiting for something no watch event of ours announces.
PODS_GONE_POLL_SECONDS = 1.0
MISSING_PRIORITY_CLASS_RETRY_SECONDS = 15.0
PREBUILT_WAIT_SECONDS = 2.0


class JobLister(Protocol):
    """The read side: what the reconciler needs from the informer caches."""

    def job(self, namespace: str, name: str) -> Obj | None: ...

    def workloads_for_job(self, namespace: str, name: str) -> list[Obj]:
        """Workloads whose controller owner is a Job called ``name`` (any UID)."""
        ...

    def flavors(self) -> Mapping[str, Obj]: ...

    def local_queue_exists(self, namespace: str, name: str) -> bool: ...

    def namespace_labels(self, namespace: str) -> Mapping[str, str]: ...

    def workload_priority_class(self, name: str) -> Obj | None: ...

    def priority_class(self, name: str) -> Obj | None: ...

    def default_priority_class(self) -> Obj | None: ...

    def workload(self, namespace: str, name: str) -> Obj | None:
        """The Workload ``namespace/name`` (a prebuilt one named by the Job's label)."""
        ...

    def options_of_parent(self, namespace: str, parent_uid: str) -> list[Obj]:
        """Concurrent admission: the option Workloads whose controller owner has ``parent_uid``."""
        ...


class Writer(Protocol):
    """The write side: the subset of :class:`pykueue.kube.client.KubeClient` used here."""

    def create(self, res: R.Resource, obj: Obj, namespace: str | None = None) -> Obj: ...

    def list(self, res: R.Resource, namespace: str | None = None, **kwargs: Any) -> Obj: ...

    def patch(
        self, res: R.Resource, name: str, patch: Any, namespace: str | None = None, **kwargs: Any
    ) -> Obj: ...

    def patch_status(
        self, res: R.Resource, name: str, patch: Any, namespace: str | None = None, **kwargs: Any
    ) -> Obj: ...

    def delete(self, res: R.Resource, name: str, namespace: str | None = None, **kwargs: Any) -> bool: ...


@dataclass(frozen=True, slots=True)
class JobSettings:
    """The Configuration as far as the Job integration is concerned."""

    management: ManagementPolicy = field(default_factory=ManagementPolicy)
    wait_for_pods_ready: bool = False


@dataclass(frozen=True, slots=True)
class Result:
    """``requeue_after``: look at this Job again after that many seconds even without an event."""

    requeue_after: float | None = None


DONE = Result()


def _after_stop(restored: bool) -> Result:
    """Done once the template is restored; until the Job API allows that, look again shortly."""
    return DONE if restored else Result(PODS_GONE_POLL_SECONDS)


def _with_kind(obj: Obj, api_version: str, kind: str) -> Obj:
    """Objects from list responses lack apiVersion/kind; Events need them to name the object."""
    if obj.get("kind") and obj.get("apiVersion"):
        return obj
    return {**obj, "apiVersion": api_version, "kind": kind}


class JobReconciler:
    def __init__(
        self,
        lister: JobLister,
        writer: Writer,
        settings: JobSettings,
        *,
        events: EventSink,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._lister = lister
        self._writer = writer
        self._events = events
        self._settings = settings
        self._clock = clock

    # --- events and small writes -------------------------------------------------------------

    def _event(self, job: Obj, type_: str, reason: str, message: str) -> None:
        involved = _with_kind(job, jobs.JOB_API_VERSION, jobs.JOB_KIND)
        self._events.emit(involved, EventSpec(type_, reason, message))

    def _patch_job(self, job: Obj, patch: Obj) -> Obj:
        meta = jobs.metadata(job)
        return self._writer.patch(R.JOBS, meta["name"], patch, meta["namespace"])

    def _write_plan(self, workload: Obj, plan: WorkloadPlan) -> Obj | None:
        patch = workload_status_patch(workload, plan, self._clock())
        if patch is None:
            return None
        meta = wv.meta(workload)
        return self._writer.patch_status(R.WORKLOADS, meta["name"], patch, meta["namespace"])

    def _remove_finalizer(self, workload: Obj) -> None:
        """Drop our finalizer; the resourceVersion guard turns a stale cache into a retried Conflict."""
        finalizers = list(wv.meta(workload).get("finalizers") or [])
        if C.RESOURCE_IN_USE_FINALIZER not in finalizers:
            return
        remaining = [f for f in finalizers if f != C.RESOURCE_IN_USE_FINALIZER]
        patch = {
            "metadata": {
                "resourceVersion": wv.meta(workload).get("resourceVersion"),
                "finalizers": remaining or None,
            }
        }
        with contextlib.suppress(NotFound):
            self._writer.patch(R.WORKLOADS, wv.name(workload), patch, wv.namespace(workload))

    def _delete_workload(self, workload: Obj) -> None:
        self._remove_finalizer(workload)
        with contextlib.suppress(NotFound):
            self._writer.delete(R.WORKLOADS, wv.name(workload), wv.namespace(workload))

    # --- the pass ------------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> Result:
        job = self._lister.job(namespace, name)
        workloads = self._lister.workloads_for_job(namespace, name)
        if job is None or jobs.metadata(job).get("deletionTimestamp"):
            for workload in workloads:
                if job is None:
                    self._delete_workload(workload)
                else:
                    self._remove_finalizer(workload)
            return DONE

        queue_name = queue_name_for(
            job,
            self._settings.management,
            namespace_labels=self._lister.namespace_labels(namespace),
            default_queue_exists=self._lister.local_queue_exists(namespace, C.DEFAULT_LOCAL_QUEUE),
        )
        if queue_name is None:
            return DONE

        prebuilt = jobs.labels(job).get(C.PREBUILT_WORKLOAD_LABEL)
        if prebuilt:
            return self._drive_prebuilt(job, prebuilt)

        mine = []
        for workload in workloads:
            if owned_by(workload, job):
                mine.append(workload)
            else:  # left over from a deleted Job of the same name
                self._delete_workload(workload)

        finish = jobs.finished(job)
        if finish is not None:
            return self._finish(job, mine, finish)

        kept = self._ensure_one_workload(job, mine, queue_name)
        if kept is None:
            return self._create_workload(job, queue_name)
        workload = self._sync_priority(job, kept)
        if is_parent(workload):
            return self._drive_parent(job, workload)
        return self._drive(job, self._sync_reclaimable(job, workload))

    def _drive_prebuilt(self, job: Obj, name: str) -> Result:
        """A Job naming its Workload (Kueue's ``kueue.x-k8s.io/prebuilt-workload-name``; MultiKueue
        creates Jobs on workers this way, next to the copy that is already admitted there): adopt
        that Workload instead of composing one, then follow it like any other. Until it exists the
        Job stays suspended."""
        meta = jobs.metadata(job)
        workload = self._lister.workload(meta["namespace"], name)
        if workload is None:
            return Result(PREBUILT_WAIT_SECONDS)
        if not owned_by(workload, job):
            if jobs.controller_owner(workload) is not None:
                self._event(job, "Warning", "ErrWorkloadCompose", f"Workload {name} is owned by another object")
                return DONE
            owners = list(wv.meta(workload).get("ownerReferences") or [])
            owners.append(
                {
                    "apiVersion": jobs.JOB_API_VERSION,
                    "kind": jobs.JOB_KIND,
                    "name": meta["name"],
                    "uid": meta.get("uid"),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            )
            patch = {"metadata": {"resourceVersion": wv.resource_version(workload), "ownerReferences": owners}}
            workload = self._writer.patch(R.WORKLOADS, name, patch, meta["namespace"])
        finish = jobs.finished(job)
        if finish is not None:
            return self._finish(job, [workload], finish)
        if not wv.is_finished(workload) and not podsets_match(job, workload):
            # Kueue's ensurePrebuiltWorkloadInSync: a Workload made for another shape of the Job
            # must not admit this one; it is finished and the Job stays (or is put back) suspended.
            message = "The prebuilt workload is out of sync with its user job"
            workload = self._write_plan(workload, out_of_sync_plan(message)) or workload
            self._event(
                job, "Warning", C.EVENT_FINISHED_WORKLOAD, f"Workload '{wv.key(workload)}' is declared finished: {message}"
            )
        return self._drive(job, self._sync_reclaimable(job, workload))

    def _drive_parent(self, job: Obj, parent: Obj) -> Result:
        """Concurrent admission: the Job follows the option holding quota (or the parent while
        none does, which keeps it suspended); see :mod:`controller.concurrentadmission.jobview`. When that
        option's admission would inject a different template than the running Job carries, the
        parent migrated: stop the Job here, the next pass starts it on the new flavors."""
        options = self._lister.options_of_parent(wv.namespace(parent), str(wv.meta(parent).get("uid") or ""))
        followed = followed_workload(parent, options)
        if followed is not parent and not jobs.is_suspended(job) and self._runs_elsewhere(job, followed):
            _, restored = self._stop(job, followed, f"Migrating to option {wv.name(followed)}")
            return _after_stop(restored)
        return self._drive(job, followed)

    def _runs_elsewhere(self, job: Obj, workload: Obj) -> bool:
        if not (wv.is_admitted(workload) and wv.has_reservation(workload) and not wv.is_evicted(workload)):
            return False
        try:
            patch = start_patch(job, podset_infos(workload, self._lister.flavors()))
        except (FlavorNotFound, PodSetMergeError):
            return False
        return "template" in patch.get("spec", {})

    def _sync_priority(self, job: Obj, workload: Obj) -> Obj:
        """Follow a change of the Job's WorkloadPriorityClass label (allowed at any time, so a
        running Job can be made more or less preemptible)."""
        wanted = jobs.labels(job).get(C.PRIORITY_CLASS_LABEL)
        spec = wv.spec(workload)
        if not wanted or spec.get("priorityClassSource") != SOURCE_WORKLOAD_PRIORITY_CLASS:
            return workload
        if spec.get("priorityClassName") == wanted:
            return workload
        wpc = self._lister.workload_priority_class(wanted)
        if wpc is None:
            self._event(
                job,
                "Warning",
                C.EVENT_PRIORITY_CLASS_NOT_FOUND,
                f"WorkloadPriorityClass {wanted!r} not found",
            )
            return workload
        priority = Priority(int(wpc.get("value") or 0), wanted, SOURCE_WORKLOAD_PRIORITY_CLASS)
        patch = {
            "metadata": {"resourceVersion": wv.meta(workload).get("resourceVersion")},
            "spec": priority.spec_fields(),
        }
        updated = self._writer.patch(R.WORKLOADS, wv.name(workload), patch, wv.namespace(workload))
        self._event(
            job,
            "Normal",
            C.EVENT_UPDATED_WORKLOAD,
            f"Updated priority of Workload {wv.key(workload)} to {wanted}",
        )
        return updated

    def _sync_reclaimable(self, job: Obj, workload: Obj) -> Obj:
        """Keep ``status.reclaimablePods`` at the pods the Job will never run again, so their quota
        goes back while it still runs (Kueue's reclaimable pods; the engine books the workload's
        usage less those pods). A Job is one podSet; the count is capped at that podSet's size."""
        podsets = [ps for ps in wv.spec(workload).get("podSets") or [] if isinstance(ps, dict)]
        if len(podsets) != 1:
            return workload
        name = str(podsets[0].get("name") or C.DEFAULT_PODSET_NAME)
        size = podsets[0].get("count")
        count = jobs.reclaimable_pods(job)
        if isinstance(size, int) and not isinstance(size, bool):
            count = min(count, size)
        wanted = [{"name": name, "count": count}] if count > 0 else []
        stored = [
            {"name": entry.get("name"), "count": entry.get("count")}
            for entry in wv.status(workload).get("reclaimablePods") or []
            if isinstance(entry, dict)
        ]
        if stored == wanted:
            return workload
        patch = {"status": {"reclaimablePods": wanted or None}}
        return self._writer.patch_status(R.WORKLOADS, wv.name(workload), patch, wv.namespace(workload))

    # --- step 3: finished Jobs -----------------------------------------------------------------

    def _finish(self, job: Obj, workloads: list[Obj], finish: jobs.Finish) -> Result:
        for workload in workloads:
            if not wv.is_finished(workload):
                workload = self._write_plan(workload, finish_plan(finish.success, finish.message)) or workload
                self._event(
                    job,
                    "Normal",
                    C.EVENT_FINISHED_WORKLOAD,
                    f"Workload '{wv.key(workload)}' is declared finished",
                )
            self._remove_finalizer(workload)
        return DONE

    # --- step 4: exactly one matching Workload -------------------------------------------------

    def _ensure_one_workload(self, job: Obj, workloads: list[Obj], queue_name: str) -> Obj | None:
        matching = [w for w in workloads if podsets_match(job, w)]
        keep = matching[0] if matching else None
        if (
            keep is None
            and len(workloads) == 1
            and jobs.is_suspended(job)
            and not wv.has_reservation(workloads[0])
            and not wv.is_finished(workloads[0])
        ):
            keep = self._update_podsets(job, workloads[0])
            self._event(
                job,
                "Normal",
                C.EVENT_UPDATED_WORKLOAD,
                f"Updated not matching Workload for suspended job: {wv.key(keep)}",
            )
            return keep
        for workload in workloads:
            if workload is not keep:
                self._delete_workload(workload)
                self._event(
                    job,
                    "Normal",
                    C.EVENT_DELETED_WORKLOAD,
                    f"Deleted not matching Workload: {wv.key(workload)}",
                )
        if keep is not None and wv.queue_name(keep) != queue_name and not wv.has_reservation(keep):
            keep = self._writer.patch(
                R.WORKLOADS,
                wv.name(keep),
                {
                    "metadata": {"resourceVersion": wv.meta(keep).get("resourceVersion")},
                    "spec": {"queueName": queue_name},
                },
                wv.namespace(keep),
            )
            self._event(
                job, "Normal", C.EVENT_UPDATED_WORKLOAD, f"Updated queue name of Workload: {wv.key(keep)}"
            )
        return keep

    def _update_podsets(self, job: Obj, workload: Obj) -> Obj:
        patch = {
            "metadata": {"resourceVersion": wv.meta(workload).get("resourceVersion")},
            "spec": {"podSets": job_podsets(job)},
        }
        return self._writer.patch(R.WORKLOADS, wv.name(workload), patch, wv.namespace(workload))

    def _create_workload(self, job: Obj, queue_name: str) -> Result:
        if not jobs.is_suspended(job):
            # A managed Job never runs without an admitted Workload: no pods before admission.
            _, restored = self._stop(
                job, None, "No matching Workload; the job is suspended until it is admitted"
            )
            return _after_stop(restored)
        try:
            priority = resolve_priority(
                job,
                workload_priority_class=self._lister.workload_priority_class,
                priority_class=self._lister.priority_class,
                default_priority_class=self._lister.default_priority_class,
            )
            workload = compose_workload(job, queue_name=queue_name, priority=priority)
        except PriorityClassNotFound as err:
            self._event(job, "Warning", C.EVENT_PRIORITY_CLASS_NOT_FOUND, str(err))
            return Result(MISSING_PRIORITY_CLASS_RETRY_SECONDS)
        except ComposeError as err:
            log.warning("cannot compose a Workload for job", extra={"job": jobs.key(job), "error": str(err)})
            self._event(job, "Warning", C.EVENT_ERR_WORKLOAD_COMPOSE, str(err))
            return DONE
        try:
            created = self._writer.create(R.WORKLOADS, workload, wv.namespace(workload))
        except AlreadyExists:
            # Our cache is behind (or the previous Workload is still being deleted): look again.
            return Result(PODS_GONE_POLL_SECONDS)
        self._event(job, "Normal", C.EVENT_CREATED_WORKLOAD, f"Created Workload: {wv.key(created)}")
        metrics.observe_workload_created(job, self._clock())
        return DONE

    # --- steps 5-7: follow the Workload ----------------------------------------------------------

    def _drive(self, job: Obj, workload: Obj) -> Result:
        if wv.meta(workload).get("deletionTimestamp"):
            # Someone deleted the Workload: stop the Job, and once its pods are gone let the
            # Workload go; the next pass creates a fresh one and the Job queues again.
            job, _ = self._stop(job, workload, "The workload is being deleted")
            if jobs.is_active(job) or self._pods_left(job):
                return Result(PODS_GONE_POLL_SECONDS)
            self._remove_finalizer(workload)
            return DONE
        if wv.is_finished(workload):
            _, restored = self._stop(job, workload, "The workload is finished")
            return _after_stop(restored)

        evicted = wv.condition(workload, C.COND_EVICTED)
        if evicted is not None and evicted.get("status") == "True":
            job, restored = self._stop(
                job, workload, str(evicted.get("message") or "The workload was evicted")
            )
            if wv.has_reservation(workload):
                return self._release_when_pods_gone(job, workload)
            return _after_stop(restored)

        admitted = wv.is_admitted(workload) and wv.has_reservation(workload) and wv.is_active(workload)
        if not jobs.is_suspended(job):
            if not admitted:
                _, restored = self._stop(job, workload, "Not admitted by cluster queue")
                return _after_stop(restored)
            # PodsReady also stops a ResourceFlavor fallback clock: a reservation in a ClusterQueue
            # with a fallback strategy carries a flavorAssignmentHistory (docs/design/fallbacks.md).
            if self._settings.wait_for_pods_ready or workload_history(workload):
                self._sync_pods_ready(job, workload)
            return DONE

        if admitted:
            return self._start(job, workload)
        # Suspended and not admitted: finish an interrupted stop (template still injected).
        _, restored = self._stop(job, workload, "")
        return _after_stop(restored)

    def _sync_pods_ready(self, job: Obj, workload: Obj) -> None:
        plan = pods_ready_plan(jobs.pods_ready(job), workload)
        if plan is None or self._write_plan(workload, plan) is None:
            return
        if any(c.reason == C.REASON_STARTED for c in plan.set_conditions):
            metrics.observe_pods_ready(workload, self._clock())

    def _start(self, job: Obj, workload: Obj) -> Result:
        if is_started(job):
            # The Job API only lets us change the template of a Job that never started.
            job = self._clear_start_time(job)
        try:
            infos = podset_infos(workload, self._lister.flavors())
            patch = start_patch(job, infos)
        except FlavorNotFound as err:
            # The scheduler reads the same flavor cache: a flavor missing here is gone, not late.
            message = f"The admitted flavors cannot be used: {err}"
            log.info(
                "admission cannot be used; back to pending", extra={"job": jobs.key(job), "error": str(err)}
            )
            self._write_plan(workload, back_to_pending_plan(workload, message, self._clock()))
            self._event(job, "Warning", C.EVENT_STOPPED, message)
            return DONE
        except PodSetMergeError as err:
            message = f"Failed to start the job: {err}"
            self._write_plan(workload, failed_to_start_plan(message))
            self._event(job, "Warning", C.EVENT_STOPPED, message)
            return DONE
        self._patch_job(job, patch)
        cluster_queue = wv.admitted_cluster_queue(workload)
        self._event(job, "Normal", C.EVENT_STARTED, f"Admitted by clusterQueue {cluster_queue}")
        return DONE

    def _stop(self, job: Obj, workload: Obj | None, message: str) -> tuple[Obj, bool]:
        """Suspend, forget the start, restore the template.

        Returns the latest Job seen and whether the template is restored. The apiserver keeps a
        Job's template immutable until the Job controller has caught up with the suspension (it
        answers 422 "field is immutable" meanwhile), so an early refusal is expected: the caller
        looks again shortly. A start never depends on it — it re-injects from the saved original.
        """
        if not jobs.is_suspended(job):
            job = self._patch_job(job, suspend_patch(job))
            self._event(job, "Normal", C.EVENT_STOPPED, message or "The job was stopped")
        if is_started(job):
            job = self._clear_start_time(job)
        patch = restore_patch(job, self._fallback_template(job, workload), _spec_count(workload))
        if patch is None:
            return job, True
        try:
            return self._patch_job(job, patch), True
        except Invalid as err:
            log.debug(
                "job template not mutable yet", extra={"job": jobs.key(job), "error": err.message[:200]}
            )
            return job, False

    def _clear_start_time(self, job: Obj) -> Obj:
        meta = jobs.metadata(job)
        return self._writer.patch_status(R.JOBS, meta["name"], clear_start_time_patch(), meta["namespace"])

    @staticmethod
    def _fallback_template(job: Obj, workload: Obj | None) -> Obj | None:
        """The Workload's template, to restore a Job injected without a saved original.

        Only used when the Job's template visibly carries an injection (the podset label):
        otherwise it is the user's own template, which may legitimately differ from the
        Workload's in fields that do not affect admission.
        """
        template_meta = jobs.pod_template(job).get("metadata")
        template_labels = template_meta.get("labels") if isinstance(template_meta, dict) else None
        if workload is None or not isinstance(template_labels, dict) or C.PODSET_LABEL not in template_labels:
            return None
        podsets = wv.spec(workload).get("podSets") or []
        first = podsets[0] if podsets and isinstance(podsets[0], dict) else {}
        template = first.get("template")
        return template if isinstance(template, dict) else None

    def _release_when_pods_gone(self, job: Obj, workload: Obj) -> Result:
        """Quota goes back only when no pod of the Job can still be running (no pods outside quota)."""
        if jobs.is_active(job) or self._pods_left(job):
            return Result(PODS_GONE_POLL_SECONDS)
        self._write_plan(workload, release_plan(workload, self._clock()))
        return DONE

    def _pods_left(self, job: Obj) -> int:
        meta = jobs.metadata(job)
        pods = self._writer.list(
            R.PODS, meta["namespace"], label_selector=f"{JOB_UID_POD_LABEL}={meta.get('uid')}"
        )
        return sum(
            1
            for pod in pods.get("items") or []
            if (pod.get("status") or {}).get("phase") not in TERMINAL_POD_PHASES
        )


def describe(result: Result) -> str:
    """For logs: ``done`` or ``again in 1.0s``."""
    return "done" if result.requeue_after is None else f"again in {result.requeue_after:.1f}s"


def _spec_count(workload: Obj | None) -> int | None:
    """The pod count the Workload asks for (a Job's parallelism before a partial admission)."""
    if workload is None:
        return None
    podsets = jobs.spec(workload).get("podSets")
    if isinstance(podsets, list) and podsets and isinstance(podsets[0], dict):
        count = podsets[0].get("count")
        return count if isinstance(count, int) else None
    return None
