"""Concurrent admission inside the engine (``docs/design/concurrent-admission.md``): parents,
options and migration.

The option controller (:mod:`controller.concurrentadmission`) creates one *option* workload per flavor (or
explicit option) of a *parent*; the engine schedules options like any workload, with these rules:

* A parent is never queued and never holds quota. A workload of a ClusterQueue with
  ``concurrentAdmission`` that is not an option waits (it is about to become a parent).
* An option is an ordinary workload on Kueue's two-phase path: it reserves quota, then the
  admission checks of its *assigned* flavors run (``onFlavors``). While no option of a parent is
  ``Admitted``, several options may hold reservations at once: their checks race, and the first
  to become ``Admitted`` wins (the option controller then removes the others).
* Options of one parent are ordered by preference (``order_tiebreak``: same priority and
  timestamp, the more preferred first), so the more preferred is tried first.
* While a sibling is ``Admitted`` (the parent's winner, also while it is evicted and still holds
  quota), an option may not reserve. If it is more preferred and a migration target (the
  ``onSuccess`` policy, annotated by the controller), the winner's quota counts as free for it,
  and if it would fit *without preemption* the cycle evicts the winner (reason
  ``FlavorMigration``) instead of reserving: the Job stops, the winner's quota comes back once
  its pods are gone (as for every eviction), and only then does the option reserve and run its
  checks. Quota is never held twice once the parent is admitted. A sibling that only holds a
  reservation (its checks still run) does not block anyone.
* Only one option of a parent issues preemptions at a time: not while a sibling's evictions are
  in flight, nor while a sibling holds the parent's preemption gate recorded in the API
  (``OPTION_PREEMPTION_GATE_ANNOTATION``, written by the scheduler when an option preempts; it
  survives a restart and a leader change, and lapses after ``OPTION_PREEMPTION_GATE_SECONDS``).

:class:`OptionBook` is the engine's index of which options of each parent hold quota (kept by
the quota cache's hold/release paths) and of the preemption gates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pykueue.api import constants as c
from pykueue.api.objects import mapping_or_empty, namespaced_key
from pykueue.api.timestamps import parse_epoch

from .records import ClusterQueueSpec, ObjectKey, OptionInfo, WorkloadInfo


def parse_mode(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple[bool, OptionInfo | None]:
    """``(is_parent, option)`` from a Workload's metadata and spec; never raises."""
    mode = mapping_or_empty(spec.get("workloadMode")).get("type")
    labels = mapping_or_empty(meta.get("labels"))
    if mode == c.WORKLOAD_MODE_PARENT or labels.get(c.CONCURRENT_ADMISSION_PARENT_LABEL) == "true":
        return True, None
    if mode != c.WORKLOAD_MODE_OPTION:
        return False, None
    parent, parent_uid = "", ""
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("kind") == "Workload":
            parent, parent_uid = str(ref.get("name") or ""), str(ref.get("uid") or "")
    annotations = mapping_or_empty(meta.get("annotations"))
    try:
        rank = int(annotations.get(c.OPTION_PREFERENCE_ANNOTATION, 0))
    except (TypeError, ValueError):
        rank = 0
    target = annotations.get(c.OPTION_MIGRATION_TARGET_ANNOTATION) == "true"
    key = namespaced_key(str(meta.get("namespace") or ""), parent)
    gate = parse_epoch(annotations.get(c.OPTION_PREEMPTION_GATE_ANNOTATION))
    return False, OptionInfo(key, max(rank, 0), target, family=f"{key}@{parent_uid}", gate_opened=gate)


def option_order_tiebreak(info_uid: str, option: OptionInfo | None) -> str:
    """Queue tiebreak after priority and timestamp: siblings sort by preference rank."""
    return f"{option.family}#{option.rank:04d}" if option is not None else info_uid


def admission_blocker(info: WorkloadInfo, spec: ClusterQueueSpec) -> str | None:
    """Why a pending workload of ``spec`` must not be queued yet ("" = wait silently), or None.

    Options queue like any workload (their checks run after the reservation); a workload of a
    concurrent-admission queue that is not an option is about to become a parent and waits."""
    if not spec.concurrent_admission:
        return None
    if info.option is None:
        return ""  # about to become a parent
    return None


