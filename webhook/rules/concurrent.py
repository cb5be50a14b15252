"""ClusterQueue ``spec.concurrentAdmission`` rules (concurrent admission, ``docs/design/concurrent-admission.md``).

Option workloads are named ``<parent>-option-<option name>``. A Workload name may be up to 253
characters, so the controller truncates the parent part and adds a short hash when the whole does
not fit, always keeping ``-option-<option name>`` intact (``controller/concurrentadmission/naming.py``). For that to be possible even
under the strictest naming limit pykueue meets — a 63-character DNS label, the limit of label values
and of short workload names — the suffix must leave room for the hash and a recognisable piece of
the parent name::

    63  = parent prefix (>= 9) + "-" + hash (5) + "-option-" (8) + option name
    =>  option name <= 63 - 9 - 6 - 8 = 40 characters

so :data:`MAX_OPTION_NAME_LENGTH` is 40.
"""

from __future__ import annotations

from typing import Any

from pykueue.api import concurrent_policy
from pykueue.api import constants as c
from pykueue.api.validation import FieldError, join_path
from webhook.rules.common import (
    DNS1123_LABEL_MAX,
    as_dict,
    as_list,
    dns1123_label_errors,
    duplicates,
    enumerate_dicts,
)
from webhook.rules.quota import flavor_names

MIN_PARENT_PREFIX = 9
OPTION_HASH_SUFFIX = 6  # "-" + 5 hex characters
MAX_OPTION_NAME_LENGTH = DNS1123_LABEL_MAX - MIN_PARENT_PREFIX - OPTION_HASH_SUFFIX - len(c.OPTION_NAME_INFIX)
# Every option is a Workload of its own; like Kueue's variants, keep a parent's fan-out bounded.
MAX_OPTIONS = 16
ON_SUCCESS_POLICIES = (c.ON_SUCCESS_REMOVE_OTHER, c.ON_SUCCESS_REMOVE_LOWER, c.ON_SUCCESS_REMOVE_BELOW_TARGET)


def concurrent_admission_errors(spec: dict[str, Any]) -> list[FieldError]:
    """Errors of ``spec.concurrentAdmission`` against the rest of the ClusterQueue spec."""
    if spec.get("concurrentAdmission") is None:
        return []
    path = "spec.concurrentAdmission"
    policy = as_dict(spec.get("concurrentAdmission"))
    cq_flavors = flavor_names(spec.get("resourceGroups"))
    errors: list[FieldError] = []

    if spec.get("queueingStrategy") == c.STRICT_FIFO:
        # Same path and words as the CRD's CEL rule, so users read one message whichever layer
        # catches it first.
        errors.append(
            FieldError.invalid(
                path, spec.get("concurrentAdmission"), "concurrentAdmission is not supported with queueingStrategy StrictFIFO"
            )
        )

    on_success = policy.get("onSuccess")
    if on_success is None:
        errors.append(FieldError.required(join_path(path, "onSuccess")))
    elif on_success not in ON_SUCCESS_POLICIES:
        errors.append(FieldError.not_supported(join_path(path, "onSuccess"), on_success, ON_SUCCESS_POLICIES))

    errors += _remove_below_target_errors(path, policy, on_success, cq_flavors)

    explicit = as_list(policy.get("explicitOptions"))
    if explicit:
        errors += explicit_options_errors(join_path(path, "explicitOptions"), explicit, cq_flavors)
    else:
        groups = as_list(spec.get("resourceGroups"))
        if len(groups) != 1:
            errors.append(
                FieldError.invalid(
                    "spec.resourceGroups", len(groups),
                    "must have exactly one resource group when concurrentAdmission has no explicitOptions",
                )
            )
        elif len(cq_flavors) > MAX_OPTIONS:
            errors.append(
                FieldError.invalid(
                    "spec.resourceGroups[0].flavors", len(cq_flavors),
                    f"must have at most {MAX_OPTIONS} flavors when concurrentAdmission creates one option per flavor",
                )
            )
    return errors


POLICY_PATH = "spec.concurrentAdmissionPolicy"


def concurrent_admission_policy_errors(spec: dict[str, Any]) -> list[FieldError]:
    """Errors of Kueue's ``spec.concurrentAdmissionPolicy`` (v1beta2 only), named as Kueue names them.

    The policy is the ``concurrentAdmission`` of :mod:`pykueue.api.concurrent_policy` spelt
    Kueue's way, so these are that field's rules on the policy's fields, with the paths and
    words of Kueue's ``validateConcurrentAdmissionPolicy`` (``pkg/webhooks/clusterqueue_webhook.go``):
    exactly one resource group of at most 16 flavors, ``constraints`` only with
    ``TryPreferredFlavors``, ``lastAcceptableFlavorName`` a flavor of the queue, no StrictFIFO.
    """
    policy = spec.get("concurrentAdmissionPolicy")
    if policy is None:
        return []
    errors: list[FieldError] = []
    groups = as_list(spec.get("resourceGroups"))
    if len(groups) != 1:
        errors.append(FieldError.invalid(
            "spec.resourceGroups", len(groups), "must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is defined"))
    elif len(as_list(as_dict(groups[0]).get("flavors"))) > MAX_OPTIONS:
        errors.append(FieldError.invalid(
            "spec.resourceGroups[0].flavors", len(as_list(as_dict(groups[0]).get("flavors"))),
            f"cannot have more than {MAX_OPTIONS} resource flavors in the ResourceGroup when ConcurrentAdmissionPolicy is defined"))
    migration = as_dict(as_dict(policy).get("migration"))
    constraints = migration.get("constraints")
    constraints_path = join_path(join_path(POLICY_PATH, "migration"), "constraints")
    if constraints is not None:
        mode = migration.get("mode")
        last = as_dict(constraints).get("lastAcceptableFlavorName")
        cq_flavors = flavor_names(spec.get("resourceGroups"))
        if mode and mode != concurrent_policy.TRY_PREFERRED_FLAVORS:
            errors.append(FieldError.forbidden(
                constraints_path,
                f'may only be set when migration.mode is "{concurrent_policy.TRY_PREFERRED_FLAVORS}" (got "{mode}")'))
        elif last is not None and last not in cq_flavors:
            errors.append(FieldError.invalid(
                join_path(constraints_path, "lastAcceptableFlavorName"), last,
                f"must be one of the flavors defined in the ClusterQueue: [{' '.join(map(str, cq_flavors))}]"))
    if spec.get("queueingStrategy") == c.STRICT_FIFO:
        errors.append(FieldError.invalid(
            "spec.queueingStrategy", c.STRICT_FIFO, "StrictFIFO queueing strategy cannot be used when ConcurrentAdmissionPolicy is defined"))
    return errors


