"""Convert API objects (plain JSON dicts, exactly as served) into the engine's records.

Runs once per object change, never in the scheduling cycle. Bad input never raises: a field that
cannot be understood becomes an error string naming the field and the rule (the record is then
marked invalid/inactive), so one malformed object cannot take the controller down.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from pykueue.api import constants as c
from pykueue.api.labelselectors import LabelSelector, SelectorRequirement
from pykueue.api.objects import dict_or_empty, list_or_empty, mapping_or_empty
from pykueue.api.quantity import QuantityError, parse_quantity, parse_quantity_exact
from pykueue.api.timestamps import parse_epoch

from .options import option_order_tiebreak, parse_mode
from .records import (
    AdmissionInfo,
    CheckRule,
    ClusterQueueSpec,
    CohortSpec,
    FlavorInfo,
    FlavorQuotas,
    FlavorResource,
    LocalQueueInfo,
    PodSetInfo,
    PreemptionPolicy,
    Quota,
    ResourceGroup,
    Taint,
    Toleration,
    WorkloadInfo,
)

_ADMISSION_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


class FieldProblem(ValueError):
    """A field the engine cannot use; ``str()`` reads like an apiserver field error."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")


def _str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return value


def object_name(obj: Mapping[str, Any]) -> str:
    """``metadata.name`` as a string, or "" when the object is malformed."""
    return _str(dict_or_empty(obj.get("metadata")).get("name"))


def _quantity(value: Any, resource: str, path: str) -> int:
    try:
        return parse_quantity(value, resource=resource)
    except QuantityError as err:
        raise FieldProblem(path, f"Invalid value: {json.dumps(value, default=str)}: {err}") from None


# --- selectors, tolerations, taints ----------------------------------------------------------------


def parse_requirements(raw: Any, path: str) -> tuple[SelectorRequirement, ...]:
    requirements = []
    for i, item in enumerate(list_or_empty(raw)):
        item = dict_or_empty(item)
        operator = _str(item.get("operator"))
        if operator not in {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}:
            raise FieldProblem(f"{path}[{i}].operator", f'Unsupported value: "{operator}"')
        values = tuple(str(v) for v in list_or_empty(item.get("values")))
        requirements.append(SelectorRequirement(_str(item.get("key")), operator, values))
    return tuple(requirements)


def parse_label_selector(raw: Any, path: str) -> LabelSelector | None:
    """``None`` in → ``None`` out (Kueue: a nil namespaceSelector matches no namespace)."""
    if raw is None:
        return None
    raw = dict_or_empty(raw)
    labels = tuple(sorted((str(k), str(v)) for k, v in dict_or_empty(raw.get("matchLabels")).items()))
    return LabelSelector(labels, parse_requirements(raw.get("matchExpressions"), f"{path}.matchExpressions"))


def parse_tolerations(raw: Any) -> tuple[Toleration, ...]:
    result = []
    for item in list_or_empty(raw):
        item = dict_or_empty(item)
        result.append(
            Toleration(
                key=_str(item.get("key")),
                operator=_str(item.get("operator"), "Equal") or "Equal",
                value=_str(item.get("value")),
                effect=_str(item.get("effect")),
            )
        )
    return tuple(result)


# --- ResourceFlavor --------------------------------------------------------------------------------


def parse_resource_flavor(obj: Mapping[str, Any]) -> FlavorInfo:
    spec = dict_or_empty(obj.get("spec"))
    taints = tuple(
        Taint(_str(t.get("key")), _str(t.get("value")), _str(t.get("effect")))
        for t in map(dict_or_empty, list_or_empty(spec.get("nodeTaints")))
        if _str(t.get("effect")) in _ADMISSION_EFFECTS
    )
    return FlavorInfo(
        name=_str(dict_or_empty(obj.get("metadata")).get("name")),
        node_labels={str(k): str(v) for k, v in dict_or_empty(spec.get("nodeLabels")).items()},
        node_taints=taints,
        tolerations=parse_tolerations(spec.get("tolerations")),
    )


# --- resource groups (ClusterQueue and Cohort) -----------------------------------------------------


