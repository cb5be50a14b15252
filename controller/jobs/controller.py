"""Wiring of the Job reconciler: informer caches in, a work queue, worker threads.

:class:`InformerLister` answers the reconciler's reads from the shared informers (Jobs,
Workloads indexed by their owning Job, ResourceFlavors, LocalQueues, Namespaces and the two
priority-class kinds). :class:`JobController` turns watch events into Job keys — a Workload
event becomes its owning Job's key — and runs :class:`~.reconciler.JobReconciler` on them with
the runtime's worker loop (:mod:`controller.runtime.workers`): failures are retried with per-key
exponential backoff, a ``requeue_after`` result parks the key, a key is never processed by two
workers at once, and stopping drains the reconciles in flight.

It runs only while this process leads (it is started by the leader callback and stopped when
the lease is lost), like every controller that writes.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any

from controller.concurrentadmission.option_workloads import OPTION_BY_PARENT_UID, option_by_parent_uid
from controller.runtime.events import EventSink
from controller.runtime.informer import FuncHandler, InformerSet
from controller.runtime.store import split_key
from controller.runtime.workers import Workers
from controller.runtime.workqueue import WorkQueue
from pykueue.api.constants import DEFAULT_LOCAL_QUEUE
from pykueue.kube import resources as R

from . import job as jobs
from .reconciler import JobReconciler, JobSettings, Writer, describe

log = logging.getLogger(__name__)

OWNER_JOB_INDEX = "jobs.pykueue.dev/owner-job"
QUEUE_NAME = "job"


def owner_job_index(obj: dict[str, Any]) -> list[str]:
    """``namespace/name`` of a Workload's controlling batch Job (the key of the Job to reconcile)."""
    owner = jobs.controller_owner(obj)
    if owner is None or owner.get("kind") != jobs.JOB_KIND:
        return []
    if str(owner.get("apiVersion") or "").rpartition("/")[0] != jobs.JOB_GROUP:
        return []
    namespace = jobs.metadata(obj).get("namespace")
    return [f"{namespace}/{owner.get('name')}"] if namespace and owner.get("name") else []


