"""Wire the core controllers into the controller process (``controller.main`` calls :func:`setup`).

Registers three leader-only runnables on shared informers: the scheduler loop (engine), the
Workload controller and the ClusterQueue/LocalQueue status controller. Options come from the
Configuration (``waitForPodsReady``, including ``requeuingStrategy.timestamp`` for the engine);
everything else has Kueue's defaults.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from controller.concurrentadmission.winner import WinnerClaims
from controller.core.afs_status import AfsStatus
from controller.core.fair_share_status import FairShareStatus
from controller.core.queue_status_controller import QueueStatusController
from controller.core.scheduler import SchedulerLoop
from controller.core.workload_controller import WorkloadController
from controller.engine import Engine
from controller.runtime.informer import FuncHandler
from controller.runtime.manager import Controller
from controller.workload.decisions import PodsReadyPolicy
from controller.workload.indexes import InformerLike
from pykueue.api import constants as C
from pykueue.api.config import Configuration
from pykueue.kube import resources as R

log = logging.getLogger(__name__)

# How long parked (inadmissible) workloads of a cohort tree wait, after quota was freed in it,
# before they are tried again: not at all, as in Kueue v0.14 (its workload controller requeues a
# ClusterQueue's inadmissible workloads when one of its workloads finishes). Kueue v0.19 batches
# them for 1 s because each of its retries re-sorted heaps under a lock and wrote a pending reason
# per failure (pkg/cache/queue/inadmissible_workloads.go); here a requeue is O(shape classes) and
# a reason is written only when it changes, so waiting saves nothing and leaves freed quota idle:
# in the baseline replay a 0.2 s batch lengthened the run by ~10 s and raised every class's time
# to admission, with more scheduling cycles, not fewer (docs/performance.md, "The requeue batch").
REQUEUE_BATCH_SECONDS = 0.0

# How long a newly admitted workload is safe from preemption (docs/design/engine.md, "Preemption
# grace"); the controller's --preemption-grace-seconds overrides it, 0 preempts at once as Kueue.
# 4 s: under load a small workload's Finished reaches the controller about 4 s after its admission
# became visible, and a shorter grace evicts workloads that have already finished; 5 s evicted no
# fewer and made preemptors, and the medium workloads behind them, wait longer (docs/performance.md,
# "A 4 s grace beside 2 s and Kueue" and "4 s beside 5 s").
DEFAULT_PREEMPTION_GRACE_SECONDS = 4.0


def preemption_grace_seconds(shared: Mapping[str, Any]) -> float:
    """The controller's ``--preemption-grace-seconds`` when given, else the default."""
    return float(shared.get("preemption-grace-seconds", DEFAULT_PREEMPTION_GRACE_SECONDS))


def pods_ready_policy(config: Configuration) -> PodsReadyPolicy | None:
    """``waitForPodsReady`` for the Workload controller, or ``None`` when it is off (the v1beta1
    default). The durations and backoff are already Kueue-defaulted by the Configuration."""
    section = config.wait_for_pods_ready
    if not section.enable:
        return None
    strategy = section.requeuing_strategy
    return PodsReadyPolicy(
        timeout_seconds=section.timeout,
        recovery_timeout_seconds=section.recovery_timeout,
        backoff_base_seconds=float(strategy.backoff_base_seconds),
        backoff_max_seconds=float(strategy.backoff_max_seconds),
        backoff_limit_count=strategy.backoff_limit_count,
    )


def requeuing_timestamp(config: Configuration) -> str:
    """``waitForPodsReady.requeuingStrategy.timestamp`` for the engine's queue order (``Eviction``,
    Kueue's default, also when waitForPodsReady is off: then no PodsReady eviction happens)."""
    section = config.wait_for_pods_ready
    if not section.enable:
        return C.REQUEUE_BY_EVICTION
    return section.requeuing_strategy.timestamp


def fair_sharing_strategies(config: Configuration) -> tuple[str, ...] | None:
    """The engine's ``fair_sharing``: the preemption strategies when ``fairSharing.enable``, else
    None (fair sharing off)."""
    return config.fair_sharing.preemption_strategies if config.fair_sharing.enable else None


def blocks_admission(config: Configuration) -> bool:
    """``waitForPodsReady.blockAdmission``, which only means something while waiting is on."""
    return config.wait_for_pods_ready.enable and config.wait_for_pods_ready.block_admission


class SchedulerRunnable:
    """Runs :class:`SchedulerLoop` in its own thread while leading."""

    name = "scheduler"

    def __init__(self, loop: SchedulerLoop, informers: dict[str, InformerLike]) -> None:
        self.loop = loop
        self._informers = informers
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def register_handlers(self) -> None:
        for kind, informer in self._informers.items():
            informer.add_handler(self.loop.handler_for(kind))

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.loop.run, args=(self._stop,), name="scheduler", daemon=True
        )
        self._thread.start()

    def alive(self) -> bool:
        """Liveness: once started, the loop thread must still run (until asked to stop)."""
        return self._thread is None or self._thread.is_alive() or self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        self.loop.wake()
        if self._thread is not None:
            self._thread.join(timeout=10)


