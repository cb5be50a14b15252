"""ClusterQueue and LocalQueue status writers (leader only), batched per queue.

Every workload change marks its LocalQueue and ClusterQueue dirty with a one-second delay; the
work queue folds repeated marks into one key, so a burst of a thousand workload updates costs one
status write per queue per second at most (Kueue's ClusterQueue controller writes status from
every scheduling cycle, a large share of its API load). A write happens only when a field
differs from what the object already shows (:func:`controller.workload.patches.queue_status_patch`).

Status writes of all queues also share a budget, :data:`STATUS_WRITES_PER_SECOND` (burst
:data:`STATUS_WRITE_BURST`), on the controller's main client. Under load every queue changes
every second: the 60 queues of the scheduler baseline could spend 60 requests/s, more than the
whole QPS 50 budget that reservations need. With the budget, a write that has to wait sleeps
first and is then recomputed from the caches, so it carries everything that changed meanwhile
and the work queue folds the other queues' marks; a queue is still written within
``queues / rate`` seconds of its last change (12 s for 60 queues), and a small cluster never waits.
While admission is busy (``admission_busy()``: half the admission-write threads occupied, i.e.
the client's budget is going to reservations) the budget drops to :data:`BUSY_STATUS_WRITES_PER_SECOND`:
status is only eventually true anyway, and every status write then delays an admission.

A write that changes a *condition* (``Active`` and its reason) does not wait for the budget: it
happens once per queue per configuration change, not per workload, and it is what operators and
tools wait for (``kubectl wait --for=condition=Active``). Budgeting it made a thousand new
ClusterQueues take more than two minutes to show ``Active`` (their LocalQueues sharing the same
5 writes/s). It still goes through the client's own rate limit.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from controller.core import finalizers as fin
from controller.core import metrics as m
from controller.core import queue_status as qs
from controller.runtime.workers import Workers
from controller.runtime.workqueue import WorkQueue
from controller.workload import indexes
from controller.workload import view as wv
from controller.workload.indexes import ApiClient, InformerLike, cached_keys
from controller.workload.patches import queue_status_patch
from pykueue.api import constants as C
from pykueue.api.timestamps import utcnow
from pykueue.kube.backoff import TokenBucket
from pykueue.kube.errors import Conflict, Invalid, NotFound
from pykueue.kube.resources import CLUSTER_QUEUES, LOCAL_QUEUES, RESOURCE_FLAVORS

log = logging.getLogger(__name__)

BATCH_SECONDS = 1.0
# A tenth of Kueue's client QPS (50) for queue status; the burst covers a cluster's worth of
# queues changing at once (start-up, a test creating its queues).
STATUS_WRITES_PER_SECOND = 5.0
STATUS_WRITE_BURST = 20
# While admission writes use the whole client budget (full-scale baseline: ~0.16 status writes
# per admitted workload at 5/s; docs/performance.md).
BUSY_STATUS_WRITES_PER_SECOND = 1.0
CQ_PREFIX = "cq:"
LQ_PREFIX = "lq:"
RF_PREFIX = "rf:"


def _changes_a_condition(patch: dict[str, Any]) -> bool:
    """The status patch carries conditions, which it does only when one of them changed
    (:func:`controller.workload.patches.queue_status_patch`)."""
    status = patch.get("status")
    return isinstance(status, dict) and "conditions" in status


class QueueStatusController:
    name = "queue-status"

    def __init__(
        self,
        client: ApiClient,
        *,
        workloads: InformerLike,
        local_queues: InformerLike,
        cluster_queues: InformerLike,
        resource_flavors: InformerLike,
        admission_checks: InformerLike,
        clock: Callable[[], datetime] = utcnow,
        batch_seconds: float = BATCH_SECONDS,
        write_budget: TokenBucket | None = None,
        busy_write_budget: TokenBucket | None = None,
        admission_busy: Callable[[], bool] = lambda: False,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self._workloads = workloads
        self._local_queues = local_queues
        self._cluster_queues = cluster_queues
        self._flavors = resource_flavors
        self._checks = admission_checks
        self._clock = clock
        self._batch = batch_seconds
        self._budget = write_budget or TokenBucket(STATUS_WRITES_PER_SECOND, STATUS_WRITE_BURST)
        self._busy_budget = busy_write_budget or TokenBucket(BUSY_STATUS_WRITES_PER_SECOND, 1)
        self._admission_busy = admission_busy
        self._sleep = sleep
        self.queue: WorkQueue[str] = WorkQueue("queue-status")
        self._runner = Workers(self.queue, self.reconcile, name=self.name, count=1)
        indexes.add_workload_indexes(workloads)
        indexes.add_local_queue_indexes(local_queues)

    # --- triggers --------------------------------------------------------------------------------

    def workload_changed(self, wl: dict[str, Any]) -> None:
        queue = wv.queue_name(wl)
        if queue:
            self.queue.add_after(f"{LQ_PREFIX}{wv.namespace(wl)}/{queue}", self._batch)
            lq = self._local_queues.store.get(f"{wv.namespace(wl)}/{queue}")
            cq = wv.spec(lq).get("clusterQueue") if lq is not None else None
            if isinstance(cq, str) and cq:
                self.queue.add_after(f"{CQ_PREFIX}{cq}", self._batch)
        admitted_cq = wv.admitted_cluster_queue(wl)
        if admitted_cq:
            self.queue.add_after(f"{CQ_PREFIX}{admitted_cq}", self._batch)

    def cluster_queue_changed(self, cq: dict[str, Any]) -> None:
        name = wv.name(cq)
        self.queue.add(f"{CQ_PREFIX}{name}")
        for lq_key in self._local_queues.store.index_keys(indexes.LOCAL_QUEUE_BY_CQ, name):
            self.queue.add(f"{LQ_PREFIX}{lq_key}")

    def local_queue_changed(self, lq: dict[str, Any]) -> None:
        self.queue.add(f"{LQ_PREFIX}{wv.key(lq)}")

    def flavor_changed(self, flavor: dict[str, Any]) -> None:
        self.queue.add(f"{RF_PREFIX}{wv.name(flavor)}")
        self.dependency_changed(flavor)

    def dependency_changed(self, _obj: dict[str, Any]) -> None:
        """A ResourceFlavor or AdmissionCheck changed: every queue's ``Active`` may change."""
        for name in cached_keys(self._cluster_queues):
            self.cluster_queue_changed({"metadata": {"name": name}})

    def enqueue_all(self) -> None:
        for name in cached_keys(self._cluster_queues):
            self.queue.add(f"{CQ_PREFIX}{name}")
        for key in cached_keys(self._local_queues):
            self.queue.add(f"{LQ_PREFIX}{key}")
        for name in cached_keys(self._flavors):
            self.queue.add(f"{RF_PREFIX}{name}")

    def start(self) -> None:
        self._runner.start()

    def stop(self) -> None:
        self._runner.stop()

    # --- reconcile -------------------------------------------------------------------------------

    def reconcile(self, key: str) -> float | None:
        try:
            if key.startswith(CQ_PREFIX):
                self._reconcile_cq(key[len(CQ_PREFIX) :])
            elif key.startswith(LQ_PREFIX):
                self._reconcile_lq(key[len(LQ_PREFIX) :])
            elif key.startswith(RF_PREFIX):
                self._reconcile_rf(key[len(RF_PREFIX) :])
        except Conflict:
            # Our cache is behind; the watch event that brings it up to date re-enqueues us.
            return self._batch
        except NotFound:
            return None
        except Invalid as err:
            log.warning("queue status rejected", extra={"key": key, "error": str(err)})
        return None

    def _cq_active(self, cq: dict[str, Any]) -> Any:
        checks = self._checks.store.list()
        return qs.cluster_queue_active(
            cq,
            self._flavors.store.keys(),
            {wv.name(ac): wv.is_true(ac, C.COND_ACTIVE) for ac in checks},
            {wv.name(ac): str(wv.spec(ac).get("controllerName") or "") for ac in checks},
        )

    def _pending_for_lq(self, lq_key: str) -> list[dict[str, Any]]:
        return [
            wl
            for wl in self._workloads.store.by_index(indexes.WORKLOAD_BY_QUEUE, lq_key)
            if qs.is_pending(wl)
        ]

    def _reconcile_cq(self, name: str) -> None:
        cq = self._cluster_queues.store.get(name)
        if cq is None:
            m.forget_cluster_queue(name)
            for flavor in cached_keys(self._flavors):
                self.queue.add(f"{RF_PREFIX}{flavor}")
            return
        reserving = self._workloads.store.by_index(indexes.WORKLOAD_BY_ADMITTED_CQ, name)
        if fin.cluster_queue_releasable(cq, reserving):
            release = fin.release_patch(cq)
            if release is not None:
                self._client.patch(CLUSTER_QUEUES, name, release)
                log.info("cluster queue released", extra={"clusterQueue": name})
            return
        patch, counts, active = self._budgeted(lambda: self._cq_status(name))
        if patch is not None:
            self._client.patch_status(CLUSTER_QUEUES, name, patch)
        if counts is not None:
            self._export_cq_metrics(self._cluster_queues.store.get(name) or cq, counts, active)

    def _budgeted(self, compute: Callable[[], tuple[Any, ...]]) -> tuple[Any, ...]:
        """``compute()`` returns ``(patch, ...)``; when a patch is due and the write budget is
        spent, wait for it and compute again from the (newer) caches."""
        computed = compute()
        if computed[0] is None or _changes_a_condition(computed[0]):
            return computed
        delay = self._budget.reserve()
        if self._admission_busy():
            delay = max(delay, self._busy_budget.reserve())
        if delay <= 0:
            return computed
        m.QUEUE_STATUS_BUDGET_WAIT.inc(delay)
        self._sleep(delay)
        return compute()

    def _cq_status(self, name: str) -> tuple[dict[str, Any] | None, qs.QueueCounts | None, Any]:
        cq = self._cluster_queues.store.get(name)
        if cq is None:
            return None, None, None
        reserving = self._workloads.store.by_index(indexes.WORKLOAD_BY_ADMITTED_CQ, name)
        pending = sum(
            len(self._pending_for_lq(lq_key))
            for lq_key in self._local_queues.store.index_keys(indexes.LOCAL_QUEUE_BY_CQ, name)
        )
        counts = qs.count_workloads(reserving, pending)
        active = self._cq_active(cq)
        fields = qs.cluster_queue_status_fields(cq, counts)
        return queue_status_patch(cq, fields, active, self._clock()), counts, active

    def _export_cq_metrics(self, cq: dict[str, Any], counts: qs.QueueCounts, active: Any) -> None:
        name = wv.name(cq)
        cohort = str(wv.spec(cq).get("cohort") or wv.spec(cq).get("cohortName") or "")
        m.RESERVING_ACTIVE.labels(name).set(counts.reserving)
        m.ADMITTED_ACTIVE.labels(name).set(counts.admitted)
        status = (
            "terminating"
            if wv.meta(cq).get("deletionTimestamp")
            else ("active" if active.status == "True" else "pending")
        )
        m.set_cluster_queue_status(name, status)
        nominal = qs.nominal_quotas(wv.spec(cq))
        m.set_resource_gauges(
            m.NOMINAL_QUOTA, cohort, name, [(f, r, q) for f, res in nominal.items() for r, q in res.items()]
        )
        frs = [(f, r) for f, res in nominal.items() for r in res]
        m.set_resource_gauges(
            m.RESOURCE_RESERVATION, cohort, name, [(f, r, counts.reservation.get((f, r), 0)) for f, r in frs]
        )
        m.set_resource_gauges(
            m.RESOURCE_USAGE, cohort, name, [(f, r, counts.usage.get((f, r), 0)) for f, r in frs]
        )

    def _reconcile_rf(self, name: str) -> None:
        flavor = self._flavors.store.get(name)
        if flavor is None or not fin.flavor_releasable(flavor, self._cluster_queues.store.list()):
            return
        release = fin.release_patch(flavor)
        if release is not None:
            self._client.patch(RESOURCE_FLAVORS, name, release)
            log.info("resource flavor released", extra={"resourceFlavor": name})

    def _reconcile_lq(self, key: str) -> None:
        lq = self._local_queues.store.get(key)
        if lq is None:
            namespace, _, name = key.partition("/")
            m.forget_local_queue(namespace, name)
            return
        patch, pending = self._budgeted(lambda: self._lq_status(key))
        if patch is not None:
            self._client.patch_status(LOCAL_QUEUES, wv.name(lq), patch, wv.namespace(lq))
        if pending is not None:
            m.LOCAL_QUEUE_PENDING.labels(wv.name(lq), wv.namespace(lq), "active").set(pending)

    def _lq_status(self, key: str) -> tuple[dict[str, Any] | None, int | None]:
        lq = self._local_queues.store.get(key)
        if lq is None:
            return None, None
        cq_name = wv.spec(lq).get("clusterQueue")
        cq = self._cluster_queues.store.get(cq_name) if isinstance(cq_name, str) and cq_name else None
        cq_active = cq is not None and self._cq_active(cq).status == "True"
        workloads = self._workloads.store.by_index(indexes.WORKLOAD_BY_QUEUE, key)
        pending = sum(1 for wl in workloads if qs.is_pending(wl))
        counts = qs.count_workloads(workloads, pending)
        active = qs.local_queue_active(lq, cq, cq_active)
        return queue_status_patch(lq, qs.local_queue_status_fields(counts), active, self._clock()), pending