def effective_concurrent_admission(spec: dict[str, Any]) -> Any:
    """The concurrent-admission policy ``spec`` asks for, in pykueue's spelling whichever it used.

    ``concurrentAdmission`` as it is, else Kueue's ``concurrentAdmissionPolicy`` mapped
    (:func:`pykueue.api.concurrent_policy.to_concurrent_admission`; a policy that maps to nothing
    stands for itself), else None: what the controller runs, and so what may not change.
    """
    if spec.get("concurrentAdmission") is not None:
        return spec["concurrentAdmission"]
    policy = spec.get("concurrentAdmissionPolicy")
    if policy is None:
        return None
    mapped = concurrent_policy.to_concurrent_admission(policy) if isinstance(policy, dict) else None
    return mapped if mapped is not None else policy


def _remove_below_target_errors(
    path: str, policy: dict[str, Any], on_success: Any, cq_flavors: list[str]
) -> list[FieldError]:
    config_path = join_path(path, "removeBelowTargetConfig")
    config = policy.get("removeBelowTargetConfig")
    if on_success != c.ON_SUCCESS_REMOVE_BELOW_TARGET:
        if config is not None:
            return [FieldError.forbidden(config_path, f"may only be set when onSuccess is {c.ON_SUCCESS_REMOVE_BELOW_TARGET}")]
        return []
    target_path = join_path(config_path, "targetResourceFlavor")
    target = as_dict(config).get("targetResourceFlavor")
    if config is None:
        return [FieldError.required(config_path, f"onSuccess {c.ON_SUCCESS_REMOVE_BELOW_TARGET} needs a targetResourceFlavor")]
    if not target:
        return [FieldError.required(target_path)]
    if target not in cq_flavors:
        return [FieldError.not_supported(target_path, target, cq_flavors)]
    return []


def explicit_options_errors(path: str, options: list[Any], cq_flavors: list[str]) -> list[FieldError]:
    errors: list[FieldError] = []
    if len(options) > MAX_OPTIONS:
        errors.append(FieldError.too_many(path, len(options), MAX_OPTIONS))
    names = [as_dict(option).get("name") for option in options]
    duplicate_indexes = set(duplicates(names))
    for index, option in enumerate_dicts(options):
        option_path = join_path(path, index)
        name_path = join_path(option_path, "name")
        name = option.get("name")
        if index in duplicate_indexes:
            errors.append(FieldError.duplicate(name_path, name))
        else:
            errors += option_name_errors(name_path, name)
        for delay in ("createDelaySeconds", "deleteDelaySeconds"):
            value = option.get(delay)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                errors.append(FieldError.invalid(join_path(option_path, delay), value, "must be greater than or equal to 0"))
        errors += allowed_flavors_errors(join_path(option_path, "allowedResourceFlavors"), option.get("allowedResourceFlavors"), cq_flavors)
    return errors


def option_name_errors(path: str, name: Any) -> list[FieldError]:
    errors = dns1123_label_errors(path, name)
    if isinstance(name, str) and len(name) > MAX_OPTION_NAME_LENGTH:
        errors = [e for e in errors if "no more than" not in e.message]
        errors.append(
            FieldError.invalid(
                path, name,
                f"must be no more than {MAX_OPTION_NAME_LENGTH} characters so that "
                f"<workload>{c.OPTION_NAME_INFIX}<name> can always be formed",
            )
        )
    return errors


def allowed_flavors_errors(path: str, flavors: Any, cq_flavors: list[str]) -> list[FieldError]:
    """Non-empty, no duplicates, and each one a flavor of this ClusterQueue."""
    flavors = as_list(flavors)
    if not flavors:
        return [FieldError.required(path, "an option must allow at least one resource flavor")]
    errors: list[FieldError] = []
    duplicate_indexes = set(duplicates(flavors))
    for index, flavor in enumerate(flavors):
        flavor_path = join_path(path, index)
        if index in duplicate_indexes:
            errors.append(FieldError.duplicate(flavor_path, flavor))
        elif flavor not in cq_flavors:
            errors.append(FieldError.not_supported(flavor_path, flavor, cq_flavors))
    return errors