class QueueStatusRunnable:
    name = "queue-status"

    def __init__(self, controller: QueueStatusController, informers: dict[str, InformerLike]) -> None:
        self.controller = controller
        self._informers = informers

    def register_handlers(self) -> None:
        c = self.controller

        def handler(func: Callable[[dict[str, Any]], None]) -> FuncHandler:
            """Every change of either version of an object is a change the status may depend on."""

            def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
                func(old)
                func(new)

            return FuncHandler(add=func, update=on_update, delete=func)

        self._informers["workloads"].add_handler(handler(c.workload_changed))
        self._informers["clusterqueues"].add_handler(handler(c.cluster_queue_changed), resync=True)
        self._informers["localqueues"].add_handler(handler(c.local_queue_changed))
        self._informers["resourceflavors"].add_handler(handler(c.flavor_changed))
        self._informers["admissionchecks"].add_handler(handler(c.dependency_changed))

    def start(self) -> None:
        self.controller.enqueue_all()
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()


def setup(ctrl: Controller) -> None:
    """Entry point used by ``controller.main`` (see its SETUP_MODULES)."""
    informers: dict[str, InformerLike] = {
        "workloads": ctrl.informer(R.WORKLOADS),
        "localqueues": ctrl.informer(R.LOCAL_QUEUES),
        "clusterqueues": ctrl.informer(R.CLUSTER_QUEUES),
        "cohorts": ctrl.informer(R.COHORTS),
        "resourceflavors": ctrl.informer(R.RESOURCE_FLAVORS),
        "admissionchecks": ctrl.informer(R.ADMISSION_CHECKS),
        "workloadpriorityclasses": ctrl.informer(R.WORKLOAD_PRIORITY_CLASSES),
        "priorityclasses": ctrl.informer(R.PRIORITY_CLASSES),
        "namespaces": ctrl.informer(R.NAMESPACES),
    }
    # The process's one Event pipeline (controller.runtime.events), on the spare client budget.
    events = ctrl.event_recorder()
    policy = pods_ready_policy(ctrl.config)
    # One winner per concurrent-admission parent, decided in the API (docs/design/concurrent-admission.md).
    claims = WinnerClaims(ctrl.client, informers["workloads"].store.get)
    workload_controller = WorkloadController(
        ctrl.client,
        workloads=informers["workloads"],
        local_queues=informers["localqueues"],
        cluster_queues=informers["clusterqueues"],
        workload_priority_classes=informers["workloadpriorityclasses"],
        priority_classes=informers["priorityclasses"],
        pods_ready=policy,
        events=events,
        claim_winner=claims.claim,
    )
    block = blocks_admission(ctrl.config)
    engine_factory = functools.partial(
        Engine,
        requeuing_timestamp=requeuing_timestamp(ctrl.config),
        requeue_batch_seconds=REQUEUE_BATCH_SECONDS,
        preemption_grace_seconds=preemption_grace_seconds(ctrl.shared),
        # fairSharing.enable: order heads and choose victims by dominant resource share.
        fair_sharing=fair_sharing_strategies(ctrl.config),
        # admissionFairSharing: order the LocalQueues of UsageBasedAdmissionFairSharing
        # ClusterQueues by their decayed usage (controller.engine.afs).
        admission_fair_sharing=ctrl.config.admission_fair_sharing,
    )
    loop = SchedulerLoop(
        ctrl.client,
        informers,
        events,
        engine_factory=engine_factory,
        block_admission=block,
        claim_winner=claims.claim,
    )
    scheduler = SchedulerRunnable(loop, informers)
    queue_status = QueueStatusController(
        ctrl.client,
        workloads=informers["workloads"],
        local_queues=informers["localqueues"],
        cluster_queues=informers["clusterqueues"],
        resource_flavors=informers["resourceflavors"],
        admission_checks=informers["admissionchecks"],
        # Status writes yield the shared client budget to admission while it is busy.
        admission_busy=loop.admission_busy,
    )
    ctrl.register(scheduler)
    ctrl.shared["engine-reads"] = loop.reads
    # Called inside a read (on the loop's thread): explain names what blockAdmission waits for.
    ctrl.shared["admission-blocked-by"] = loop.admission_blocked_by
    ctrl.health.add_liveness("scheduler", scheduler.alive)
    ctrl.register(workload_controller)
    ctrl.register(QueueStatusRunnable(queue_status, informers))
    if ctrl.config.admission_fair_sharing is not None:
        ctrl.register(AfsStatus(ctrl.client, loop.reads, informers["localqueues"]))
    if ctrl.config.fair_sharing.enable:
        ctrl.register(
            FairShareStatus(ctrl.client, loop.reads, informers["clusterqueues"], informers["cohorts"])
        )
    log.info(
        "core controllers registered", extra={"waitForPodsReady": policy is not None, "blockAdmission": block}
    )
