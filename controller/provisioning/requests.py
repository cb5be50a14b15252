"""What a workload's ProvisioningRequest and PodTemplates look like (pure; no API calls).

Follows Kueue's ``controller.go``:

* **pod sets of interest**: those with pods (admitted count > 0) whose containers or init
  containers request or limit one of the config's ``managedResources`` (all pod sets when the list
  is empty). None of interest → no request; the check is Ready at once.
* **merging** (``podSetMergePolicy``): ``IdenticalPodTemplates`` merges pod sets whose templates
  are equal; ``IdenticalWorkloadSchedulingRequirements`` merges those with equal resource
  requests, node selector, tolerations, affinity and resource claims. A merged group is sent as
  its first pod set (name and template) with the counts summed.
* **the request**: ``spec.provisioningClassName`` and ``spec.parameters`` from the config, plus
  each workload annotation ``provreq.kueue.x-k8s.io/<key>`` as parameter ``<key>``; labelled
  ``kueue.x-k8s.io/managed``; controller-owned by the workload so deleting it deletes them.
* **a PodTemplate** per sent pod set: the pod set's template with the assigned flavors' node
  labels (as ``nodeSelector``) and tolerations, missing requests filled from limits, owned by the
  request, so the autoscaler sizes nodes that the pods will in fact be able to use.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.provisioning.config import (
    MERGE_IDENTICAL_REQUIREMENTS,
    MERGE_IDENTICAL_TEMPLATES,
    ProvisioningConfig,
)
from controller.provisioning.naming import pod_template_name
from pykueue.api import constants as C

Obj = dict[str, Any]


@dataclass(frozen=True)
class RequestPodSet:
    """One entry of the request: the workload pod set it is named after and the pod count."""

    name: str
    count: int
    template: Mapping[str, Any]
    assignment: Mapping[str, Any]


def _maps(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _containers(pod_spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return _maps(pod_spec.get("initContainers")) + _maps(pod_spec.get("containers"))


def _pod_spec(pod_set: Mapping[str, Any]) -> Mapping[str, Any]:
    template = pod_set.get("template") if isinstance(pod_set.get("template"), Mapping) else {}
    spec = template.get("spec") if isinstance(template, Mapping) else None
    return spec if isinstance(spec, Mapping) else {}


def uses_managed(pod_set: Mapping[str, Any], managed: Sequence[str]) -> bool:
    if not managed:
        return True
    wanted = set(managed)
    for container in _containers(_pod_spec(pod_set)):
        resources = container.get("resources") if isinstance(container.get("resources"), Mapping) else {}
        assert isinstance(resources, Mapping)
        for field in ("requests", "limits"):
            values = resources.get(field)
            if isinstance(values, Mapping) and wanted.intersection(values):
                return True
    return False


def _admitted_count(pod_set: Mapping[str, Any], assignment: Mapping[str, Any]) -> int:
    count = assignment.get("count", pod_set.get("count", 1))
    return count if isinstance(count, int) and not isinstance(count, bool) else 0


def pod_sets_of_interest(wl: Mapping[str, Any], config: ProvisioningConfig) -> list[RequestPodSet]:
    """The pod sets the request is for, in workload order, before merging."""
    admission = (wl.get("status") or {}).get("admission") or {}
    assignments = {a.get("name"): a for a in _maps(admission.get("podSetAssignments"))}
    result = []
    for pod_set in _maps((wl.get("spec") or {}).get("podSets")):
        name = str(pod_set.get("name") or C.DEFAULT_PODSET_NAME)
        assignment = assignments.get(name) or {}
        count = _admitted_count(pod_set, assignment)
        if count > 0 and uses_managed(pod_set, config.managed_resources):
            template = pod_set.get("template") if isinstance(pod_set.get("template"), Mapping) else {}
            assert isinstance(template, Mapping)
            result.append(RequestPodSet(name, count, template, assignment))
    return result


def _scheduling_requirements(template: Mapping[str, Any]) -> Any:
    spec = template.get("spec") if isinstance(template.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    return (
        [((c.get("resources") or {}).get("requests") or {}) for c in _maps(spec.get("initContainers"))],
        [((c.get("resources") or {}).get("requests") or {}) for c in _maps(spec.get("containers"))],
        spec.get("resources") or {},
        spec.get("nodeSelector") or {},
        spec.get("tolerations") or [],
        spec.get("affinity") or {},
        spec.get("resourceClaims") or [],
    )


def merge_pod_sets(pod_sets: Sequence[RequestPodSet], policy: str) -> list[RequestPodSet]:
    """Pod sets merged per ``policy`` (no policy: unchanged); the first of a group represents it."""
    if policy not in (MERGE_IDENTICAL_TEMPLATES, MERGE_IDENTICAL_REQUIREMENTS):
        return list(pod_sets)
    merged: list[RequestPodSet] = []
    for pod_set in pod_sets:
        for index, group in enumerate(merged):
            if policy == MERGE_IDENTICAL_TEMPLATES:
                same = group.template == pod_set.template
            else:
                same = _scheduling_requirements(group.template) == _scheduling_requirements(pod_set.template)
            # Pods of different flavors cannot share nodes: only pod sets assigned alike merge.
            if same and group.assignment.get("flavors") == pod_set.assignment.get("flavors"):
                merged[index] = RequestPodSet(group.name, group.count + pod_set.count, group.template, group.assignment)
                break
        else:
            merged.append(pod_set)
    return merged


def request_pod_sets(wl: Mapping[str, Any], config: ProvisioningConfig) -> list[RequestPodSet]:
    return merge_pod_sets(pod_sets_of_interest(wl, config), config.merge_policy)


def request_parameters(wl: Mapping[str, Any], config: ProvisioningConfig) -> dict[str, str]:
    params = dict(config.parameters)
    annotations = (wl.get("metadata") or {}).get("annotations") or {}
    for key, value in annotations.items():
        if isinstance(key, str) and key.startswith(C.PROVREQ_ANNOTATION_PREFIX) and isinstance(value, str):
            suffix = key[len(C.PROVREQ_ANNOTATION_PREFIX):]
            if suffix:
                params[suffix] = value
    return params


def owner_reference(owner: Mapping[str, Any]) -> Obj:
    meta = owner.get("metadata") or {}
    return {
        "apiVersion": owner.get("apiVersion") or C.API_VERSION,
        "kind": owner.get("kind") or "Workload",
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


# pykueue's own annotation on a request: the flavors of the reservation it was made for. A request
# for other flavors (the workload fell back to another flavor, or came back with another
# assignment) sizes the wrong nodes, so it is replaced even if its attempt number is current.
FLAVORS_ANNOTATION = "provisioning.pykueue.dev/flavors"


def assigned_flavors(wl: Mapping[str, Any]) -> str:
    """``podSet:resource=flavor`` pairs of the reservation, sorted and comma-separated."""
    admission = (wl.get("status") or {}).get("admission") or {}
    pairs = sorted(
        f"{a.get('name')}:{resource}={flavor}"
        for a in _maps(admission.get("podSetAssignments"))
        for resource, flavor in ((a.get("flavors") or {}) if isinstance(a.get("flavors"), Mapping) else {}).items()
    )
    return ",".join(pairs)


def build_request(wl: Mapping[str, Any], name: str, config: ProvisioningConfig) -> Obj:
    """The ProvisioningRequest object for ``wl`` (its pod sets must not be empty)."""
    meta = wl.get("metadata") or {}
    spec: Obj = {
        "provisioningClassName": config.class_name,
        "podSets": [
            {"podTemplateRef": {"name": pod_template_name(name, ps.name)}, "count": ps.count}
            for ps in request_pod_sets(wl, config)
        ],
    }
    params = request_parameters(wl, config)
    if params:
        spec["parameters"] = params
    return {
        "apiVersion": C.PROVISIONING_REQUEST_API_VERSION,
        "kind": "ProvisioningRequest",
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace"),
            "labels": {C.MANAGED_LABEL: "true"},
            "annotations": {FLAVORS_ANNOTATION: assigned_flavors(wl)},
            "ownerReferences": [owner_reference(wl)],
        },
        "spec": spec,
    }


def synced_with_config(request: Mapping[str, Any], wl: Mapping[str, Any], config: ProvisioningConfig) -> bool:
    """Whether ``request`` still asks what ``config`` asks (class and every parameter, as in Kueue)
    for the workload's current flavors (:data:`FLAVORS_ANNOTATION`; a request without it is not
    judged on flavors); a request out of sync is deleted and made again."""
    made_for = ((request.get("metadata") or {}).get("annotations") or {}).get(FLAVORS_ANNOTATION)
    if made_for is not None and made_for != assigned_flavors(wl):
        return False
    spec = request.get("spec") or {}
    if spec.get("provisioningClassName") != config.class_name:
        return False
    have = spec.get("parameters") or {}
    return all(have.get(k) == v for k, v in request_parameters(wl, config).items())


def flavor_placement(assignment: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, str], list[Obj]]:
    """Node selector and tolerations of the flavors assigned to a pod set (missing flavors skipped)."""
    selector: dict[str, str] = {}
    tolerations: list[Obj] = []
    assigned = assignment.get("flavors") if isinstance(assignment.get("flavors"), Mapping) else {}
    assert isinstance(assigned, Mapping)
    for flavor_name in dict.fromkeys(assigned[r] for r in sorted(assigned)):
        flavor_spec = (flavors.get(flavor_name) or {}).get("spec") or {}
        for key, value in (flavor_spec.get("nodeLabels") or {}).items():
            selector.setdefault(str(key), str(value))
        for toleration in flavor_spec.get("tolerations") or []:
            if isinstance(toleration, dict) and toleration not in tolerations:
                tolerations.append(copy.deepcopy(toleration))
    return selector, tolerations


def _fill_requests_from_limits(pod_spec: Obj) -> None:
    for field in ("initContainers", "containers"):
        for container in pod_spec.get(field) or []:
            if not isinstance(container, dict):
                continue
            resources = container.setdefault("resources", {})
            limits = resources.get("limits") or {}
            if limits:
                requests = resources.setdefault("requests", {})
                for key, value in limits.items():
                    requests.setdefault(key, value)


def build_pod_template(
    request: Mapping[str, Any], pod_set: RequestPodSet, flavors: Mapping[str, Mapping[str, Any]]
) -> Obj:
    """The PodTemplate for one request pod set, owned by ``request``."""
    meta = request.get("metadata") or {}
    template = copy.deepcopy(dict(pod_set.template))
    pod_spec = template.setdefault("spec", {})
    selector, tolerations = flavor_placement(pod_set.assignment, flavors)
    if selector:
        pod_spec["nodeSelector"] = {**selector, **(pod_spec.get("nodeSelector") or {})}
    for toleration in tolerations:
        existing = pod_spec.setdefault("tolerations", [])
        if toleration not in existing:
            existing.append(toleration)
    _fill_requests_from_limits(pod_spec)
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {
            "name": pod_template_name(str(meta.get("name")), pod_set.name),
            "namespace": meta.get("namespace"),
            "labels": {C.MANAGED_LABEL: "true"},
            "ownerReferences": [owner_reference(request)],
        },
        "template": template,
    }


def pod_set_updates(
    wl: Mapping[str, Any], request: Mapping[str, Any], config: ProvisioningConfig
) -> tuple[list[Obj], list[str]]:
    """The check's ``podSetUpdates`` once ``request`` is provisioned, and the class-detail keys
    the config names that the request does not carry (logged by the caller, as Kueue does)."""
    meta = request.get("metadata") or {}
    name = str(meta.get("name") or "")
    spec = request.get("spec") or {}
    details = (request.get("status") or {}).get("provisioningClassDetails") or {}
    by_template = {
        pod_template_name(name, str(ps.get("name") or C.DEFAULT_PODSET_NAME)): str(ps.get("name") or C.DEFAULT_PODSET_NAME)
        for ps in _maps((wl.get("spec") or {}).get("podSets"))
    }
    missing = [detail for _, detail in config.node_selector_updates if detail not in details]
    selector = {key: str(details[detail]) for key, detail in config.node_selector_updates if detail in details}
    updates: list[Obj] = []
    for entry in _maps(spec.get("podSets")):
        ref = (entry.get("podTemplateRef") or {}).get("name")
        pod_set = by_template.get(ref) if isinstance(ref, str) else None
        if pod_set is None:
            continue
        update: Obj = {
            "name": pod_set,
            "annotations": {
                C.CONSUME_PROVISIONING_REQUEST_ANNOTATION: name,
                C.PROVISIONING_CLASS_NAME_ANNOTATION: str(spec.get("provisioningClassName") or ""),
            },
        }
        if selector:
            update["nodeSelector"] = dict(selector)
        updates.append(update)
    return updates, missing
