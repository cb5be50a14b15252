"""What one parent's options must be right now, and what the parent shows.

:func:`plan_parent` is a pure function of the parent, its ClusterQueue's configuration, the
option workloads that exist and the time. It is level-based: it does not remember what it did,
it recomputes the desired set of options every time, so a missed event or a restart changes
nothing (the only memory is in the API: which options *it* deactivated, in the
``kueue.x-k8s.io/option-removed`` annotation).

Options are ordinary workloads on Kueue's two-phase path: each reserves quota, then the checks
of its assigned flavors run. The state machine (``docs/design/concurrent-admission.md``):

* The **winner** is the option that became ``Admitted`` first (it holds quota and
  ``Admitted=True``; ties go to the more preferred). The Job runs on it and the parent mirrors
  its admission (``QuotaReserved``, ``Admitted``, ``status.admission``). It stays the winner
  while it is evicted and still holds quota (its pods are going away).
* Without a winner every configured option is wanted, active, from ``parent creation +
  createDelaySeconds`` until ``that + deleteDelaySeconds``: several may hold reservations and
  race their checks.
* With a winner, only options that are *more preferred* than it and that the ``onSuccess``
  policy lets take over (``OptionSpec.migration_target``) stay active, and those must not hold
  quota while the winner does; every other option is **deactivated** ("Removed"), and an
  evicted loser's reservation is released at once (it never had pods).
* A deactivated option comes back (reactivated) when the policy wants it again, e.g. after the
  winner lost its quota. An option deactivated by someone else — a ``Rejected`` check — stays
  off; when every option is off that way the parent itself is deactivated with a message that
  names each rejection.
* An inactive parent deactivates all its options (the winner too: its eviction stops the Job
  the normal way); reactivating the parent brings them all back.
* A finished or deleted parent deletes its options. An option whose flavors or podSets no
  longer match (the ClusterQueue or the parent changed) is deleted and created again, and one the
  queue no longer defines is deleted, unless it is the winner. Deletes are guarded by the
  option's uid *and* resourceVersion, so a stale plan never deletes an option that changed since.
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
    matches_spec,
    option_rank,
    sync_patch,
)
from controller.workload import admissionchecks
from controller.workload import view as wv
from pykueue.api import constants as c
from pykueue.api.objects import mapping_or_empty
from pykueue.api.timestamps import format_time, parse_time

Obj = Mapping[str, Any]


CAUSE_POLICY = "policy"
CAUSE_WINDOW = "window"
CAUSE_CONFIG = "config"
CAUSE_PARENT = "parent"
CAUSE_RACE = "race"


@dataclass(frozen=True, slots=True)
class Removal:
    option: Obj
    reason: str
    cause: str = CAUSE_POLICY  # for metrics: policy | window | config | parent | race


@dataclass(slots=True)
class ParentPlan:
    create: list[tuple[str, OptionSpec]] = field(default_factory=list)  # (name, spec)
    delete: list[Removal] = field(default_factory=list)
    # (option, patch): engine annotations and the parent's priority, one guarded write
    annotate: list[tuple[Obj, dict[str, Any]]] = field(default_factory=list)
    deactivate: list[Removal] = field(default_factory=list)  # spec.active=false + removed annotation
    reactivate: list[Obj] = field(default_factory=list)  # spec.active=true, annotation dropped
    release: list[Obj] = field(default_factory=list)  # evicted options without pods: clear reservation
    options_status: list[dict[str, Any]] = field(default_factory=list)
    # The parent mirrors its winner: the winner (or None) whose admission the parent shows.
    winner: Obj | None = None
    # Deactivate the parent with this message (every option was rejected, or the parent's
    # maximumExecutionTimeSeconds ran out), and the reason of the Event saying so.
    deactivate_parent: str | None = None
    deactivate_reason: str = c.EVENT_OPTIONS_REJECTED
    # status.accumulatedPastExexcutionTimeSeconds of the parent: the sum over its options.
    accumulated_seconds: int = 0
    requeue_after: float | None = None

    def wake_in(self, seconds: float) -> None:
        seconds = max(seconds, 0.0)
        if self.requeue_after is None or seconds < self.requeue_after:
            self.requeue_after = seconds


def _message(cond: Mapping[str, Any] | None) -> str:
    return str((cond or {}).get("message") or "")


def removed_by_us(option: Obj) -> str | None:
    """The reason this controller recorded when it deactivated ``option``, if it did."""
    annotations = mapping_or_empty(wv.meta(option).get("annotations"))
    value = annotations.get(c.OPTION_REMOVED_ANNOTATION)
    return str(value) if value is not None else None


def rejection(option: Obj) -> str | None:
    """Why an option deactivated by someone else (a Rejected check, a user) is off, or None.
    An option still active whose check was rejected counts as rejected already, from the moment
    the check's state says so (the workload controller then sets ``DeactivationTarget=True`` and
    flips ``spec.active``): claiming it in between would record our reason over the check's."""
    if removed_by_us(option) is not None:
        return None
    if wv.is_active(option):
        if wv.is_true(option, c.COND_DEACTIVATION_TARGET):
            return _message(wv.condition(option, c.COND_DEACTIVATION_TARGET)) or "The option is being deactivated"
        return _rejected_checks(option)
    return (
        _message(wv.condition(option, c.COND_DEACTIVATION_TARGET))
        or _message(wv.condition(option, c.COND_EVICTED))
        or "The option was deactivated"
    )


