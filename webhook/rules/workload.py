"""Workload semantic rules: Kueue's (``pkg/webhooks/workload_webhook.go``) and the concurrent-admission ones.

Run for ``workloads`` and ``workloads/status`` alike: a status write can break the same invariants
(an admission that names a podSet the spec does not have).

Parent and ResourceFlavorOption workloads are the controller's bookkeeping; a user editing one could
double-book quota or detach a job from its options, so only the controller's identity (the request's
``userInfo.username``) may create them or change their spec/status. Other writers may still touch
metadata only (labels, annotations, finalizers, owner references), which is what the garbage
collector and ``kubectl label`` do, and admission check controllers may write an option's
``status.admissionChecks`` (options run their flavors' checks like any workload).
"""

from __future__ import annotations

from typing import Any

from pykueue.api import constants as c
from pykueue.api.validation import FieldError, join_path
from webhook.rules.common import (
    ADMISSION_GATED_BY_PATH,
    admission_gated_by_errors,
    admission_gated_by_update_errors,
    annotations_errors,
    as_dict,
    as_list,
    duplicates,
    enumerate_dicts,
    labels_errors,
)
from webhook.rules.quota import quantity_value

WORKLOAD_MODES = (c.WORKLOAD_MODE_DEFAULT, c.WORKLOAD_MODE_OPTION, c.WORKLOAD_MODE_PARENT)
CONTROLLER_ONLY_MODES = frozenset({c.WORKLOAD_MODE_OPTION, c.WORKLOAD_MODE_PARENT})
RESERVED_RESOURCE = "pods"


def workload_mode(obj: dict[str, Any] | None) -> str:
    mode = as_dict(as_dict(as_dict(obj).get("spec")).get("workloadMode")).get("type")
    return mode if isinstance(mode, str) else c.WORKLOAD_MODE_DEFAULT


def condition_true(obj: dict[str, Any] | None, condition_type: str) -> bool:
    conditions = as_list(as_dict(as_dict(obj).get("status")).get("conditions"))
    return any(
        isinstance(cond, dict) and cond.get("type") == condition_type and cond.get("status") == "True"
        for cond in conditions
    )


def has_quota_reservation(obj: dict[str, Any] | None) -> bool:
    return condition_true(obj, c.COND_QUOTA_RESERVED)


def validate_workload(
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    *,
    username: str,
    controller_username: str,
) -> list[FieldError]:
    errors = identity_errors(obj, old, username=username, controller_username=controller_username)
    gates = as_dict(as_dict(obj.get("metadata")).get("annotations")).get(c.ADMISSION_GATED_BY_ANNOTATION)
    if gates is not None:
        errors += admission_gated_by_errors(ADMISSION_GATED_BY_PATH, gates)
    if old is not None:
        old_gates = as_dict(as_dict(old.get("metadata")).get("annotations")).get(c.ADMISSION_GATED_BY_ANNOTATION)
        errors += admission_gated_by_update_errors(ADMISSION_GATED_BY_PATH, gates, old_gates)
    errors += _spec_errors(as_dict(obj.get("spec")))
    errors += _status_errors(obj, old)
    if old is not None:
        errors += _update_errors(obj, old)
    return errors


def _without_checks(status: Any) -> Any:
    """``status`` without ``admissionChecks`` (what admission check controllers write)."""
    if not isinstance(status, dict):
        return status
    return {k: v for k, v in status.items() if k != "admissionChecks"}


def identity_errors(
    obj: dict[str, Any], old: dict[str, Any] | None, *, username: str, controller_username: str
) -> list[FieldError]:
    modes = {workload_mode(obj)} | ({workload_mode(old)} if old is not None else set())
    controlled = modes & CONTROLLER_ONLY_MODES
    if not controlled or username == controller_username:
        return []
    if old is not None and obj.get("spec") == old.get("spec") and obj.get("status") == old.get("status"):
        return []  # a metadata-only change (labels, finalizers, ownerReferences)
    if (
        old is not None
        and obj.get("spec") == old.get("spec")
        and _without_checks(obj.get("status")) == _without_checks(old.get("status"))
    ):
        # An admission check controller (Kueue's contract: any controller, with its own identity)
        # reports its check's state on an option that reserved quota; only that list changes.
        return []
    if (
        old is not None
        and controlled == {c.WORKLOAD_MODE_PARENT}
        and _without_active(obj) == _without_active(old)
        and obj.get("status") == old.get("status")
    ):
        return []  # a user deactivates or reactivates a job's parent, as any workload of theirs
    mode = sorted(controlled)[0]
    return [
        FieldError.forbidden(
            "spec.workloadMode.type",
            f"{mode} workloads are managed by the pykueue controller ({controller_username}); "
            f"user {username!r} may not create or change them",
        )
    ]


def _without_active(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in as_dict(obj.get("spec")).items() if k != "active"}


