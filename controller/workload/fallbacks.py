"""ResourceFlavor fallbacks: when a flavor's attempt has failed, and what the workload may use next.

A ClusterQueue's ``spec.flavorFungibility.fallbackStrategy`` gives each flavor (or ``*``, every
flavor without a rule of its own) a limit per trigger:

* ``TimeoutForPodsReadyExceeded``: the flavor's *clock* starts when quota is reserved with it and
  stops when the workload's pods are ready (``PodsReady=True``, or a ``PodsReady`` reason saying
  they once were). It covers admission checks, our own work and pod start-up, never time in the
  queue.
* ``AdmissionCheckRejected``: an admission check that applies to the flavor answers ``Rejected``.

The Workload's ``status.flavorAssignmentHistory`` is the only memory, so a restarted controller
decides exactly as before. Its meaning is kept simple enough to read from the object alone:

* the reservation writes an entry ``{resourceFlavor, assignmentTime}`` for every flavor it
  assigns (:func:`history_with_assignment`), in the same patch as ``status.admission``;
* an attempt that ends *without* a fallback (preemption, the ``waitForPodsReady`` timeout, a stop
  policy, the pods having been ready...) drops the entries of the flavors it held when its quota is
  released (:func:`history_after_release`): those flavors did not fail;
* a fallback keeps the failed flavors' entries and drops the other held ones (a workload with
  several resource groups excludes only the flavor that failed).

So a flavor is *excluded* exactly when it has an entry and the workload does not hold it
(:func:`excluded_flavors`); the engine skips those when it assigns flavors again.

The history has no room for the *trigger* that ended a flavor's try, and the Workload schema stays
Kueue's, so the triggers live in pykueue's annotation ``C.FLAVOR_FALLBACK_TRIGGERS_ANNOTATION``
(:func:`encode_triggers` / :func:`decode_triggers`). It is a best-effort companion: the history
decides, the annotation only explains (a flavor without a recorded trigger prints as
``unknown``). Everything here
is pure: the workload controller (:mod:`controller.workload.decisions`) asks, then writes.
The design note is docs/design/fallbacks.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from controller.workload import admissionchecks as checks
from controller.workload import view as wv
from pykueue.api import constants as C
from pykueue.api.durations import parse_duration
from pykueue.api.timestamps import format_time, parse_time

ANY_FLAVOR = "*"
HISTORY_FIELD = "flavorAssignmentHistory"
# Cause of the DeactivationTarget condition; the eviction reason becomes
# DeactivatedDueToFlavorsExhausted (C.REASON_DEACTIVATED_DUE_TO_FLAVORS_EXHAUSTED).
REASON_FLAVORS_EXHAUSTED = "FlavorsExhausted"
# Eviction reasons whose release keeps the history as written by the fallback decision.
_FALLBACK_EVICTIONS = frozenset({C.REASON_FLAVOR_FALLBACK, C.REASON_DEACTIVATED_DUE_TO_FLAVORS_EXHAUSTED})
# PodsReady reasons that say the pods were ready once during this attempt: the clock has stopped.
_STARTED_REASONS = frozenset({C.REASON_STARTED, C.REASON_RECOVERED, C.REASON_WAIT_FOR_RECOVERY})


@dataclass(frozen=True, slots=True)
class FallbackStrategy:
    """A ClusterQueue's fallback strategy, parsed tolerantly (the webhook validated it)."""

    failure_policy: str
    timeouts: Mapping[str, float]  # flavor (or "*") -> seconds
    on_rejection: frozenset[str]  # flavors (or "*") with an AdmissionCheckRejected rule

    def timeout_for(self, flavor: str) -> float | None:
        """The flavor's own timeout, else the ``*`` rule's, else none."""
        if flavor in self.timeouts:
            return self.timeouts[flavor]
        return self.timeouts.get(ANY_FLAVOR)

    def falls_back_on_rejection(self, flavor: str) -> bool:
        return flavor in self.on_rejection or ANY_FLAVOR in self.on_rejection


@dataclass(frozen=True, slots=True)
class Failure:
    """The flavors whose attempt just failed, the trigger, and a sentence for the user."""

    flavors: tuple[str, ...]
    trigger: str
    detail: str