def parse_resource_groups(raw: Any, path: str) -> tuple[tuple[ResourceGroup, ...], list[str]]:
    groups: list[ResourceGroup] = []
    errors: list[str] = []
    for gi, group in enumerate(list_or_empty(raw)):
        group = dict_or_empty(group)
        gpath = f"{path}[{gi}]"
        covered = tuple(str(r) for r in list_or_empty(group.get("coveredResources")))
        flavors: list[FlavorQuotas] = []
        for fi, flavor in enumerate(list_or_empty(group.get("flavors"))):
            flavor = dict_or_empty(flavor)
            quotas: dict[str, Quota] = {}
            for ri, res in enumerate(list_or_empty(flavor.get("resources"))):
                res = dict_or_empty(res)
                rname = _str(res.get("name"))
                rpath = f"{gpath}.flavors[{fi}].resources[{ri}]"
                try:
                    nominal = _quantity(res.get("nominalQuota", 0), rname, f"{rpath}.nominalQuota")
                    borrowing = res.get("borrowingLimit")
                    lending = res.get("lendingLimit")
                    quotas[rname] = Quota(
                        nominal=nominal,
                        borrowing_limit=None
                        if borrowing is None
                        else _quantity(borrowing, rname, f"{rpath}.borrowingLimit"),
                        lending_limit=None if lending is None else _quantity(lending, rname, f"{rpath}.lendingLimit"),
                    )
                except FieldProblem as err:
                    errors.append(str(err))
            flavors.append(FlavorQuotas(_str(flavor.get("name")), quotas))
        groups.append(ResourceGroup(covered, tuple(flavors)))
    return tuple(groups), errors


def _fungibility_try_next(value: Any, default_try_next: bool) -> bool:
    """v1beta1 accepts ``Borrow``/``Preempt`` (both mean MayStopSearch) besides the v1beta2 names."""
    if value == c.FUNGIBILITY_TRY_NEXT_FLAVOR:
        return True
    if value in (c.FUNGIBILITY_MAY_STOP_SEARCH, c.FUNGIBILITY_BORROW, c.FUNGIBILITY_PREEMPT):
        return False
    return default_try_next


def parse_cluster_queue(obj: Mapping[str, Any]) -> ClusterQueueSpec:
    spec = dict_or_empty(obj.get("spec"))
    name = _str(dict_or_empty(obj.get("metadata")).get("name"))
    groups, errors = parse_resource_groups(spec.get("resourceGroups"), "spec.resourceGroups")
    resource_group: dict[str, int] = {}
    for gi, group in enumerate(groups):
        for resource in group.covered:
            resource_group.setdefault(resource, gi)
    try:
        selector = parse_label_selector(spec.get("namespaceSelector"), "spec.namespaceSelector")
    except FieldProblem as err:
        errors.append(str(err))
        selector = None
    fungibility = dict_or_empty(spec.get("flavorFungibility"))
    preemption = dict_or_empty(spec.get("preemption"))
    borrow = dict_or_empty(preemption.get("borrowWithinCohort"))
    threshold = borrow.get("maxPriorityThreshold")
    checks: list[CheckRule] = [CheckRule(str(n), frozenset()) for n in list_or_empty(spec.get("admissionChecks"))]
    for rule in map(dict_or_empty, list_or_empty(dict_or_empty(spec.get("admissionChecksStrategy")).get("admissionChecks"))):
        checks.append(CheckRule(_str(rule.get("name")), frozenset(str(f) for f in list_or_empty(rule.get("onFlavors")))))
    cohort = spec.get("cohort", spec.get("cohortName"))
    return ClusterQueueSpec(
        name=name,
        cohort=cohort if isinstance(cohort, str) and cohort else None,
        groups=groups,
        resource_group=resource_group,
        strict_fifo=spec.get("queueingStrategy") == c.STRICT_FIFO,
        namespace_selector=selector,
        when_can_borrow_try_next=_fungibility_try_next(fungibility.get("whenCanBorrow"), False),
        when_can_preempt_try_next=_fungibility_try_next(fungibility.get("whenCanPreempt"), True),
        preemption_over_borrowing=fungibility.get("preference") == "PreemptionOverBorrowing",
        preemption=PreemptionPolicy(
            within_cluster_queue=_str(preemption.get("withinClusterQueue"), c.PREEMPT_NEVER),
            reclaim_within_cohort=_str(preemption.get("reclaimWithinCohort"), c.PREEMPT_NEVER),
            borrow_within_cohort=_str(borrow.get("policy"), c.PREEMPT_NEVER),
            max_priority_threshold=_int(threshold, 0) if threshold is not None else None,
        ),
        checks=tuple(checks),
        stop_policy=_str(spec.get("stopPolicy"), c.STOP_POLICY_NONE) or c.STOP_POLICY_NONE,
        errors=tuple(errors),
        concurrent_admission=isinstance(spec.get("concurrentAdmission"), dict),
        # Ignored with concurrentAdmission, which the webhook refuses together with it.
        fallbacks=isinstance(fungibility.get("fallbackStrategy"), dict) and spec.get("concurrentAdmission") is None,
        terminating=bool(dict_or_empty(obj.get("metadata")).get("deletionTimestamp")),
        fair_weight=parse_fair_weight(spec.get("fairSharing")),
        admission_fair_sharing=dict_or_empty(spec.get("admissionScope")).get("admissionMode")
        == c.ADMISSION_MODE_USAGE_BASED,
    )


