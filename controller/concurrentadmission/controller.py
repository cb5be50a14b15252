"""The option controller: keeps every parent's options and ``status.options`` in line with
:func:`.plan.plan_parent`.

Triggers: any Workload event (an option's event wakes its parent), ClusterQueue changes (every
parent of the queue is looked at again: flavors or options may have changed) and timers
(``createDelaySeconds``/``deleteDelaySeconds`` come back as requeue-after).

One reconcile of a parent key:

1. A workload in a ClusterQueue with ``concurrentAdmission`` that is not yet a parent (and holds
   no quota) is turned into one: ``spec.workloadMode.type: Parent`` and the parent label. The
   engine never queues such a workload meanwhile (:mod:`controller.engine.options`).
2. The plan is applied: reservations of evicted options without pods released, options
   deactivated (losers of the race, policy, window, inactive parent) or reactivated, deleted
   (finished parent, changed queue) / created / re-annotated; a parent whose every option was
   rejected is deactivated.
3. The parent's status: ``status.options`` and the winner's admission mirrored
   (:func:`parent_status_patch`), written when they changed.

Writes of spec and metadata are resourceVersion-guarded; a conflict retries the key with backoff
against the refreshed cache. Runs only on the leader.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from controller.concurrentadmission import metrics
from controller.concurrentadmission.option_specs import concurrent_config
from controller.concurrentadmission.option_workloads import (
    OPTION_BY_PARENT_UID,
    build_option,
    is_option,
    is_parent,
    option_by_parent_uid,
    parent_name,
    parent_uid,
)
from controller.concurrentadmission.parent_plan import ParentPlan, plan_parent
from controller.runtime.events import EventSink
from controller.runtime.informer import FuncHandler
from controller.runtime.workers import Workers
from controller.runtime.workqueue import WorkQueue
from controller.workload import indexes
from controller.workload import view as wv
from controller.workload.decisions import clear_reservation, evict
from controller.workload.patches import workload_status_patch
from controller.workload.status_plan import (
    EVENT_NORMAL,
    EVENT_WARNING,
    ConditionSpec,
    EventSpec,
    WorkloadPlan,
)
from pykueue.api import constants as c
from pykueue.api.timestamps import utcnow
from pykueue.kube.errors import AlreadyExists, Conflict, NotFound
from pykueue.kube.resources import WORKLOADS, Resource

log = logging.getLogger(__name__)

# Kueue's QuotaReserved=False reason for a deactivated workload.
REASON_INACTIVE = "Inactive"


class OptionWriter(Protocol):
    """What the option controller uses of :class:`pykueue.kube.client.KubeClient`."""

    def create(self, res: Resource, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]: ...

    def patch(
        self, res: Resource, name: str, patch: Any, namespace: str | None = None, **kw: Any
    ) -> dict[str, Any]: ...

    def patch_status(
        self, res: Resource, name: str, patch: Any, namespace: str | None = None, **kw: Any
    ) -> dict[str, Any]: ...

    def delete(self, res: Resource, name: str, namespace: str | None = None, **kw: Any) -> bool: ...

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None: ...


class OptionController:
    """See the module docstring."""

    name = "concurrent-admission"

    def __init__(
        self,
        client: OptionWriter,
        *,
        workloads: indexes.InformerLike,
        local_queues: indexes.InformerLike,
        cluster_queues: indexes.InformerLike,
        events: EventSink,
        clock: Callable[[], datetime] = utcnow,
        workers: int = 1,
    ) -> None:
        self._client = client
        self._workloads = workloads
        self._local_queues = local_queues
        self._cluster_queues = cluster_queues
        self._events = events
        self._clock = clock
        self.queue: WorkQueue[str] = WorkQueue("concurrent-admission")
        self._runner = Workers(self.queue, self.reconcile, name=self.name, count=workers)
        with contextlib.suppress(KeyError, ValueError):
            workloads.add_indexer(OPTION_BY_PARENT_UID, option_by_parent_uid)
        indexes.add_workload_indexes(workloads)
        indexes.add_local_queue_indexes(local_queues)

    # --- wiring --------------------------------------------------------------------------------

    def register_handlers(self) -> None:
        self._workloads.add_handler(
            FuncHandler(
                add=self._workload_changed,
                update=lambda _o, n: self._workload_changed(n),
                delete=self._workload_changed,
            ),
            resync=True,
        )
        self._cluster_queues.add_handler(
            FuncHandler(add=self._cq_changed, update=self._cq_updated, delete=self._cq_changed)
        )

    def start(self) -> None:
        self._runner.start()

    def stop(self) -> None:
        self._runner.stop()

    def _workload_changed(self, wl: dict[str, Any]) -> None:
        """Enqueue what :meth:`reconcile` would act on: an option's parent, a parent, or a
        workload whose ClusterQueue has ``concurrentAdmission`` (it may become a parent).

        Every other workload (all of them on a cluster that does not use the policy) is left
        out here rather than in the reconcile: each Workload event used to cost a queue round
        trip and a reconcile that found nothing to do, 50,000 of them at a cold start with
        50,000 pending (docs/performance.md, "The controller process against 50,000 pending
        Workloads"). A queue that gains the policy later wakes its workloads itself
        (:meth:`_cq_changed`); the ClusterQueue store is read here, after the informer applied
        the ClusterQueue's own events, so the two orders of arrival end alike.
        """
        if is_option(wl):
            parent = parent_name(wl)
            if parent:
                self.queue.add(f"{wv.namespace(wl)}/{parent}")
            return
        if is_parent(wl) or concurrent_config(self.cluster_queue_of(wl)) is not None:
            self.queue.add(wv.key(wl))

    def _cq_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        # Status writes (usage, counts) happen on every admission; only a spec change can change
        # a parent's options.
        if wv.spec(old) != wv.spec(new):
            self._cq_changed(new)

    def _cq_changed(self, cq: dict[str, Any]) -> None:
        if "concurrentAdmission" not in wv.spec(cq) and not self._had_concurrent_admission(cq):
            return
        for lq_key in self._local_queues.store.index_keys(indexes.LOCAL_QUEUE_BY_CQ, wv.name(cq)):
            for key in self._workloads.store.index_keys(indexes.WORKLOAD_BY_QUEUE, lq_key):
                self.queue.add(key)

    def _had_concurrent_admission(self, cq: dict[str, Any]) -> bool:
        """A queue that lost the policy (or was deleted) still has parents to tidy up."""
        for lq_key in self._local_queues.store.index_keys(indexes.LOCAL_QUEUE_BY_CQ, wv.name(cq)):
            for wl in self._workloads.store.by_index(indexes.WORKLOAD_BY_QUEUE, lq_key):
                if is_parent(wl):
                    return True
        return False

    # --- reads ---------------------------------------------------------------------------------

    def cluster_queue_of(self, wl: Mapping[str, Any]) -> Mapping[str, Any] | None:
        queue = wv.queue_name(wl)
        lq = self._local_queues.store.get(f"{wv.namespace(wl)}/{queue}") if queue else None
        cq_name = wv.spec(lq).get("clusterQueue") if lq is not None else None
        return self._cluster_queues.store.get(cq_name) if isinstance(cq_name, str) and cq_name else None

    def options_of(self, parent: Mapping[str, Any]) -> list[dict[str, Any]]:
        uid = str(wv.meta(parent).get("uid") or "")
        return self._workloads.store.by_index(OPTION_BY_PARENT_UID, uid) if uid else []

    # --- reconcile -----------------------------------------------------------------------------

    def reconcile(self, key: str) -> float | None:
        wl = self._workloads.store.get(key)
        if wl is None or is_option(wl):
            return None
        cluster_queue = self.cluster_queue_of(wl)
        config = concurrent_config(cluster_queue)
        if not is_parent(wl):
            if config is not None and self._should_become_parent(wl):
                self._make_parent(wl)
            return None
        options = self.options_of(wl)
        plan = plan_parent(wl, config, options, self._clock())
        latest = self._apply(wl, plan, wv.name(cluster_queue) if cluster_queue is not None else "")
        if config is None and not any(wv.has_reservation(o) for o in options):
            self._revert_parent(latest)
            return None
        return plan.requeue_after

    def _revert_parent(self, wl: Mapping[str, Any]) -> None:
        """The parent's ClusterQueue is gone or no longer has ``concurrentAdmission``, and none of
        its options holds quota (their deletion is under way): it becomes an ordinary workload
        again, so the engine queues it (pending "ClusterQueue ... doesn't exist", or admitted the
        normal way) instead of leaving its Job suspended for ever. Should the queue come back
        with ``concurrentAdmission``, it becomes a parent again."""
        patch = {
            "metadata": {
                "resourceVersion": wv.meta(wl).get("resourceVersion"),
                "labels": {c.CONCURRENT_ADMISSION_PARENT_LABEL: None},
            },
            "spec": {"workloadMode": None},
        }
        with contextlib.suppress(NotFound):
            written = self._client.patch(WORKLOADS, wv.name(wl), patch, wv.namespace(wl))
            if wv.status(written).get("options") is not None:
                self._client.patch_status(
                    WORKLOADS,
                    wv.name(wl),
                    {"metadata": {"resourceVersion": wv.meta(written).get("resourceVersion")}, "status": {"options": None}},
                    wv.namespace(wl),
                )
        log.info("parent became an ordinary workload: its queue has no concurrentAdmission", extra={"workload": wv.key(wl)})

    @staticmethod
    def _should_become_parent(wl: Mapping[str, Any]) -> bool:
        """Workloads admitted before the queue had concurrentAdmission keep running as they are."""
        return not (wv.is_finished(wl) or wv.has_reservation(wl) or wv.meta(wl).get("deletionTimestamp"))

    def _make_parent(self, wl: Mapping[str, Any]) -> None:
        patch = {
            "metadata": {
                "resourceVersion": wv.meta(wl).get("resourceVersion"),
                "labels": {c.CONCURRENT_ADMISSION_PARENT_LABEL: "true"},
            },
            "spec": {"workloadMode": {"type": c.WORKLOAD_MODE_PARENT}},
        }
        self._client.patch(WORKLOADS, wv.name(wl), patch, wv.namespace(wl))
        log.info("workload became a concurrent-admission parent", extra={"workload": wv.key(wl)})

    def _apply(self, parent: dict[str, Any], plan: ParentPlan, cluster_queue: str) -> dict[str, Any]:
        """Write ``plan``; returns the parent as last written (for a guarded follow-up write)."""
        namespace = wv.namespace(parent)
        now = self._clock()
        for option in plan.release:
            release = WorkloadPlan()
            clear_reservation(release, option)
            patch = workload_status_patch(option, release, now)
            if patch is not None:
                with contextlib.suppress(NotFound):
                    self._client.patch_status(WORKLOADS, wv.name(option), patch, namespace)
        for removal in plan.deactivate:
            written = self._set_active(removal.option, False, removal.reason)
            if written is not None and _never_ran(written, plan):
                self._give_back(written, removal.reason, now)
            self._events.emit(
                parent,
                EventSpec(
                    EVENT_NORMAL,
                    c.EVENT_REMOVED_OPTION,
                    f"Deactivated option {wv.name(removal.option)}: {removal.reason}",
                ),
            )
            metrics.OPTIONS_REMOVED.labels(cluster_queue, removal.cause).inc()
            log.info("option deactivated", extra={"option": wv.name(removal.option), "reason": removal.reason})
        for option in plan.reactivate:
            self._set_active(option, True, None)
            self._events.emit(
                parent,
                EventSpec(EVENT_NORMAL, c.EVENT_REACTIVATED_OPTION, f"Reactivated option {wv.name(option)}"),
            )
            log.info("option reactivated", extra={"option": wv.name(option)})
        for removal in plan.delete:
            meta = wv.meta(removal.option)
            # uid *and* resourceVersion: a plan made from a stale cache never deletes an option
            # that changed since (it may just have become the winner).
            preconditions = {k: str(meta[k]) for k in ("uid", "resourceVersion") if meta.get(k)}
            with contextlib.suppress(NotFound):
                self._client.delete(
                    WORKLOADS, wv.name(removal.option), namespace, preconditions=preconditions or None
                )
            self._events.emit(
                parent,
                EventSpec(
                    EVENT_NORMAL,
                    c.EVENT_REMOVED_OPTION,
                    f"Removed option {wv.name(removal.option)}: {removal.reason}",
                ),
            )
            metrics.OPTIONS_REMOVED.labels(cluster_queue, removal.cause).inc()
            log.info("option removed", extra={"option": wv.name(removal.option), "reason": removal.reason})
        for name, spec in plan.create:
            try:
                self._client.create(WORKLOADS, build_option(parent, spec, name), namespace)
            except AlreadyExists:
                self._name_taken(parent, name)
                continue
            self._events.emit(
                parent,
                EventSpec(
                    EVENT_NORMAL,
                    c.EVENT_CREATED_OPTION,
                    f"Created option {name} for flavors {', '.join(spec.allowed_flavors)}",
                ),
            )
            metrics.OPTIONS_CREATED.labels(cluster_queue).inc()
            log.info("option created", extra={"option": f"{namespace}/{name}", "rank": spec.rank})
        for option, patch in plan.annotate:
            with contextlib.suppress(NotFound):
                self._client.patch(WORKLOADS, wv.name(option), patch, namespace)
        switch = admission_switch_patch(parent, plan, now)
        if switch is not None:
            # The mirrored admission cannot change in place (the Workload webhook keeps
            # status.admission immutable, as Kueue's): clear it, then mirror the new winner.
            with contextlib.suppress(NotFound):
                parent = self._client.patch_status(WORKLOADS, wv.name(parent), switch, namespace) or parent
        patch = parent_status_patch(parent, plan, now)
        if patch is not None:
            with contextlib.suppress(NotFound):
                parent = self._client.patch_status(WORKLOADS, wv.name(parent), patch, namespace) or parent
        if plan.deactivate_parent is not None:
            # After the status write (which carries the message), guarded by its resourceVersion.
            parent = self._deactivate_parent(parent, plan.deactivate_parent, plan.deactivate_reason)
        return parent

    def _set_active(self, option: Mapping[str, Any], active: bool, reason: str | None) -> dict[str, Any] | None:
        """Flip ``spec.active`` and our removed-annotation in one resourceVersion-guarded write;
        returns the option as written (None when it is gone)."""
        patch = {
            "metadata": {
                "resourceVersion": wv.meta(option).get("resourceVersion"),
                "annotations": {c.OPTION_REMOVED_ANNOTATION: reason},
            },
            "spec": {"active": active},
        }
        try:
            return self._client.patch(WORKLOADS, wv.name(option), patch, wv.namespace(option))
        except NotFound:
            return None

    def _give_back(self, option: dict[str, Any], reason: str, now: datetime) -> None:
        """Evict a just-deactivated option that never ran and release its quota, in one status
        write guarded by the deactivation's resourceVersion. It has no pods, so nothing waits
        for them; the loser's quota comes back within this reconcile instead of after two more
        watch round trips (the workload controller's eviction, then our release). On a conflict
        (the workload controller evicted it first) the usual path finishes the job."""
        release = WorkloadPlan()
        evict(release, option, c.REASON_DEACTIVATED, reason, now)
        clear_reservation(release, option)
        patch = workload_status_patch(option, release, now)
        if patch is None:
            return
        try:
            self._client.patch_status(WORKLOADS, wv.name(option), patch, wv.namespace(option))
        except (Conflict, NotFound):
            return
        for event in release.events:
            self._events.emit(option, event)
        log.info("option gave its quota back", extra={"option": wv.key(option)})

    def _deactivate_parent(self, parent: dict[str, Any], message: str, reason: str) -> dict[str, Any]:
        patch = {
            "metadata": {"resourceVersion": wv.meta(parent).get("resourceVersion")},
            "spec": {"active": False},
        }
        written = parent
        with contextlib.suppress(NotFound):
            written = self._client.patch(WORKLOADS, wv.name(parent), patch, wv.namespace(parent)) or parent
        self._events.emit(parent, EventSpec(EVENT_WARNING, reason, message))
        log.info("parent deactivated", extra={"workload": wv.key(parent), "reason": reason})
        return written

    def _name_taken(self, parent: Mapping[str, Any], name: str) -> None:
        """The create found an object of that name: ours (the cache is behind; the next event
        brings it in) or a foreign one, which is reported and never adopted."""
        existing = self._client.get(WORKLOADS, name, wv.namespace(parent))
        if existing is None or parent_uid(existing) == wv.meta(parent).get("uid"):
            return
        message = f"Cannot create option {name}: a Workload of that name that is not an option of this workload exists"
        self._events.emit(parent, EventSpec(EVENT_WARNING, c.EVENT_OPTION_NAME_TAKEN, message))
        log.warning("option name taken by a foreign workload", extra={"option": f"{wv.namespace(parent)}/{name}"})


def _never_ran(option: Mapping[str, Any], plan: ParentPlan) -> bool:
    """A deactivated option that holds a reservation it never used: not the winner, never
    Admitted (so no pods), not evicted yet."""
    return (
        option is not plan.winner
        and wv.name(option) != (wv.name(plan.winner) if plan.winner is not None else None)
        and wv.has_reservation(option)
        and not wv.is_admitted(option)
        and not wv.is_evicted(option)
        and not wv.is_finished(option)
    )


def admission_switch_patch(parent: Mapping[str, Any], plan: ParentPlan, now: datetime) -> dict[str, Any] | None:
    """When the winner changed (a migration) before the parent's mirror was cleared, the patch that
    clears the old mirror: ``status.admission`` dropped, ``QuotaReserved`` and ``Admitted`` False.
    None when the parent mirrors nothing or already mirrors the winner."""
    current = wv.status(parent).get("admission")
    winner = plan.winner
    if current is None or winner is None or current == wv.admission(winner):
        return None
    clear = WorkloadPlan()
    clear.admission = None
    message = f"Switching to option {wv.name(winner)}"
    clear.set_conditions.append(ConditionSpec(c.COND_QUOTA_RESERVED, "False", c.REASON_PENDING, message))
    if wv.is_true(parent, c.COND_ADMITTED):
        clear.set_conditions.append(ConditionSpec(c.COND_ADMITTED, "False", c.REASON_NO_RESERVATION, message))
    return workload_status_patch(parent, clear, now)


def parent_status_patch(parent: Mapping[str, Any], plan: ParentPlan, now: datetime) -> dict[str, Any] | None:
    """The parent's status patch: ``status.options``, and the winner's admission mirrored
    (``QuotaReserved``, ``Admitted``, ``status.admission``) so that ``kubectl get workloads``
    shows the job admitted; cleared when no option is admitted. None when nothing changes."""
    mirror = WorkloadPlan()
    winner = plan.winner
    if winner is not None:
        mirror.admission = copy.deepcopy(wv.admission(winner))
        through = f"through option {wv.name(winner)}"
        mirror.set_conditions.append(
            ConditionSpec(
                c.COND_QUOTA_RESERVED,
                "True",
                c.REASON_QUOTA_RESERVED,
                f"Quota reserved in ClusterQueue {wv.admitted_cluster_queue(winner)} {through}",
            )
        )
        mirror.set_conditions.append(
            ConditionSpec(c.COND_ADMITTED, "True", c.REASON_ADMITTED, f"The workload is admitted {through}")
        )
    else:
        if wv.status(parent).get("admission") is not None:
            mirror.admission = None
        if plan.deactivate_parent is not None:
            mirror.set_conditions.append(
                ConditionSpec(c.COND_QUOTA_RESERVED, "False", REASON_INACTIVE, plan.deactivate_parent)
            )
        elif wv.is_true(parent, c.COND_QUOTA_RESERVED):
            mirror.set_conditions.append(
                ConditionSpec(c.COND_QUOTA_RESERVED, "False", c.REASON_PENDING, "No option of this workload is admitted")
            )
        if wv.is_true(parent, c.COND_ADMITTED):
            mirror.set_conditions.append(
                ConditionSpec(c.COND_ADMITTED, "False", c.REASON_NO_RESERVATION, "No option of this workload is admitted")
            )
    if plan.accumulated_seconds and wv.accumulated_execution_seconds(parent) != plan.accumulated_seconds:
        mirror.accumulated_execution_seconds = plan.accumulated_seconds
    patch = workload_status_patch(parent, mirror, now) or {"status": {}}
    if wv.status(parent).get("options") != plan.options_status:
        patch["status"]["options"] = plan.options_status
    if not patch["status"]:
        return None
    return patch
