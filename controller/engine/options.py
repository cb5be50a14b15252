"""Concurrent admission inside the engine (``docs/design/concurrent-admission.md``): parents,
options and migration.

The option controller (:mod:`controller.concurrentadmission`) creates one *option* workload per flavor (or
explicit option) of a *parent*; the engine schedules options like any workload, with these rules:

* A parent is never queued and never holds quota. A workload of a ClusterQueue with
  ``concurrentAdmission`` that is not an option waits (it is about to become a parent).
* An option reserves quota only once every admission check of its flavors is ``Ready``: options
  race their checks *before* reserving, so that at most one option of a parent holds quota at
  any instant while long-running checks on several flavors still run concurrently.
* Options of one parent are ordered by preference (``order_tiebreak``: same priority and
  timestamp, the more preferred first), so the more preferred is tried first.
* While a sibling holds quota, an option may only be admitted if it is more preferred and a
  migration target (the ``onSuccess`` policy, annotated by the controller). Then the sibling's
  quota counts as free for it, and if it fits *without preemption* the cycle releases the
  sibling's quota and reserves the option in one decision: the reservation carries the
  sibling's eviction (reason ``FlavorMigration``) and the scheduler writes that eviction before
  the reservation. A failed write rolls both back.
* Only one option of a parent issues preemptions at a time.

:class:`OptionBook` is the engine's index of which option of each parent holds quota (kept by
the quota cache's hold/release paths) and of reservations that displaced a sibling.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pykueue.api import constants as c
from pykueue.api.objects import mapping_or_empty, namespaced_key

from .records import ClusterQueueSpec, ObjectKey, OptionInfo, WorkloadInfo


def parse_mode(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple[bool, OptionInfo | None]:
    """``(is_parent, option)`` from a Workload's metadata and spec; never raises."""
    mode = mapping_or_empty(spec.get("workloadMode")).get("type")
    labels = mapping_or_empty(meta.get("labels"))
    if mode == c.WORKLOAD_MODE_PARENT or labels.get(c.CONCURRENT_ADMISSION_PARENT_LABEL) == "true":
        return True, None
    if mode != c.WORKLOAD_MODE_OPTION:
        return False, None
    parent = ""
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("kind") == "Workload":
            parent = str(ref.get("name") or "")
    annotations = mapping_or_empty(meta.get("annotations"))
    try:
        rank = int(annotations.get(c.OPTION_PREFERENCE_ANNOTATION, 0))
    except (TypeError, ValueError):
        rank = 0
    target = annotations.get(c.OPTION_MIGRATION_TARGET_ANNOTATION) == "true"
    return False, OptionInfo(namespaced_key(str(meta.get("namespace") or ""), parent), max(rank, 0), target)


def ready_checks(status: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(
        str(s.get("name"))
        for s in status.get("admissionChecks") or []
        if isinstance(s, Mapping) and s.get("state") == c.CHECK_READY
    )


def option_order_tiebreak(info_uid: str, option: OptionInfo | None) -> str:
    """Queue tiebreak after priority and timestamp: siblings sort by preference rank."""
    return f"{option.parent}#{option.rank:04d}" if option is not None else info_uid


def admission_blocker(info: WorkloadInfo, spec: ClusterQueueSpec) -> str | None:
    """Why a pending workload of ``spec`` must not be queued yet ("" = wait silently), or None."""
    if not spec.concurrent_admission:
        return None
    if info.option is None:
        return ""  # about to become a parent
    flavors = {f for ps in info.podsets for f in (ps.allowed_flavors or ())}
    missing = [
        rule.name
        for rule in spec.checks
        if (not rule.on_flavors or rule.on_flavors & flavors) and rule.name not in info.ready_checks
    ]
    if missing:
        return f"Waiting for admission check(s) {', '.join(sorted(missing))} to be Ready before reserving quota"
    return None


class OptionBook:
    """Which option of each parent holds quota, and which reservations displaced a sibling."""

    def __init__(self) -> None:
        self.holders: dict[ObjectKey, ObjectKey] = {}  # parent -> option holding quota
        self.displaced: dict[ObjectKey, WorkloadInfo] = {}  # reserved option -> displaced sibling

    def held(self, info: WorkloadInfo) -> None:
        if info.option is not None:
            self.holders[info.option.parent] = info.key

    def released(self, info: WorkloadInfo) -> None:
        if info.option is not None and self.holders.get(info.option.parent) == info.key:
            del self.holders[info.option.parent]

    def sibling_holder(
        self, info: WorkloadInfo, admitted_workload: Callable[[ObjectKey], WorkloadInfo | None]
    ) -> WorkloadInfo | None:
        """The sibling of option ``info`` that holds quota, if any (``admitted_workload``: the
        quota cache's record of a workload holding quota)."""
        if info.option is None:
            return None
        key = self.holders.get(info.option.parent)
        if key is None or key == info.key:
            return None
        return admitted_workload(key)

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
                and other.option.parent == info.option.parent
            ):
                return True
        return False


def migration_message(preferred: WorkloadInfo, flavors: str) -> str:
    return (
        f"Evicted to accommodate option {preferred.name} (UID: {preferred.uid}) of the same parent "
        f"due to migration to a more preferred resource flavor ({flavors})"
    )