class InformerLister:
    """:class:`~.reconciler.JobLister` over shared informers (reads never call the API)."""

    def __init__(self, informers: InformerSet) -> None:
        self.jobs = informers.get(R.JOBS)
        self.workloads = informers.get(R.WORKLOADS)
        self.flavor_informer = informers.get(R.RESOURCE_FLAVORS)
        self.local_queues = informers.get(R.LOCAL_QUEUES)
        self.namespaces = informers.get(R.NAMESPACES)
        self.wpcs = informers.get(R.WORKLOAD_PRIORITY_CLASSES)
        self.pcs = informers.get(R.PRIORITY_CLASSES)
        # A previous leadership term of this process (or, for the option index, the option
        # controller on the same informer) may have added an index already.
        for index, func in ((OWNER_JOB_INDEX, owner_job_index), (OPTION_BY_PARENT_UID, option_by_parent_uid)):
            with contextlib.suppress(ValueError):
                self.workloads.add_indexer(index, func)

    def all(self) -> list[Any]:
        return [
            self.jobs,
            self.workloads,
            self.flavor_informer,
            self.local_queues,
            self.namespaces,
            self.wpcs,
            self.pcs,
        ]

    def job(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.jobs.store.get(f"{namespace}/{name}")

    def workloads_for_job(self, namespace: str, name: str) -> list[dict[str, Any]]:
        return self.workloads.store.by_index(OWNER_JOB_INDEX, f"{namespace}/{name}")

    def workload(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.workloads.store.get(f"{namespace}/{name}")

    def flavors(self) -> Mapping[str, dict[str, Any]]:
        return {jobs.metadata(f).get("name", ""): f for f in self.flavor_informer.store.list()}

    def local_queue_exists(self, namespace: str, name: str) -> bool:
        return self.local_queues.store.get(f"{namespace}/{name}") is not None

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        ns = self.namespaces.store.get(namespace)
        return jobs.labels(ns) if ns is not None else {"kubernetes.io/metadata.name": namespace}

    def workload_priority_class(self, name: str) -> dict[str, Any] | None:
        return self.wpcs.store.get(name)

    def priority_class(self, name: str) -> dict[str, Any] | None:
        return self.pcs.store.get(name)

    def options_of_parent(self, namespace: str, parent_uid: str) -> list[dict[str, Any]]:
        """Concurrent admission: option Workloads controlled by the parent with ``parent_uid``."""
        if not parent_uid:
            return []
        return [
            wl
            for wl in self.workloads.store.by_index(OPTION_BY_PARENT_UID, parent_uid)
            if jobs.metadata(wl).get("namespace") == namespace
        ]

    def default_priority_class(self) -> dict[str, Any] | None:
        defaults = [pc for pc in self.pcs.store.list() if pc.get("globalDefault") is True]
        return max(defaults, key=lambda pc: pc.get("value") or 0, default=None)


class JobController:
    """Runs the Job reconciler on ``workers`` threads until :meth:`stop`.

    Five workers, as Kueue's shipped configuration gives ``Job.batch``: a pass mostly waits on
    API round trips, so a few threads hide that latency without contending for the GIL.

    A :class:`controller.runtime.manager.Runnable`: handlers are registered at once (a standby
    keeps collecting keys, de-duplicated, so a takeover starts with the full backlog); workers
    run only while leading.
    """

    name = "job-controller"

    def __init__(
        self,
        writer: Writer,
        informers: InformerSet,
        settings: JobSettings,
        *,
        events: EventSink,
        workers: int = 5,
    ) -> None:
        self.lister = InformerLister(informers)
        self.reconciler = JobReconciler(self.lister, writer, settings, events=events)
        self.queue: WorkQueue[str] = WorkQueue(QUEUE_NAME)
        self._runner = Workers(self.queue, self._reconcile_key, name=self.name, count=workers)

    # --- events → keys ---------------------------------------------------------------------------

    def _enqueue_job(self, obj: dict[str, Any]) -> None:
        self.queue.add(jobs.key(obj))

    def _enqueue_owner(self, obj: dict[str, Any]) -> None:
        for key in owner_job_index(obj):
            self.queue.add(key)

    def _enqueue_namespace_jobs(self, obj: dict[str, Any]) -> None:
        """A ``default`` LocalQueue appeared: Jobs of its namespace may now be managed."""
        meta = jobs.metadata(obj)
        if meta.get("name") != DEFAULT_LOCAL_QUEUE:
            return
        for key in self.lister.jobs.store.index_keys("namespace", str(meta.get("namespace") or "")):
            self.queue.add(key)

    def register_handlers(self) -> None:
        self.lister.jobs.add_handler(
            FuncHandler(
                add=self._enqueue_job, update=lambda _o, n: self._enqueue_job(n), delete=self._enqueue_job
            )
        )
        self.lister.workloads.add_handler(
            FuncHandler(
                add=self._enqueue_owner,
                update=lambda _o, n: self._enqueue_owner(n),
                delete=self._enqueue_owner,
            )
        )
        self.lister.local_queues.add_handler(FuncHandler(add=self._enqueue_namespace_jobs))

    # --- workers -----------------------------------------------------------------------------------

    def _reconcile_key(self, key: str) -> float | None:
        """One pass of the reconciler for ``namespace/name``; errors are the runtime loop's job."""
        namespace, name = split_key(key)
        started = time.monotonic()
        result = self.reconciler.reconcile(namespace or "", name)
        log.debug(
            "reconciled job",
            extra={"job": key, "result": describe(result), "seconds": round(time.monotonic() - started, 4)},
        )
        return result.requeue_after

    def process_one(self, key: str) -> None:
        """Reconcile one key and schedule what follows (the workers' loop body; used by tests)."""
        self._runner.process_one(key)

    def start(self) -> None:
        """Start the workers (call :meth:`register_handlers` once before)."""
        self._runner.start()

    def stop(self) -> None:
        """Stop taking keys, let in-flight reconciles finish, join the workers."""
        self._runner.stop()
