"""Admission fair sharing: each LocalQueue's decayed past usage (KEP 4136).

In a ClusterQueue with ``spec.admissionScope.admissionMode: UsageBasedAdmissionFairSharing``
(and the Configuration's ``admissionFairSharing`` section present), pending workloads are ordered
by their LocalQueue's *usage* first, lowest first (``afs_queue.py``). This module keeps that
usage, as Kueue v0.19's ``AfsUsageLedger`` (``pkg/cache/queue/afs/``) and
``pkg/util/admissionfairsharing/admission_fair_sharing.go`` do:

* ``consumed``, per resource: an exponential moving average of the LocalQueue's admitted usage,
  ``consumed = consumed * (1 - a) + admitted * a`` with ``a = 1 - 0.5 ** (elapsed / halfLife)``,
  taken every ``usageSamplingInterval`` (Kueue's LocalQueue reconciler) and on each transition of
  one of its workloads into ``Admitted`` (Kueue's workload controller). A half-life of 0 forgets
  everything at each sample.
* an *entry penalty* per workload reserved and not yet ``Admitted``: its requests times
  ``a(samplingInterval)``, so a LocalQueue that just got a workload in does not look idle until the
  next sample. On ``Admitted`` the penalty is folded into ``consumed``; a workload deleted, finished,
  moved to another LocalQueue or whose reservation write failed drops it.
* usage = sum over resources of ``(consumed + penalty) * resourceWeights[r]`` (1 when unset), cpu
  in cores and other resources in their unit, divided by the LocalQueue's
  ``spec.fairSharing.weight``; a weight of 0 (or less) gives an infinite usage (last).

The engine's thread owns the ledger. Each LocalQueue's usage is a float recomputed only when one
of its inputs changes (a sample, a penalty, a weight), so ordering a ClusterQueue's heads reads
one number per LocalQueue and never walks workloads. :meth:`AfsLedger.published` hands other
threads (the status writer) an immutable copy, replaced after every sample.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pykueue.api.quantity import is_milli_resource

from .records import FlavorResource, ObjectKey

Resources = dict[str, float]  # resource name -> amount in Kueue's float units (cpu in cores)


def alpha(elapsed: float, half_life: float) -> float:
    """Kueue's ``calculateAlphaRate``: the weight of the new sample after ``elapsed`` seconds;
    0 when the half-life is 0 (Kueue then resets consumed usage instead of decaying it)."""
    if half_life == 0:
        return 0.0
    return 1.0 - math.pow(0.5, elapsed / half_life)


def decayed(old: Mapping[str, float], new: Mapping[str, float], elapsed: float, half_life: float) -> Resources:
    """Kueue's ``CalculateDecayedConsumed``: ``old * (1 - a) + new * a`` per resource."""
    a = alpha(elapsed, half_life)
    out: Resources = {}
    for name in old.keys() | new.keys():
        out[name] = old.get(name, 0.0) * (1.0 - a) + new.get(name, 0.0) * a
    return out


def usage_value(consumed: Mapping[str, float], penalty: Mapping[str, float], lq_weight: float,
                resource_weights: Mapping[str, float]) -> float:
    """Kueue's ``CalculateUsage``: resource-weighted sum of consumed and pending penalty, divided
    by the LocalQueue's weight (a weight of 0 or less: +inf, ordered last rather than NaN)."""
    total = 0.0
    for name in sorted(consumed.keys() | penalty.keys()):
        total += resource_weights.get(name, 1.0) * (consumed.get(name, 0.0) + penalty.get(name, 0.0))
    if lq_weight <= 0:
        return math.inf
    return total / lq_weight


def flatten(usage: Mapping[FlavorResource, int]) -> Resources:
    """Engine usage per (flavor, resource) in engine units -> per resource in Kueue's units
    (Kueue's ``FlattenFlavors`` then ``AsApproximateFloat64``: cpu in cores)."""
    out: Resources = {}
    for (_, resource), amount in usage.items():
        out[resource] = out.get(resource, 0.0) + (amount / 1000 if is_milli_resource(resource) else float(amount))
    return out


