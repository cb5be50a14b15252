"""Job → Workload: build the Workload that represents a Job, and tell whether one still matches.

The Workload is what the admission engine queues and admits; the Job only follows. It is built
the way Kueue's job framework builds it, so objects written for Kueue look the same here:

- name from :func:`.naming.job_workload_name`, same namespace as the Job;
- a *controller* ownerReference to the Job with ``blockOwnerDeletion``, so the garbage
  collector deletes the Workload with its Job;
- the ``kueue.x-k8s.io/resource-in-use`` finalizer, so quota accounting sees the Workload until
  the controller has let it go (removed when the Job finishes or disappears);
- label ``kueue.x-k8s.io/job-uid``, the Job's ``provreq.kueue.x-k8s.io/*`` annotations;
- ``spec.queueName`` from the queue-name label, priority fields (:mod:`.priority`),
  ``active: true``, ``maximumExecutionTimeSeconds`` from its label;
- one podSet ``main`` whose count is the Job's parallelism capped by its completions and whose
  template is the Job's pod template *as the user wrote it* (without what a start injected).

Malformed Jobs raise :class:`ComposeError` with a message naming the field, which the reconciler
turns into an ``ErrWorkloadCompose`` Event instead of crashing.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from pykueue.api.constants import (
    API_VERSION,
    DEFAULT_PODSET_NAME,
    JOB_UID_LABEL,
    MAX_EXEC_TIME_LABEL,
    PROVREQ_ANNOTATION_PREFIX,
    RESOURCE_IN_USE_FINALIZER,
)

from . import job as jobs
from .naming import job_workload_name
from .priority import Priority
from .template import original_pod_template

Obj = dict[str, Any]

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class ComposeError(ValueError):
    """The Job cannot be represented as a Workload; the message names the field and the rule."""


def is_label_value(value: str) -> bool:
    """A valid Kubernetes label value (the Job's uid and the queue names become labels)."""
    return len(value) <= 63 and bool(_LABEL_VALUE.match(value))


def _check_job(job: Obj) -> tuple[str, str, str]:
    meta = jobs.metadata(job)
    name, namespace, uid = meta.get("name"), meta.get("namespace"), meta.get("uid")
    for field, value in (("metadata.name", name), ("metadata.namespace", namespace), ("metadata.uid", uid)):
        if not isinstance(value, str) or not value:
            raise ComposeError(f"{field}: Required value")
    template = jobs.spec(job).get("template")
    if not isinstance(template, dict):
        raise ComposeError("spec.template: Required value")
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict):
        raise ComposeError("spec.template.spec: Required value")
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise ComposeError(
            "spec.template.spec.containers: Required value: a pod needs at least one container"
        )
    for field in ("containers", "initContainers"):
        for i, container in enumerate(pod_spec.get(field) or []):
            if not isinstance(container, dict):
                raise ComposeError(f"spec.template.spec.{field}[{i}]: Invalid value: must be an object")
            resources = container.get("resources")
            if resources is not None and not isinstance(resources, dict):
                raise ComposeError(
                    f"spec.template.spec.{field}[{i}].resources: Invalid value: must be an object"
                )
    return name, namespace, uid  # type: ignore[return-value]


def job_podsets(job: Obj) -> list[Obj]:
    """The Job's podSets as a Workload spells them, from the user's original template."""
    template = original_pod_template(job)
    meta = jobs.metadata(template)
    podset_meta: Obj = {}
    for field in ("labels", "annotations"):
        if meta.get(field):
            podset_meta[field] = copy.deepcopy(meta[field])
    count = jobs.pods_count(job)
    pod_spec = copy.deepcopy(template.get("spec") or {})
    _deduplicate_env(pod_spec)
    podset: Obj = {
        "name": DEFAULT_PODSET_NAME,
        "count": count,
        "template": {"metadata": podset_meta, "spec": pod_spec},
    }
    min_count = jobs.min_parallelism(job)
    if min_count is not None and 0 < min_count < count:
        podset["minCount"] = min_count  # partial admission (the webhook refuses other values)
    return [podset]


def _deduplicate_env(pod_spec: Obj) -> None:
    """Collapse environment variables of the same name to one entry, in place.

    A Job's container may repeat an env name (the Job API allows it; the last one wins in the
    pod), but a Workload's pod template keys ``env`` by name, so the apiserver would refuse the
    Workload. As Kueue's ``SanitizePodSets``, each name keeps its first position and its last value.
    """
    if not isinstance(pod_spec, dict):
        return  # a malformed template is reported where the Workload is refused, not here
    for field in ("containers", "initContainers"):
        containers = pod_spec.get(field)
        for container in containers if isinstance(containers, list) else []:
            if not isinstance(container, dict) or not isinstance(container.get("env"), list):
                continue
            merged: dict[Any, Any] = {}
            for variable in container["env"]:
                name = variable.get("name") if isinstance(variable, dict) else None
                merged[name if name is not None else id(variable)] = variable
            container["env"] = list(merged.values())


