"""What the stored Workload adds to an explanation: admission-check states and a parent's options.

The engine's dry run (``controller.engine.explain``) knows queues and quota, not what the
admission-check controllers wrote. Those verdicts live in the Workload's ``status.admissionChecks``
(``name``, ``state``, ``message``, ``lastTransitionTime``, ``retryCount``, Kueue's
``apis/kueue/v1beta2/workload_types.go`` ``AdmissionCheckState``), and a concurrent-admission
parent's options in its ``status.options`` (docs/design/concurrent-admission.md). The visibility
service reads the stored object on the request's thread and calls these pure functions, so the
answer says *which* check holds the workload and with which message, the way
``controller.workload.decisions`` will act on it:

* a ``Rejected`` check deactivates the workload (Kueue: ``AdmissionCheckRejected``); once it is
  deactivated the checks are reset and its ``Evicted`` condition says why;
* a ``Retry`` check evicts it, releases the quota and requeues it after the check's backoff;
* ``Pending`` checks leave the quota reserved until every check is ``Ready``.

Every field is read defensively: a strange object yields fewer facts, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api import constants as c

from .explain import CheckView, Explanation, OptionView


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _entries(value: Any) -> list[Mapping[str, Any]]:
    return [e for e in value if isinstance(e, Mapping)] if isinstance(value, list) else []


def _condition(workload: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for cond in _entries(_mapping(workload.get("status")).get("conditions")):
        if cond.get("type") == type_ and cond.get("status") == "True":
            return cond
    return None


def check_states(workload: Mapping[str, Any]) -> list[CheckView]:
    """``status.admissionChecks`` as stored, in the stored order; entries without a name are skipped."""
    views = []
    for entry in _entries(_mapping(workload.get("status")).get("admissionChecks")):
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            continue
        retry = entry.get("retryCount")
        views.append(CheckView(name, str(entry.get("state") or ""), str(entry.get("message") or ""),
                               str(entry.get("lastTransitionTime") or ""),
                               retry if isinstance(retry, int) and not isinstance(retry, bool) else None))
    return views


def is_parent(workload: Mapping[str, Any]) -> bool:
    """A concurrent-admission parent (``spec.workloadMode`` or Kueue's parent label)."""
    labels = _mapping(_mapping(workload.get("metadata")).get("labels"))
    mode = _mapping(_mapping(workload.get("spec")).get("workloadMode")).get("type")
    return mode == c.WORKLOAD_MODE_PARENT or labels.get(c.CONCURRENT_ADMISSION_PARENT_LABEL) == "true"


def option_names(workload: Mapping[str, Any]) -> list[str]:
    """The option Workloads named in a parent's ``status.options``."""
    names = (e.get("name") for e in _entries(_mapping(workload.get("status")).get("options")))
    return [n for n in names if isinstance(n, str) and n]


def _describe(views: list[CheckView]) -> str:
    return ", ".join(f"{v.name} is {v.state or 'unset'}" + (f" ({v.message})" if v.message else "") for v in views)


def with_stored_status(
    result: Explanation,
    workload: Mapping[str, Any],
    options: Mapping[str, Explanation] | None = None,
) -> Explanation:
    """Fill ``check_states`` (and, for a parent, ``options``) from the stored Workload and let a
    check's verdict lead the suggestion when it is what holds the workload. ``options`` are the
    engine's explanations of the parent's options, by option name."""
    result.check_states = check_states(workload)
    if is_parent(workload):
        _with_options(result, workload, options or {})
        return result
    if _mapping(workload.get("spec")).get("active") is False:
        # Deactivated: the engine no longer queues it, and its eviction reset the checks to
        # Pending, so the Evicted condition is what still says why (a Rejected check reads
        # "DeactivatedDueToAdmissionCheck: Admission check(s) rejected: ...").
        result.state = "Deactivated"
        evicted = _condition(workload, c.COND_EVICTED)
        why = f" ({evicted.get('reason')}: {evicted.get('message')})" if evicted else ""
        result.suggestion = (f"it is deactivated{why}; remove the cause, then set spec.active to true "
                             "to queue it again")
        return result
    rejected = [v for v in result.check_states if v.state == c.CHECK_REJECTED]
    retry = [v for v in result.check_states if v.state == c.CHECK_RETRY]
    waiting = [v for v in result.check_states if v.state != c.CHECK_READY]
    if rejected:
        result.suggestion = (f"admission check {_describe(rejected)}: the workload is deactivated and will not be "
                             "admitted; remove the cause, then set spec.active to true to queue it again")
    elif retry:
        result.suggestion = (f"admission check {_describe(retry)}: the workload is evicted, its quota released, "
                             "and it is queued again once the check is reset to Pending after its backoff")
    elif result.state == "HoldsQuota" and not result.admitted and waiting:
        result.suggestion = (f"it holds quota in ClusterQueue {result.cluster_queue} and waits for admission "
                             f"check(s): {_describe(waiting)}")
    return result


def _with_options(result: Explanation, workload: Mapping[str, Any], options: Mapping[str, Explanation]) -> None:
    result.state = "Parent"
    for entry in _entries(_mapping(workload.get("status")).get("options")):
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            continue
        flavors = [f for f in entry.get("resourceFlavors") or [] if isinstance(f, str)]
        own = options.get(name)
        result.options.append(OptionView(
            name, flavors, str(entry.get("status") or ""), str(entry.get("message") or ""),
            state=own.state if own is not None else "",
            position=own.position if own is not None else None,
            outcome=own.outcome if own is not None else "",
        ))
    if not result.options:
        result.suggestion = ("a concurrent-admission parent is scheduled through its options, and none is listed "
                         "in status.options yet")
        return
    admitted = [o for o in result.options if o.status == c.OPTION_ADMITTED]
    if admitted:
        result.suggestion = f"it is admitted through option {admitted[0].name}; nothing to change"
        return
    result.suggestion = "a concurrent-admission parent is scheduled through its options: " + "; ".join(
        f"{o.name} ({', '.join(o.flavors)}) is {o.status}"
        + (f" at position {o.position}" if o.position is not None else "")
        + (f", dry run {o.outcome}" if o.outcome else "")
        for o in result.options
    ) + "; explain an option by its name for its quota"