def _spec_errors(spec: dict[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    mode = as_dict(spec.get("workloadMode")).get("type")
    if mode is not None and mode not in WORKLOAD_MODES:
        errors.append(FieldError.not_supported("spec.workloadMode.type", mode, WORKLOAD_MODES))
    min_count_podsets = 0
    for index, pod_set in enumerate_dicts(spec.get("podSets")):
        pod_set_path = join_path("spec.podSets", index)
        if pod_set.get("minCount") is not None:
            min_count_podsets += 1
            if min_count_podsets > 1:
                errors.append(FieldError.forbidden(join_path(pod_set_path, "minCount"), "at most one podSet can use minCount"))
        errors += _pod_set_template_errors(pod_set_path, as_dict(pod_set.get("template")))
        allowed = as_list(pod_set.get("allowedResourceFlavors"))
        for dup in duplicates(allowed):
            errors.append(FieldError.duplicate(join_path(join_path(pod_set_path, "allowedResourceFlavors"), dup), allowed[dup]))
    return errors


def _pod_set_template_errors(pod_set_path: str, template: dict[str, Any]) -> list[FieldError]:
    template_path = join_path(pod_set_path, "template")
    metadata = as_dict(template.get("metadata"))
    errors = labels_errors(join_path(join_path(template_path, "metadata"), "labels"), metadata.get("labels"))
    errors += annotations_errors(join_path(join_path(template_path, "metadata"), "annotations"), metadata.get("annotations"))
    pod_spec = as_dict(template.get("spec"))
    spec_path = join_path(template_path, "spec")
    for containers_key in ("initContainers", "containers"):
        for index, container in enumerate_dicts(pod_spec.get(containers_key)):
            resources = as_dict(container.get("resources"))
            for kind in ("requests", "limits"):
                resources_path = join_path(join_path(join_path(join_path(spec_path, containers_key), index), "resources"), kind)
                for resource, amount in as_dict(resources.get(kind)).items():
                    amount_path = f"{resources_path}[{resource}]"
                    if resource == RESERVED_RESOURCE:
                        errors.append(FieldError.invalid(amount_path, resource, "the key is reserved for internal kueue use"))
                        continue
                    value = quantity_value(amount_path, amount, errors)
                    if value is not None and value < 0:
                        errors.append(FieldError.invalid(amount_path, amount, "must be greater than or equal to 0"))
    return errors


def _status_errors(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    status = as_dict(obj.get("status"))
    # Names that are not strings (malformed input) name no pod set: the spec's own rules deny them,
    # and a status entry naming one is "not found" rather than an unhashable-key crash.
    pod_set_counts = {
        name: pod_set.get("count", 1)
        for _, pod_set in enumerate_dicts(spec.get("podSets"))
        if isinstance(name := pod_set.get("name", c.DEFAULT_PODSET_NAME), str)
    }

    def unknown(name: Any) -> bool:
        return not isinstance(name, str) or name not in pod_set_counts

    errors: list[FieldError] = []
    if has_quota_reservation(obj):
        admission = status.get("admission")
        old_inconsistent = old is not None and has_quota_reservation(old) and as_dict(old.get("status")).get("admission") is None
        if admission is None and not old_inconsistent:
            errors.append(FieldError.required("status.admission", "a workload with QuotaReserved=True must have an admission"))
        for index, assignment in enumerate_dicts(as_dict(admission).get("podSetAssignments")):
            name = assignment.get("name", c.DEFAULT_PODSET_NAME)
            if unknown(name):
                errors.append(FieldError.not_found(join_path(join_path("status.admission.podSetAssignments", index), "name"), name))
    for index, reclaimable in enumerate_dicts(status.get("reclaimablePods")):
        entry_path = join_path("status.reclaimablePods", index)
        name = reclaimable.get("name")
        if not isinstance(name, str) or name not in pod_set_counts:
            errors.append(FieldError.not_found(join_path(entry_path, "name"), name))
            continue
        count, limit = reclaimable.get("count"), pod_set_counts[name]
        if isinstance(count, int) and isinstance(limit, int) and count > limit:
            errors.append(FieldError.invalid(join_path(entry_path, "count"), count, f"should be less or equal to {limit}"))
    for check_index, check in enumerate_dicts(status.get("admissionChecks")):
        for update_index, update in enumerate_dicts(check.get("podSetUpdates")):
            update_path = join_path(join_path(join_path("status.admissionChecks", check_index), "podSetUpdates"), update_index)
            if unknown(update.get("name")):
                errors.append(FieldError.not_found(join_path(update_path, "name"), update.get("name")))
            errors += labels_errors(join_path(update_path, "labels"), update.get("labels"))
            errors += labels_errors(join_path(update_path, "nodeSelector"), update.get("nodeSelector"))
            errors += annotations_errors(join_path(update_path, "annotations"), update.get("annotations"))
    return errors


def _update_errors(obj: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    spec, old_spec = as_dict(obj.get("spec")), as_dict(old.get("spec"))
    status, old_status = as_dict(obj.get("status")), as_dict(old.get("status"))
    errors: list[FieldError] = []
    if has_quota_reservation(old):
        if spec.get("podSets") != old_spec.get("podSets"):
            errors.append(FieldError.invalid("spec.podSets", spec.get("podSets"), "field is immutable while the workload holds a quota reservation"))
        if has_quota_reservation(obj) and spec.get("queueName") != old_spec.get("queueName"):
            errors.append(FieldError.invalid("spec.queueName", spec.get("queueName"), "field is immutable while the workload holds a quota reservation"))
    old_admission, admission = old_status.get("admission"), status.get("admission")
    if old_admission is not None and admission is not None and old_admission != admission:
        errors.append(FieldError.invalid("status.admission", admission, "field is immutable"))
    old_cluster, cluster = old_status.get("clusterName"), status.get("clusterName")
    if not old_cluster and cluster and cluster not in as_list(old_status.get("nominatedClusterNames")):
        errors.append(FieldError.invalid("status.clusterName", cluster, "when setting clusterName it must be one of the nominatedClusterNames"))
    elif old_cluster and cluster and cluster != old_cluster:
        errors.append(FieldError.invalid("status.clusterName", cluster, "field is immutable"))
    return errors