@dataclass(slots=True)
class LedgerEntry:
    """One LocalQueue's accounting (Kueue's ``UsageLedgerEntry``)."""

    consumed: Resources = field(default_factory=dict)
    last_update: float = 0.0  # when ``consumed`` was last decayed (epoch seconds)
    penalties: dict[ObjectKey, Resources] = field(default_factory=dict)  # per workload
    weight: float = 1.0  # the LocalQueue's spec.fairSharing.weight
    cluster_queue: str = ""
    usage: float = 0.0  # derived: see ``usage_value``

    def pending_penalty(self) -> Resources:
        total: Resources = {}
        for amounts in self.penalties.values():
            for name, amount in amounts.items():
                total[name] = total.get(name, 0.0) + amount
        return total


@dataclass(frozen=True, slots=True)
class PublishedUsage:
    """What the status writer shows for one LocalQueue: ``consumedResources`` and ``lastUpdate``,
    and the usage value (the ``kueue_local_queue_admission_fair_sharing_usage`` gauge)."""

    consumed: Mapping[str, float]
    last_update: float
    usage: float
    cluster_queue: str


class AfsLedger:
    """Per-LocalQueue decayed usage and entry penalties (engine thread only)."""

    def __init__(self, half_life: float, sampling_interval: float,
                 resource_weights: Mapping[str, float] | None = None) -> None:
        self.half_life = half_life
        self.sampling_interval = sampling_interval
        self.resource_weights = dict(resource_weights or {})
        self._entries: dict[ObjectKey, LedgerEntry] = {}
        # Admitted usage per LocalQueue, kept incrementally by the quota cache (``admitted``):
        # what each Admitted workload holds, and the sum (Kueue's cache ``GetAdmittedUsage``).
        self._admitted: dict[ObjectKey, dict[ObjectKey, Resources]] = {}
        self._admitted_total: dict[ObjectKey, Resources] = {}
        self._published: Mapping[ObjectKey, PublishedUsage] = MappingProxyType({})
        self.samples = 0  # how many LocalQueue samples were taken (tests, metrics)

    # --- reads --------------------------------------------------------------------------------
    def usage(self, lq_key: ObjectKey) -> float:
        """The LocalQueue's current usage (0 for one the ledger has not seen)."""
        entry = self._entries.get(lq_key)
        return entry.usage if entry is not None else 0.0

    def entry(self, lq_key: ObjectKey) -> LedgerEntry | None:
        return self._entries.get(lq_key)

    def published(self) -> Mapping[ObjectKey, PublishedUsage]:
        """Any thread: the state as of the last sample (an immutable mapping, swapped whole)."""
        return self._published

    def has_penalty(self, lq_key: ObjectKey, wl_key: ObjectKey) -> bool:
        entry = self._entries.get(lq_key)
        return entry is not None and wl_key in entry.penalties

    # --- LocalQueues --------------------------------------------------------------------------
    def track(self, lq_key: ObjectKey, cluster_queue: str, weight: float, now: float,
              seed: Mapping[str, float] | None = None) -> bool:
        """A LocalQueue appeared or changed. A new entry starts from ``seed`` (its persisted
        ``status.fairSharing.admissionFairSharingStatus.consumedResources``, Kueue's
        ``initializeAfsIfNeeded``) with its decay clock at ``now``. Returns whether its usage
        changed (its queue must then re-order its heads: nothing to do here, they read it live)."""
        entry = self._entries.get(lq_key)
        if entry is None:
            entry = self._entries[lq_key] = LedgerEntry(consumed=dict(seed or {}), last_update=now)
        entry.weight = weight
        entry.cluster_queue = cluster_queue
        return self._refresh(entry)

    def forget(self, lq_key: ObjectKey) -> None:
        """The LocalQueue was deleted: its history and penalties go with it."""
        self._entries.pop(lq_key, None)

    def local_queues(self) -> Iterable[ObjectKey]:
        return self._entries.keys()

    # --- admitted usage (the quota cache's hook) ---------------------------------------------------
    def admitted(self, lq_key: ObjectKey, wl_key: ObjectKey, usage: Mapping[FlavorResource, int] | None) -> None:
        """``wl_key`` of the LocalQueue is Admitted holding ``usage`` (None: no longer)."""
        held = self._admitted.get(lq_key)
        old = held.pop(wl_key, None) if held is not None else None
        total = self._admitted_total.setdefault(lq_key, {})
        if old is not None:
            for name, amount in old.items():
                total[name] = total.get(name, 0.0) - amount
        if usage is not None:
            flat = flatten(usage)
            self._admitted.setdefault(lq_key, {})[wl_key] = flat
            for name, amount in flat.items():
                total[name] = total.get(name, 0.0) + amount
        elif held is not None and not held:
            del self._admitted[lq_key]
            del self._admitted_total[lq_key]  # exact zero again, no float remainder kept

    def admitted_usage(self, lq_key: ObjectKey) -> Resources:
        """The LocalQueue's admitted usage per resource (cpu in cores)."""
        return dict(self._admitted_total.get(lq_key, {}))

    # --- penalties ------------------------------------------------------------------------------
    def push_penalty(self, lq_key: ObjectKey, wl_key: ObjectKey, usage: Mapping[FlavorResource, int],
                     now: float) -> None:
        """A workload of the LocalQueue got a reservation: charge its requests times
        ``alpha(samplingInterval)`` until it is Admitted (Kueue's ``CalculateEntryPenalty`` /
        ``PushPenalty``; a second push for the same workload replaces the first)."""
        a = alpha(self.sampling_interval, self.half_life)
        entry = self._entries.get(lq_key)
        if entry is None:
            entry = self._entries[lq_key] = LedgerEntry(last_update=now)
        entry.penalties[wl_key] = {name: amount * a for name, amount in flatten(usage).items()}
        self._refresh(entry)

    def drop_penalty(self, lq_key: ObjectKey, wl_key: ObjectKey) -> bool:
        """The workload's penalty will never settle (deleted, finished, moved, its write failed):
        remove exactly what was recorded for it. Kueue's ``SubPenalty``."""
        entry = self._entries.get(lq_key)
        if entry is None or entry.penalties.pop(wl_key, None) is None:
            return False
        self._refresh(entry)
        return True

    def settle(self, lq_key: ObjectKey, wl_key: ObjectKey, now: float) -> None:
        """A workload of the LocalQueue became Admitted: decay ``consumed`` up to ``now`` with the
        LocalQueue's admitted usage (which includes it) and fold its penalty in (Kueue's
        ``updateAfsConsumedUsage``)."""
        entry = self._entries.get(lq_key)
        if entry is None:
            entry = self._entries[lq_key] = LedgerEntry(last_update=now)
        elapsed = max(0.0, now - entry.last_update)
        consumed = decayed(entry.consumed, self.admitted_usage(lq_key), elapsed, self.half_life)
        for name, amount in entry.penalties.pop(wl_key, {}).items():
            consumed[name] = consumed.get(name, 0.0) + amount
        entry.consumed = consumed
        entry.last_update = max(now, entry.last_update)
        self._refresh(entry)

    # --- sampling -------------------------------------------------------------------------------
    def sample_due(self, now: float) -> list[ObjectKey]:
        """Sample every LocalQueue whose last sample is a sampling interval old (Kueue requeues
        each LocalQueue's reconcile after the interval); returns them. Publishes when any was."""
        interval = self.sampling_interval
        due = [key for key, entry in self._entries.items() if now - entry.last_update >= interval]
        for key in due:
            self.sample(key, now)
        if due:
            self.publish()
        return due

    def next_due(self) -> float | None:
        """When the next LocalQueue is due a sample (None without LocalQueues)."""
        if not self._entries:
            return None
        return min(entry.last_update for entry in self._entries.values()) + self.sampling_interval

    def sample(self, lq_key: ObjectKey, now: float) -> None:
        """Kueue's ``reconcileConsumedUsage``: decay towards the admitted usage, or forget
        everything when the half-life is 0."""
        entry = self._entries.get(lq_key)
        if entry is None:
            return
        if self.half_life == 0:
            entry.consumed = {}
        else:
            elapsed = max(0.0, now - entry.last_update)
            entry.consumed = decayed(entry.consumed, self.admitted_usage(lq_key), elapsed, self.half_life)
        entry.last_update = max(now, entry.last_update)
        self.samples += 1
        self._refresh(entry)

    def publish(self) -> None:
        """Swap in a fresh copy for other threads (after a round of samples)."""
        self._published = MappingProxyType(
            {
                key: PublishedUsage(MappingProxyType(dict(e.consumed)), e.last_update, e.usage, e.cluster_queue)
                for key, e in self._entries.items()
            }
        )

    def _refresh(self, entry: LedgerEntry) -> bool:
        usage = usage_value(entry.consumed, entry.pending_penalty(), entry.weight, self.resource_weights)
        changed = usage != entry.usage
        entry.usage = usage
        return changed
