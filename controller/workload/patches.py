"""Turn decisions into merge patches for the status subresource, and only when something changes.

Every patch carries ``metadata.resourceVersion``: the apiserver then rejects it with 409 Conflict
if the object changed since we read it, and the caller re-reads and re-decides. That is how a
full ``status.conditions`` list (merge patches replace lists wholesale) can be written without
ever erasing a condition another controller (e.g. the job integration's ``PodsReady``) set in the
meantime.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from controller.workload import view as wv
from controller.workload.fallbacks import encode_triggers
from controller.workload.status_plan import UNSET, ConditionSpec, WorkloadPlan
from controller.workload.view import ACCUMULATED_EXECUTION_FIELD
from pykueue.api import constants as C
from pykueue.api.conditions import remove_condition, set_condition
from pykueue.api.timestamps import format_time


def apply_conditions(
    existing: Sequence[Any] | None,
    changes: Sequence[ConditionSpec],
    remove: Sequence[str],
    generation: int,
    now: datetime,
) -> list[dict[str, Any]] | None:
    """The new conditions list, or ``None`` when equal to ``existing``.

    Uses :func:`pykueue.api.conditions.set_condition` (metav1 semantics: ``lastTransitionTime``
    moves only when the status flips); ``observedGeneration`` is the generation the decision was
    made from. ``existing`` is never modified.
    """
    current: list[Any] = [copy.deepcopy(dict(c)) for c in wv.as_list(existing) if isinstance(c, Mapping)]
    changed = False
    for type_ in remove:
        changed = remove_condition(current, type_) or changed
    stamp = format_time(now)
    for change in changes:
        changed = (
            set_condition(
                current,
                change.type,
                change.status,
                change.reason,
                change.message,
                observed_generation=generation,
                now=stamp,
            )
            or changed
        )
    return current if changed else None


def with_resource_version(obj: Mapping[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """A status merge patch guarded by the object's resourceVersion (see module docstring)."""
    patch: dict[str, Any] = {"status": status}
    rv = wv.meta(obj).get("resourceVersion")
    if isinstance(rv, str) and rv:
        patch["metadata"] = {"resourceVersion": rv}
    return patch


def workload_status_patch(wl: Mapping[str, Any], plan: WorkloadPlan, now: datetime) -> dict[str, Any] | None:
    """The status merge patch for ``plan`` on ``wl``, or ``None`` when it changes nothing."""
    status: dict[str, Any] = {}
    conditions = apply_conditions(
        wv.status(wl).get("conditions"), plan.set_conditions, plan.remove_conditions, wv.generation(wl), now
    )
    if conditions is not None:
        status["conditions"] = conditions
    current = wv.status(wl)
    for field, value in (
        ("admission", plan.admission),
        ("admissionChecks", plan.admission_checks),
        ("requeueState", plan.requeue_state),
        (ACCUMULATED_EXECUTION_FIELD, plan.accumulated_execution_seconds),
        ("flavorAssignmentHistory", plan.flavor_assignment_history),
    ):
        if value is UNSET:
            continue
        if current.get(field) != value:
            status[field] = copy.deepcopy(value)
    return with_resource_version(wl, status) if status else None


def queue_status_patch(
    obj: Mapping[str, Any], fields: Mapping[str, Any], active: ConditionSpec, now: datetime
) -> dict[str, Any] | None:
    """Status patch for a ClusterQueue/LocalQueue: only the fields whose value differs."""
    current = wv.status(obj)
    status: dict[str, Any] = {k: copy.deepcopy(v) for k, v in fields.items() if current.get(k) != v}
    conditions = apply_conditions(current.get("conditions"), [active], [], wv.generation(obj), now)
    if conditions is not None:
        status["conditions"] = conditions
    return with_resource_version(obj, status) if status else None


def triggers_annotation_patch(wl: Mapping[str, Any], record: Mapping[str, str]) -> dict[str, Any]:
    """The metadata merge patch writing the fallback trigger record (``None`` removes the
    annotation when the record is empty), guarded by ``wl``'s resourceVersion."""
    meta: dict[str, Any] = {
        "annotations": {C.FLAVOR_FALLBACK_TRIGGERS_ANNOTATION: encode_triggers(record) if record else None}
    }
    rv = wv.meta(wl).get("resourceVersion")
    if isinstance(rv, str) and rv:
        meta["resourceVersion"] = rv
    return {"metadata": meta}
