"""Workload priority from its priority class, for workloads created without ``spec.priority``.

Job-owned workloads get their priority from the job integration at creation; a Workload written
by hand may name a class (``spec.priorityClassName`` + ``spec.priorityClassSource``) and leave the
number out, or keep a number after its WorkloadPriorityClass's ``value`` changed. Kueue fills
and refreshes the number from the class so the queue order and preemption use it; so do we.
A PriorityClass's value is immutable in Kubernetes, so only WorkloadPriorityClass values are
followed after creation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from controller.workload import view as wv

SOURCE_WORKLOAD_PRIORITY_CLASS = "kueue.x-k8s.io/workloadpriorityclass"
SOURCE_POD_PRIORITY_CLASS = "scheduling.k8s.io/priorityclass"

Lookup = Callable[[str], Mapping[str, Any] | None]


def _class_value(obj: Mapping[str, Any] | None) -> int | None:
    if obj is None:
        return None
    value = obj.get("value")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def desired_priority(
    wl: Mapping[str, Any], workload_priority_class: Lookup, priority_class: Lookup
) -> int | None:
    """The ``spec.priority`` the workload should carry, or ``None`` to leave it unchanged.

    An unknown class leaves the workload alone (the class may be created later; the engine
    treats a missing priority as 0).
    """
    name = wv.priority_class_name(wl)
    if not name:
        return None
    source = wv.spec(wl).get("priorityClassSource")
    current = wv.spec(wl).get("priority")
    has_priority = isinstance(current, int) and not isinstance(current, bool)
    if source == SOURCE_POD_PRIORITY_CLASS:
        if has_priority:
            return None
        value = _class_value(priority_class(name))
    else:
        value = _class_value(workload_priority_class(name))
    if value is None or (has_priority and current == value):
        return None
    return value
