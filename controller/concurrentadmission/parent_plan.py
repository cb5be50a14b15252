"""What one parent's options must be right now, and what its ``status.options`` says.

:func:`plan_parent` is a pure function of the parent, its ClusterQueue's configuration, the
option workloads that exist and the time. It is level-based: it does not remember what it did,
it recomputes the desired set of options every time, so a missed event or a restart changes
nothing.

The desired set (see ``docs/design/concurrent-admission.md`` for the state machine):

* The **holder** is the most preferred option that holds quota. It is never removed by policy or
  by time: the parent's Job runs on it.
* Without a holder every configured option is wanted from ``parent creation + createDelaySeconds``
  until ``that + deleteDelaySeconds`` (the migration window).
* With a holder, only options that are *more preferred* than it and that the ``onSuccess`` policy
  lets take over (``OptionSpec.migration_target``) stay; the others are removed. When the holder
  loses its quota (preempted, finished checks failed...) nothing holds quota any more and every
  option comes back: the parent is re-armed.
* An existing option whose flavors no longer match the ClusterQueue (its flavors or options
  changed) is replaced — unless it is the holder, which keeps running.
* A finished, deleted or inactive parent wants no options; an inactive parent's holder is
  deactivated instead of deleted, so its Job is stopped (and its quota released) the normal way.

Removed options are deleted, not kept deactivated: re-arming simply creates them again, and
``status.options`` keeps listing them as ``Removed`` with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from controller.concurrentadmission.naming import option_name
from controller.concurrentadmission.option_specs import ConcurrentConfig, OptionSpec
from controller.concurrentadmission.option_workloads import (
    allowed_flavors,
    annotations_patch,
    matches_spec,
    option_rank,
)
from controller.workload import view as wv
from controller.workload.admissionchecks import sync_check_states
from pykueue.api import constants as c
from pykueue.api.timestamps import format_time, parse_time

Obj = Mapping[str, Any]


CAUSE_POLICY = "policy"
CAUSE_WINDOW = "window"
CAUSE_CONFIG = "config"
CAUSE_PARENT = "parent"


@dataclass(frozen=True, slots=True)
class Removal:
    option: Obj
    reason: str
    cause: str = CAUSE_POLICY  # for metrics: policy | window | config | parent


@dataclass(slots=True)
class ParentPlan:
    create: list[tuple[str, OptionSpec]] = field(default_factory=list)  # (name, spec)
    delete: list[Removal] = field(default_factory=list)
    annotate: list[tuple[Obj, dict[str, Any]]] = field(default_factory=list)  # (option, metadata patch)
    deactivate: list[Obj] = field(default_factory=list)
    release: list[Obj] = field(default_factory=list)  # evicted options whose reservation we clear
    # (option, status.admissionChecks): Pending entries for the checks a waiting option must pass
    init_checks: list[tuple[Obj, list[dict[str, Any]]]] = field(default_factory=list)
    options_status: list[dict[str, Any]] = field(default_factory=list)
    requeue_after: float | None = None

    def wake_in(self, seconds: float) -> None:
        seconds = max(seconds, 0.0)
        if self.requeue_after is None or seconds < self.requeue_after:
            self.requeue_after = seconds


def _message(cond: Mapping[str, Any] | None) -> str:
    return str((cond or {}).get("message") or "")


def observed_state(option: Obj) -> tuple[str, str]:
    """``(status, message)`` of an existing option for the parent's ``status.options``."""
    if wv.meta(option).get("deletionTimestamp"):
        return c.OPTION_REMOVED, "The option is being deleted"
    if wv.is_finished(option):
        return c.OPTION_REMOVED, "The option finished: " + _message(wv.condition(option, c.COND_FINISHED))
    reserved = wv.has_reservation(option)
    evicted = wv.is_evicted(option)
    if not wv.is_active(option):
        if reserved:
            return c.OPTION_EVICTED, "The option is deactivated and gives its quota back once its job stopped"
        return c.OPTION_REMOVED, "The option is deactivated"
    if evicted and reserved:
        return c.OPTION_EVICTED, _message(wv.condition(option, c.COND_EVICTED))
    if reserved and wv.is_admitted(option):
        return c.OPTION_ADMITTED, f"Admitted by ClusterQueue {wv.admitted_cluster_queue(option)}"
    if reserved:
        return c.OPTION_QUOTA_RESERVED, _message(wv.condition(option, c.COND_ADMITTED)) or _message(
            wv.condition(option, c.COND_QUOTA_RESERVED)
        )
    if evicted:
        return c.OPTION_EVICTED, _message(wv.condition(option, c.COND_EVICTED))
    pending = wv.condition(option, c.COND_QUOTA_RESERVED)
    return c.OPTION_PENDING, _message(pending) or "Waiting to be scheduled"


def _entry(name: str, flavors: Sequence[str], status: str, message: str) -> dict[str, Any]:
    return {"name": name, "resourceFlavors": list(flavors), "status": status, "message": message}


def holder_of(options: Sequence[Obj]) -> Obj | None:
    """The option the parent's Job follows: the most preferred one holding quota."""
    holding = [o for o in options if wv.has_reservation(o) and not wv.is_finished(o)]
    if not holding:
        return None

    def preference(option: Obj) -> tuple[int, str]:
        rank = option_rank(option)
        return (rank if rank is not None else 1 << 30, wv.name(option))

    return min(holding, key=preference)