def _rule_timeout(rule: Mapping[str, Any]) -> float | None:
    minutes = rule.get("timeoutMinutes")
    if isinstance(minutes, int) and not isinstance(minutes, bool) and minutes > 0:
        return float(minutes * 60)
    text = rule.get("timeout")
    if isinstance(text, str):
        try:
            seconds = parse_duration(text)
        except ValueError:
            return None
        return float(seconds) if seconds > 0 else None
    return None


def parse_strategy(cq_spec: Mapping[str, Any] | None) -> FallbackStrategy | None:
    """The ClusterQueue's strategy, or ``None`` when it has none. Malformed rules are skipped.

    A queue that also has ``concurrentAdmission`` (the webhook refuses the pair; an object may
    predate that rule) is treated as having none, as the engine does.
    """
    if not isinstance(cq_spec, Mapping) or cq_spec.get("concurrentAdmission") is not None:
        return None
    fungibility = cq_spec.get("flavorFungibility")
    raw = fungibility.get("fallbackStrategy") if isinstance(fungibility, Mapping) else None
    if not isinstance(raw, Mapping):
        return None
    timeouts: dict[str, float] = {}
    on_rejection: set[str] = set()
    for rule in wv.as_list(raw.get("rules")):
        if not isinstance(rule, Mapping) or not isinstance(rule.get("name"), str) or not rule["name"]:
            continue
        trigger = rule.get("trigger", C.TRIGGER_PODS_READY_TIMEOUT)
        if trigger == C.TRIGGER_ADMISSION_CHECK_REJECTED:
            on_rejection.add(rule["name"])
        elif trigger == C.TRIGGER_PODS_READY_TIMEOUT:
            seconds = _rule_timeout(rule)
            if seconds is not None:
                timeouts[rule["name"]] = seconds
    policy = raw.get("failurePolicy")
    return FallbackStrategy(
        failure_policy=policy if policy == C.FALLBACK_RETRY_ALL else C.FALLBACK_DEACTIVATE,
        timeouts=timeouts,
        on_rejection=frozenset(on_rejection),
    )


# --- the history ------------------------------------------------------------------------------


def history(wl: Mapping[str, Any]) -> dict[str, datetime | None]:
    """``status.flavorAssignmentHistory`` as flavor -> last assignment time (malformed entries skipped)."""
    result: dict[str, datetime | None] = {}
    for entry in wv.as_list(wv.status(wl).get(HISTORY_FIELD)):
        if isinstance(entry, Mapping) and isinstance(entry.get("resourceFlavor"), str) and entry["resourceFlavor"]:
            result[entry["resourceFlavor"]] = parse_time(entry.get("assignmentTime"))
    return result


def held_flavors(wl: Mapping[str, Any]) -> set[str]:
    """The flavors of the workload's current reservation (empty when it holds none)."""
    return checks.assigned_flavors(wv.admission(wl))


def excluded_flavors(wl: Mapping[str, Any]) -> frozenset[str]:
    """Flavors a new reservation of ``wl`` must not use: in the history, not currently held."""
    return frozenset(set(history(wl)) - held_flavors(wl))


def _entries(wl: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        dict(e)
        for e in wv.as_list(wv.status(wl).get(HISTORY_FIELD))
        if isinstance(e, Mapping) and isinstance(e.get("resourceFlavor"), str)
    ]


def history_with_assignment(wl: Mapping[str, Any], flavors: Iterable[str], now: datetime) -> list[dict[str, Any]]:
    """The history after a reservation with ``flavors`` at ``now`` (their clocks restart)."""
    assigned = set(flavors)
    stamp = format_time(now)
    kept = [e for e in _entries(wl) if e["resourceFlavor"] not in assigned]
    return kept + [{"resourceFlavor": f, "assignmentTime": stamp} for f in sorted(assigned)]


def history_without(wl: Mapping[str, Any], flavors: Iterable[str]) -> list[dict[str, Any]] | None:
    """The history without ``flavors``' entries, or ``None`` when none of them has one."""
    drop = set(flavors)
    entries = _entries(wl)
    kept = [e for e in entries if e["resourceFlavor"] not in drop]
    return kept if len(kept) != len(entries) else None


