"""The dispatch loop: a manager Workload holding quota, its copies on workers, one winner.

For a Workload on the manager with a quota reservation and a MultiKueue check (Kueue's
``workload.go``, re-expressed):

1. no winner yet: workers of the check's MultiKueueConfig are nominated
   (``status.nominatedClusterNames``, by the configured dispatcher, :mod:`.dispatchers`) and each
   nominated one gets a copy (:func:`.dispatch.remote_workload`), a worker no longer nominated
   loses it; the first nominated copy to reserve quota wins (:func:`.dispatch.pick_winner`),
   the other copies are deleted, the Job is created on the winner only then
   (:func:`.dispatch.remote_job`), and the manager's Workload gets ``status.clusterName`` and its
   check ``Ready`` — the workload controller then admits it, and the Job integration unsuspends
   the manager's Job, which its ``spec.managedBy: kueue.x-k8s.io/multikueue`` (set by the webhook)
   keeps away from the manager's own Job controller;
2. with a winner: the worker Job's status is copied to the manager's Job, so the Job integration
   sees it finish there and finishes the Workload;
3. the winner lost (its copy gone, or the worker inactive past ``workerLostTimeout``): the check
   goes to ``Retry``, so the manager evicts and requeues the Workload;
4. the manager's Workload gone, finished, or without a reservation: its remote objects are
   deleted (deleting the manager's Job deletes its Workload, and so the Job on the worker).

Remote state is watched (:mod:`.watches`, as Kueue watches every worker): a change to a remote
Workload or Job of ours wakes the manager's Workload, and a Workload in flight is resynced every
``resync_interval`` as a safety net (every ``poll_interval`` while one of its workers is not
watched yet); see docs/design/multikueue.md.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from prometheus_client import Counter

from controller.jobs.controller import OWNER_JOB_INDEX
from controller.runtime.events import EventSink
from controller.runtime.informer import FuncHandler, Informer
from controller.runtime.store import split_key
from controller.runtime.workers import Workers
from controller.runtime.workqueue import WorkQueue
from controller.workload import view as wv
from controller.workload.status_plan import EventSpec
from pykueue.api import constants as C
from pykueue.api.timestamps import format_time, utcnow
from pykueue.kube import resources as R
from pykueue.kube.errors import AlreadyExists, ApiError, NotFound

from . import dispatch as d
from . import dispatchers
from .admissioncheck import config_name, is_multikueue
from .clusters import Registry
from .dispatchers import IncrementalRounds, Mode
from .status import DispatchState, DispatchStates, WorkerState
from .watches import NoCache, RemoteWatches

log = logging.getLogger(__name__)

Obj = dict[str, Any]

DISPATCHED = Counter(
    "pykueue_multikueue_workloads_dispatched_total", "Workloads whose Job was created on a worker.", ["cluster"]
)


@dataclass(frozen=True, slots=True)
class Settings:
    origin: str = "multikueue"
    worker_lost_timeout: float = 900.0
    poll_interval: float = 1.0
    resync_interval: float = 30.0
    dispatcher: Mode = Mode.ALL_AT_ONCE
    incremental_step: int = dispatchers.DEFAULT_STEP
    incremental_round_seconds: float = dispatchers.DEFAULT_ROUND_SECONDS



def _has_check_states(wl: Obj) -> bool:
    """Whether the workload has admission check states, without which it has no MultiKueue check
    (:meth:`WorkloadDispatcher.multikueue_check`) and the dispatcher nothing to do.

    Workload events are filtered on it before they reach the queue: every event of every
    workload used to cost a queue round trip and a reconcile, and a deletion a look for copies
    on every worker, 50,000 of them at a cold start with 50,000 pending (docs/performance.md).
    An update counts when either version has states, so a workload losing its check is still
    seen once."""
    status = wl.get("status")
    return isinstance(status, dict) and bool(status.get("admissionChecks"))

class WorkloadDispatcher:
    """Runs the dispatch loop (module docstring) for the manager's Workloads."""

    name = "multikueue-workload-controller"

    def __init__(
        self,
        client: Any,
        informers: dict[str, Informer],
        registry: Registry,
        settings: Settings,
        *,
        events: EventSink,
        clock: Callable[[], datetime] = utcnow,
        watches: RemoteWatches | None = None,
    ) -> None:
        self._client = client
        self.workloads = informers["workloads"]
        self.jobs = informers["jobs"]
        self.checks = informers["admissionchecks"]
        self.configs = informers["multikueueconfigs"]
        self.clusters = informers["multikueueclusters"]
        self.registry = registry
        self.settings = settings
        self._events = events
        self._clock = clock
        self._rounds = IncrementalRounds(settings.incremental_round_seconds)
        self._watches = watches
        self.states = DispatchStates()  # what the last pass saw, for explain (:mod:`.status`)
        # Copies go to every nominated worker at once, as Kueue creates them, so no worker
        # gets a head start in the race for the reservation.
        self._copier = ThreadPoolExecutor(max_workers=4, thread_name_prefix="multikueue-copy")
        self.queue: WorkQueue[str] = WorkQueue("multikueue-workload")
        self._runner = Workers(self.queue, self.reconcile, name=self.name, count=3)

    # --- wiring ---------------------------------------------------------------------------------

    def register_handlers(self) -> None:
        def enqueue(obj: Obj) -> None:
            if _has_check_states(obj):
                self.queue.add(wv.key(obj))

        def enqueue_update(old: Obj, new: Obj) -> None:
            if _has_check_states(old) or _has_check_states(new):
                self.queue.add(wv.key(new))

        self.workloads.add_handler(FuncHandler(add=enqueue, update=enqueue_update, delete=enqueue))
        self.jobs.add_handler(FuncHandler(update=lambda _o, n: self._job_changed(n)))
        self.clusters.add_handler(FuncHandler(update=self._cluster_changed))
        if self._watches is not None:
            self._watches.feed(self.queue.add)

    def _cluster_changed(self, old: Obj, new: Obj) -> None:
        """A worker turned active or inactive: its watches start or stop, so nothing else would
        wake the Workloads it concerns until their resync. Those are looked at now: the ones
        dispatched to it (a lost winner's clock starts) and the ones not dispatched yet (it can
        be nominated, or no longer)."""
        if d.is_active(old) == d.is_active(new):
            return
        cluster = str((new.get("metadata") or {}).get("name") or "")
        for local in self.workloads.store.list():
            status = wv.status(local)
            if status.get("admissionChecks") and status.get("clusterName") in (None, "", cluster):
                self.queue.add(wv.key(local))

    def _job_changed(self, job: Obj) -> None:
        """A MultiKueue Job on the manager changed (e.g. unsuspended once admitted): its Workload
        is looked at again, so the worker's status is mirrored without waiting for a resync."""
        if (job.get("spec") or {}).get("managedBy") != C.MULTIKUEUE_CONTROLLER:
            return
        meta = job.get("metadata") or {}
        if not self.workloads.has_index(OWNER_JOB_INDEX):
            return  # setup adds it; without it the slow resync still mirrors the status
        for key in self.workloads.store.index_keys(OWNER_JOB_INDEX, f"{meta.get('namespace')}/{meta.get('name')}"):
            self.queue.add(key)

    def start(self) -> None:
        self._runner.start()

    def stop(self) -> None:
        self._runner.stop()
        self._copier.shutdown(wait=False)

    def process_one(self, key: str) -> None:
        self._runner.process_one(key)

    # --- reading -----------------------------------------------------------------------------------

    def multikueue_check(self, local: Obj) -> tuple[str, list[str]] | None:
        """The workload's MultiKueue check and the clusters of its MultiKueueConfig."""
        for state in wv.status(local).get("admissionChecks") or []:
            check = self.checks.store.get(str(state.get("name")))
            if check is None or not is_multikueue(check):
                continue
            config = self.configs.store.get(config_name(check) or "")
            clusters = [str(c) for c in ((config or {}).get("spec") or {}).get("clusters") or []]
            return str(state.get("name")), clusters
        return None

    def _remote_get(self, cluster: str, res: R.Resource, namespace: str, name: str, *, live: bool = False) -> Obj | None:
        """A remote object from the worker's watch cache when it is synced, else (or with
        ``live``) from the worker itself. The cache may lag: an object it lacks is confirmed
        with a live read (:meth:`_confirmed`) before anything is concluded from its absence."""
        client = self.registry.active_client(cluster)
        if client is None:
            return None
        if not live and self._watches is not None:
            cached = self._watches.cached(cluster, client, res, namespace, name)
            if not isinstance(cached, NoCache):
                return cached
        return client.get(res, name, namespace)

    def _confirmed(self, cluster: str, res: R.Resource, namespace: str, name: str, seen: Obj | None) -> Obj | None:
        """``seen``, or when it is absent what the worker itself says (a copy just created may
        not have reached the watch yet; deciding it is gone would requeue a running Workload)."""
        return seen if seen is not None else self._remote_get(cluster, res, namespace, name, live=True)

    # --- the pass ---------------------------------------------------------------------------------

    def reconcile(self, key: str) -> float | None:
        namespace, name = split_key(key)
        namespace = namespace or ""
        local = self.workloads.store.get(key)
        if local is None:
            self._rounds.forget(key)
            self.states.forget(key)
            self._delete_remotes(namespace, name, self.registry.names())
            return None
        found = self.multikueue_check(local)
        if found is None:
            return None
        check, clusters = found
        local_job = self._local_job(local)
        entry = d.check_entry(local, check) or {}
        if wv.is_finished(local) or not wv.has_reservation(local) or wv.is_evicted(local):
            self._rounds.forget(key)
            self.states.forget(key)
            self._delete_remotes(namespace, name, clusters)
            if not wv.is_finished(local):
                self._reset_nomination(local)
                if local_job is not None:
                    self._forget_remote_pods(local_job)
            return None
        if entry.get("state") in (C.CHECK_RETRY, C.CHECK_REJECTED):
            return None
        if local_job is None:
            return None  # only Workloads of batch Jobs are dispatched (docs/limitations.md)
        remotes = {c: self._remote_get(c, R.WORKLOADS, namespace, name) for c in clusters}
        remotes = {c: r if d.has_origin(r, self.settings.origin) else None for c, r in remotes.items()}
        current = wv.status(local).get("clusterName")
        if current:
            return self._follow(local, local_job, check, str(current), remotes)
        nominated = [str(c) for c in wv.status(local).get("nominatedClusterNames") or []]
        winner = d.pick_winner({c: r for c, r in remotes.items() if c in nominated}, None, tie_break=key)
        if winner is None:
            nominated, wait = self._nomination(local, entry, clusters, nominated)
            targets = dispatchers.copy_targets(nominated, clusters)
            # Copies follow the nomination: a worker no longer nominated loses its copy.
            self._delete_remotes(namespace, name, [c for c in clusters if c not in targets and remotes.get(c) is not None])
            created = self._create_copies(local, targets, remotes)
            self._record(local, check, clusters, nominated, remotes, created=created)
            after = self._requeue(targets)
            return min(after, wait) if wait is not None else after
        self._delete_remotes(namespace, name, [c for c in clusters if c != winner])
        self._ensure_remote_job(winner, local, local_job)
        self._mark_dispatched(local, check, winner)
        self._record(local, check, clusters, nominated, {winner: remotes[winner]}, winner=winner, job=True)
        return self._requeue([winner])

    def _record(
        self, local: Obj, check: str, clusters: list[str], nominated: list[str], remotes: Mapping[str, Obj | None],
        *, winner: str = "", job: bool | None = None, created: Collection[str] = (),
    ) -> None:  # fmt: skip
        """Keep what this pass saw for ``explain`` (:mod:`.status`): once a worker won, only it
        (the other copies are being removed)."""
        names = [winner] if winner else clusters
        workers = []
        for cluster in names:
            active = self.registry.active_client(cluster) is not None
            remote = remotes.get(cluster)
            workers.append(WorkerState(
                cluster, active, cluster in nominated or cluster == winner,
                copy=(remote is not None or cluster in created) if active else None,
                quota_reserved=remote is not None and d.reserved_at(remote) is not None,
                admitted=remote is not None and d.is_admitted(remote),
                job=job if cluster == winner else None,
            ))  # fmt: skip
        state = DispatchState(check, self.settings.dispatcher.value, winner, tuple(workers), format_time(self._clock()))
        self.states.record(wv.key(local), state)

    def _requeue(self, clusters: list[str]) -> float:
        """When to look at an in-flight Workload again without news: a slow resync when every
        active worker it involves is watched (its events wake the Workload), else the fast poll
        (no watches wired, or one still starting)."""
        if self._watches is None:
            return self.settings.poll_interval
        watches = self._watches
        if any(self.registry.active_client(c) is not None and not watches.synced(c) for c in clusters):
            return self.settings.poll_interval
        return self.settings.resync_interval

    def _local_job(self, local: Obj) -> Obj | None:
        owner = wv.controller_owner(local)
        if owner is None or owner.get("kind") != "Job" or not str(owner.get("apiVersion", "")).startswith("batch/"):
            return None
        return self.jobs.store.get(f"{wv.namespace(local)}/{owner.get('name')}")

    def _create_copies(self, local: Obj, clusters: list[str], remotes: dict[str, Obj | None]) -> set[str]:
        """Create the missing copies, on all workers at once (one after the other would hand the
        first worker in the config a head start on every Workload)."""
        copy = d.remote_workload(local, self.settings.origin)

        def create(cluster: str) -> bool:
            client = self.registry.active_client(cluster)
            if client is None:
                return False
            try:
                client.create(R.WORKLOADS, copy, wv.namespace(local))
            except AlreadyExists:
                return False  # a copy of another origin or a race with ourselves; read next pass
            except ApiError as err:  # e.g. the namespace missing on the worker: it just cannot take it
                log.info("cannot copy workload to worker",
                         extra={"workload": wv.key(local), "multiKueueCluster": cluster, "error": str(err)})  # fmt: skip
                return False
            return True

        missing = [c for c in clusters if remotes.get(c) is None]
        if len(missing) == 1:
            return set(missing) if create(missing[0]) else set()
        futures = {c: self._copier.submit(create, c) for c in missing}
        return {c for c, future in futures.items() if future.result()}

    def _ensure_remote_job(self, cluster: str, local: Obj, local_job: Obj) -> None:
        client = self.registry.active_client(cluster)
        if client is None:
            return
        meta = local_job.get("metadata") or {}
        if client.get(R.JOBS, str(meta.get("name")), meta.get("namespace")) is not None:
            return
        with contextlib.suppress(AlreadyExists):
            client.create(R.JOBS, d.remote_job(local_job, wv.name(local), self.settings.origin), meta.get("namespace"))
            DISPATCHED.labels(cluster).inc()

    def _nomination(
        self, local: Obj, entry: Mapping[str, Any], clusters: list[str], nominated: list[str]
    ) -> tuple[list[str], float | None]:
        """The workers nominated after this pass, by the configured dispatcher
        (:mod:`.dispatchers`), and how long until the Incremental round ends (else ``None``)."""
        mode = self.settings.dispatcher
        if mode is Mode.ALL_AT_ONCE:
            active = [c for c in clusters if self.registry.active_client(c) is not None]
            if d.nomination_changed(nominated, active):
                self._nominate(local, sorted(active))
            return active, None
        if mode is Mode.EXTERNAL or entry.get("state") != C.CHECK_PENDING:
            return nominated, None  # written by another controller; Kueue nominates for Pending checks only
        key, now = wv.key(local), self._clock()
        wait = self._rounds.remaining(key, now)
        if wait is not None:
            return nominated, wait
        added = dispatchers.next_nominees(nominated, clusters, self.settings.incremental_step)
        if not added:
            return nominated, None  # every worker nominated; the last round's copies keep trying
        nominated = [*nominated, *added]
        self._nominate(local, nominated)
        self._rounds.start(key, now)
        log.info("incremental nomination round", extra={"workload": key, "nominated": nominated, "added": added})
        return nominated, self._rounds.round_seconds

    def _nominate(self, local: Obj, clusters: list[str]) -> None:
        """Write ``status.nominatedClusterNames``. The webhook accepts a ``clusterName`` only
        from it, as Kueue's does."""
        patch = {
            "metadata": {"resourceVersion": wv.resource_version(local)},
            "status": {"nominatedClusterNames": clusters or None},
        }
        self._client.patch_status(R.WORKLOADS, wv.name(local), patch, wv.namespace(local))

    def _reset_nomination(self, local: Obj) -> None:
        """A workload that lost its reservation (evicted, requeued) is nominated afresh next
        time, as Kueue's eviction resets ``nominatedClusterNames`` (``pkg/workload/evict``),
        whichever the dispatcher: an external one nominates again."""
        if not wv.status(local).get("nominatedClusterNames"):
            return
        patch = {"metadata": {"resourceVersion": wv.resource_version(local)}, "status": {"nominatedClusterNames": None}}
        self._client.patch_status(R.WORKLOADS, wv.name(local), patch, wv.namespace(local))

    def _mark_dispatched(self, local: Obj, check: str, winner: str) -> None:
        message = f'The workload got reservation on "{winner}"'
        states = d.check_states_patch(local, check, C.CHECK_READY, message, self._clock())
        # clusterName and nominatedClusterNames are exclusive: the nomination ends here.
        status: Obj = {"clusterName": winner, "nominatedClusterNames": None}
        if states is not None:
            status["admissionChecks"] = states
        patch = {"metadata": {"resourceVersion": wv.resource_version(local)}, "status": status}
        self._client.patch_status(R.WORKLOADS, wv.name(local), patch, wv.namespace(local))
        self._events.emit(
            {**local, "apiVersion": C.API_VERSION, "kind": "Workload"},
            EventSpec("Normal", "MultiKueue", message),
        )

    def _follow(self, local: Obj, local_job: Obj, check: str, winner: str, remotes: dict[str, Obj | None]) -> float:
        namespace, name = wv.namespace(local), wv.name(local)
        self._record(local, check, [winner], [], remotes, winner=winner)
        if self.registry.active_client(winner) is None:
            if d.worker_lost(self.clusters.store.get(winner), self.settings.worker_lost_timeout, self._clock()):
                self._retry(local, check, f'Admitting remote lost: worker "{winner}" inactive past workerLostTimeout')
            return self.settings.poll_interval
        remote = self._confirmed(winner, R.WORKLOADS, namespace, name, remotes.get(winner))
        if not d.has_origin(remote, self.settings.origin):
            self._retry(local, check, f'Admitting remote no longer exists on worker "{winner}"')
            return self._requeue([winner])
        self._delete_remotes(namespace, name, [c for c in remotes if c != winner and remotes[c] is not None])
        job_name = str((local_job.get("metadata") or {}).get("name"))
        remote_job = self._confirmed(winner, R.JOBS, namespace, job_name, self._remote_get(winner, R.JOBS, namespace, job_name))
        if remote_job is None and d.adopted_by_job(remote):
            # The worker deleted the Job that had adopted the copy (the copy follows its owner
            # there): as in Kueue, the admitting remote is gone; re-creating the Job would run it
            # again behind the manager's back, so the manager requeues and dispatches afresh.
            self._delete_remotes(namespace, name, [winner])
            self._retry(local, check, f'Admitting remote no longer exists on worker "{winner}"')
            return self._requeue([winner])
        if remote_job is None:
            self._ensure_remote_job(winner, local, local_job)
        self._record(local, check, [winner], [], {winner: remote}, winner=winner, job=True)
        if remote_job is not None and not (local_job.get("spec") or {}).get("suspend"):
            patch = d.job_status_patch(local_job, remote_job)
            if patch is not None:
                meta = local_job.get("metadata") or {}
                self._client.patch_status(
                    R.JOBS, meta.get("name"), {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": patch},
                    meta.get("namespace"),
                )  # fmt: skip
        return self._requeue([winner])

    def _forget_remote_pods(self, local_job: Obj) -> None:
        """The manager's Job stops counting the worker's pods once its Workload lost the worker
        (evicted, requeued): those pods are deleted with the remote Job, and the Job integration
        releases the quota only when the Job counts no active pods."""
        patch = d.forget_pods_patch(local_job)
        if patch is None:
            return
        meta = local_job.get("metadata") or {}
        self._client.patch_status(
            R.JOBS, meta.get("name"), {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": patch},
            meta.get("namespace"),
        )  # fmt: skip

    def _retry(self, local: Obj, check: str, message: str) -> None:
        states = d.check_states_patch(local, check, C.CHECK_RETRY, message, self._clock())
        if states is None:
            return
        patch = {
            "metadata": {"resourceVersion": wv.resource_version(local)},
            "status": {"admissionChecks": states, "clusterName": None},
        }
        self._client.patch_status(R.WORKLOADS, wv.name(local), patch, wv.namespace(local))
        self._events.emit(
            {**local, "apiVersion": C.API_VERSION, "kind": "Workload"}, EventSpec("Warning", "MultiKueue", message)
        )

    def _delete_remotes(self, namespace: str, name: str, clusters: list[str]) -> None:
        """Delete the Workload ``name`` and the Job owning it on ``clusters``, if they are ours."""
        for cluster in clusters:
            client = self.registry.active_client(cluster)
            if client is None:
                continue
            try:
                delete_remote(client, namespace, name, self.settings.origin)
            except ApiError as err:
                log.info("cannot delete remote objects", extra={"multiKueueCluster": cluster, "error": str(err)})


def delete_remote(client: Any, namespace: str, name: str, origin: str) -> None:
    """Delete the remote Workload ``name`` of ``origin`` and the Job created for it (found by its
    prebuilt-workload and origin labels, so a Job not yet attached to the copy goes too)."""
    selector = f"{C.PREBUILT_WORKLOAD_LABEL}={name},{C.MULTIKUEUE_ORIGIN_LABEL}={origin}"
    for job in client.list(R.JOBS, namespace, label_selector=selector).get("items") or []:
        with contextlib.suppress(NotFound):
            client.delete(R.JOBS, (job.get("metadata") or {}).get("name"), namespace)
    remote = client.get(R.WORKLOADS, name, namespace)
    if d.has_origin(remote, origin):
        with contextlib.suppress(NotFound):
            client.delete(R.WORKLOADS, name, namespace)