def _rejected_checks(option: Obj) -> str | None:
    """The workload controller's message-to-be for an option whose check state is ``Rejected``
    (``controller.workload.decisions``, from the same verdict), or None."""
    states = wv.status(option).get("admissionChecks")
    if not isinstance(states, list):
        return None
    names = [str(s.get("name")) for s in states if isinstance(s, Mapping)]
    verdict = admissionchecks.evaluate(states, names)
    if verdict.verdict is not admissionchecks.Verdict.REJECTED:
        return None
    return f"Admission check(s) rejected: {verdict.message}"


def observed_state(option: Obj) -> tuple[str, str]:
    """``(status, message)`` of an existing option for the parent's ``status.options``."""
    if wv.meta(option).get("deletionTimestamp"):
        return c.OPTION_REMOVED, "The option is being deleted"
    if wv.is_finished(option):
        return c.OPTION_REMOVED, "The option finished: " + _message(wv.condition(option, c.COND_FINISHED))
    reserved = wv.has_reservation(option)
    evicted = wv.is_evicted(option)
    if not wv.is_active(option) or rejection(option) is not None:
        why = removed_by_us(option) or rejection(option) or "The option is deactivated"
        if reserved:
            return c.OPTION_EVICTED, f"{why}; its quota is being released"
        return c.OPTION_REMOVED, why
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


def _rank_key(option: Obj) -> int:
    rank = option_rank(option)
    return rank if rank is not None else 1 << 30


def winner_of(options: Sequence[Obj]) -> Obj | None:
    """The option the parent's Job follows: the first to become ``Admitted`` that still holds
    quota (its Admitted transition time, then preference, then name)."""
    admitted = [
        o
        for o in options
        if wv.has_reservation(o) and wv.is_admitted(o) and not wv.is_finished(o)
    ]
    if not admitted:
        return None

    def order(option: Obj) -> tuple[str, int, str]:
        since = str((wv.condition(option, c.COND_ADMITTED) or {}).get("lastTransitionTime") or "")
        return (since, _rank_key(option), wv.name(option))

    return min(admitted, key=order)




def _policy_reason(config: ConcurrentConfig, winner: Obj) -> str:
    name = wv.name(winner)
    if config.on_success == c.ON_SUCCESS_REMOVE_OTHER:
        return f"RemoveOther: option {name} is admitted"
    if config.on_success == c.ON_SUCCESS_REMOVE_BELOW_TARGET:
        return (
            f"RemoveBelowTarget: option {name} is admitted and this option is not more preferred "
            f"or is below the target flavor {config.target_flavor}"
        )
    return f"RemoveLower: option {name} is admitted and this option is not more preferred"


def _turn_off(plan: ParentPlan, option: Obj, reason: str, cause: str) -> None:
    """Deactivate ``option``, recording our reason. An option that is already off stays as it
    is, except when the parent itself goes inactive: then an option a check rejected is claimed
    too (our reason recorded), so that reactivating the parent gives every option a new chance."""
    if wv.meta(option).get("deletionTimestamp"):
        return
    if wv.is_active(option):
        plan.deactivate.append(Removal(option, reason, cause))
    elif cause == CAUSE_PARENT and removed_by_us(option) is None:
        refused = rejection(option)
        plan.deactivate.append(Removal(option, f"{reason}; before: {refused}" if refused else reason, cause))


