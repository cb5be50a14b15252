"""A ClusterQueue's ``spec.concurrentAdmission`` as the options a parent should have.

Options come in preference order (rank 0 is the most preferred):

* without ``explicitOptions``: one option per flavor of the single resource group, in the
  ClusterQueue's flavor order, each allowing only that flavor;
* with ``explicitOptions``: one per entry, in list order, allowing the entry's flavors.

``onSuccess`` becomes one property per option, ``migration_target``: may this option take the
parent over from a *less preferred* sibling that holds quota?

* ``RemoveOther``       — never: the first option to reserve quota wins for good;
* ``RemoveLower``       — always (only more preferred options are kept trying anyway);
* ``RemoveBelowTarget`` — only if the option reaches the target flavor: its most preferred flavor
  in the target's resource group is the target or ranks above it.

Malformed specs (the webhook rejects them, but objects may predate it) yield no options rather
than an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.workload.admissionchecks import cluster_queue_checks
from pykueue.api import constants as c
from pykueue.api.objects import list_or_empty, mapping_or_empty


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One option a parent in this ClusterQueue should have."""

    suffix: str  # the flavor name or the explicit option's name: ``<parent>-option-<suffix>``
    rank: int
    allowed_flavors: tuple[str, ...]
    create_delay_seconds: float = 0.0
    delete_delay_seconds: float | None = None
    migration_target: bool = False
    # Admission checks of its flavors (``admissionChecksStrategy.onFlavors``, or unrestricted
    # ones); options run them before reserving quota, so they race across flavors.
    checks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ConcurrentConfig:
    on_success: str
    target_flavor: str | None
    options: tuple[OptionSpec, ...]

    def by_suffix(self, suffix: str) -> OptionSpec | None:
        return next((o for o in self.options if o.suffix == suffix), None)


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)


def flavor_groups(cq_spec: Mapping[str, Any]) -> list[list[str]]:
    """Flavor names per resource group, in the ClusterQueue's order."""
    return [
        [
            str(mapping_or_empty(f).get("name"))
            for f in list_or_empty(mapping_or_empty(group).get("flavors"))
            if mapping_or_empty(f).get("name")
        ]
        for group in list_or_empty(cq_spec.get("resourceGroups"))
    ]


def reaches_target(allowed: tuple[str, ...], target: str, groups: list[list[str]]) -> bool:
    """Whether an option allowing ``allowed`` counts as "at or above" flavor ``target``."""
    for group in groups:
        if target in group:
            ranks = [group.index(f) for f in allowed if f in group]
            return bool(ranks) and min(ranks) <= group.index(target)
    return False


def concurrent_config(cluster_queue: Mapping[str, Any] | None) -> ConcurrentConfig | None:
    """The concurrent-admission configuration of a ClusterQueue, or ``None`` when it has none."""
    spec = mapping_or_empty(mapping_or_empty(cluster_queue).get("spec"))
    policy = spec.get("concurrentAdmission")
    if not isinstance(policy, Mapping):
        return None
    on_success = str(policy.get("onSuccess") or c.ON_SUCCESS_REMOVE_OTHER)
    target = mapping_or_empty(policy.get("removeBelowTargetConfig")).get("targetResourceFlavor")
    target = target if isinstance(target, str) and target else None
    groups = flavor_groups(spec)

    raw: list[tuple[str, tuple[str, ...], float, float | None]] = []
    explicit = list_or_empty(policy.get("explicitOptions"))
    if explicit:
        for entry in map(mapping_or_empty, explicit):
            name = entry.get("name")
            flavors = tuple(str(f) for f in list_or_empty(entry.get("allowedResourceFlavors")) if isinstance(f, str))
            if isinstance(name, str) and name and flavors:
                raw.append(
                    (
                        name,
                        flavors,
                        _seconds(entry.get("createDelaySeconds")) or 0.0,
                        _seconds(entry.get("deleteDelaySeconds")),
                    )
                )
    elif len(groups) == 1:
        raw = [(flavor, (flavor,), 0.0, None) for flavor in groups[0]]

    check_rules = cluster_queue_checks(spec)
    options: list[OptionSpec] = []
    seen: set[str] = set()
    for suffix, flavors, create_delay, delete_delay in raw:
        if suffix in seen:
            continue
        seen.add(suffix)
        if on_success == c.ON_SUCCESS_REMOVE_OTHER:
            target_ok = False
        elif on_success == c.ON_SUCCESS_REMOVE_BELOW_TARGET:
            target_ok = target is not None and reaches_target(flavors, target, groups)
        else:
            target_ok = True
        checks = tuple(
            sorted(name for name, on in check_rules.items() if not on or set(on).intersection(flavors))
        )
        options.append(
            OptionSpec(suffix, len(options), flavors, create_delay, delete_delay, target_ok, checks)
        )
    return ConcurrentConfig(on_success, target, tuple(options))