def parse_fair_weight(fair_sharing: Any) -> float:
    """``fairSharing.weight`` as a float (Kueue's ``parseFairWeight``): 1 when unset; a value the
    webhook would have refused reads as 1 too, so a strange object never stops the engine."""
    weight = dict_or_empty(fair_sharing).get("weight")
    if weight is None:
        return 1.0
    try:
        value = float(parse_quantity_exact(weight))
    except (QuantityError, ValueError, TypeError):
        return 1.0
    return value if value >= 0 else 1.0


def parse_cohort(obj: Mapping[str, Any]) -> CohortSpec:
    spec = dict_or_empty(obj.get("spec"))
    groups, errors = parse_resource_groups(spec.get("resourceGroups"), "spec.resourceGroups")
    parent = spec.get("parentName")
    return CohortSpec(
        name=_str(dict_or_empty(obj.get("metadata")).get("name")),
        parent=parent if isinstance(parent, str) and parent else None,
        groups=groups,
        errors=tuple(errors),
        fair_weight=parse_fair_weight(spec.get("fairSharing")),
    )


def parse_local_queue(obj: Mapping[str, Any]) -> LocalQueueInfo:
    meta = dict_or_empty(obj.get("metadata"))
    spec = dict_or_empty(obj.get("spec"))
    return LocalQueueInfo(
        namespace=_str(meta.get("namespace")),
        name=_str(meta.get("name")),
        cluster_queue=_str(spec.get("clusterQueue")),
        stop_policy=_str(spec.get("stopPolicy"), c.STOP_POLICY_NONE) or c.STOP_POLICY_NONE,
        fair_weight=parse_fair_weight(spec.get("fairSharing")),
    )


def parse_afs_consumed(obj: Mapping[str, Any]) -> dict[str, float]:
    """A LocalQueue's persisted ``status.fairSharing.admissionFairSharingStatus.consumedResources``
    in Kueue's float units (cpu in cores); unparsable entries are skipped, never fatal."""
    status = dict_or_empty(obj.get("status"))
    afs = dict_or_empty(dict_or_empty(status.get("fairSharing")).get("admissionFairSharingStatus"))
    out: dict[str, float] = {}
    for name, value in dict_or_empty(afs.get("consumedResources")).items():
        try:
            out[str(name)] = float(parse_quantity_exact(value))
        except (QuantityError, ValueError, TypeError):
            continue
    return out


def admission_check_controller(obj: Mapping[str, Any]) -> str:
    return _str(dict_or_empty(obj.get("spec")).get("controllerName"))


def admission_check_active(obj: Mapping[str, Any]) -> bool:
    """An AdmissionCheck counts as active only with condition ``Active=True``."""
    for cond in map(dict_or_empty, list_or_empty(dict_or_empty(obj.get("status")).get("conditions"))):
        if cond.get("type") == c.COND_ACTIVE:
            return cond.get("status") == "True"
    return False