def _keep_holder(plan: ParentPlan, holder: Obj, name: str, flavors: Sequence[str], inactive: bool) -> None:
    """The holder is never removed by policy, time or a queue change: the Job runs on it. An
    inactive parent's holder is deactivated instead, so the Job is stopped the normal way."""
    if inactive and wv.is_active(holder):
        plan.deactivate.append(holder)
    plan.options_status.append(_entry(name, flavors, *observed_state(holder)))


def _policy_reason(config: ConcurrentConfig, holder: Obj) -> str:
    name = wv.name(holder)
    if config.on_success == c.ON_SUCCESS_REMOVE_OTHER:
        return f"RemoveOther: option {name} holds quota"
    if config.on_success == c.ON_SUCCESS_REMOVE_BELOW_TARGET:
        return (
            f"RemoveBelowTarget: option {name} holds quota and this option is not more preferred "
            f"or is below the target flavor {config.target_flavor}"
        )
    return f"RemoveLower: option {name} holds quota and this option is not more preferred"


def plan_parent(
    parent: Obj,
    config: ConcurrentConfig | None,
    options: Sequence[Obj],
    now: datetime,
) -> ParentPlan:
    """Decide the options of ``parent`` (see the module docstring). Never raises on bad input."""
    plan = ParentPlan()
    by_name = {wv.name(o): o for o in options}
    holder = holder_of(options)
    parent_name = wv.name(parent)
    finished = wv.is_finished(parent) or bool(wv.meta(parent).get("deletionTimestamp"))
    inactive = not wv.is_active(parent)
    created = parse_time(wv.meta(parent).get("creationTimestamp")) or now
    standalone = wv.is_standalone(parent)

    # Options of a standalone parent have no Job whose stop would release their quota.
    for option in options:
        if standalone and wv.has_reservation(option) and wv.is_evicted(option):
            plan.release.append(option)

    handled: set[str] = set()
    for spec in config.options if config is not None else ():
        name = option_name(parent_name, spec.suffix)
        handled.add(name)
        existing = by_name.get(name)
        create_at = created + timedelta(seconds=spec.create_delay_seconds)
        discard_at = (
            create_at + timedelta(seconds=spec.delete_delay_seconds)
            if spec.delete_delay_seconds is not None
            else None
        )

        reason: str | None = None
        cause = CAUSE_PARENT
        if finished:
            reason = "The parent workload is finished"
        elif inactive:
            reason = "The parent workload is inactive"
        elif holder is not None and existing is not holder:
            holder_rank = option_rank(holder)
            if not (holder_rank is not None and spec.rank < holder_rank and spec.migration_target):
                reason, cause = (
                    (_policy_reason(config, holder) if config is not None else "removed"),
                    CAUSE_POLICY,
                )
        if reason is None and existing is not holder and discard_at is not None and now >= discard_at:
            reason = (
                f"deleteDelaySeconds ({int(spec.delete_delay_seconds or 0)}) elapsed: no more migration to it"
            )
            cause = CAUSE_WINDOW

        if existing is not None and existing is holder and not finished:
            patch = annotations_patch(existing, spec)
            if patch is not None:
                plan.annotate.append((existing, patch))
            _keep_holder(plan, existing, name, spec.allowed_flavors, inactive)
            continue
        if reason is not None:
            if existing is not None and not wv.meta(existing).get("deletionTimestamp"):
                plan.delete.append(Removal(existing, reason, cause))
            plan.options_status.append(_entry(name, spec.allowed_flavors, c.OPTION_REMOVED, reason))
            continue
        if now < create_at:
            plan.wake_in((create_at - now).total_seconds())
            plan.options_status.append(
                _entry(
                    name,
                    spec.allowed_flavors,
                    c.OPTION_PENDING,
                    f"To be created at {format_time(create_at)} (createDelaySeconds "
                    f"{int(spec.create_delay_seconds)})",
                )
            )
            continue
        if discard_at is not None:
            plan.wake_in((discard_at - now).total_seconds())
        if existing is None:
            plan.create.append((name, spec))
            plan.options_status.append(_entry(name, spec.allowed_flavors, c.OPTION_PENDING, "Created"))
            continue
        if not matches_spec(existing, parent, spec):
            plan.delete.append(
                Removal(
                    existing,
                    "The option no longer matches its ClusterQueue or parent; replacing it",
                    CAUSE_CONFIG,
                )
            )
            plan.options_status.append(
                _entry(
                    name, spec.allowed_flavors, c.OPTION_PENDING, "Being replaced after a ClusterQueue change"
                )
            )
            continue
        patch = annotations_patch(existing, spec)
        if patch is not None:
            plan.annotate.append((existing, patch))
        if not wv.has_reservation(existing):
            current = wv.status(existing).get("admissionChecks")
            states = sync_check_states(current if isinstance(current, list) else None, spec.checks, now)
            if states is not None:
                plan.init_checks.append((existing, states))
        plan.options_status.append(_entry(name, spec.allowed_flavors, *observed_state(existing)))

    # Options the ClusterQueue no longer defines (or the queue lost concurrentAdmission).
    for name in sorted(set(by_name) - handled):
        option = by_name[name]
        if option is holder and not finished:
            _keep_holder(plan, option, name, allowed_flavors(option), inactive)
            continue
        reason, cause = "The ClusterQueue no longer defines this option", CAUSE_CONFIG
        if finished:
            reason, cause = "The parent workload is finished", CAUSE_PARENT
        if not wv.meta(option).get("deletionTimestamp"):
            plan.delete.append(Removal(option, reason, cause))
        plan.options_status.append(_entry(name, allowed_flavors(option), c.OPTION_REMOVED, reason))
    return plan
