"""Kueue's ``spec.concurrentAdmissionPolicy`` (v1beta2) as pykueue's ``spec.concurrentAdmission``.

Both describe one policy: a workload becomes a parent with an option per flavor of the queue, in
flavor order, and once one option is admitted the others are stopped or keep trying. Kueue spells
it as a migration mode; pykueue's controller runs the ``concurrentAdmission`` form
(docs/design/concurrent-admission.md). The mapping (docs/design/api-versions.md):

============================================================  =====================================
Kueue ``migration``                                           pykueue ``concurrentAdmission``
============================================================  =====================================
``mode: RetainFirstAdmission``                                ``onSuccess: RemoveOther``
``mode: TryPreferredFlavors``                                 ``onSuccess: RemoveLower``
``mode: TryPreferredFlavors``, ``lastAcceptableFlavorName X``  ``onSuccess: RemoveBelowTarget``, target ``X``
============================================================  =====================================

No explicit options: one option per flavor of the ClusterQueue's resource group, as Kueue creates
one variant per flavor. The conversion webhook applies the mapping when a v1beta2 object is stored
(:mod:`pykueue.api.conversion`), so the controller and the webhook's rules see only
``concurrentAdmission``; the reverse mapping gives a v1beta2 reader back the policy it wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api import constants as c

TRY_PREFERRED_FLAVORS = "TryPreferredFlavors"
RETAIN_FIRST_ADMISSION = "RetainFirstAdmission"


def to_concurrent_admission(policy: Mapping[str, Any]) -> dict[str, Any] | None:
    """pykueue's ``concurrentAdmission`` for Kueue's policy; None when the policy is not one Kueue defines."""
    migration = policy.get("migration")
    if not isinstance(migration, Mapping):
        return None
    mode = migration.get("mode")
    constraints = migration.get("constraints")
    last = constraints.get("lastAcceptableFlavorName") if isinstance(constraints, Mapping) else None
    if mode == RETAIN_FIRST_ADMISSION and last is None:
        return {"onSuccess": c.ON_SUCCESS_REMOVE_OTHER}
    if mode == TRY_PREFERRED_FLAVORS and last is None:
        return {"onSuccess": c.ON_SUCCESS_REMOVE_LOWER}
    if mode == TRY_PREFERRED_FLAVORS and isinstance(last, str) and last:
        return {"onSuccess": c.ON_SUCCESS_REMOVE_BELOW_TARGET, "removeBelowTargetConfig": {"targetResourceFlavor": last}}
    return None


def to_policy(concurrent_admission: Mapping[str, Any]) -> dict[str, Any] | None:
    """Kueue's policy for a ``concurrentAdmission`` it can express (no explicit options); None otherwise."""
    if concurrent_admission.get("explicitOptions") or set(concurrent_admission) - {"onSuccess", "removeBelowTargetConfig"}:
        return None
    on_success = concurrent_admission.get("onSuccess")
    if on_success == c.ON_SUCCESS_REMOVE_OTHER and "removeBelowTargetConfig" not in concurrent_admission:
        return {"migration": {"mode": RETAIN_FIRST_ADMISSION}}
    if on_success == c.ON_SUCCESS_REMOVE_LOWER and "removeBelowTargetConfig" not in concurrent_admission:
        return {"migration": {"mode": TRY_PREFERRED_FLAVORS}}
    target = concurrent_admission.get("removeBelowTargetConfig")
    if on_success == c.ON_SUCCESS_REMOVE_BELOW_TARGET and isinstance(target, Mapping):
        name = target.get("targetResourceFlavor")
        if isinstance(name, str) and name and set(target) == {"targetResourceFlavor"}:
            return {"migration": {"mode": TRY_PREFERRED_FLAVORS, "constraints": {"lastAcceptableFlavorName": name}}}
    return None