# --- Workload ----------------------------------------------------------------------------------------


def _add(target: dict[str, int], source: Mapping[str, int]) -> None:
    for resource, amount in source.items():
        target[resource] = target.get(resource, 0) + amount


def _container_requests(container: Mapping[str, Any], path: str) -> dict[str, int]:
    """Requests of one container; a resource with only a limit is requested at its limit (Kueue)."""
    resources = dict_or_empty(container.get("resources"))
    merged = dict(dict_or_empty(resources.get("limits")))
    merged.update(dict_or_empty(resources.get("requests")))
    return {
        str(name): _quantity(value, str(name), f"{path}.resources.requests[{name}]") for name, value in merged.items()
    }


def pod_requests(pod_spec: Mapping[str, Any], path: str) -> dict[str, int]:
    """Effective requests of one pod: max(sum of containers, each init container) + overhead."""
    total: dict[str, int] = {}
    for i, container in enumerate(map(dict_or_empty, list_or_empty(pod_spec.get("containers")))):
        _add(total, _container_requests(container, f"{path}.containers[{i}]"))
    for i, container in enumerate(map(dict_or_empty, list_or_empty(pod_spec.get("initContainers")))):
        for resource, amount in _container_requests(container, f"{path}.initContainers[{i}]").items():
            total[resource] = max(total.get(resource, 0), amount)
    for name, value in dict_or_empty(pod_spec.get("overhead")).items():
        total[str(name)] = total.get(str(name), 0) + _quantity(value, str(name), f"{path}.overhead[{name}]")
    return total


