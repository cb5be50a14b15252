"""Cohort (cluster-scoped): a node of the hierarchical cohort tree with optional shared quota."""

from __future__ import annotations

from pykueue.api.dsl import obj
from pykueue.api.kindinfo import KindInfo
from pykueue.api.schemas.clusterqueue import resource_groups
from pykueue.api.schemas.common import FAIR_SHARING, FAIR_SHARING_STATUS, cohort_ref

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
    # Limits without a parent are the webhook's rule (webhook/rules/cohort_flavor.py), as in Kueue,
    # whose Cohort CRD has no CEL rule for them.
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
