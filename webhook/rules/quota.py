"""Resource-group rules shared by ClusterQueue and Cohort (Kueue's ``validateResourceGroups``).

The CRD schema checks each field on its own; these rules look across fields and groups: a resource
or flavor may belong to one group only, each flavor lists its resources in the order of
``coveredResources``, limits are only meaningful with a cohort/parent, and the totals stay within
what the scheduler is sized for.
"""

from __future__ import annotations

from typing import Any

from pykueue.api.quantity import QuantityError, parse_quantity_exact
from pykueue.api.validation import FieldError, join_path
from webhook.rules.common import as_dict, as_list, enumerate_dicts, qualified_name_errors

MAX_FLAVORS = 256
MAX_COVERED_RESOURCES = 256
MAX_FLAVOR_RESOURCE_COMBINATIONS_PER_GROUP = 512


def quantity_value(path: str, value: Any, errors: list[FieldError]) -> Any:
    """The exact value of a quantity, or None (recording an Invalid error) when it does not parse."""
    try:
        return parse_quantity_exact(value)
    except (QuantityError, TypeError, ValueError) as err:
        errors.append(FieldError.invalid(path, value, str(err) or "quantities must match the regular expression"))
        return None


def flavor_names(resource_groups: Any) -> list[str]:
    """Every flavor named in the groups, in group then flavor order (the order of preference)."""
    return [
        flavor["name"]
        for _, group in enumerate_dicts(resource_groups)
        for _, flavor in enumerate_dicts(group.get("flavors"))
        if isinstance(flavor.get("name"), str)
    ]


def resource_groups_errors(
    path: str,
    resource_groups: Any,
    *,
    has_parent: bool,
    parent_word: str,
    lending_within_nominal: bool,
) -> list[FieldError]:
    """Validate ``resourceGroups`` of a ClusterQueue (``parent_word="cohort"``) or Cohort (``"parent"``)."""
    errors: list[FieldError] = []
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    total_flavors = 0
    total_resources = 0
    for group_index, group in enumerate_dicts(resource_groups):
        group_path = join_path(path, group_index)
        covered = as_list(group.get("coveredResources"))
        flavors = as_list(group.get("flavors"))
        total_flavors += len(flavors)
        total_resources += len(covered)
        if len(covered) * len(flavors) > MAX_FLAVOR_RESOURCE_COMBINATIONS_PER_GROUP:
            errors.append(
                FieldError.invalid(
                    group_path, len(covered) * len(flavors),
                    f"must have at most {MAX_FLAVOR_RESOURCE_COMBINATIONS_PER_GROUP} flavor-resource combinations",
                )
            )
        for resource_index, resource in enumerate(covered):
            resource_path = join_path(join_path(group_path, "coveredResources"), resource_index)
            errors += qualified_name_errors(resource_path, resource)
            if isinstance(resource, str):
                if resource in seen_resources:
                    errors.append(FieldError.duplicate(resource_path, resource))
                seen_resources.add(resource)
        for flavor_index, flavor in enumerate_dicts(flavors):
            flavor_path = join_path(join_path(group_path, "flavors"), flavor_index)
            name = flavor.get("name")
            if isinstance(name, str):
                if name in seen_flavors:
                    errors.append(FieldError.duplicate(join_path(flavor_path, "name"), name))
                seen_flavors.add(name)
            errors += _flavor_quota_errors(
                flavor_path, flavor, covered,
                has_parent=has_parent, parent_word=parent_word, lending_within_nominal=lending_within_nominal,
            )
    if total_flavors > MAX_FLAVORS:
        errors.append(FieldError.too_many(path, total_flavors, MAX_FLAVORS))
    if total_resources > MAX_COVERED_RESOURCES:
        errors.append(
            FieldError.invalid(path, total_resources, f"must have at most {MAX_COVERED_RESOURCES} covered resources")
        )
    return errors


def _flavor_quota_errors(
    flavor_path: str,
    flavor: dict[str, Any],
    covered: list[Any],
    *,
    has_parent: bool,
    parent_word: str,
    lending_within_nominal: bool,
) -> list[FieldError]:
    errors: list[FieldError] = []
    resources = as_list(flavor.get("resources"))
    resources_path = join_path(flavor_path, "resources")
    if len(resources) != len(covered):
        errors.append(
            FieldError.invalid(resources_path, len(resources), "must have the same number of resources as coveredResources")
        )
    for index, quota in enumerate_dicts(resources):
        quota_path = join_path(resources_path, index)
        if index < len(covered) and quota.get("name") != covered[index]:
            errors.append(FieldError.invalid(join_path(quota_path, "name"), quota.get("name"), "must match the name in coveredResources"))
        nominal = None
        if "nominalQuota" in quota:
            nominal_path = join_path(quota_path, "nominalQuota")
            nominal = quantity_value(nominal_path, quota["nominalQuota"], errors)
            if nominal is not None and nominal < 0:
                errors.append(FieldError.invalid(nominal_path, quota["nominalQuota"], "must be greater than or equal to 0"))
        for limit in ("borrowingLimit", "lendingLimit"):
            if quota.get(limit) is None:
                continue
            limit_path = join_path(quota_path, limit)
            if not has_parent:
                errors.append(FieldError.invalid(limit_path, quota[limit], f"must be nil when {parent_word} is empty"))
                continue
            amount = quantity_value(limit_path, quota[limit], errors)
            if amount is None:
                continue
            if amount < 0:
                errors.append(FieldError.invalid(limit_path, quota[limit], "must be greater than or equal to 0"))
            elif limit == "lendingLimit" and lending_within_nominal and nominal is not None and amount > nominal:
                errors.append(FieldError.invalid(limit_path, quota[limit], "must be less than or equal to the nominalQuota"))
    return errors


def fair_sharing_errors(path: str, fair_sharing: Any) -> list[FieldError]:
    """``weight`` is non-negative and, when positive, larger than 1n (smaller weights overflow shares)."""
    fair_sharing = as_dict(fair_sharing)
    if fair_sharing.get("weight") is None:
        return []
    errors: list[FieldError] = []
    weight_path = join_path(path, "weight")
    weight = quantity_value(weight_path, fair_sharing["weight"], errors)
    if weight is None:
        return errors
    if weight < 0:
        errors.append(FieldError.invalid(weight_path, fair_sharing["weight"], "must be greater than or equal to 0"))
    elif 0 < weight <= parse_quantity_exact("1n"):
        errors.append(FieldError.invalid(weight_path, fair_sharing["weight"], "must be greater than 0.000000001"))
    return errors
