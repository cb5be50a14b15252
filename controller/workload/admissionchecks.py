"""Admission-check states on a Workload: which checks apply, their initial states, the verdict.

Two-phase admission (Kueue's ``pkg/controller/core/workload_controller.go``, KEP-993): once quota is reserved, every check the ClusterQueue requires
for the assigned flavors gets a ``Pending`` entry in ``status.admissionChecks``; the check's own
controller moves it to ``Ready``, ``Retry`` or ``Rejected``; this module turns those states into
the workload controller's next step. Everything here is pure (lists of dicts in, new lists out) so
the transitions are unit tested without a cluster.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from controller.workload.view import as_list
from pykueue.api.constants import CHECK_PENDING, CHECK_READY, CHECK_REJECTED, CHECK_RETRY
from pykueue.api.timestamps import format_time, parse_time

CheckState = dict[str, Any]

RESET_MESSAGE_PREFIX = "Reset to Pending after eviction. Previously: "


def assigned_flavors(admission: Mapping[str, Any] | None) -> set[str]:
    """Every flavor named in ``status.admission.podSetAssignments[].flavors``."""
    flavors: set[str] = set()
    if not isinstance(admission, Mapping):
        return flavors
    for assignment in as_list(admission.get("podSetAssignments")):
        if isinstance(assignment, Mapping) and isinstance(assignment.get("flavors"), Mapping):
            flavors.update(str(f) for f in assignment["flavors"].values())
    return flavors


def cluster_queue_checks(cq_spec: Mapping[str, Any]) -> dict[str, list[str]]:
    """Check name → flavors it is restricted to (empty list: all flavors).

    v1beta1 has both the plain ``spec.admissionChecks`` list and ``admissionChecksStrategy``;
    a check named in both is restricted only by its strategy rule.
    """
    checks: dict[str, list[str]] = {}
    for name in as_list(cq_spec.get("admissionChecks")):
        if isinstance(name, str) and name:
            checks[name] = []
    strategy = cq_spec.get("admissionChecksStrategy") or {}
    for rule in as_list(strategy.get("admissionChecks") if isinstance(strategy, Mapping) else None):
        if isinstance(rule, Mapping) and isinstance(rule.get("name"), str) and rule["name"]:
            checks[rule["name"]] = [str(f) for f in as_list(rule.get("onFlavors"))]
    return checks


def required_checks(cq_spec: Mapping[str, Any], admission: Mapping[str, Any] | None) -> list[str]:
    """Names of the checks this reservation needs, sorted: unrestricted ones and those whose
    ``onFlavors`` include one of the assigned flavors."""
    flavors = assigned_flavors(admission)
    return sorted(
        name
        for name, on_flavors in cluster_queue_checks(cq_spec).items()
        if not on_flavors or flavors.intersection(on_flavors)
    )


def sync_check_states(
    existing: Sequence[Any] | None, required: Iterable[str], now: datetime
) -> list[CheckState] | None:
    """The ``status.admissionChecks`` list the workload should carry, or ``None`` if unchanged.

    Missing checks are added as ``Pending``; checks no longer required are dropped; existing
    entries keep their state (the check controller owns it). Malformed entries are dropped.
    """
    current = {
        s["name"]: s for s in as_list(existing) if isinstance(s, Mapping) and isinstance(s.get("name"), str)
    }
    wanted = list(required)
    result: list[CheckState] = []
    for name in wanted:
        if name in current:
            result.append(dict(current[name]))
        else:
            result.append(
                {"name": name, "state": CHECK_PENDING, "lastTransitionTime": format_time(now), "message": ""}
            )
    before = [dict(s) for s in as_list(existing) if isinstance(s, Mapping)]
    return None if before == result else result


class Verdict(enum.Enum):
    """What the check states ask for, most severe first."""

    REJECTED = "Rejected"
    RETRY = "Retry"
    PENDING = "Pending"
    READY = "Ready"


@dataclass(frozen=True, slots=True)
class CheckVerdict:
    verdict: Verdict
    names: tuple[str, ...]
    message: str


def evaluate(states: Sequence[Mapping[str, Any]] | None, required: Iterable[str]) -> CheckVerdict:
    """Combine the states of the required checks: any Rejected wins, then any Retry, then any
    Pending (including a required check with no entry yet), else Ready."""
    by_name = {s.get("name"): s for s in as_list(states) if isinstance(s, Mapping)}
    buckets: dict[Verdict, list[str]] = {v: [] for v in Verdict}
    messages: dict[str, str] = {}
    for name in required:
        state = by_name.get(name)
        value = state.get("state") if state else CHECK_PENDING
        messages[name] = str((state or {}).get("message") or "")
        if value == CHECK_REJECTED:
            buckets[Verdict.REJECTED].append(name)
        elif value == CHECK_RETRY:
            buckets[Verdict.RETRY].append(name)
        elif value == CHECK_READY:
            buckets[Verdict.READY].append(name)
        else:
            buckets[Verdict.PENDING].append(name)
    for verdict in (Verdict.REJECTED, Verdict.RETRY, Verdict.PENDING):
        if buckets[verdict]:
            names = tuple(buckets[verdict])
            detail = "; ".join(f"{n}: {messages[n]}" if messages[n] else n for n in names)
            return CheckVerdict(verdict, names, detail)
    return CheckVerdict(Verdict.READY, tuple(buckets[Verdict.READY]), "")


def retry_not_before(states: Sequence[Mapping[str, Any]] | None) -> datetime | None:
    """Earliest time a workload evicted by ``Retry`` checks may come back: the latest
    ``lastTransitionTime + requeueAfterSeconds`` over its Retry checks (None: at once)."""
    latest: datetime | None = None
    for state in as_list(states):
        if not isinstance(state, Mapping) or state.get("state") != CHECK_RETRY:
            continue
        after = state.get("requeueAfterSeconds")
        since = parse_time(state.get("lastTransitionTime"))
        if not isinstance(after, int) or isinstance(after, bool) or after <= 0 or since is None:
            continue
        candidate = since + timedelta(seconds=after)
        if latest is None or candidate > latest:
            latest = candidate
    return latest


def reset_after_eviction(states: Sequence[Any] | None, now: datetime) -> list[CheckState] | None:
    """Checks after an eviction: every non-Pending entry goes back to Pending with Kueue's
    message; a check that was in Retry counts one more retry. ``None`` when nothing changes."""
    changed = False
    result: list[CheckState] = []
    for state in as_list(states):
        if not isinstance(state, Mapping):
            changed = True
            continue
        entry = dict(state)
        previous = entry.get("state")
        if previous != CHECK_PENDING:
            changed = True
            if previous == CHECK_RETRY:
                count = entry.get("retryCount")
                entry["retryCount"] = (count if isinstance(count, int) and count >= 0 else 0) + 1
            entry["state"] = CHECK_PENDING
            entry["message"] = f"{RESET_MESSAGE_PREFIX}{previous}"
            entry["lastTransitionTime"] = format_time(now)
            entry.pop("podSetUpdates", None)
        result.append(entry)
    return result if changed else None