def _seconds_admitted(option: Obj, now: datetime) -> int:
    admitted = wv.condition(option, c.COND_ADMITTED) or {}
    since = parse_time(admitted.get("lastTransitionTime")) if admitted.get("status") == "True" else None
    return max(0, int((now - since).total_seconds())) if since is not None else 0


def _maximum_execution_time(
    plan: ParentPlan, parent: Obj, options: Sequence[Obj], winner: Obj | None, now: datetime
) -> None:
    """``maximumExecutionTimeSeconds`` counts per parent, over every option the job ran on (a
    migration does not give the job its time again). Options do not carry the limit; their
    accumulated times add up on the parent, and past the limit the parent is deactivated."""
    plan.accumulated_seconds = sum(wv.accumulated_execution_seconds(o) for o in options)
    limit = wv.maximum_execution_seconds(parent)
    if limit is None or winner is None or wv.is_evicted(winner) or not wv.is_active(parent):
        return
    used = plan.accumulated_seconds + _seconds_admitted(winner, now)
    if used < limit:
        plan.wake_in(limit - used)
        return
    plan.deactivate_parent = f"The workload exceeded its maximum execution time of {limit}s"
    plan.deactivate_reason = c.REASON_MAXIMUM_EXECUTION_TIME_EXCEEDED


def _migrated_from(
    parent_name: str, config: ConcurrentConfig | None, by_name: Mapping[str, Obj], now: datetime, created: datetime
) -> Obj | None:
    """The option a migration evicted, while the job is on its way to a more preferred option:
    it holds no quota any more, and a more preferred migration target is still viable and has not
    been admitted since. Until then that option and the less preferred ones stay off, so the job
    does not come back on the flavor it is leaving before its target has had its chance."""
    if config is None:
        return None
    migrated = []
    for option in by_name.values():
        cond = wv.condition(option, c.COND_EVICTED) or {}
        if (
            cond.get("status") == "True"
            and cond.get("reason") == c.REASON_FLAVOR_MIGRATION
            and not wv.has_reservation(option)
            and not wv.is_finished(option)
        ):
            migrated.append((parse_time(cond.get("lastTransitionTime")) or now, option))
    if not migrated:
        return None
    since, option = max(migrated, key=lambda pair: (pair[0], wv.name(pair[1])))
    rank = option_rank(option)
    for spec in config.options:
        if rank is None or spec.rank >= rank or not spec.migration_target:
            continue
        create_at = created + timedelta(seconds=spec.create_delay_seconds)
        if spec.delete_delay_seconds is not None and now >= create_at + timedelta(seconds=spec.delete_delay_seconds):
            continue
        target = by_name.get(option_name(parent_name, spec.suffix))
        if target is None:
            return option
        if rejection(target) is not None or wv.meta(target).get("deletionTimestamp"):
            continue
        admitted = parse_time((wv.condition(target, c.COND_ADMITTED) or {}).get("lastTransitionTime"))
        if admitted is None or admitted < since:
            return option
    return None


