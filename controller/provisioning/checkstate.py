"""The check's state on a workload, decided from its ProvisioningRequest (pure; Kueue's
``syncCheckStates`` and retry rules in ``controller.go``).

| the request / the workload                           | the check                                     |
|------------------------------------------------------|-----------------------------------------------|
| config missing or invalid                            | ``Pending``, "the check is not active"        |
| no pod set of interest                               | ``Ready``, no ``podSetUpdates``               |
| ``Failed=True``, attempt ≤ ``backoffLimitCount``     | ``Retry`` + ``requeueAfterSeconds`` (once per attempt) |
| ``Failed=True``, attempt > limit                     | ``Rejected`` (the workload is deactivated)    |
| ``CapacityRevoked=True``, workload active, not finished | ``Rejected``                               |
| ``BookingExpired=True`` before ``Admitted``          | as ``Failed``; ignored once admitted          |
| ``Provisioned=True``                                 | ``Ready`` with ``podSetUpdates``              |
| ``Provisioned=False`` (the autoscaler's ETA)         | ``Pending``, message = the ETA                |
| none of these                                        | ``Pending``                                   |

Retries count in the check's ``retryCount``: the workload controller evicts a workload whose check
is ``Retry``, puts the check back to ``Pending`` with ``retryCount + 1`` and requeues the workload
once ``lastTransitionTime + requeueAfterSeconds`` has passed (``controller/workload/decisions.py``).
So attempt *n* failing is counted when ``n > retryCount``, and the next request, made once quota
is reserved again, is attempt ``retryCount + 1``.

Backoff: ``requeueAfterSeconds = min(base * 2^retryCount, max)`` — 60, 120, 240 s by default —
plus Kueue's random jitter of up to 0.01 % of it, truncated to whole seconds as Kueue's
``UpdateAdmissionCheckRequeueState`` (``pkg/workload/admissionchecks.go``) does: below 10 000 s
the jitter never reaches a second, so the defaults give exactly 60, 120, 240 s.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller.provisioning.config import ProvisioningConfig, RetryStrategy
from controller.provisioning.requests import pod_set_updates
from pykueue.api import constants as C
from pykueue.api.timestamps import format_time

Obj = dict[str, Any]

COND_ACCEPTED = "Accepted"
COND_PROVISIONED = "Provisioned"
COND_FAILED = "Failed"
COND_BOOKING_EXPIRED = "BookingExpired"
COND_CAPACITY_REVOKED = "CapacityRevoked"

MSG_INACTIVE = "the check is not active"
MSG_NOT_NEEDED = "the provisioning request is not needed"


class Outcome(enum.Enum):
    """What the request says, for metrics and logs."""

    INACTIVE = "inactive"
    NOT_NEEDED = "not_needed"
    NO_REQUEST = "no_request"
    PENDING = "pending"
    PROVISIONED = "provisioned"
    RETRY = "retry"
    REJECTED = "rejected"
    CAPACITY_REVOKED = "capacity_revoked"


@dataclass
class CheckDecision:
    """The check state to write (``state`` is the full entry) and what else happened."""

    state: Obj
    outcome: Outcome
    eta_message: str = ""  # a new Provisioned=False message: the caller emits an Event
    missing_details: list[str] = field(default_factory=list)


def condition(obj: Mapping[str, Any] | None, type_: str) -> Mapping[str, Any] | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == type_:
            return cond
    return None


def is_true(obj: Mapping[str, Any] | None, type_: str) -> bool:
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


def message_of(obj: Mapping[str, Any] | None, type_: str) -> str:
    return str((condition(obj, type_) or {}).get("message") or "")


BACKOFF_JITTER = 0.0001  # Kueue's jitter factor for admission check retries


def backoff_seconds(retry: RetryStrategy, retry_count: int, rand: Callable[[], float] = random.random) -> int:
    """Seconds to wait before attempt ``retry_count + 2`` after attempt ``retry_count + 1`` failed:
    the doubled, capped backoff plus ``rand()`` (in [0, 1)) times the jitter, whole seconds."""
    seconds = retry.base_seconds
    for _ in range(max(0, retry_count)):
        seconds *= 2
        if seconds >= retry.max_seconds:
            break
    capped = min(seconds, retry.max_seconds)
    return int(capped + rand() * BACKOFF_JITTER * capped)


def retry_count(state: Mapping[str, Any]) -> int:
    count = state.get("retryCount")
    return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else 0


def failed_for_retry(request: Mapping[str, Any], admitted: bool) -> str | None:
    """The condition type that makes ``request`` retryable (``Failed``, or ``BookingExpired``
    before admission), else ``None``."""
    if is_true(request, COND_FAILED):
        return COND_FAILED
    if is_true(request, COND_BOOKING_EXPIRED) and not admitted:
        return COND_BOOKING_EXPIRED
    return None


def _with(state: Mapping[str, Any], new_state: str, message: str | None, now: datetime) -> Obj:
    entry = dict(state)
    if entry.get("state") != new_state:
        entry["state"] = new_state
        entry["lastTransitionTime"] = format_time(now)
    if message:  # Kueue keeps the old message when the new one is empty
        entry["message"] = message
    return entry


def decide_check(
    state: Mapping[str, Any],
    *,
    config: ProvisioningConfig | None,
    needed: bool,
    wl: Mapping[str, Any],
    request: Mapping[str, Any] | None,
    attempt: int,
    now: datetime,
) -> CheckDecision:
    """The next state of one check; ``request`` is its latest request (attempt ``attempt``)."""
    admitted = is_true(wl, C.COND_ADMITTED)
    if config is None:
        return CheckDecision(_with(state, C.CHECK_PENDING, MSG_INACTIVE, now), Outcome.INACTIVE)
    if not needed:
        entry = _with(state, C.CHECK_READY, None, now)
        if state.get("state") != C.CHECK_READY:
            entry["message"] = MSG_NOT_NEEDED
            entry.pop("podSetUpdates", None)
        return CheckDecision(entry, Outcome.NOT_NEEDED)
    if request is None:
        return CheckDecision(dict(state), Outcome.NO_REQUEST)
    name = str((request.get("metadata") or {}).get("name") or "")
    failure = failed_for_retry(request, admitted)
    if failure is not None:
        if state.get("state") == C.CHECK_REJECTED:
            return CheckDecision(dict(state), Outcome.REJECTED)
        last = message_of(request, failure)
        if attempt > config.retry.backoff_limit:
            return CheckDecision(
                _with(state, C.CHECK_REJECTED, f"ProvisioningRequest {name} failed: {last}", now), Outcome.REJECTED
            )
        if attempt <= retry_count(state):
            # Already counted: the workload was requeued and the next attempt is being made.
            return CheckDecision(dict(state), Outcome.RETRY)
        what = "failure" if failure == COND_FAILED else "booking expired"
        entry = _with(state, C.CHECK_RETRY, f"Retrying after {what}: {last}", now)
        entry["requeueAfterSeconds"] = backoff_seconds(config.retry, retry_count(state))
        return CheckDecision(entry, Outcome.RETRY)
    if is_true(request, COND_CAPACITY_REVOKED):
        if is_true(wl, C.COND_FINISHED) or (wl.get("spec") or {}).get("active") is False:
            return CheckDecision(dict(state), Outcome.CAPACITY_REVOKED)
        return CheckDecision(
            _with(state, C.CHECK_REJECTED, message_of(request, COND_CAPACITY_REVOKED) or f"ProvisioningRequest {name}: capacity revoked", now),
            Outcome.CAPACITY_REVOKED,
        )
    if is_true(request, COND_BOOKING_EXPIRED):
        return CheckDecision(dict(state), Outcome.PROVISIONED)  # admitted already: nothing to do
    if is_true(request, COND_PROVISIONED):
        if state.get("state") == C.CHECK_READY:
            return CheckDecision(dict(state), Outcome.PROVISIONED)
        updates, missing = pod_set_updates(wl, request, config)
        entry = _with(state, C.CHECK_READY, message_of(request, COND_PROVISIONED), now)
        entry["podSetUpdates"] = updates
        return CheckDecision(entry, Outcome.PROVISIONED, missing_details=missing)
    provisioned = condition(request, COND_PROVISIONED)
    if provisioned is not None:
        eta = str(provisioned.get("message") or "")
        entry = _with(state, C.CHECK_PENDING, eta, now)
        new_eta = eta if eta and eta != state.get("message") else ""
        return CheckDecision(entry, Outcome.PENDING, eta_message=new_eta)
    return CheckDecision(_with(state, C.CHECK_PENDING, None, now), Outcome.PENDING)


def next_attempt(
    state: Mapping[str, Any], request: Mapping[str, Any] | None, attempt: int, admitted: bool
) -> int | None:
    """The attempt to create now, or ``None``: only for a ``Pending`` check, when there is no
    request yet or the last one failed and its failure was already counted (the workload came
    back from its Retry eviction)."""
    if state.get("state") != C.CHECK_PENDING:
        return None
    count = retry_count(state)
    if request is None:
        return count + 1
    if failed_for_retry(request, admitted) is not None and attempt <= count:
        return count + 1
    return None