def max_execution_time_seconds(job: Obj) -> int | None:
    """``spec.maximumExecutionTimeSeconds`` from the Job's label; ``None`` when absent or not a positive int."""
    raw = jobs.labels(job).get(MAX_EXEC_TIME_LABEL)
    if raw is None:
        return None
    try:
        value = int(raw)
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def compose_workload(job: Obj, *, queue_name: str, priority: Priority) -> Obj:
    """The Workload to create for ``job``; raises :class:`ComposeError` for a malformed Job."""
    name, namespace, uid = _check_job(job)
    labels: dict[str, str] = {}
    if is_label_value(uid):
        labels[JOB_UID_LABEL] = uid
    annotations = {k: v for k, v in jobs.annotations(job).items() if k.startswith(PROVREQ_ANNOTATION_PREFIX)}
    metadata: Obj = {
        "name": job_workload_name(name, uid),
        "namespace": namespace,
        "labels": labels,
        "finalizers": [RESOURCE_IN_USE_FINALIZER],
        "ownerReferences": [
            {
                "apiVersion": jobs.JOB_API_VERSION,
                "kind": jobs.JOB_KIND,
                "name": name,
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if annotations:
        metadata["annotations"] = annotations
    spec: Obj = {"podSets": job_podsets(job), "active": True, **priority.spec_fields()}
    if queue_name:
        spec["queueName"] = queue_name
    max_exec = max_execution_time_seconds(job)
    if max_exec is not None:
        spec["maximumExecutionTimeSeconds"] = max_exec
    return {"apiVersion": API_VERSION, "kind": "Workload", "metadata": metadata, "spec": spec}


# --- matching -----------------------------------------------------------------------------------


def _as_dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _container_projection(containers: Any) -> list[Obj]:
    """What of a container list decides admission: names, images and resources.

    Comparing a projection rather than whole objects keeps a round trip through the Workload
    CRD (which may drop or default fields the Job API keeps) from looking like a change, which
    would otherwise delete and re-create the Workload forever.
    """
    result = []
    for container in _as_list(containers):
        if not isinstance(container, dict):
            continue
        resources = _as_dict(container.get("resources"))
        result.append(
            {
                "name": container.get("name"),
                "image": container.get("image"),
                "requests": _as_dict(resources.get("requests")),
                "limits": _as_dict(resources.get("limits")),
                "restartPolicy": container.get("restartPolicy"),
            }
        )
    return result


def podset_signature(podset: Obj) -> Obj:
    """The fields of a podSet that, when they change, make an unadmitted Workload stale."""
    pod_spec = _as_dict(_as_dict(podset.get("template")).get("spec"))
    return {
        "name": podset.get("name", DEFAULT_PODSET_NAME),
        "count": podset.get("count", 1),
        "minCount": podset.get("minCount"),
        "containers": _container_projection(pod_spec.get("containers")),
        "initContainers": _container_projection(pod_spec.get("initContainers")),
        "nodeSelector": _as_dict(pod_spec.get("nodeSelector")),
        "tolerations": _as_list(pod_spec.get("tolerations")),
        "overhead": _as_dict(pod_spec.get("overhead")),
        "priorityClassName": pod_spec.get("priorityClassName"),
    }


def podsets_match(job: Obj, workload: Obj) -> bool:
    """Whether ``workload``'s podSets still describe ``job`` (Kueue's ``EquivalentToWorkload``)."""
    wl_podsets = jobs.spec(workload).get("podSets") or []
    job_sets = job_podsets(job)
    if not isinstance(wl_podsets, list) or len(wl_podsets) != len(job_sets):
        return False
    if not all(isinstance(p, dict) and isinstance(p.get("template", {}), dict) for p in wl_podsets):
        return False  # a hand-edited Workload we cannot read describes no Job
    admitted = _admitted_counts(workload)
    return all(
        _matches(job_set, wl_set, admitted.get(str(wl_set.get("name", DEFAULT_PODSET_NAME))))
        for job_set, wl_set in zip(job_sets, wl_podsets, strict=True)
    )


def _admitted_counts(workload: Obj) -> dict[str, int]:
    """Pod counts per podSet of the Workload's admission (fewer than asked after a partial one)."""
    admission = jobs.dict_field(jobs.status(workload), "admission")
    counts: dict[str, int] = {}
    for assignment in admission.get("podSetAssignments") or []:
        if isinstance(assignment, dict) and isinstance(assignment.get("count"), int):
            counts[str(assignment.get("name") or DEFAULT_PODSET_NAME)] = assignment["count"]
    return counts


def _matches(job_set: Obj, wl_set: Obj, admitted_count: int | None) -> bool:
    """A Job started with the admitted count of a partial admission (its parallelism lowered)
    still matches its Workload: the running podSets are the spec's at the admitted counts, as in
    Kueue's ``expectedRunningPodSets``."""
    job_sig, wl_sig = podset_signature(job_set), podset_signature(wl_set)
    if job_sig == wl_sig:
        return True
    if admitted_count is None or wl_sig.get("minCount") is None or job_sig["count"] != admitted_count:
        return False
    return {**job_sig, "count": wl_sig["count"], "minCount": wl_sig["minCount"]} == wl_sig


def owned_by(workload: Obj, job: Obj) -> bool:
    """Whether the Workload's controller owner is this Job (matched by UID, not just name)."""
    owner = jobs.controller_owner(workload)
    return (
        owner is not None
        and owner.get("kind") == jobs.JOB_KIND
        and str(owner.get("apiVersion", "")).split("/")[0] == jobs.JOB_GROUP
        and owner.get("uid") == jobs.metadata(job).get("uid")
    )
