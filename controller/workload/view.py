"""Read-only questions about a Workload dict, tolerant of malformed objects.

The controllers see objects exactly as the API serves them, including ones written by hand with
missing or wrongly typed fields; every accessor here returns a safe default instead of raising so
a strange object can never crash a reconcile loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api.constants import (
    COND_ADMITTED,
    COND_EVICTED,
    COND_FINISHED,
    COND_QUOTA_RESERVED,
    WORKLOAD_MODE_DEFAULT,
)
from pykueue.api.objects import list_or_empty, mapping_or_empty, object_key

Obj = Mapping[str, Any]

# v1beta1 spells Kueue's field with its historical typo (v1beta2 fixed it).
ACCUMULATED_EXECUTION_FIELD = "accumulatedPastExexcutionTimeSeconds"


# The callers' spelling of pykueue.api.objects.list_or_empty.
as_list = list_or_empty


def meta(obj: Obj) -> Mapping[str, Any]:
    return mapping_or_empty(obj.get("metadata"))


def spec(obj: Obj) -> Mapping[str, Any]:
    return mapping_or_empty(obj.get("spec"))


def status(obj: Obj) -> Mapping[str, Any]:
    return mapping_or_empty(obj.get("status"))


def name(obj: Obj) -> str:
    return str(meta(obj).get("name") or "")


def namespace(obj: Obj) -> str:
    return str(meta(obj).get("namespace") or "")


def resource_version(obj: Obj) -> str:
    """``metadata.resourceVersion``, or "" when absent: compared for equality only, never ordered."""
    return str(meta(obj).get("resourceVersion") or "")


def key(obj: Obj) -> str:
    """``namespace/name`` (or ``name`` for cluster-scoped objects): the work-queue key."""
    return object_key(obj)


def generation(obj: Obj) -> int:
    value = meta(obj).get("generation")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def conditions(obj: Obj) -> list[Mapping[str, Any]]:
    return [c for c in as_list(status(obj).get("conditions")) if isinstance(c, Mapping)]


def condition(obj: Obj, type_: str) -> Mapping[str, Any] | None:
    for cond in conditions(obj):
        if cond.get("type") == type_:
            return cond
    return None


def is_true(obj: Obj, type_: str) -> bool:
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


def is_false(obj: Obj, type_: str) -> bool:
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "False"


def admission(obj: Obj) -> Mapping[str, Any] | None:
    value = status(obj).get("admission")
    return value if isinstance(value, Mapping) else None


def has_reservation(obj: Obj) -> bool:
    """Quota is held: ``QuotaReserved=True`` with an admission (both are written together)."""
    return is_true(obj, COND_QUOTA_RESERVED) and admission(obj) is not None


def admitted_cluster_queue(obj: Obj) -> str:
    adm = admission(obj)
    return str(adm.get("clusterQueue") or "") if adm else ""


def is_admitted(obj: Obj) -> bool:
    return is_true(obj, COND_ADMITTED)


def is_finished(obj: Obj) -> bool:
    return is_true(obj, COND_FINISHED)


def is_evicted(obj: Obj) -> bool:
    return is_true(obj, COND_EVICTED)


def is_active(obj: Obj) -> bool:
    """``spec.active`` defaults to true; only an explicit ``false`` deactivates."""
    return spec(obj).get("active") is not False


def workload_mode(obj: Obj) -> str:
    """``spec.workloadMode.type``: Default, Parent (concurrent admission) or ResourceFlavorOption;
    Default when absent or malformed."""
    mode = mapping_or_empty(spec(obj).get("workloadMode")).get("type")
    return mode if isinstance(mode, str) and mode else WORKLOAD_MODE_DEFAULT


def queue_name(obj: Obj) -> str:
    value = spec(obj).get("queueName")
    return value if isinstance(value, str) else ""


def controller_owner(obj: Obj) -> Mapping[str, Any] | None:
    """The ownerReference with ``controller: true`` (a Job for job-owned workloads)."""
    for ref in as_list(meta(obj).get("ownerReferences")):
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def is_standalone(obj: Obj) -> bool:
    """No controller owner: nobody but the core controller clears its reservation after eviction."""
    return controller_owner(obj) is None


def requeue_state(obj: Obj) -> Mapping[str, Any]:
    return mapping_or_empty(status(obj).get("requeueState"))


def requeue_count(obj: Obj) -> int:
    value = requeue_state(obj).get("count")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def priority(obj: Obj) -> int:
    value = spec(obj).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def priority_class_name(obj: Obj) -> str:
    value = spec(obj).get("priorityClassName")
    return value if isinstance(value, str) else ""


def maximum_execution_seconds(obj: Obj) -> int | None:
    value = spec(obj).get("maximumExecutionTimeSeconds")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def accumulated_execution_seconds(obj: Obj) -> int:
    value = status(obj).get(ACCUMULATED_EXECUTION_FIELD)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