def _parse_podset(raw: Mapping[str, Any], index: int) -> PodSetInfo:
    path = f"spec.podSets[{index}]"
    count = _int(raw.get("count"), 1)
    if count < 0:
        raise FieldProblem(f"{path}.count", f"Invalid value: {count}: must be greater than or equal to 0")
    pod_spec = dict_or_empty(dict_or_empty(raw.get("template")).get("spec"))
    per_pod = pod_requests(pod_spec, f"{path}.template.spec")
    affinity = dict_or_empty(dict_or_empty(dict_or_empty(pod_spec.get("affinity")).get("nodeAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ))
    terms: tuple[tuple[SelectorRequirement, ...], ...] | None = None
    if affinity:
        terms = tuple(
            parse_requirements(
                dict_or_empty(term).get("matchExpressions"),
                f"{path}.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                f".nodeSelectorTerms[{ti}].matchExpressions",
            )
            for ti, term in enumerate(list_or_empty(affinity.get("nodeSelectorTerms")))
        )
    allowed = raw.get("allowedResourceFlavors")
    return PodSetInfo(
        name=_str(raw.get("name"), c.DEFAULT_PODSET_NAME) or c.DEFAULT_PODSET_NAME,
        count=count,
        requests={resource: amount * count for resource, amount in per_pod.items()},
        node_selector={str(k): str(v) for k, v in dict_or_empty(pod_spec.get("nodeSelector")).items()},
        affinity_terms=terms,
        tolerations=parse_tolerations(pod_spec.get("tolerations")),
        allowed_flavors=frozenset(str(f) for f in allowed) if isinstance(allowed, list) else None,
        min_count=_min_count(raw.get("minCount"), count),
    )


def _without_reclaimed(podset: PodSetInfo, reclaimable: int) -> PodSetInfo:
    """``podset`` less its reclaimable pods; a partial-admission floor above what is left drops."""
    if reclaimable <= 0:
        return podset
    left = podset.scaled(podset.count - reclaimable)
    if left.min_count is not None and left.min_count >= left.count:
        left = dataclasses.replace(left, min_count=None)
    return left


def _min_count(value: Any, count: int) -> int | None:
    """``minCount`` when it allows fewer pods than ``count`` (anything else means all of them)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < count:
        return value
    return None


def _shape_of(podsets: tuple[PodSetInfo, ...]) -> int:
    """Equivalence hash (Kueue's scheduling-equivalence, KEP-9694): same requests and placement
    constraints ⇒ the same flavor-assignment outcome, so one failure parks them all together."""
    return hash(
        tuple(
            (
                ps.name,
                ps.count,
                tuple(sorted(ps.requests.items())),
                tuple(sorted(ps.node_selector.items())),
                ps.affinity_terms,
                ps.tolerations,
                tuple(sorted(ps.allowed_flavors)) if ps.allowed_flavors is not None else None,
                ps.min_count,
            )
            for ps in podsets
        )
    )


def _conditions(status: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Conditions by type (entries that are not objects are skipped: only known types are read)."""
    result: dict[str, dict[str, Any]] = {}
    raw = status.get("conditions")
    if isinstance(raw, list):
        for cond in raw:
            if isinstance(cond, dict):
                result[str(cond.get("type"))] = cond
    return result


def _reclaimable(status: Mapping[str, Any], podsets: tuple[PodSetInfo, ...]) -> tuple[tuple[str, int], ...]:
    """``status.reclaimablePods`` as sorted (podSet, count) pairs of known podSets, each capped at
    its podSet's count (a stale count after a shrink must never make usage negative)."""
    counts = {ps.name: ps.count for ps in podsets}
    found: dict[str, int] = {}
    for entry in map(dict_or_empty, list_or_empty(status.get("reclaimablePods"))):
        name = _str(entry.get("name"))
        count = _int(entry.get("count"), 0)
        if name in counts and count > 0:
            found[name] = min(count, counts[name])
    return tuple(sorted(found.items()))


def _admission_usage(
    admission: Mapping[str, Any],
    podsets: tuple[PodSetInfo, ...],
    reclaimed: tuple[tuple[str, int], ...] = (),
) -> dict[FlavorResource, int]:
    """Usage held by an admitted workload, from ``status.admission`` (flavors + resourceUsage).

    Reclaimable pods shrink it as Kueue does (``totalRequestsFromAdmission``): a podSet whose
    spec count minus its reclaimable pods is below the admitted count holds that many pods'
    share of the recorded usage. A partially admitted podSet (admitted fewer than its spec
    count) keeps its usage until the reclaimable pods eat into the admitted ones."""
    by_name = {ps.name: ps for ps in podsets}
    reclaim = dict(reclaimed) if reclaimed else {}
    usage: dict[FlavorResource, int] = {}
    for ai, assignment in enumerate(map(dict_or_empty, list_or_empty(admission.get("podSetAssignments")))):
        name = _str(assignment.get("name"), c.DEFAULT_PODSET_NAME)
        flavors = dict_or_empty(assignment.get("flavors"))
        resource_usage = dict_or_empty(assignment.get("resourceUsage"))
        podset = by_name.get(name)
        admitted_count = _int(assignment.get("count"), podset.count if podset is not None else 0)
        after_reclaim = podset.count - reclaim.get(name, 0) if podset is not None else admitted_count
        shrink = name in reclaim and 0 <= after_reclaim < admitted_count
        for resource, flavor in flavors.items():
            if resource in resource_usage:
                value = resource_usage[resource]
                try:
                    amount = parse_quantity(value, resource=str(resource))
                except QuantityError:  # the field's path is spelled only when it is needed
                    amount = _quantity(
                        value, str(resource), f"status.admission.podSetAssignments[{ai}].resourceUsage[{resource}]"
                    )
            elif podset is not None:
                amount = podset.count if resource == "pods" else podset.requests.get(str(resource), 0)
            else:
                amount = 0
            if shrink:
                amount = amount // admitted_count * after_reclaim
            key = (str(flavor), str(resource))
            usage[key] = usage.get(key, 0) + amount
    return usage


def _blocked_by_checks(checks: Any) -> bool:
    """Whether an admission check of ``status.admissionChecks`` is in Retry or Rejected."""
    return any(
        chk.get("state") in (c.CHECK_RETRY, c.CHECK_REJECTED) for chk in map(dict_or_empty, list_or_empty(checks))
    )


def _excluded_flavors(status: Mapping[str, Any], admission: Any) -> frozenset[str]:
    """``status.flavorAssignmentHistory`` flavors not held by the current admission: the flavors
    whose fallback attempt failed (controller.workload.fallbacks explains why this is exact)."""
    history = list_or_empty(status.get("flavorAssignmentHistory"))
    if not history:
        return frozenset()
    held: set[str] = set()
    for ps in list_or_empty(dict_or_empty(admission).get("podSetAssignments")):
        held.update(str(f) for f in dict_or_empty(dict_or_empty(ps).get("flavors")).values())
    names = {_str(dict_or_empty(e).get("resourceFlavor")) for e in history}
    return frozenset(names - held - {""})


def _reserved_at(written: float, previous: WorkloadInfo | None) -> float:
    """When the quota was reserved. The condition's time has whole seconds; the engine's own
    record of a reservation in that same second (it assumed it, or saw it before) is the finer
    one, kept so that the preemption grace and the most-recently-reserved victim order do not
    lose up to a second when the reservation's echo arrives."""
    earlier = previous.admission.reserved_at if previous is not None and previous.admission is not None else None
    if earlier is not None and written <= earlier < written + 1.0:
        return earlier
    return written


def parse_workload(
    obj: Mapping[str, Any], previous: WorkloadInfo | None = None, *, pods_ready_requeue_by_creation: bool = False
) -> WorkloadInfo:
    """Build a :class:`WorkloadInfo`; never raises (problems land in ``invalid``).

    ``previous`` is the record of the same object's last version: when the spec is unchanged
    (same UID and ``metadata.generation``; status writes do not bump it) its parsed podSets are
    reused, so the many status-only updates (our own admission writes coming back through the
    informer) cost no request parsing.

    ``pods_ready_requeue_by_creation``: ``waitForPodsReady.requeuingStrategy.timestamp: Creation``
    — a workload evicted by the PodsReady timeout keeps its creation time in the queue order
    instead of going to the back with its eviction time (an admission-check eviction always uses
    the eviction time, as in Kueue).
    """
    # Runs for every Workload update the informer delivers, so the accessors of
    # pykueue.api.objects are spelled out for the top-level parts (the same rule: a dict or {}).
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    status = obj.get("status")
    status = status if isinstance(status, dict) else {}
    conditions = _conditions(status)
    creation = parse_epoch(meta.get("creationTimestamp")) or 0.0
    generation = _int(meta.get("generation"), 0)
    uid = _str(meta.get("uid"))
    spec_problem: str | None = None
    podsets: tuple[PodSetInfo, ...] = ()
    shape = 0
    reclaim_raw = status.get("reclaimablePods")
    reclaim_raw = reclaim_raw if isinstance(reclaim_raw, list) else []
    if (
        previous is not None
        and generation
        and previous.generation == generation
        and previous.uid == uid
        and not previous.reclaimed
        and not reclaim_raw  # reclaimable pods change the podSets below
    ):
        podsets, spec_problem = previous.podsets, previous.spec_problem
        # An option's stored shape is salted with its parent below; salt the plain one again.
        # The same for a shape salted with excluded flavors (below).
        shape = previous.shape if previous.option is None and not previous.excluded_flavors else _shape_of(podsets)
    else:
        try:
            podsets = tuple(_parse_podset(dict_or_empty(raw), i) for i, raw in enumerate(list_or_empty(spec.get("podSets"))))
            if not podsets:
                spec_problem = "spec.podSets: Required value: at least one podSet is needed"
        except FieldProblem as err:
            spec_problem = str(err)
        shape = _shape_of(podsets)
    spec_podsets = podsets
    reclaimed = _reclaimable(status, podsets) if reclaim_raw else ()
    if reclaimed:
        # A pending workload asks only for the pods that still have to run (Kueue's
        # totalRequestsFromPodSets counts each podSet after its reclaimable pods).
        reclaim = dict(reclaimed)
        podsets = tuple(_without_reclaimed(ps, reclaim.get(ps.name, 0)) for ps in podsets)
        shape = _shape_of(podsets)
    invalid = spec_problem

    evicted_cond = conditions.get(c.COND_EVICTED, {})
    queue_ts = creation
    workload_mode = spec.get("workloadMode")
    if workload_mode is not None and mapping_or_empty(workload_mode).get("type") == c.WORKLOAD_MODE_OPTION:
        # Concurrent admission: siblings share their parent's queue timestamp (preference decides).
        annotations_raw = dict_or_empty(meta.get("annotations"))
        queue_ts = parse_epoch(annotations_raw.get(c.OPTION_QUEUE_TIMESTAMP_ANNOTATION)) or creation
    evicted_by = evicted_cond.get("reason") if evicted_cond.get("status") == "True" else None
    if evicted_by == c.REASON_ADMISSION_CHECK or (
        evicted_by == c.REASON_PODS_READY_TIMEOUT and not pods_ready_requeue_by_creation
    ):
        queue_ts = parse_epoch(evicted_cond.get("lastTransitionTime")) or creation

    admission_raw = status.get("admission")
    admission: AdmissionInfo | None = None
    if isinstance(admission_raw, dict) and admission_raw.get("clusterQueue"):
        try:
            usage = _admission_usage(admission_raw, spec_podsets, reclaimed)
        except FieldProblem as err:
            usage = {}
            invalid = invalid or str(err)
        admission = AdmissionInfo(
            cluster_queue=str(admission_raw["clusterQueue"]),
            usage=usage,
            admitted=conditions.get(c.COND_ADMITTED, {}).get("status") == "True",
            reserved_at=_reserved_at(
                parse_epoch(conditions.get(c.COND_QUOTA_RESERVED, {}).get("lastTransitionTime")) or creation,
                previous,
            ),
        )

    quota_cond = conditions.get(c.COND_QUOTA_RESERVED, {})
    pending_reason = None
    if quota_cond.get("status") == "False":
        pending_reason = (_str(quota_cond.get("reason")), _str(quota_cond.get("message")))
    requeue_state = status.get("requeueState")
    checks = status.get("admissionChecks")
    annotations = meta.get("annotations")
    labels = meta.get("labels")
    priority = spec.get("priority")
    is_parent, option = parse_mode(meta, spec)
    if option is not None and evicted_by == c.REASON_FLAVOR_MIGRATION:
        option = dataclasses.replace(option, migrated_away=True)
    excluded = _excluded_flavors(status, admission_raw) if status.get("flavorAssignmentHistory") else frozenset()
    if excluded:
        # Equal requests no longer fit or fail together when one of them may not use some flavors.
        shape = hash((shape, excluded))
    return WorkloadInfo(
        namespace=_str(meta.get("namespace")),
        name=_str(meta.get("name")),
        uid=uid,
        generation=generation,
        queue_name=_str(spec.get("queueName")),
        priority=_int(priority, 0),
        has_priority=isinstance(priority, int) and not isinstance(priority, bool),
        priority_class=_str(spec.get("priorityClassName")) or None,
        priority_class_source=_str(spec.get("priorityClassSource")),
        creation_ts=creation,
        queue_ts=queue_ts,
        podsets=podsets,
        # Options are never shape-equivalent across parents: a sibling holding quota changes the outcome.
        shape=shape if option is None else hash((shape, option.family)),
        job_uid=_str(labels.get(c.JOB_UID_LABEL)) if isinstance(labels, dict) else "",
        active=spec.get("active", True) is not False,
        finished=conditions.get(c.COND_FINISHED, {}).get("status") == "True",
        deleting=bool(meta.get("deletionTimestamp")),
        admission=admission,
        evicted=evicted_cond.get("status") == "True",
        requeue_at=parse_epoch(requeue_state.get("requeueAt")) if isinstance(requeue_state, dict) else None,
        requeued_false=conditions.get(c.COND_REQUEUED, {}).get("status") == "False",
        blocked_by_checks=_blocked_by_checks(checks) if checks else False,
        pending_reason=pending_reason,
        invalid=invalid,
        spec_problem=spec_problem,
        gated=isinstance(annotations, dict) and bool(annotations.get(c.ADMISSION_GATED_BY_ANNOTATION)),
        is_parent=is_parent,
        option=option,
        excluded_flavors=excluded,
        order_tiebreak=option_order_tiebreak(uid, option) if option is not None else "",
        reclaimed=reclaimed,
    )
