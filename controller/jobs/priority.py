"""Which priority a job's Workload gets, resolved as Kueue's job framework resolves it.

Order of precedence:

1. the ``kueue.x-k8s.io/priority-class`` label names a WorkloadPriorityClass (a priority for
   queueing and preemption that does not change the pods' own priority);
2. else the pod template's ``priorityClassName`` names a ``scheduling.k8s.io`` PriorityClass;
3. else the cluster's ``globalDefault`` PriorityClass, if there is one;
4. else priority 0 with no class.

A named class that does not exist is an error (:class:`PriorityClassNotFound`): Kueue refuses to
create the Workload rather than queue the job at a priority the user did not ask for. The
lookups are passed in as callables so the rule is testable without a cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykueue.api.constants import PRIORITY_CLASS_LABEL

from . import job as jobs

# Values of Workload.spec.priorityClassSource (v1beta1).
SOURCE_WORKLOAD_PRIORITY_CLASS = "kueue.x-k8s.io/workloadpriorityclass"
SOURCE_POD_PRIORITY_CLASS = "scheduling.k8s.io/priorityclass"

Lookup = Callable[[str], dict[str, Any] | None]


@dataclass(frozen=True, slots=True)
class Priority:
    value: int
    class_name: str = ""
    class_source: str = ""

    def spec_fields(self) -> dict[str, Any]:
        """The Workload ``spec`` fields carrying this priority (v1beta1 spelling)."""
        fields: dict[str, Any] = {"priority": self.value}
        if self.class_name:
            fields["priorityClassName"] = self.class_name
            fields["priorityClassSource"] = self.class_source
        return fields


class PriorityClassNotFound(Exception):
    """The job names a (Workload)PriorityClass that does not exist (yet)."""

    def __init__(self, kind: str, name: str) -> None:
        super().__init__(f"{kind} {name!r} not found")
        self.kind = kind
        self.name = name


def _value(obj: dict[str, Any]) -> int:
    value = obj.get("value")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def resolve_priority(
    job: dict[str, Any],
    *,
    workload_priority_class: Lookup,
    priority_class: Lookup,
    default_priority_class: Callable[[], dict[str, Any] | None],
) -> Priority:
    """The job's priority; raises :class:`PriorityClassNotFound` for a missing named class."""
    wpc_name = jobs.labels(job).get(PRIORITY_CLASS_LABEL)
    if isinstance(wpc_name, str) and wpc_name:
        wpc = workload_priority_class(wpc_name)
        if wpc is None:
            raise PriorityClassNotFound("WorkloadPriorityClass", wpc_name)
        return Priority(_value(wpc), wpc_name, SOURCE_WORKLOAD_PRIORITY_CLASS)

    pod_spec = jobs.pod_template(job).get("spec") or {}
    pc_name = pod_spec.get("priorityClassName") if isinstance(pod_spec, dict) else None
    if isinstance(pc_name, str) and pc_name:
        pc = priority_class(pc_name)
        if pc is None:
            raise PriorityClassNotFound("PriorityClass", pc_name)
        return Priority(_value(pc), pc_name, SOURCE_POD_PRIORITY_CLASS)

    default = default_priority_class()
    if default is not None:
        name = jobs.metadata(default).get("name", "")
        return Priority(_value(default), name, SOURCE_POD_PRIORITY_CLASS if name else "")
    return Priority(0)
