"""The visibility API's wire format and routes, as pure functions (no sockets, no threads).

Kueue serves ``visibility.kueue.x-k8s.io`` ``v1beta1`` and ``v1beta2`` with the same shapes
(Kueue's ``apis/visibility/v1beta2/types.go``): ``GET .../clusterqueues/<name>/pendingworkloads``
and ``GET .../namespaces/<ns>/localqueues/<name>/pendingworkloads``, query ``offset`` (default 0)
and ``limit`` (default 1000), answering a ``PendingWorkloadsSummary`` whose items carry the
workload's metadata (name, namespace, ownerReferences, creationTimestamp), ``priority``,
``localQueueName``, ``positionInClusterQueue`` and ``positionInLocalQueue``. The ClusterQueue view
pages over the whole queue; the LocalQueue view pages over the LocalQueue's own workloads
(Kueue's ``pkg/visibility/api/v1beta2/pending_workloads_{cq,lq}.go``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.engine.visibility import PendingWorkload
from controller.multikueue import status as mk_status
from controller.multikueue.status import DispatchState

GROUP = "visibility.kueue.x-k8s.io"
VERSIONS = ("v1beta1", "v1beta2")
PREFERRED_VERSION = "v1beta2"
DEFAULT_LIMIT = 1000  # Kueue's constants.DefaultPendingWorkloadsLimit
SUBRESOURCE = "pendingworkloads"

_NAME = r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?"
_CQ = re.compile(rf"^/apis/{re.escape(GROUP)}/(?P<version>v1beta[12])/clusterqueues/(?P<name>{_NAME})/pendingworkloads$")
_EXPLAIN = re.compile(
    rf"^/apis/{re.escape(GROUP)}/(?P<version>v1beta[12])/namespaces/(?P<namespace>{_NAME})"
    rf"/workloads/(?P<name>{_NAME})/explain$"
)
_LQ = re.compile(
    rf"^/apis/{re.escape(GROUP)}/(?P<version>v1beta[12])/namespaces/(?P<namespace>{_NAME})"
    rf"/localqueues/(?P<name>{_NAME})/pendingworkloads$"
)


class BadRequest(ValueError):
    """A query the API refuses (400)."""


@dataclass(frozen=True, slots=True)
class Request:
    """What a path asks for. ``kind`` is ``discovery`` (group list, group, resource list: open to
    every authenticated caller) or ``clusterqueue``/``localqueue`` (authorized per request)."""

    kind: str
    version: str = ""
    name: str = ""
    namespace: str = ""
    document: dict[str, Any] | None = None  # the answer of a discovery request

    @property
    def resource(self) -> str:
        return {"clusterqueue": "clusterqueues", "localqueue": "localqueues"}.get(self.kind, "workloads")


def route(path: str) -> Request | None:
    """The request a path names, or None (404)."""
    path = path.rstrip("/") or "/"
    if path == "/apis":
        return Request("discovery", document=api_group_list())
    if path == f"/apis/{GROUP}":
        return Request("discovery", document=api_group())
    for version in VERSIONS:
        if path == f"/apis/{GROUP}/{version}":
            return Request("discovery", version=version, document=api_resource_list(version))
    match = _CQ.match(path)
    if match:
        return Request("clusterqueue", match["version"], match["name"])
    match = _LQ.match(path)
    if match:
        return Request("localqueue", match["version"], match["name"], match["namespace"])
    match = _EXPLAIN.match(path)
    if match:
        return Request("explain", match["version"], match["name"], match["namespace"])
    return None


def _non_negative(query: Mapping[str, Sequence[str]], name: str, default: int) -> int:
    values = query.get(name)
    if not values or values[-1] == "":
        return default
    try:
        value = int(values[-1])
    except ValueError:
        raise BadRequest(f"{name}: invalid value {values[-1]!r}: must be an integer") from None
    if value < 0:
        raise BadRequest(f"{name}: invalid value {value}: must be greater than or equal to 0")
    return value


def page_options(query: Mapping[str, Sequence[str]]) -> tuple[int, int]:
    """``(offset, limit)`` from the query string; a missing or zero ``limit`` is Kueue's 1000."""
    offset = _non_negative(query, "offset", 0)
    limit = _non_negative(query, "limit", DEFAULT_LIMIT) or DEFAULT_LIMIT
    return offset, limit


