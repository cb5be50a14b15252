"""Cohort (cluster-scoped): a node of the hierarchical cohort tree with optional shared quota."""

from __future__ import annotations

from typing import Any

from pykueue.api.dsl import Rule, obj
from pykueue.api.kindinfo import KindInfo
from pykueue.api.schemas.clusterqueue import resource_groups
from pykueue.api.schemas.common import FAIR_SHARING, FAIR_SHARING_STATUS, cohort_ref


def _no_limits_without_parent(spec: dict[str, Any]) -> bool:
    if spec.get("parentName"):
        return True
    return not any(
        "borrowingLimit" in quota or "lendingLimit" in quota
        for group in spec.get("resourceGroups", [])
        for flavor in group.get("flavors", [])
        for quota in flavor.get("resources", [])
    )


SPEC = obj(
    "The cohort's parent, its own quota and fair sharing weight.",
    {
        "parentName": cohort_ref(
            "The parent cohort. Unset makes this cohort the root of a tree; a parent that does not "
            "exist is an implicit cohort without quota. Cycles disable every member until fixed."
        ),
        "resourceGroups": resource_groups(
            "Extra quota owned by the cohort and shared by its members, on top of their own. "
            "borrowingLimit and lendingLimit limit what the cohort borrows from or lends to its "
            "parent and must be unset without a parent."
        ),
        "fairSharing": FAIR_SHARING,
    },
    rules=[
        Rule(
            cel="(has(self.parentName) && self.parentName != '') || !has(self.resourceGroups) || "
            "self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit) && "
            "!has(r.lendingLimit))))",
            message="borrowingLimit and lendingLimit must be nil when parent is empty",
            check=_no_limits_without_parent,
        )
    ],
)


STATUS = obj("The observed state of the cohort.", {"fairSharing": FAIR_SHARING_STATUS})

KIND = KindInfo(
    kind="Cohort",
    plural="cohorts",
    description="Cohort is the Schema for the cohorts API: a group of ClusterQueues (and child "
    "cohorts) that borrow each other's unused quota.",
    properties={"spec": SPEC, "status": STATUS},
    short_names=("co",),
    status_subresource=True,
)