class OptionBook:
    """Which options of each parent hold quota, and which hold their parent's preemption gate."""

    def __init__(self) -> None:
        self.holders: dict[str, set[ObjectKey]] = {}  # parent (family) -> options holding quota
        # parent (family) -> option -> when it took the preemption gate (from its annotation)
        self.gates: dict[str, dict[ObjectKey, float]] = {}
        # winners whose migration eviction was emitted and not seen written yet
        self.migrating: set[ObjectKey] = set()
        self.members: dict[str, set[ObjectKey]] = {}  # parent (family) -> its options the engine knows

    def saw(self, info: WorkloadInfo) -> None:
        """Keep the gate index in line with the option's latest annotation; a winner seen evicted
        or without quota is no longer waiting for its migration eviction."""
        if info.option is None:
            return
        self.members.setdefault(info.option.family, set()).add(info.key)
        if info.evicted or info.admission is None:
            self.migrating.discard(info.key)
        family = self.gates.get(info.option.family)
        if info.option.gate_opened is not None:
            self.gates.setdefault(info.option.family, {})[info.key] = info.option.gate_opened
        elif family is not None:
            family.pop(info.key, None)
            if not family:
                del self.gates[info.option.family]

    def forgot(self, info: WorkloadInfo) -> None:
        self.migrating.discard(info.key)
        if info.option is not None and info.option.family in self.members:
            self.members[info.option.family].discard(info.key)
            if not self.members[info.option.family]:
                del self.members[info.option.family]
        if info.option is not None and info.option.family in self.gates:
            self.gates[info.option.family].pop(info.key, None)
            if not self.gates[info.option.family]:
                del self.gates[info.option.family]

    def sibling_holds_gate(self, info: WorkloadInfo, now: float) -> bool:
        """Whether another option of the same parent holds the preemption gate recorded in the
        API, opened less than ``OPTION_PREEMPTION_GATE_SECONDS`` ago."""
        if info.option is None:
            return False
        return any(
            key != info.key and now - opened < c.OPTION_PREEMPTION_GATE_SECONDS
            for key, opened in self.gates.get(info.option.family, {}).items()
        )

    def held(self, info: WorkloadInfo) -> None:
        if info.option is not None:
            self.holders.setdefault(info.option.family, set()).add(info.key)

    def released(self, info: WorkloadInfo) -> None:
        if info.option is None:
            return
        keys = self.holders.get(info.option.family)
        if keys is not None:
            keys.discard(info.key)
            if not keys:
                del self.holders[info.option.family]

    def sibling_holder(
        self, info: WorkloadInfo, admitted_workload: Callable[[ObjectKey], WorkloadInfo | None]
    ) -> WorkloadInfo | None:
        """The sibling of option ``info`` that is ``Admitted`` and holds quota (the parent's
        winner), if any; ``admitted_workload`` is the quota cache's record of a workload holding
        quota. Siblings that only reserved (their checks still run) are not returned: they race."""
        if info.option is None:
            return None
        winners = []
        for key in self.holders.get(info.option.family, ()):
            if key == info.key:
                continue
            other = admitted_workload(key)
            if other is not None and other.admission is not None and other.admission.admitted:
                winners.append(other)
        if not winners:
            return None
        return min(winners, key=lambda w: (w.option.rank if w.option is not None else 0, w.key))

    def migration_target_pending(
        self, info: WorkloadInfo, workloads: Mapping[ObjectKey, WorkloadInfo]
    ) -> WorkloadInfo | None:
        """For an option a migration evicted (``migrated_away``): a more preferred sibling that may
        take over and has not had its chance yet, which goes first (so the job does not come back
        on the flavor it is leaving meanwhile). A target that reserved quota has had its chance only
        once its checks decided: it is ``Admitted`` (then it holds the parent and this option waits
        as every sibling does) or it is off (a ``Rejected`` check deactivates it and its
        reservation goes). Letting this option reserve while the target's checks still run would
        race them, which a migration must not do; the option controller keeps this option off for
        as long (``controller.concurrentadmission.parent_plan``)."""
        if info.option is None or not info.option.migrated_away:
            return None
        for key in self.members.get(info.option.family, ()):
            other = workloads.get(key)
            if (
                other is not None
                and other.key != info.key
                and other.option is not None
                and other.option.rank < info.option.rank
                and other.option.migration_target
                and (other.admission is None or not other.admission.admitted)
                and other.active
                and not other.finished
            ):
                return other
        return None

    @staticmethod
    def may_displace(info: WorkloadInfo, holder: WorkloadInfo) -> bool:
        assert info.option is not None and holder.option is not None
        return info.option.migration_target and info.option.rank < holder.option.rank

    @staticmethod
    def sibling_preempting(
        info: WorkloadInfo,
        being_evicted: Mapping[ObjectKey, ObjectKey],
        workloads: Mapping[ObjectKey, WorkloadInfo],
    ) -> bool:
        """Whether another option of the same parent has evictions in flight (``being_evicted``:
        victim -> preemptor, as the quota cache records them)."""
        if info.option is None:
            return False
        for preemptor in set(being_evicted.values()):
            other = workloads.get(preemptor)
            if (
                other is not None
                and other.key != info.key
                and other.option is not None
                and other.option.family == info.option.family
            ):
                return True
        return False


def migration_message(preferred: WorkloadInfo, flavors: str) -> str:
    return (
        f"Evicted to accommodate option {preferred.name} (UID: {preferred.uid}) of the same parent "
        f"due to migration to a more preferred resource flavor ({flavors})"
    )
