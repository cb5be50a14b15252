"""Plugs MultiKueue into the controller process (``controller.main``).

Registers three leader-only controllers sharing one :class:`.clusters.Registry` of worker
clients and one :class:`.watches.RemoteWatches` (the cluster controller starts a worker's
watches, the dispatch loop hears them), and the garbage collector. The Configuration's ``multiKueue`` section gives the origin
label value, ``gcInterval``, ``workerLostTimeout`` and ``dispatcherName`` (:mod:`.dispatchers`);
the flag ``--multikueue-incremental-round-seconds`` shortens the Incremental rounds. A process that is itself a worker runs
them too; with no MultiKueue AdmissionCheck they have nothing to do.
"""

from __future__ import annotations

import contextlib
import logging

from controller.jobs.controller import OWNER_JOB_INDEX, owner_job_index
from controller.runtime.manager import Controller
from pykueue.kube import resources as R

from .admissioncheck import AdmissionCheckController
from .clusters import ClusterController, Registry
from .dispatchers import DEFAULT_ROUND_SECONDS, mode_of
from .gc import GarbageCollector
from .watches import RemoteWatches
from .workload import Settings, WorkloadDispatcher

log = logging.getLogger(__name__)

COMPONENT = "pykueue-multikueue"


def setup(ctrl: Controller) -> None:
    config = ctrl.config
    informers = {
        "workloads": ctrl.informer(R.WORKLOADS),
        "jobs": ctrl.informer(R.JOBS),
        "admissionchecks": ctrl.informer(R.ADMISSION_CHECKS),
        "multikueueconfigs": ctrl.informer(R.MULTIKUEUE_CONFIGS),
        "multikueueclusters": ctrl.informer(R.MULTIKUEUE_CLUSTERS),
    }
    # The dispatch loop wakes a manager Job's Workload through this index (the Job integration
    # adds it too when it runs in the same process).
    with contextlib.suppress(ValueError):
        informers["workloads"].add_indexer(OWNER_JOB_INDEX, owner_job_index)
    registry = Registry()
    watches = RemoteWatches(config.multi_kueue.origin)
    events = ctrl.event_recorder(COMPONENT)
    ctrl.register(
        ClusterController(
            ctrl.client, informers["multikueueclusters"], registry, namespace=config.namespace, events=events,
            watches=watches,
        )
    )  # fmt: skip
    ctrl.register(
        AdmissionCheckController(
            ctrl.client, informers["admissionchecks"], informers["multikueueconfigs"], informers["multikueueclusters"]
        )
    )
    settings = Settings(
        origin=config.multi_kueue.origin,
        worker_lost_timeout=config.multi_kueue.worker_lost_timeout,
        dispatcher=mode_of(config.multi_kueue.dispatcher_name),
        incremental_step=config.multi_kueue.incremental_step_size,
        incremental_round_seconds=float(
            ctrl.shared.get("multikueue-incremental-round-seconds", DEFAULT_ROUND_SECONDS)
        ),
    )
    dispatcher = WorkloadDispatcher(ctrl.client, informers, registry, settings, events=events, watches=watches)
    ctrl.register(dispatcher)
    ctrl.shared["multikueue-dispatch-states"] = dispatcher.states  # read by explain (controller.visibility)
    ctrl.register(
        GarbageCollector(
            informers["workloads"], registry, origin=settings.origin, interval=config.multi_kueue.gc_interval
        )
    )
    log.info(
        "multikueue registered",
        extra={
            "origin": settings.origin,
            "gcInterval": config.multi_kueue.gc_interval,
            "dispatcher": settings.dispatcher.value,
            "dispatcherName": config.multi_kueue.dispatcher_name,
        },
    )
