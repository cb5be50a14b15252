"""ClusterQueue and LocalQueue status, computed from the workloads the informers hold.

Pure functions: given the queue and the workloads that reference it, produce the status fields
Kueue publishes (counts, per-flavor reservation and usage, the ``Active`` condition). The status
controller diffs the result against the object and writes only what changed.

Counting rules (Kueue): *pending* = active, unfinished workloads without a reservation whose
LocalQueue points at the queue; *reserving* = unfinished workloads holding a reservation in it;
*admitted* = those of the reserving ones that are also ``Admitted``. ``flavorsReservation`` sums
the reserving workloads' ``resourceUsage``, ``flavorsUsage`` only the admitted ones'; ``borrowed``
is the part above the flavor's nominal quota.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.engine.activity import MESSAGE_READY, cluster_queue_problems, inactive_reason
from controller.engine.parse import parse_cluster_queue
from controller.workload import view as wv
from controller.workload.status_plan import ConditionSpec
from pykueue.api import constants as C
from pykueue.api.quantity import QuantityError, format_quantity, parse_quantity

FlavorResource = tuple[str, str]
Usage = dict[FlavorResource, int]

MSG_LQ_READY = "Can submit new workloads to localQueue"


def workload_usage(wl: Mapping[str, Any]) -> Usage:
    """Quota a workload holds, per (flavor, resource), from ``status.admission``. Malformed
    assignments and unparsable quantities contribute nothing (they are logged by the caller)."""
    usage: Usage = {}
    adm = wv.admission(wl)
    for assignment in wv.as_list((adm or {}).get("podSetAssignments")):
        if not isinstance(assignment, Mapping):
            continue
        raw_flavors = assignment.get("flavors")
        flavors: Mapping[str, Any] = raw_flavors if isinstance(raw_flavors, Mapping) else {}
        raw_resources = assignment.get("resourceUsage")
        resources: Mapping[str, Any] = raw_resources if isinstance(raw_resources, Mapping) else {}
        for resource, quantity in resources.items():
            flavor = flavors.get(resource)
            if not isinstance(flavor, str):
                continue
            try:
                amount = parse_quantity(quantity, resource)
            except (QuantityError, TypeError):
                continue
            usage[(flavor, resource)] = usage.get((flavor, resource), 0) + amount
    return usage


def add_usage(total: Usage, more: Usage) -> None:
    for fr, amount in more.items():
        total[fr] = total.get(fr, 0) + amount


def nominal_quotas(cq_spec: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Flavor → resource → nominal quota, in spec order (dicts keep insertion order)."""
    quotas: dict[str, dict[str, int]] = {}
    for group in wv.as_list(cq_spec.get("resourceGroups")):
        if not isinstance(group, Mapping):
            continue
        for flavor in wv.as_list(group.get("flavors")):
            if not isinstance(flavor, Mapping) or not isinstance(flavor.get("name"), str):
                continue
            per_resource = quotas.setdefault(flavor["name"], {})
            for quota in wv.as_list(flavor.get("resources")):
                if not isinstance(quota, Mapping) or not isinstance(quota.get("name"), str):
                    continue
                try:
                    per_resource[quota["name"]] = parse_quantity(quota.get("nominalQuota", 0), quota["name"])
                except (QuantityError, TypeError):
                    per_resource[quota["name"]] = 0
    return quotas


def cluster_queue_flavor_usage(cq_spec: Mapping[str, Any], usage: Usage) -> list[dict[str, Any]]:
    """``[{name, resources: [{name, total, borrowed}]}]`` for every flavor and resource of the
    queue (zeros included, so the status shows the whole quota table)."""
    result = []
    for flavor, resources in nominal_quotas(cq_spec).items():
        entries = []
        for resource, nominal in resources.items():
            total = usage.get((flavor, resource), 0)
            entries.append(
                {
                    "name": resource,
                    "total": format_quantity(total, resource),
                    "borrowed": format_quantity(max(0, total - nominal), resource),
                }
            )
        result.append({"name": flavor, "resources": entries})
    return result


def local_queue_flavor_usage(usage: Usage) -> list[dict[str, Any]]:
    """``[{name, resources: [{name, total}]}]`` for the flavors the queue's workloads use."""
    by_flavor: dict[str, list[dict[str, str]]] = {}
    for (flavor, resource), total in sorted(usage.items()):
        by_flavor.setdefault(flavor, []).append({"name": resource, "total": format_quantity(total, resource)})
    return [{"name": flavor, "resources": resources} for flavor, resources in by_flavor.items()]