def _owner_references(workload: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    refs = ((workload or {}).get("metadata") or {}).get("ownerReferences") or []
    return [
        {key: ref[key] for key in ("apiVersion", "kind", "name", "uid") if key in ref}
        for ref in refs
        if isinstance(ref, dict)
    ]


def pending_workload_item(item: PendingWorkload, workload: Mapping[str, Any] | None) -> dict[str, Any]:
    """One ``PendingWorkload``: metadata from the Workload object (the informer's copy), the rest
    from the engine."""
    namespace, _, name = item.workload.partition("/")
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    owners = _owner_references(workload)
    if owners:
        metadata["ownerReferences"] = owners
    created = ((workload or {}).get("metadata") or {}).get("creationTimestamp")
    metadata["creationTimestamp"] = created
    return {
        "metadata": metadata,
        "priority": item.priority,
        "localQueueName": item.local_queue,
        "positionInClusterQueue": item.position_in_cluster_queue,
        "positionInLocalQueue": item.position_in_local_queue,
    }


def summary(
    version: str,
    items: Sequence[PendingWorkload],
    workload_of: Callable[[str], Mapping[str, Any] | None],
) -> dict[str, Any]:
    """A ``PendingWorkloadsSummary`` of ``items`` in ``version``."""
    return {
        "kind": "PendingWorkloadsSummary",
        "apiVersion": f"{GROUP}/{version}",
        "metadata": {"creationTimestamp": None},
        "items": [pending_workload_item(item, workload_of(item.workload)) for item in items],
    }


# --- discovery ----------------------------------------------------------------------------------


def _group_versions() -> list[dict[str, str]]:
    """Newest first, as the apiserver lists them."""
    return [{"groupVersion": f"{GROUP}/{v}", "version": v} for v in sorted(VERSIONS, reverse=True)]


def api_group() -> dict[str, Any]:
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": GROUP,
        "versions": _group_versions(),
        "preferredVersion": {"groupVersion": f"{GROUP}/{PREFERRED_VERSION}", "version": PREFERRED_VERSION},
    }


def api_group_list() -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [api_group()]}


def api_resource_list(version: str) -> dict[str, Any]:
    """What Kueue's server lists: the two queue kinds (no verbs of their own) and their
    ``pendingworkloads`` subresources."""
    def resource(name: str, namespaced: bool, kind: str, verbs: list[str], singular: str) -> dict[str, Any]:
        return {"name": name, "singularName": singular, "namespaced": namespaced, "kind": kind, "verbs": verbs}

    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{GROUP}/{version}",
        "resources": [
            resource("clusterqueues", False, "ClusterQueue", ["get"], "clusterqueue"),
            resource("clusterqueues/pendingworkloads", False, "PendingWorkloadsSummary", ["get"], ""),
            resource("localqueues", True, "LocalQueue", ["get"], "localqueue"),
            resource("localqueues/pendingworkloads", True, "PendingWorkloadsSummary", ["get"], ""),
            # pykueue's addition: why a workload is pending (docs/design/visibility.md).
            resource("workloads", True, "Workload", [], "workload"),
            resource("workloads/explain", True, "WorkloadExplanation", ["get"], ""),
        ],
    }


# --- errors -------------------------------------------------------------------------------------

REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 503: "ServiceUnavailable"}


