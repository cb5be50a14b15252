"""Cohort and ResourceFlavor semantic rules (Kueue's ``pkg/webhooks/cohort_webhook.go`` and ``resourceflavor_webhook.go``)."""

from __future__ import annotations

from typing import Any

from pykueue.api.validation import FieldError, join_path
from webhook.rules.common import (
    as_dict,
    enumerate_dicts,
    label_value_errors,
    labels_errors,
    qualified_name_errors,
)
from webhook.rules.quota import fair_sharing_errors, resource_groups_errors


def validate_cohort(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """Like a ClusterQueue's groups, but limits need a parent and lending is not capped by nominal."""
    spec = as_dict(obj.get("spec"))
    errors = resource_groups_errors(
        "spec.resourceGroups", spec.get("resourceGroups"),
        has_parent=bool(spec.get("parentName")),
        parent_word="parent",
        lending_within_nominal=False,
    )
    errors += fair_sharing_errors("spec.fairSharing", spec.get("fairSharing"))
    name = as_dict(obj.get("metadata")).get("name")
    if name and name == (spec.get("parentName")):
        errors.append(FieldError.invalid("spec.parentName", name, "a cohort cannot be its own parent"))
    return errors


def validate_resource_flavor(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    errors = labels_errors("spec.nodeLabels", spec.get("nodeLabels"))
    seen_taints: set[tuple[Any, Any]] = set()
    for index, taint in enumerate_dicts(spec.get("nodeTaints")):
        taint_path = join_path("spec.nodeTaints", index)
        errors += qualified_name_errors(join_path(taint_path, "key"), taint.get("key"))
        if taint.get("value") is not None:
            errors += label_value_errors(join_path(taint_path, "value"), taint.get("value"))
        identity = (taint.get("key"), taint.get("effect"))
        if identity in seen_taints:
            errors.append(FieldError.duplicate(taint_path, f"{identity[0]}:{identity[1]}"))
            errors[-1] = FieldError(taint_path, f"{errors[-1].message}: taints must be unique by key and effect pair")
        seen_taints.add(identity)
    for index, toleration in enumerate_dicts(spec.get("tolerations")):
        key = toleration.get("key")
        if key:
            errors += qualified_name_errors(join_path(join_path("spec.tolerations", index), "key"), key)
    return errors