def history_after_release(wl: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """What releasing the quota of an evicted ``wl`` does to its history (``None``: nothing).

    After a fallback the history was already written by the decision; any other end of an
    attempt says nothing against the flavors held, so their entries go and they may be used again.
    """
    evicted = wv.condition(wl, C.COND_EVICTED) or {}
    if evicted.get("status") == "True" and evicted.get("reason") in _FALLBACK_EVICTIONS:
        return None
    return history_without(wl, held_flavors(wl))


# --- the trigger record (annotation) ----------------------------------------------------------

UNKNOWN_TRIGGER = "unknown"


def encode_triggers(triggers: Mapping[str, str]) -> str:
    """``flavor=Trigger`` pairs joined by ``,``, sorted by flavor: one text per record, so an
    unchanged record is never rewritten. Flavor names are DNS subdomains and triggers are words,
    so neither can contain ``=`` or ``,``."""
    return ",".join(f"{flavor}={triggers[flavor]}" for flavor in sorted(triggers))


def decode_triggers(value: object) -> dict[str, str]:
    """The record in an annotation value; pairs that are not ``name=Trigger`` are skipped (a
    hand-edited or truncated value must not stop the controller), the last of a repeated flavor wins."""
    if not isinstance(value, str):
        return {}
    result: dict[str, str] = {}
    for pair in value.split(","):
        flavor, sep, trigger = pair.strip().partition("=")
        flavor, trigger = flavor.strip(), trigger.strip()
        if sep and flavor and trigger and "=" not in trigger:
            result[flavor] = trigger
    return result


def triggers(wl: Mapping[str, Any]) -> dict[str, str]:
    """The workload's recorded trigger per flavor (empty when it has none)."""
    annotations = wv.meta(wl).get("annotations")
    if not isinstance(annotations, Mapping):
        return {}
    return decode_triggers(annotations.get(C.FLAVOR_FALLBACK_TRIGGERS_ANNOTATION))


def triggers_after_fallback(
    wl: Mapping[str, Any], failure: Failure, excluded_after: Iterable[str]
) -> dict[str, str]:
    """The record after ``failure``: the failed flavors get its trigger; entries of flavors no
    longer excluded (left over from an earlier round) are dropped."""
    keep = set(excluded_after)
    record = {f: t for f, t in triggers(wl).items() if f in keep}
    record.update(dict.fromkeys(failure.flavors, failure.trigger))
    return record


def triggers_change(wl: Mapping[str, Any], record: Mapping[str, str]) -> dict[str, str] | None:
    """``record`` when writing it changes the annotation, else ``None`` (nothing to write)."""
    annotations = wv.meta(wl).get("annotations")
    current = annotations.get(C.FLAVOR_FALLBACK_TRIGGERS_ANNOTATION) if isinstance(annotations, Mapping) else None
    if not record:
        return None if current is None else {}
    return None if current == encode_triggers(record) else dict(record)


def triggers_still_apply(wl: Mapping[str, Any], record: Mapping[str, str]) -> bool:
    """Whether ``record`` (computed from an older copy of ``wl``) still describes ``wl``: every
    flavor it names is in the history (an empty record: the history is empty). The workload
    controller asks this before writing the record again on a fresh copy after a conflict."""
    recorded = set(history(wl))
    return set(record) <= recorded if record else not recorded


def cluster_queue_flavor_order(cq_spec: Mapping[str, Any]) -> list[str]:
    """The ClusterQueue's flavors in its order (resource groups, then flavors), each once."""
    order: list[str] = []
    for group in wv.as_list(cq_spec.get("resourceGroups")):
        if not isinstance(group, Mapping):
            continue
        for fq in wv.as_list(group.get("flavors")):
            name = fq.get("name") if isinstance(fq, Mapping) else None
            if isinstance(name, str) and name and name not in order:
                order.append(name)
    return order


def tried_text(cq_spec: Mapping[str, Any], excluded: Iterable[str], record: Mapping[str, str]) -> str:
    """``a (Trigger), b (Trigger)``: the excluded flavors in ClusterQueue order (flavors the queue
    no longer lists last, by name), each with its recorded trigger or ``unknown``."""
    out = set(excluded)
    order = [f for f in cluster_queue_flavor_order(cq_spec) if f in out]
    order += sorted(out - set(order))
    return ", ".join(f"{f} ({record.get(f, UNKNOWN_TRIGGER)})" for f in order)


# --- the triggers -----------------------------------------------------------------------------


def clock_running(wl: Mapping[str, Any]) -> bool:
    """True while the current attempt's clock runs: quota reserved, pods never ready yet."""
    if not wv.has_reservation(wl) or wv.is_true(wl, C.COND_PODS_READY):
        return False
    pods_ready = wv.condition(wl, C.COND_PODS_READY) or {}
    return pods_ready.get("reason") not in _STARTED_REASONS


def clock_start(wl: Mapping[str, Any], flavor: str) -> datetime | None:
    """When ``flavor``'s clock started: its history entry, else the reservation time (a
    reservation made before the ClusterQueue had a strategy has no entry)."""
    started = history(wl).get(flavor)
    if started is not None:
        return started
    return parse_time((wv.condition(wl, C.COND_QUOTA_RESERVED) or {}).get("lastTransitionTime"))


def timeout_deadline(wl: Mapping[str, Any], strategy: FallbackStrategy) -> tuple[datetime, list[str]] | None:
    """The earliest fallback deadline of the held flavors and the flavors due then, or ``None``
    when no clock runs (no reservation, pods ready, no timeout rule for the held flavors)."""
    if not clock_running(wl):
        return None
    earliest: datetime | None = None
    due: list[str] = []
    for flavor in sorted(held_flavors(wl)):
        seconds = strategy.timeout_for(flavor)
        started = clock_start(wl, flavor)
        if seconds is None or started is None:
            continue
        deadline = started + timedelta(seconds=seconds)
        if earliest is None or deadline < earliest:
            earliest, due = deadline, [flavor]
        elif deadline == earliest:
            due.append(flavor)
    return (earliest, due) if earliest is not None else None


def timeout_failure(wl: Mapping[str, Any], strategy: FallbackStrategy, now: datetime) -> Failure | None:
    """Every held flavor whose timeout has passed, or ``None``."""
    if not clock_running(wl):
        return None
    failed: list[str] = []
    for flavor in sorted(held_flavors(wl)):
        seconds = strategy.timeout_for(flavor)
        started = clock_start(wl, flavor)
        if seconds is not None and started is not None and now >= started + timedelta(seconds=seconds):
            failed.append(flavor)
    if not failed:
        return None
    limits = ", ".join(f"{f} ({_seconds_text(strategy.timeout_for(f))})" for f in failed)
    return Failure(
        tuple(failed),
        C.TRIGGER_PODS_READY_TIMEOUT,
        f"the pods were not ready within the fallback timeout of flavor {limits} since its assignment",
    )


def rejection_failure(
    wl: Mapping[str, Any], strategy: FallbackStrategy, cq_spec: Mapping[str, Any]
) -> Failure | None:
    """The held flavors with an ``AdmissionCheckRejected`` rule that a Rejected check applies to.

    A check restricted by ``admissionChecksStrategy.onFlavors`` applies to those flavors; an
    unrestricted one to every held flavor. ``None`` when no rejection concerns a flavor with a
    rule (the rejection then deactivates the workload, as without fallbacks).
    """
    held = held_flavors(wl)
    restricted = checks.cluster_queue_checks(cq_spec)
    failed: set[str] = set()
    rejected: list[str] = []
    for state in wv.as_list(wv.status(wl).get("admissionChecks")):
        if not isinstance(state, Mapping) or state.get("state") != C.CHECK_REJECTED:
            continue
        name = str(state.get("name") or "")
        on = set(restricted.get(name) or []) or held
        hit = {f for f in held & on if strategy.falls_back_on_rejection(f)}
        if hit:
            failed |= hit
            rejected.append(name)
    if not failed:
        return None
    return Failure(
        tuple(sorted(failed)),
        C.TRIGGER_ADMISSION_CHECK_REJECTED,
        f"admission check {', '.join(rejected)} rejected flavor {', '.join(sorted(failed))}",
    )


def exhausted(cq_spec: Mapping[str, Any], excluded: Iterable[str], failed: Iterable[str]) -> bool:
    """True when, for a resource group of a failed flavor, every flavor of the group is excluded."""
    out = set(excluded)
    for group in wv.as_list(cq_spec.get("resourceGroups")):
        if not isinstance(group, Mapping):
            continue
        names = {
            str(fq.get("name"))
            for fq in wv.as_list(group.get("flavors"))
            if isinstance(fq, Mapping) and fq.get("name")
        }
        if names & set(failed) and names <= out:
            return True
    return False


def _seconds_text(seconds: float | None) -> str:
    if seconds is None:
        return "none"
    whole = int(seconds)
    return f"{whole // 60}m{whole % 60}s" if whole >= 60 and whole % 60 else (f"{whole // 60}m" if whole >= 60 else f"{whole}s")
