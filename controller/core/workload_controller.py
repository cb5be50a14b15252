"""The Workload controller: applies :func:`controller.workload.decisions.plan_workload` to the cluster.

Triggered by Workload changes and by changes of the LocalQueue/ClusterQueue/priority class a
workload refers to; timers (``requeueAt``, the PodsReady deadline) come back as requeue-after.
Every write is a merge patch guarded by ``resourceVersion``; on 409 Conflict the workload is read
fresh from the API and the decision made again (at most a few times, then the key is retried with
backoff). A write the apiserver refuses as invalid is logged and recorded as a Warning Event
rather than retried forever: the object itself must change first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from controller.core import metrics as m
from controller.core.priority import desired_priority
from controller.runtime.events import EventSink
from controller.runtime.informer import FuncHandler
from controller.runtime.workers import Workers
from controller.runtime.workqueue import WorkQueue
from controller.workload import fallbacks as fb
from controller.workload import indexes
from controller.workload import view as wv
from controller.workload.decisions import PodsReadyPolicy, WorkloadContext, plan_workload, withhold_admission
from controller.workload.indexes import ApiClient, InformerLike
from controller.workload.patches import triggers_annotation_patch, workload_status_patch
from controller.workload.status_plan import EVENT_WARNING, UNSET, EventSpec, WorkloadPlan
from pykueue.api.timestamps import parse_time, utcnow
from pykueue.kube.errors import Conflict, Forbidden, Invalid, NotFound
from pykueue.kube.resources import WORKLOADS

log = logging.getLogger(__name__)
# Writes of the fallback trigger record tried before giving up on conflicts (one write and retries).
FALLBACK_TRIGGER_ATTEMPTS = 5

MAX_CONFLICT_RETRIES = 3
# A concurrent-admission option refused the parent's winner claim is looked at again after this.
CLAIM_RETRY_SECONDS = 5.0


def _priority_class_label(wl: dict[str, Any]) -> str:
    return wv.priority_class_name(wl)


def _decision_inputs_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """A queue's update can change its workloads' plans only through its spec (the ClusterQueue's
    admission checks, fallback strategy, stop policy; the LocalQueue's ClusterQueue) or its
    deletion; :func:`plan_workload` never reads a queue's status. Status writes come every second
    per queue under load (usage, counts), and each used to re-enqueue every workload of the
    queue: at the scheduler baseline's scale a reconcile of each pending workload every few
    seconds, queued ahead of the evictions waiting to release their quota."""
    return wv.spec(old) != wv.spec(new) or wv.meta(old).get("deletionTimestamp") != wv.meta(new).get(
        "deletionTimestamp"
    )


class WorkloadController:
    """See the module docstring. Informers are shared; this controller only reads their stores."""

    name = "workload"

    def __init__(
        self,
        client: ApiClient,
        *,
        workloads: InformerLike,
        local_queues: InformerLike,
        cluster_queues: InformerLike,
        workload_priority_classes: InformerLike | None = None,
        priority_classes: InformerLike | None = None,
        pods_ready: PodsReadyPolicy | None = None,
        events: EventSink,
        clock: Callable[[], datetime] = utcnow,
        workers: int = 2,
        claim_winner: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> None:
        """``claim_winner(option)``: before a concurrent-admission option is marked Admitted, claims
        its parent (``controller.concurrentadmission.winner``); returns why not when a sibling won."""
        self._client = client
        self._claim_winner = claim_winner
        self._workloads = workloads
        self._local_queues = local_queues
        self._cluster_queues = cluster_queues
        self._wpcs = workload_priority_classes
        self._pcs = priority_classes
        self._pods_ready = pods_ready
        self._events = events
        self._clock = clock
        self.queue: WorkQueue[str] = WorkQueue("workload")
        self._runner = Workers(self.queue, self.reconcile, name=self.name, count=workers)
        indexes.add_workload_indexes(workloads)
        indexes.add_local_queue_indexes(local_queues)

    # --- wiring --------------------------------------------------------------------------------

    def register_handlers(self) -> None:
        """Subscribe to the informers (each handler only enqueues keys)."""
        self._workloads.add_handler(
            FuncHandler(add=self._enqueue_obj, update=self._workload_updated, delete=self._enqueue_obj),
            resync=True,
        )
        self._local_queues.add_handler(
            FuncHandler(add=self._lq_changed, update=self._lq_updated, delete=self._lq_changed)
        )
        self._cluster_queues.add_handler(
            FuncHandler(add=self._cq_changed, update=self._cq_updated, delete=self._cq_changed)
        )
        if self._wpcs is not None:
            self._wpcs.add_handler(
                FuncHandler(
                    add=self._wpc_changed, update=lambda _o, n: self._wpc_changed(n), delete=self._wpc_changed
                )
            )

    def start(self) -> None:
        self._runner.start()

    def stop(self) -> None:
        self._runner.stop()

    def _workload_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """Count a workload that just finished while holding quota, then enqueue it.

        Counted on the informer's transition (old not Finished, new Finished), as Kueue's
        ``WorkloadReconciler.Update`` does (pkg/controller/core/workload_controller.go,
        ``reportFinishedWorkload``): once per workload, whoever wrote the condition. A workload
        already Finished when first listed, or seen again by a resync, is not counted again.
        """
        cluster_queue = wv.admitted_cluster_queue(new)
        if wv.is_finished(new) and not wv.is_finished(old) and cluster_queue:
            m.FINISHED_TOTAL.labels(cluster_queue, _priority_class_label(new)).inc()
        self._enqueue_obj(new)

    def _enqueue_obj(self, obj: dict[str, Any]) -> None:
        self.queue.add(wv.key(obj))

    def _enqueue_index(self, index: str, value: str) -> None:
        for key in self._workloads.store.index_keys(index, value):
            self.queue.add(key)

    def _lq_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if _decision_inputs_changed(old, new):
            self._lq_changed(new)

    def _cq_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if _decision_inputs_changed(old, new):
            self._cq_changed(new)

    def _lq_changed(self, lq: dict[str, Any]) -> None:
        self._enqueue_index(indexes.WORKLOAD_BY_QUEUE, wv.key(lq))

    def _cq_changed(self, cq: dict[str, Any]) -> None:
        name = wv.name(cq)
        self._enqueue_index(indexes.WORKLOAD_BY_ADMITTED_CQ, name)
        for lq_key in self._local_queues.store.index_keys(indexes.LOCAL_QUEUE_BY_CQ, name):
            self._enqueue_index(indexes.WORKLOAD_BY_QUEUE, lq_key)

    def _wpc_changed(self, wpc: dict[str, Any]) -> None:
        self._enqueue_index(indexes.WORKLOAD_BY_PRIORITY_CLASS, wv.name(wpc))

    # --- reconcile -----------------------------------------------------------------------------

    def context_for(self, wl: dict[str, Any]) -> WorkloadContext:
        queue = wv.queue_name(wl)
        lq = self._local_queues.store.get(f"{wv.namespace(wl)}/{queue}") if queue else None
        cq_name = wv.admitted_cluster_queue(wl)
        if not cq_name and lq is not None:
            value = wv.spec(lq).get("clusterQueue")
            cq_name = value if isinstance(value, str) else ""
        cq = self._cluster_queues.store.get(cq_name) if cq_name else None
        return WorkloadContext(local_queue=lq, cluster_queue=cq, pods_ready=self._pods_ready)

    def reconcile(self, key: str) -> float | None:
        wl = self._workloads.store.get(key)
        if wl is None:
            return None
        for _attempt in range(MAX_CONFLICT_RETRIES):
            try:
                return self._reconcile_once(wl)
            except Conflict:
                fresh = self._client.get(WORKLOADS, wv.name(wl), wv.namespace(wl))
                if fresh is None:
                    return None
                wl = fresh
            except NotFound:
                return None
            except (Invalid, Forbidden) as err:
                # The CRD schema refuses with 422; the validating webhook, like Kueue's, with 403
                # and "admission webhook ... denied the request". Neither passes on a retry. Any
                # other 403 (RBAC) is left to the work queue's backoff.
                if isinstance(err, Forbidden) and "denied the request" not in err.message:
                    raise
                log.warning("workload write rejected", extra={"key": key, "error": str(err)})
                self._events.emit(
                    wl,
                    EventSpec(
                        EVENT_WARNING, "StatusUpdateFailed", f"pykueue could not update: {err.message}"
                    ),
                )
                return None
        raise RuntimeError(f"workload {key}: still conflicting after {MAX_CONFLICT_RETRIES} fresh reads")

    def _reconcile_once(self, wl: dict[str, Any]) -> float | None:
        now = self._clock()
        if self._wpcs is not None and self._pcs is not None:
            priority = desired_priority(wl, self._lookup(self._wpcs), self._lookup(self._pcs))
            if priority is not None:
                self._patch_spec(wl, {"priority": priority})
                return None
        plan = plan_workload(wl, self.context_for(wl), now)
        if plan.newly_admitted and self._claim_winner is not None:
            # The parent's race has one winner: the claim is written (guarded) before Admitted.
            refused = self._claim_winner(wl)
            if refused is not None:
                withhold_admission(plan, wl, f"Not admitted: {refused}")
                # Nothing on this option changes when the claiming sibling gives its quota back
                # without being admitted (its check turned Rejected): look again later.
                plan.wake_in(CLAIM_RETRY_SECONDS)
        if plan.deactivate:
            self._patch_spec(wl, {"active": False})
        patch = workload_status_patch(wl, plan, now)
        written = wl
        if patch is not None:
            written = self._client.patch_status(WORKLOADS, wv.name(wl), patch, wv.namespace(wl)) or wl
        if plan.flavor_fallback_triggers is not UNSET:
            self._write_fallback_triggers(written, plan.flavor_fallback_triggers)
        for event in plan.events:
            self._events.emit(wl, event)
        self._record_metrics(wl, plan, now)
        if not plan.is_noop():
            log.info(
                "workload updated",
                extra={
                    "workload": wv.key(wl),
                    "conditions": [f"{c.type}={c.status}/{c.reason}" for c in plan.set_conditions],
                    "deactivate": plan.deactivate,
                },
            )
        return plan.requeue_after

    def _write_fallback_triggers(self, wl: dict[str, Any], record: dict[str, str]) -> None:
        """Write the fallback trigger record (docs/design/fallbacks.md), best effort.

        It is written *after* the status patch that performs the fallback: the history is what
        decides, so a crash or a refusal here can only leave a trigger unrecorded (it then prints
        as ``unknown``), never lose or repeat a fallback. The merge patch is guarded by the
        resourceVersion the status patch returned; on a conflict (the scheduler often writes the
        workload again right after a fallback) the record is written again on a fresh copy while
        it still describes that copy's history, a few times, else dropped.
        """
        for _attempt in range(FALLBACK_TRIGGER_ATTEMPTS):
            try:
                self._client.patch(WORKLOADS, wv.name(wl), triggers_annotation_patch(wl, record), wv.namespace(wl))
                return
            except Conflict:
                fresh = self._client.get(WORKLOADS, wv.name(wl), wv.namespace(wl))
                if fresh is None or not fb.triggers_still_apply(fresh, record):
                    return
                wl = fresh
            except (NotFound, Invalid, Forbidden) as err:
                log.warning("fallback trigger record not written", extra={"workload": wv.key(wl), "error": str(err)})
                return
        log.warning("fallback trigger record not written: still conflicting", extra={"workload": wv.key(wl)})

    @staticmethod
    def _lookup(informer: Any) -> Callable[[str], dict[str, Any] | None]:
        return lambda name: informer.store.get(name)

    def _patch_spec(self, wl: dict[str, Any], spec: dict[str, Any]) -> None:
        patch: dict[str, Any] = {"spec": spec}
        rv = wv.meta(wl).get("resourceVersion")
        if rv:
            patch["metadata"] = {"resourceVersion": rv}
        self._client.patch(WORKLOADS, wv.name(wl), patch, wv.namespace(wl))

    def _record_metrics(self, wl: dict[str, Any], plan: WorkloadPlan, now: datetime) -> None:
        priority_class = _priority_class_label(wl)
        if plan.newly_admitted:
            cq = wv.admitted_cluster_queue(wl)
            m.ADMITTED_TOTAL.labels(cq, priority_class).inc()
            queued_since = parse_time(wv.meta(wl).get("creationTimestamp"))
            requeued = wv.condition(wl, "Requeued")
            if requeued is not None and requeued.get("status") == "True":
                queued_since = parse_time(requeued.get("lastTransitionTime")) or queued_since
            if queued_since is not None:
                m.ADMISSION_WAIT.labels(cq, priority_class).observe(
                    max(0.0, (now - queued_since).total_seconds())
                )
            reserved = parse_time((wv.condition(wl, "QuotaReserved") or {}).get("lastTransitionTime"))
            if reserved is not None:
                m.ADMISSION_CHECKS_WAIT.labels(cq, priority_class).observe(
                    max(0.0, (now - reserved).total_seconds())
                )
        for cluster_queue, flavor, trigger in plan.fallbacks:
            m.FLAVOR_FALLBACKS_TOTAL.labels(cluster_queue, flavor, trigger).inc()
        if plan.eviction is not None:
            m.EVICTED_TOTAL.labels(
                plan.eviction.cluster_queue,
                plan.eviction.reason,
                plan.eviction.underlying_cause,
                priority_class,
            ).inc()