def status(code: int, message: str, *, name: str = "", kind: str = "") -> dict[str, Any]:
    """A ``v1`` ``Status`` failure, the body kubectl and client-go print for errors."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": REASONS.get(code, "InternalError"),
        "code": code,
    }
    if name or kind:
        body["details"] = {"name": name, "group": GROUP, "kind": kind}
    return body


def forbidden_message(user: str, request: Request) -> str:
    """The apiserver's wording, so the error reads like any RBAC denial."""
    if request.kind == "explain":
        return (f'workloads.kueue.x-k8s.io "{request.name}" is forbidden: User "{user}" cannot get resource '
                f'"workloads" in API group "kueue.x-k8s.io" in the namespace "{request.namespace}"')
    scope = f'in the namespace "{request.namespace}"' if request.namespace else "at the cluster scope"
    return (
        f'{request.resource}.{GROUP} "{request.name}" is forbidden: User "{user}" cannot get resource '
        f'"{request.resource}/{SUBRESOURCE}" in API group "{GROUP}" {scope}'
    )


def not_found_message(request: Request) -> str:
    return f'{request.kind}.{GROUP} "{request.name}" not found'


def explanation(version: str, result: Any, multikueue: DispatchState | None = None) -> dict[str, Any]:
    """A ``WorkloadExplanation`` (pykueue's kind) of a ``controller.engine.explain.Explanation``;
    on a MultiKueue manager, ``multikueue`` is the dispatch loop's record of the workers
    (``controller.multikueue.status``): a ``multiKueue`` section, and a sentence on the suggestion."""
    namespace, _, name = result.workload.partition("/")
    body: dict[str, Any] = {
        "kind": "WorkloadExplanation",
        "apiVersion": f"{GROUP}/{version}",
        "metadata": {"name": name, "namespace": namespace},
        "state": result.state,
        "clusterQueue": result.cluster_queue,
        "localQueue": result.local_queue,
        "clusterQueueActive": result.queue_active,
        "suggestion": result.suggestion,
    }
    if not result.queue_active:
        body["clusterQueueInactive"] = {"reason": result.queue_inactive_reason, "message": result.queue_inactive_message}
    if result.position is not None:
        body["positionInClusterQueue"] = result.position
        body["ahead"] = {"count": result.ahead, "first": [{"namespace": k.partition("/")[0], "name": k.partition("/")[2]}
                                                          for k in result.ahead_first]}
    if result.outcome:
        body["dryRun"] = {"outcome": result.outcome, "reason": result.reason, "message": result.message,
                          "flavors": result.flavors}
    if result.resources:
        body["resources"] = [
            {"flavor": v.flavor, "resource": v.resource, "requested": v.requested, "free": v.free,
             "nominalQuota": v.nominal, "cohortCanLend": v.cohort_can_lend, "missing": v.missing}
            for v in result.resources
        ]
    if result.victims:
        body["preemptionVictims"] = [{"namespace": k.partition("/")[0], "name": k.partition("/")[2],
                                      "clusterQueue": cq, "reason": reason} for k, cq, reason in result.victims]
    if result.state == "HoldsQuota":
        body["admitted"] = result.admitted
    if result.admission_checks:
        body["admissionChecks"] = result.admission_checks
    if result.check_states:
        body["admissionCheckStates"] = [
            {"name": v.name, "state": v.state, "message": v.message, "lastTransitionTime": v.last_transition_time}
            | ({"retryCount": v.retry_count} if v.retry_count is not None else {})
            for v in result.check_states
        ]
    if result.options:
        body["options"] = [
            {"name": o.name, "resourceFlavors": o.flavors, "status": o.status, "message": o.message,
             "state": o.state, "outcome": o.outcome}
            | ({"positionInClusterQueue": o.position} if o.position is not None else {})
            for o in result.options
        ]
    if result.blocked_by:
        body["admissionBlockedBy"] = [{"namespace": k.partition("/")[0], "name": k.partition("/")[2]}
                                      for k in result.blocked_by]
    if result.excluded_flavors:
        body["excludedFlavors"] = result.excluded_flavors
    if result.last_reason:
        body["lastPendingReason"] = {"reason": result.last_reason, "message": result.last_message}
    if multikueue is not None:
        body["multiKueue"] = mk_status.to_dict(multikueue)
        said = mk_status.sentence(multikueue)
        body["suggestion"] = f"{body['suggestion']}; {said}" if body["suggestion"] else said
    return body
