"""The quota cache: what ClusterQueues exist, how their quota is shared, and who holds it.

Kueue's ``pkg/cache`` (scheduler cache) in the engine's terms: the ClusterQueue, Cohort,
ResourceFlavor and AdmissionCheck specs, the quota forest built from them (``quota.py``), each
queue's ``Active`` state (``activity.py``), the workloads that hold quota per ClusterQueue
(admitted, reserved or assumed), the victims whose eviction is in flight, which option of a
concurrent-admission parent holds quota (``options.OptionBook``) and the HoldAndDrain evictions
still to be written. The preemption search reads this state (``preemption.Preemptor``).

It knows nothing about pending workloads. What a change here means for them (a tree whose quota
was freed or whose configuration changed must requeue its parked workloads; a queue that turned
inactive tells its pending workloads why) goes to a :class:`QuotaListener`, the queue manager.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from pykueue.api import constants as c

from . import quota
from .activity import cluster_queue_problems, inactive_reason
from .afs import AfsLedger
from .options import OptionBook
from .preemption import Preemptor
from .records import (
    AdmissionInfo,
    ClusterQueueSpec,
    CohortSpec,
    FlavorInfo,
    FlavorResource,
    LocalQueueInfo,
    ObjectKey,
    WorkloadInfo,
)
from .results import Eviction


class QuotaListener(Protocol):
    """Who hears about quota changes that concern pending workloads (the queue manager)."""

    def tree_changed(self, root: str) -> None:
        """Quota was freed or the configuration changed in the cohort tree ``root``."""

    def turned_inactive(self, cluster_queue: str, inactive: tuple[str, str]) -> None:
        """``cluster_queue`` stopped being able to admit, for ``inactive`` = (reason, message)."""


class _Nobody:
    def tree_changed(self, root: str) -> None:
        pass

    def turned_inactive(self, cluster_queue: str, inactive: tuple[str, str]) -> None:
        pass


class QuotaCache:
    """ClusterQueues, the cohort forest, usage and the workloads holding quota."""

    def __init__(self, workloads: Mapping[ObjectKey, WorkloadInfo]) -> None:
        """``workloads``: every tracked workload record by key (the engine's), read only."""
        self._workloads = workloads
        self.listener: QuotaListener = _Nobody()

        self.cluster_queues: dict[str, ClusterQueueSpec] = {}
        self.cohorts: dict[str, CohortSpec] = {}
        self.flavors: dict[str, FlavorInfo] = {}
        self.checks: dict[str, bool] = {}  # AdmissionCheck name -> Active
        self.check_controllers: dict[str, str] = {}  # AdmissionCheck name -> spec.controllerName
        # The quota forest is rebuilt lazily: topology changes (ClusterQueues, Cohorts) only mark
        # it stale, and the next read rebuilds it once. Registering 1,000 queues at start-up then
        # costs one rebuild instead of 1,000.
        self._forest = quota.QuotaForest()
        self._forest_stale = False
        self.inactive: dict[str, tuple[str, str]] = {}  # ClusterQueue -> (reason, message)

        self.admitted: dict[str, dict[ObjectKey, WorkloadInfo]] = {}  # ClusterQueue -> holders
        self._holder_of: dict[ObjectKey, str] = {}  # holder -> its ClusterQueue
        self.being_evicted: dict[ObjectKey, ObjectKey] = {}  # victim -> preemptor (expectations)
        self._drained: set[ObjectKey] = set()  # HoldAndDrain evictions already emitted
        self._evictions_to_emit: list[Eviction] = []

        self.preemptor = Preemptor(self._forest, self.cluster_queues, self.admitted, self.being_evicted)
        self.options = OptionBook()  # concurrent admission: which option of a parent holds quota
        # Admission fair sharing: told which workloads are Admitted and what they hold, per
        # LocalQueue (None: off).
        self.afs: AfsLedger | None = None

    # --- specs ---------------------------------------------------------------------------------------
    def set_cluster_queue(self, spec: ClusterQueueSpec) -> ClusterQueueSpec | None:
        """Store ``spec`` and return the previous one. A change of cohort or quota marks the forest
        stale (its rebuild refreshes every queue's activity and requeues every tree); any other
        change refreshes this queue's activity and requeues its tree."""
        old = self.cluster_queues.get(spec.name)
        self.cluster_queues[spec.name] = spec
        self.admitted.setdefault(spec.name, {})
        if old is None or old.cohort != spec.cohort or old.groups != spec.groups or old.fair_weight != spec.fair_weight:
            self._forest_stale = True
        else:
            self.refresh_activity(spec.name)
            self.listener.tree_changed(self.forest.root_of[spec.name])
        return old

    def remove_cluster_queue(self, name: str) -> bool:
        if self.cluster_queues.pop(name, None) is None:
            return False
        self._forest_stale = True
        self.inactive.pop(name, None)
        return True

    def set_cohort(self, spec: CohortSpec) -> None:
        if spec.name and self.cohorts.get(spec.name) != spec:
            self.cohorts[spec.name] = spec
            self._forest_stale = True

    def remove_cohort(self, name: str) -> None:
        if self.cohorts.pop(name, None) is not None:
            self._forest_stale = True

    def set_flavor(self, flavor: FlavorInfo) -> None:
        if flavor.name and self.flavors.get(flavor.name) != flavor:
            self.flavors[flavor.name] = flavor
            self._specs_changed(lambda spec: flavor.name in spec.flavor_names)

    def remove_flavor(self, name: str) -> None:
        if self.flavors.pop(name, None) is not None:
            self._specs_changed(lambda spec: name in spec.flavor_names)

    def set_admission_check(self, name: str, active: bool, controller: str) -> None:
        if not name or (self.checks.get(name) == active and self.check_controllers.get(name) == controller):
            return
        self.checks[name] = active
        self.check_controllers[name] = controller
        self._specs_changed(lambda spec: any(rule.name == name for rule in spec.checks))

    def remove_admission_check(self, name: str) -> None:
        self.check_controllers.pop(name, None)
        if self.checks.pop(name, None) is not None:
            self._specs_changed(lambda spec: any(rule.name == name for rule in spec.checks))

    def _specs_changed(self, affects: Callable[[ClusterQueueSpec], bool]) -> None:
        """A flavor or admission check changed: the queues using it may have changed activity,
        and their trees may admit what they could not before."""
        for name, spec in self.cluster_queues.items():
            if affects(spec):
                self.refresh_activity(name)
                self.listener.tree_changed(self.forest.root_of[name])

    # --- the forest ------------------------------------------------------------------------------------
    @property
    def forest(self) -> quota.QuotaForest:
        """The quota forest, rebuilt first if ClusterQueues or Cohorts changed since the last read."""
        if self._forest_stale:
            self._forest_stale = False
            self._rebuild_forest()
        return self._forest

    def ensure_forest(self) -> None:
        if self._forest_stale:
            self._forest_stale = False
            self._rebuild_forest()

    def _rebuild_forest(self) -> None:
        """Rebuild the forest after a topology change; every tree gets a requeue (its quota may
        have grown) and every queue's Active state is re-evaluated (cohort cycles)."""
        forest = self._forest
        forest.rebuild(self.cluster_queues, self.cohorts)
        # Usage is re-derived from the workloads that hold quota, so it is always exact.
        for name, node in forest.cluster_queues.items():
            node.usage = {}
            for info in self.admitted.get(name, {}).values():
                if info.admission is not None:
                    for fr, amount in info.admission.usage.items():
                        node.usage[fr] = node.usage.get(fr, 0) + amount
        for root_name in forest.members:
            kind, _, name = root_name.partition(":")
            root = forest.cohorts[name] if kind == "cohort" else forest.cluster_queues[name]
            forest._compute_usage(root)
            self.listener.tree_changed(root_name)
        for name in self.cluster_queues:
            self.refresh_activity(name)

    # --- activity ------------------------------------------------------------------------------------
    def refresh_activity(self, name: str) -> None:
        """Re-evaluate whether the queue can admit (``controller.engine.activity``, the same rule
        as its ``Active`` condition); a queue turning inactive is reported to the listener."""
        spec = self.cluster_queues[name]
        problems = cluster_queue_problems(
            spec,
            terminating=spec.terminating,
            flavors=self.flavors,
            checks_active=self.checks,
            check_controllers=self.check_controllers,
            in_cohort_cycle=name in self.forest.in_cycle,
        )
        inactive = inactive_reason(problems)
        if inactive is None:
            self.inactive.pop(name, None)
            return
        was_active = name not in self.inactive
        self.inactive[name] = inactive
        if was_active:
            self.listener.turned_inactive(name, inactive)

    def is_active(self, cluster_queue: str) -> bool:
        self.ensure_forest()  # a pending rebuild refreshes Active states
        return cluster_queue in self.cluster_queues and cluster_queue not in self.inactive

    # --- workloads holding quota ----------------------------------------------------------------------
    def holds(self, key: ObjectKey) -> bool:
        """Whether ``key`` holds quota (admitted, reserved or assumed)."""
        return key in self._holder_of

    def admitted_workload(self, key: ObjectKey) -> WorkloadInfo | None:
        """The record of ``key`` if it holds quota."""
        return self._workloads.get(key) if key in self._holder_of else None

    def option_holder(self, info: WorkloadInfo) -> WorkloadInfo | None:
        """Concurrent admission: the sibling of option ``info`` that holds quota, if any."""
        return self.options.sibling_holder(info, self.admitted_workload)

    def migration_target_pending(self, info: WorkloadInfo) -> WorkloadInfo | None:
        """Concurrent admission: see :meth:`OptionBook.migration_target_pending`."""
        return self.options.migration_target_pending(info, self._workloads)

    def option_preempting(self, info: WorkloadInfo, now: float) -> bool:
        """Concurrent admission: whether another option of the same parent has evictions in flight
        or holds the parent's preemption gate."""
        return self.options.sibling_holds_gate(info, now) or OptionBook.sibling_preempting(
            info, self.being_evicted, self._workloads
        )

    def hold(self, info: WorkloadInfo, old: WorkloadInfo | None) -> bool:
        """Record that ``info`` holds the quota of its admission (replacing what ``old`` held).
        Returns False when it is the same reservation seen again (e.g. our own write coming
        back: only the record is swapped), True when usage was (re)booked."""
        key = info.key
        assert info.admission is not None
        cq = info.admission.cluster_queue
        self.options.held(info)
        if (
            old is not None
            and old.admission is not None
            and old.admission.cluster_queue == cq
            and old.admission.usage == info.admission.usage
            and key in self.admitted.get(cq, {})
        ):
            self.admitted[cq][key] = info
            self._holder_of[key] = cq
            if info.evicted:
                self.being_evicted.pop(key, None)
            if old.local_queue_key != info.local_queue_key:
                self._afs_admitted(old, None)
            self._afs_admitted(info, info)
            return False
        # The same reservation holding less (reclaimable pods of a running workload) frees quota:
        # that is a requeue trigger like any release.
        shrank = (
            old is not None
            and old.admission is not None
            and old.admission.cluster_queue == cq
            and any(amount < old.admission.usage.get(fr, 0) for fr, amount in info.admission.usage.items())
        )
        self.release(key, old, requeue_tree=shrank)
        self.admitted.setdefault(cq, {})[key] = info
        node = self.forest.cluster_queues.get(cq)
        if node is not None:
            quota.add_usage(node, info.admission.usage)
        self._holder_of[key] = cq
        if info.evicted:
            self.being_evicted.pop(key, None)
        self._afs_admitted(info, info)
        return True

    def release(self, key: ObjectKey, old: WorkloadInfo | None, requeue_tree: bool = True) -> None:
        """Give back the quota ``old`` held, if any; freed quota is a requeue trigger."""
        if old is None or old.admission is None:
            return
        self.ensure_forest()  # before touching usage: a rebuild re-derives it from holders
        cq = old.admission.cluster_queue
        members = self.admitted.get(cq)
        if members is None or members.pop(key, None) is None:
            return
        self.options.released(old)
        node = self.forest.cluster_queues.get(cq)
        if node is not None:
            quota.remove_usage(node, old.admission.usage)
            if requeue_tree:
                self.listener.tree_changed(self.forest.root_of[cq])
        self._holder_of.pop(key, None)
        self.being_evicted.pop(key, None)
        self._drained.discard(key)
        self._afs_admitted(old, None)

    def assume(self, info: WorkloadInfo, cluster_queue: str, usage: dict[FlavorResource, int], now: float,
               admitted: bool) -> None:
        """Reserve quota for a popped workload before its API write (assume-then-write)."""
        info.admission = AdmissionInfo(
            cluster_queue, usage, admitted, reserved_at=now, assumed=True, visible_since=now
        )
        quota.add_usage(self.forest.cluster_queues[cluster_queue], usage)
        self.admitted[cluster_queue][info.key] = info
        self.options.held(info)
        self._holder_of[info.key] = cluster_queue
        self._afs_admitted(info, info)

    def _afs_admitted(self, record: WorkloadInfo, holder: WorkloadInfo | None) -> None:
        """Keep the admission fair sharing ledger's admitted usage per LocalQueue: ``holder``
        holds quota now (counted if Admitted), None: ``record`` released it."""
        if self.afs is None:
            return
        admission = holder.admission if holder is not None else None
        usage = admission.usage if admission is not None and admission.admitted else None
        self.afs.admitted(record.local_queue_key, record.key, usage)

    # --- stopPolicy HoldAndDrain -------------------------------------------------------------------------
    def drain_cluster_queue(self, name: str) -> None:
        """Evict every holder of a ClusterQueue whose stopPolicy is HoldAndDrain."""
        if self.cluster_queues[name].stop_policy == c.STOP_POLICY_HOLD_AND_DRAIN:
            for info in list(self.admitted.get(name, {}).values()):
                self._emit_drain(info, c.REASON_CLUSTER_QUEUE_STOPPED, "The ClusterQueue is stopped")

    def drain_local_queue(self, lq: LocalQueueInfo) -> None:
        """Evict the holders of a LocalQueue whose stopPolicy is HoldAndDrain."""
        if lq.stop_policy == c.STOP_POLICY_HOLD_AND_DRAIN:
            for info in list(self.admitted.get(lq.cluster_queue, {}).values()):
                if info.namespace == lq.namespace and info.queue_name == lq.name:
                    self._emit_drain(info, c.REASON_LOCAL_QUEUE_STOPPED, "The LocalQueue is stopped")

    def drain_workload(self, info: WorkloadInfo, lq: LocalQueueInfo | None) -> None:
        """Evict the holder ``info`` if its ClusterQueue or LocalQueue (``lq``) is draining."""
        assert info.admission is not None
        spec = self.cluster_queues.get(info.admission.cluster_queue)
        if spec is not None and spec.stop_policy == c.STOP_POLICY_HOLD_AND_DRAIN:
            self._emit_drain(info, c.REASON_CLUSTER_QUEUE_STOPPED, "The ClusterQueue is stopped")
            return
        if lq is not None and lq.stop_policy == c.STOP_POLICY_HOLD_AND_DRAIN:
            self._emit_drain(info, c.REASON_LOCAL_QUEUE_STOPPED, "The LocalQueue is stopped")

    def _emit_drain(self, info: WorkloadInfo, reason: str, message: str) -> None:
        if info.evicted or info.key in self._drained:
            return
        self._drained.add(info.key)
        self._evictions_to_emit.append(Eviction(info.key, reason, message))

    def evict_for_migration(self, holder: WorkloadInfo, message: str, out: list[Eviction]) -> None:
        """Concurrent admission: evict the admitted option ``holder`` so that a more preferred
        sibling can take its place, once (like a HoldAndDrain eviction: a failed write emits it
        again while it still holds quota)."""
        if holder.evicted or holder.key in self.options.migrating:
            return
        self.options.migrating.add(holder.key)
        out.append(Eviction(holder.key, c.REASON_FLAVOR_MIGRATION, message))

    def eviction_failed(self, eviction: Eviction) -> None:
        """Emit ``eviction`` again with the next cycle while the workload still holds quota; a
        migration eviction is decided again by the next cycle instead."""
        if eviction.reason == c.REASON_FLAVOR_MIGRATION:
            self.options.migrating.discard(eviction.workload)
            return
        if self.admitted_workload(eviction.workload) is not None:
            self._evictions_to_emit.append(eviction)

    def take_evictions(self) -> list[Eviction]:
        """The HoldAndDrain evictions to write, handed over once."""
        evictions, self._evictions_to_emit = self._evictions_to_emit, []
        return evictions
