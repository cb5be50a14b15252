"""metav1.Condition helpers with apimachinery's ``meta.SetStatusCondition`` semantics.

``lastTransitionTime`` moves only when ``status`` changes, so users (and ``kubectl wait``) can
trust it as "since when"; reason, message and observedGeneration follow every update.  Every
setter reports whether anything changed, so callers only write status when it did (Kueue writes
pending reasons only when they change, and so do we).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from pykueue.api.timestamps import now_time

ConditionStatus = str  # "True" | "False" | "Unknown"


class Condition(TypedDict, total=False):
    """A metav1.Condition as it sits in an object's ``status.conditions`` (a plain dict)."""

    type: str
    status: Literal["True", "False", "Unknown"]
    observedGeneration: int
    lastTransitionTime: str
    reason: str
    message: str


def now_rfc3339() -> str:
    """The current time as Kubernetes serialises metav1.Time (second precision, UTC, ``Z``)."""
    return now_time()


def _status_text(status: bool | str) -> str:
    if isinstance(status, bool):
        return "True" if status else "False"
    if status not in ("True", "False", "Unknown"):
        raise ValueError(f"condition status must be True, False or Unknown, not {status!r}")
    return status


def conditions_of(obj: dict[str, Any]) -> list[Condition]:
    """The object's ``status.conditions`` list, created if absent, for in-place updates."""
    status = obj.setdefault("status", {})
    if status.get("conditions") is None:
        status["conditions"] = []
    conditions: list[Condition] = status["conditions"]
    return conditions


def find_condition(conditions: list[Condition] | None, type_: str) -> Condition | None:
    for cond in conditions or []:
        if cond.get("type") == type_:
            return cond
    return None


def is_true(conditions: list[Condition] | None, type_: str) -> bool:
    cond = find_condition(conditions, type_)
    return cond is not None and cond.get("status") == "True"


def set_condition(
    conditions: list[Condition],
    type_: str,
    status: bool | str,
    reason: str,
    message: str = "",
    *,
    observed_generation: int | None = None,
    now: str | None = None,
) -> bool:
    """Add or update the condition ``type_`` in place; return True when anything changed.

    ``now`` (RFC 3339) is used as lastTransitionTime for a new condition or a status change;
    it defaults to the current time.  ``observed_generation`` should be the object's
    ``metadata.generation`` the decision was based on.
    """
    status_text = _status_text(status)
    existing = find_condition(conditions, type_)
    if existing is None:
        cond: Condition = {
            "type": type_,
            "status": status_text,  # type: ignore[typeddict-item]
            "reason": reason,
            "message": message,
            "lastTransitionTime": now or now_rfc3339(),
        }
        if observed_generation is not None:
            cond["observedGeneration"] = observed_generation
        conditions.append(cond)
        return True
    changed = False
    if existing.get("status") != status_text:
        existing["status"] = status_text  # type: ignore[typeddict-item]
        existing["lastTransitionTime"] = now or now_rfc3339()
        changed = True
    for key, value in (("reason", reason), ("message", message)):
        if existing.get(key) != value:
            existing[key] = value  # type: ignore[literal-required]
            changed = True
    if observed_generation is not None and existing.get("observedGeneration") != observed_generation:
        existing["observedGeneration"] = observed_generation
        changed = True
    return changed


def remove_condition(conditions: list[Condition], type_: str) -> bool:
    """Drop the condition ``type_``; return True when it was there."""
    before = len(conditions)
    conditions[:] = [cond for cond in conditions if cond.get("type") != type_]
    return len(conditions) != before


def set_object_condition(
    obj: dict[str, Any],
    type_: str,
    status: bool | str,
    reason: str,
    message: str = "",
    *,
    now: str | None = None,
) -> bool:
    """:func:`set_condition` on an object's status, with observedGeneration from its metadata."""
    return set_condition(
        conditions_of(obj),
        type_,
        status,
        reason,
        message,
        observed_generation=obj.get("metadata", {}).get("generation"),
        now=now,
    )