@dataclass(frozen=True, slots=True)
class QueueCounts:
    pending: int
    reserving: int
    admitted: int
    reservation: Usage
    usage: Usage


def count_workloads(reserving: Iterable[Mapping[str, Any]], pending: int) -> QueueCounts:
    """Tally the workloads holding a reservation (finished ones are skipped)."""
    reservation: Usage = {}
    admitted_usage: Usage = {}
    n_reserving = n_admitted = 0
    for wl in reserving:
        if wv.is_finished(wl) or not wv.has_reservation(wl):
            continue
        n_reserving += 1
        used = workload_usage(wl)
        add_usage(reservation, used)
        if wv.is_admitted(wl):
            n_admitted += 1
            add_usage(admitted_usage, used)
    return QueueCounts(pending, n_reserving, n_admitted, reservation, admitted_usage)


def is_pending(wl: Mapping[str, Any]) -> bool:
    """Counted as pending: active, unfinished, without a reservation."""
    return wv.is_active(wl) and not wv.is_finished(wl) and not wv.has_reservation(wl)


def cluster_queue_active(
    cq: Mapping[str, Any],
    existing_flavors: Iterable[str],
    check_active: Mapping[str, bool],
    check_controllers: Mapping[str, str] | None = None,
) -> ConditionSpec:
    """The ``Active`` condition with Kueue's reasons; the first reason wins, the message lists all.

    The rule is the engine's (``controller.engine.activity``), so the condition says exactly
    whether the scheduler admits into the queue. ``check_active`` maps each existing
    AdmissionCheck to whether its ``Active`` condition is True (a check the queue uses that is
    absent from it does not exist); ``check_controllers`` maps it to its ``controllerName``.
    A cohort cycle is known only to the engine (it shows in the workloads' pending reasons).
    """
    problems = cluster_queue_problems(
        parse_cluster_queue(cq),
        terminating=bool(wv.meta(cq).get("deletionTimestamp")),
        flavors=set(existing_flavors),
        checks_active=check_active,
        check_controllers=check_controllers or {},
    )
    inactive = inactive_reason(problems)
    if inactive is None:
        return ConditionSpec(C.COND_ACTIVE, "True", C.REASON_READY, MESSAGE_READY)
    return ConditionSpec(C.COND_ACTIVE, "False", inactive[0], inactive[1])


def local_queue_active(lq: Mapping[str, Any], cq: Mapping[str, Any] | None, cq_active: bool) -> ConditionSpec:
    """The LocalQueue ``Active`` condition: stopped, missing or inactive ClusterQueue, or Ready."""
    stop = wv.spec(lq).get("stopPolicy")
    if isinstance(stop, str) and stop and stop != C.STOP_POLICY_NONE:
        return ConditionSpec(C.COND_ACTIVE, "False", C.REASON_CQ_STOPPED, "LocalQueue is stopped")
    if cq is None:
        return ConditionSpec(
            C.COND_ACTIVE,
            "False",
            C.REASON_CLUSTER_QUEUE_DOES_NOT_EXIST,
            "Can't submit new workloads to clusterQueue",
        )
    if not cq_active:
        return ConditionSpec(
            C.COND_ACTIVE,
            "False",
            C.REASON_CLUSTER_QUEUE_IS_INACTIVE,
            "Can't submit new workloads to clusterQueue",
        )
    return ConditionSpec(C.COND_ACTIVE, "True", C.REASON_READY, MSG_LQ_READY)


def cluster_queue_status_fields(cq: Mapping[str, Any], counts: QueueCounts) -> dict[str, Any]:
    spec = wv.spec(cq)
    return {
        "pendingWorkloads": counts.pending,
        "reservingWorkloads": counts.reserving,
        "admittedWorkloads": counts.admitted,
        "flavorsReservation": cluster_queue_flavor_usage(spec, counts.reservation),
        "flavorsUsage": cluster_queue_flavor_usage(spec, counts.usage),
    }


def local_queue_status_fields(counts: QueueCounts) -> dict[str, Any]:
    """v1beta1 spells the admitted usage ``flavorUsage`` (v1beta2 renamed it ``flavorsUsage``)."""
    return {
        "pendingWorkloads": counts.pending,
        "reservingWorkloads": counts.reserving,
        "admittedWorkloads": counts.admitted,
        "flavorsReservation": local_queue_flavor_usage(counts.reservation),
        "flavorUsage": local_queue_flavor_usage(counts.usage),
    }