def plan_parent(
    parent: Obj,
    config: ConcurrentConfig | None,
    options: Sequence[Obj],
    now: datetime,
) -> ParentPlan:
    """Decide the options of ``parent`` (see the module docstring). Never raises on bad input."""
    plan = ParentPlan()
    by_name = {wv.name(o): o for o in options}
    winner = winner_of(options)
    plan.winner = winner
    parent_name = wv.name(parent)
    finished = wv.is_finished(parent) or bool(wv.meta(parent).get("deletionTimestamp"))
    inactive = not wv.is_active(parent)
    created = parse_time(wv.meta(parent).get("creationTimestamp")) or now
    winner_rank = option_rank(winner) if winner is not None else None
    leaving = _migrated_from(parent_name, config, by_name, now, created) if winner is None else None
    leaving_rank = option_rank(leaving) if leaving is not None else None

    # Evicted options hold quota for nobody: a loser never had pods, and a standalone parent has
    # no Job whose stop would release it. Only a winner with a Job waits for its pods.
    for option in options:
        evicted_holding = wv.has_reservation(option) and wv.is_evicted(option) and not wv.is_finished(option)
        if evicted_holding and (option is not winner or wv.is_standalone(parent)):
            plan.release.append(option)

    handled: set[str] = set()
    rejected: list[str] = []
    still_possible = False
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

        if finished:
            gone = "The parent workload is finished"
            if existing is not None and not wv.meta(existing).get("deletionTimestamp"):
                plan.delete.append(Removal(existing, gone, CAUSE_PARENT))
            plan.options_status.append(_entry(name, spec.allowed_flavors, c.OPTION_REMOVED, gone))
            continue
        if existing is not None:
            patch = sync_patch(existing, parent, spec)
            if patch is not None:
                plan.annotate.append((existing, patch))
        if existing is not None and existing is winner:
            if inactive:
                _turn_off(plan, existing, "The parent workload is inactive", CAUSE_PARENT)
            plan.options_status.append(_entry(name, spec.allowed_flavors, *observed_state(existing)))
            continue

        reason: str | None = None
        cause = CAUSE_PARENT
        if inactive:
            reason = "The parent workload is inactive"
        elif winner is not None:
            if not (winner_rank is not None and spec.rank < winner_rank and spec.migration_target):
                reason = _policy_reason(config, winner) if config is not None else "removed"
                cause = CAUSE_POLICY
            elif existing is not None and wv.has_reservation(existing) and rejection(existing) is None:
                # Kept to migrate later, but quota is never held twice once the parent is admitted.
                reason = (
                    f"Option {wv.name(winner)} was admitted first; this option gives its reservation "
                    "back and keeps queueing to migrate"
                )
                cause = CAUSE_RACE
        elif leaving is not None and leaving_rank is not None and not (
            spec.rank < leaving_rank and spec.migration_target
        ):
            reason = f"Migrating from option {wv.name(leaving)} to a more preferred option"
            cause = CAUSE_POLICY
        if reason is None and discard_at is not None and now >= discard_at:
            reason = f"deleteDelaySeconds ({int(spec.delete_delay_seconds or 0)}) elapsed: no more migration to it"
            cause = CAUSE_WINDOW

        if reason is not None:
            if existing is not None:
                _turn_off(plan, existing, reason, cause)
                status, message = observed_state(existing)
                if status not in (c.OPTION_EVICTED,):
                    status, message = c.OPTION_REMOVED, reason
                plan.options_status.append(_entry(name, spec.allowed_flavors, status, message))
            else:
                plan.options_status.append(_entry(name, spec.allowed_flavors, c.OPTION_REMOVED, reason))
            continue
        if now < create_at:
            still_possible = True
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
            still_possible = True
            plan.create.append((name, spec))
            plan.options_status.append(_entry(name, spec.allowed_flavors, c.OPTION_PENDING, "Created"))
            continue
        if not matches_spec(existing, parent, spec):
            still_possible = True
            if not wv.meta(existing).get("deletionTimestamp"):
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
        refused = rejection(existing)
        if refused is not None:
            rejected.append(f"{name}: {refused}")
            plan.options_status.append(_entry(name, spec.allowed_flavors, *observed_state(existing)))
            continue
        still_possible = True
        if not wv.is_active(existing) and not wv.has_reservation(existing):
            plan.reactivate.append(existing)
            plan.options_status.append(
                _entry(name, spec.allowed_flavors, c.OPTION_PENDING, "Reactivated: the policy allows it again")
            )
            continue
        plan.options_status.append(_entry(name, spec.allowed_flavors, *observed_state(existing)))

    # Options the ClusterQueue no longer defines (or the queue lost concurrentAdmission).
    for name in sorted(set(by_name) - handled):
        option = by_name[name]
        if option is winner and not finished:
            if inactive:
                _turn_off(plan, option, "The parent workload is inactive", CAUSE_PARENT)
            plan.options_status.append(_entry(name, allowed_flavors(option), *observed_state(option)))
            continue
        reason, cause = "The ClusterQueue no longer defines this option", CAUSE_CONFIG
        if finished:
            reason, cause = "The parent workload is finished", CAUSE_PARENT
        if not wv.meta(option).get("deletionTimestamp"):
            plan.delete.append(Removal(option, reason, cause))
        plan.options_status.append(_entry(name, allowed_flavors(option), c.OPTION_REMOVED, reason))

    _maximum_execution_time(plan, parent, options, winner, now)
    if (
        plan.deactivate_parent is None
        and config is not None
        and rejected
        and not still_possible
        and winner is None
        and not finished
        and not inactive
    ):
        plan.deactivate_parent = "Every option was rejected: " + "; ".join(rejected)
    return plan
