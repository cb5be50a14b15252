"""ClusterQueue semantic rules: Kueue's webhook rules (``pkg/webhooks/clusterqueue_webhook.go``) plus pykueue's extensions.

The structural schema (types, enums, required fields) is checked separately with the CRD's own
schema; everything here needs more than one field to decide.
"""

from __future__ import annotations

from typing import Any

from pykueue.api import constants as c
from pykueue.api.validation import FieldError, join_path
from webhook.rules.common import as_dict, as_list, enumerate_dicts, label_selector_errors
from webhook.rules.concurrent import (
    POLICY_PATH,
    concurrent_admission_errors,
    concurrent_admission_policy_errors,
    effective_concurrent_admission,
)
from webhook.rules.fallback import fallback_strategy_errors
from webhook.rules.quota import fair_sharing_errors, flavor_names, resource_groups_errors

# Defaults the CRD schema applies before admission; used when a field is absent anyway.
DEFAULT_WHEN_CAN_BORROW = c.FUNGIBILITY_MAY_STOP_SEARCH
DEFAULT_WHEN_CAN_PREEMPT = c.FUNGIBILITY_TRY_NEXT_FLAVOR


def validate_cluster_queue(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """The rules of a queue in either version: they read the fields both versions share, and the
    two a single version has (v1beta1 ``cohort``, v1beta2 ``cohortName`` and
    ``concurrentAdmissionPolicy``) are read where present, so every error names the field as the
    version the queue was sent in spells it."""
    spec = as_dict(obj.get("spec"))
    errors: list[FieldError] = []
    errors += resource_groups_errors(
        "spec.resourceGroups", spec.get("resourceGroups"),
        has_parent=bool(spec.get("cohort") or spec.get("cohortName")),
        parent_word="cohort",
        lending_within_nominal=True,
    )
    if spec.get("namespaceSelector") is not None:
        errors += label_selector_errors("spec.namespaceSelector", spec["namespaceSelector"])
    errors += _preemption_errors(as_dict(spec.get("preemption")))
    errors += _fungibility_errors(as_dict(spec.get("flavorFungibility")))
    errors += fair_sharing_errors("spec.fairSharing", spec.get("fairSharing"))
    errors += _admission_checks_errors(spec, as_dict(old.get("spec")) if old is not None else None)
    errors += concurrent_admission_errors(spec)
    errors += concurrent_admission_policy_errors(spec)
    errors += fallback_strategy_errors(spec)
    if old is not None:
        errors += _concurrent_admission_update_errors(spec, as_dict(old.get("spec")))
    return errors


def _concurrent_admission_update_errors(spec: dict[str, Any], old_spec: dict[str, Any]) -> list[FieldError]:
    """The policy is immutable (Kueue's ``concurrentAdmissionPolicy`` too): what the queue runs
    may not change. Respelling the same policy the other way (``concurrentAdmission`` ↔ Kueue's
    ``concurrentAdmissionPolicy``) changes nothing the controller runs and is let through, as it
    always was when both reached the rules as ``concurrentAdmission``."""
    if effective_concurrent_admission(spec) == effective_concurrent_admission(old_spec):
        return []
    if spec.get("concurrentAdmissionPolicy") is not None or (
        spec.get("concurrentAdmission") is None and old_spec.get("concurrentAdmissionPolicy") is not None
    ):
        return [FieldError.invalid(POLICY_PATH, spec.get("concurrentAdmissionPolicy"), "field is immutable")]
    return [FieldError.invalid("spec.concurrentAdmission", spec.get("concurrentAdmission"), "field is immutable")]


def _preemption_errors(preemption: dict[str, Any]) -> list[FieldError]:
    reclaim = preemption.get("reclaimWithinCohort", c.PREEMPT_NEVER)
    borrow_policy = as_dict(preemption.get("borrowWithinCohort")).get("policy", c.PREEMPT_NEVER)
    if reclaim == c.PREEMPT_NEVER and borrow_policy != c.PREEMPT_NEVER:
        return [
            FieldError.invalid(
                "spec.preemption", preemption,
                "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
            )
        ]
    return []


def _fungibility_errors(fungibility: dict[str, Any]) -> list[FieldError]:
    if fungibility.get("preference") is None:
        return []
    borrow = fungibility.get("whenCanBorrow", DEFAULT_WHEN_CAN_BORROW)
    preempt = fungibility.get("whenCanPreempt", DEFAULT_WHEN_CAN_PREEMPT)
    if borrow != c.FUNGIBILITY_TRY_NEXT_FLAVOR or preempt != c.FUNGIBILITY_TRY_NEXT_FLAVOR:
        return [
            FieldError.invalid(
                "spec.flavorFungibility.preference", fungibility["preference"],
                "may only be set when whenCanBorrow and whenCanPreempt are both TryNextFlavor",
            )
        ]
    return []


def _admission_checks_errors(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[FieldError]:
    """Both check forms at once, and ``onFlavors`` naming a flavor the queue does not have.

    The ``onFlavors`` rule is Kueue's since v0.18 (``validateAdmissionCheckOnFlavors`` in
    ``pkg/webhooks/clusterqueue_webhook.go``): a create is always checked. An update leaves alone
    the checks of a queue stored before the rule existed, as Kueue does with its
    ``RejectUpdatesToCQWithInvalidOnFlavors`` gate off (the default): when the queue's set of
    flavors is unchanged, a check whose ``onFlavors`` set is the same as in the old object is
    not re-validated, so such a queue can still be edited. A flavor that is not in the queue
    is never assigned, so the check simply never applies to its workloads.
    """
    errors: list[FieldError] = []
    # Both lists may be set, as in Kueue v0.19 (its v1beta2 keeps only the strategy and converts
    # admissionChecks into rules that apply to every flavor); the engine applies their union.
    strategy = as_dict(spec.get("admissionChecksStrategy"))
    cq_flavors = flavor_names(spec.get("resourceGroups"))
    unchanged = _unchanged_on_flavors(old_spec, set(cq_flavors)) if old_spec is not None else {}
    checks_path = "spec.admissionChecksStrategy.admissionChecks"
    for index, rule in enumerate_dicts(strategy.get("admissionChecks")):
        on_flavors = as_list(rule.get("onFlavors"))
        name = rule.get("name")
        if isinstance(name, str) and name in unchanged and unchanged[name] == {str(f) for f in on_flavors}:
            continue
        on_flavors_path = join_path(join_path(checks_path, index), "onFlavors")
        for flavor_index, flavor in enumerate(on_flavors):
            if flavor not in cq_flavors:
                errors.append(FieldError.not_supported(join_path(on_flavors_path, flavor_index), flavor, cq_flavors))
    return errors


def _unchanged_on_flavors(old_spec: dict[str, Any], new_flavors: set[str]) -> dict[str, set[str]]:
    """Check name -> ``onFlavors`` set of the old object, when an update may keep them unchecked.

    Empty unless the old object had an ``admissionChecksStrategy`` and the same set of flavors
    as the new one: adding or removing a flavor re-validates every check, as in Kueue.
    """
    old_strategy = old_spec.get("admissionChecksStrategy")
    if not isinstance(old_strategy, dict) or set(flavor_names(old_spec.get("resourceGroups"))) != new_flavors:
        return {}
    return {
        rule["name"]: {str(f) for f in as_list(rule.get("onFlavors"))}
        for _, rule in enumerate_dicts(old_strategy.get("admissionChecks"))
        if isinstance(rule.get("name"), str)
    }
