"""ClusterQueue (cluster-scoped): quotas per flavor, cohort membership, preemption, checks.

v1beta1 spelling: ``spec.cohort`` and the plain ``spec.admissionChecks`` list.  pykueue's
extensions: ``spec.concurrentAdmission`` (docs/design/concurrent-admission.md) and
``spec.flavorFungibility.fallbackStrategy`` (docs/design/api.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pykueue.api import constants as c
from pykueue.api.dsl import (
    DNS1123_LABEL,
    DURATION_PATTERN,
    Rule,
    Schema,
    array,
    duration,
    integer,
    obj,
    string,
)
from pykueue.api.durations import parse_duration
from pykueue.api.kindinfo import KindInfo, PrinterColumn
from pykueue.api.schemas.common import (
    FAIR_SHARING,
    FAIR_SHARING_STATUS,
    LABEL_SELECTOR,
    STOP_POLICY,
    admission_check_ref,
    cohort_ref,
    conditions,
    flavor_ref,
    non_negative_quantity,
    quantity,
    resource_name,
)

# --- resource groups (shared with Cohort) ------------------------------------------------------


def _same_resource_count(group: dict[str, Any]) -> bool:
    covered = len(group.get("coveredResources", []))
    return all(len(f.get("resources", [])) == covered for f in group.get("flavors", []))


RESOURCE_GROUP_RULE = Rule(
    cel="self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
    message="flavors must have the same number of resources as the coveredResources",
    check=_same_resource_count,
)

RESOURCE_QUOTA = obj(
    "The quota of one resource in one flavor.",
    {
        "name": resource_name("Name of the resource, e.g. cpu, memory, nvidia.com/gpu."),
        "nominalQuota": non_negative_quantity(
            "The quantity of this resource available to admitted workloads at a given time. For a "
            "ClusterQueue in a cohort this is also the amount it lends to the cohort (minus "
            "lendingLimit). Must be non-negative."
        ),
        "borrowingLimit": non_negative_quantity(
            "The maximum amount of this resource the queue (or cohort) may borrow from its cohort "
            "above nominalQuota. Unset means no limit. Must be unset when there is no cohort."
        ),
        "lendingLimit": non_negative_quantity(
            "The maximum amount of the unused nominal quota the queue may lend to its cohort. Unset "
            "means everything is lendable. Must be unset when there is no cohort and, for "
            "ClusterQueues, at most nominalQuota."
        ),
    },
    required=["name", "nominalQuota"],
)

FLAVOR_QUOTAS = obj(
    "The quotas of one ResourceFlavor, one entry per covered resource in the same order.",
    {
        "name": flavor_ref(
            "Name of a ResourceFlavor. A flavor that does not exist makes the ClusterQueue inactive."
        ),
        "resources": array(
            "The quota of each covered resource in this flavor, in coveredResources order.",
            RESOURCE_QUOTA,
            min_items=1,
            max_items=64,
            list_type="map",
            map_keys=["name"],
        ),
    },
    required=["name", "resources"],
)

RESOURCE_GROUP = obj(
    "A set of resources that are assigned one flavor together, with the flavors to try in order.",
    {
        "coveredResources": array(
            "The resources covered by the flavors of this group; a resource may appear in only "
            "one group.",
            resource_name("A resource name."),
            min_items=1,
            max_items=64,
        ),
        "flavors": array(
            "The flavors of this group, in order of preference: the first flavor that fits is "
            "assigned (subject to flavorFungibility).",
            FLAVOR_QUOTAS,
            min_items=1,
            max_items=64,
            list_type="map",
            map_keys=["name"],
        ),
    },
    required=["coveredResources", "flavors"],
    rules=[RESOURCE_GROUP_RULE],
)


def resource_groups(description: str) -> Schema:
    return array(description, RESOURCE_GROUP, max_items=16, list_type="atomic")


# --- flavor fungibility with fallbacks --------------------------------------------------------

_DURATION = re.compile(DURATION_PATTERN)


def _positive_duration(rule: dict[str, Any]) -> bool:
    if "timeout" not in rule:
        return True
    text = str(rule["timeout"])
    if not _DURATION.match(text):
        return True  # the pattern reports malformed (and negative) durations
    return parse_duration(text) > 0


FALLBACK_RULE = obj(
    "How long a flavor may be tried, or which admission-check outcome ends its try, before the "
    "workload falls back to its other flavors.",
    {
        "name": string(
            "The ResourceFlavor this rule applies to; '*' applies it to every flavor of the "
            "ClusterQueue that has no rule of its own.",
            max_length=253,
            pattern=r"^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$",
        ),
        "trigger": string(
            "What ends the flavor's try: TimeoutForPodsReadyExceeded (the pods were not ready within "
            "the timeout measured from the flavor's assignment) or AdmissionCheckRejected (an "
            "admission check for this flavor rejected the workload).",
            enum=[c.TRIGGER_PODS_READY_TIMEOUT, c.TRIGGER_ADMISSION_CHECK_REJECTED],
            default=c.TRIGGER_PODS_READY_TIMEOUT,
        ),
        "timeout": duration(
            "For TimeoutForPodsReadyExceeded: the time from the flavor's assignment (quota "
            "reservation) until the pods must be ready, as a duration such as 10m or 1h30m. "
            "Mutually exclusive with timeoutMinutes."
        ),
        "timeoutMinutes": integer(
            "For TimeoutForPodsReadyExceeded: the same timeout in whole minutes. Mutually exclusive "
            "with timeout.",
            minimum=1,
        ),
    },
    required=["name"],
    rules=[
        Rule(
            cel="!(has(self.timeout) && has(self.timeoutMinutes))",
            message="timeout and timeoutMinutes are mutually exclusive",
            check=lambda r: not ("timeout" in r and "timeoutMinutes" in r),
        ),
        Rule(
            cel="!has(self.timeout) || duration(self.timeout) > duration('0s')",
            message="timeout must be positive",
            check=_positive_duration,
            field_path=".timeout",
        ),
    ],
)

FALLBACK_STRATEGY = obj(
    "ResourceFlavor fallbacks: per-flavor limits after which the scheduler stops assigning that "
    "flavor to the workload and tries its other flavors.",
    {
        "failurePolicy": string(
            "What happens once every flavor has been tried and given up: DeactivateWorkload sets "
            "spec.active=false; RetryAllFlavors clears the workload's flavorAssignmentHistory and "
            "starts over.",
            enum=[c.FALLBACK_DEACTIVATE, c.FALLBACK_RETRY_ALL],
            default=c.FALLBACK_DEACTIVATE,
        ),
        "rules": array(
            "Fallback rules, at most one per (flavor, trigger). Their order does not change the "
            "order in which flavors are tried.",
            FALLBACK_RULE,
            max_items=64,
            list_type="map",
            map_keys=["name", "trigger"],
        ),
    },
)



def _preference_allowed(ff: dict[str, Any]) -> bool:
    if "preference" not in ff:
        return True
    return (
        ff.get("whenCanBorrow", c.FUNGIBILITY_MAY_STOP_SEARCH) == c.FUNGIBILITY_TRY_NEXT_FLAVOR
        and ff.get("whenCanPreempt", c.FUNGIBILITY_TRY_NEXT_FLAVOR) == c.FUNGIBILITY_TRY_NEXT_FLAVOR
    )


FLAVOR_FUNGIBILITY = obj(
    "How the scheduler searches the flavors of a resource group when the first one does not fit.",
    {
        "whenCanBorrow": string(
            "When a flavor fits only by borrowing: MayStopSearch (or the deprecated Borrow) takes "
            "it; TryNextFlavor keeps looking for a flavor that fits without borrowing.",
            enum=[c.FUNGIBILITY_BORROW, c.FUNGIBILITY_MAY_STOP_SEARCH, c.FUNGIBILITY_TRY_NEXT_FLAVOR],
            default=c.FUNGIBILITY_MAY_STOP_SEARCH,
        ),
        "whenCanPreempt": string(
            "When a flavor fits only by preempting: MayStopSearch (or the deprecated Preempt) "
            "preempts there; TryNextFlavor keeps looking for a flavor that fits without preemption.",
            enum=[c.FUNGIBILITY_PREEMPT, c.FUNGIBILITY_MAY_STOP_SEARCH, c.FUNGIBILITY_TRY_NEXT_FLAVOR],
            default=c.FUNGIBILITY_TRY_NEXT_FLAVOR,
        ),
        "preference": string(
            "Which of borrowing and preemption is preferred when every candidate flavor needs one of "
            "them. Only allowed when both policies are TryNextFlavor.",
            enum=["BorrowingOverPreemption", "PreemptionOverBorrowing"],
        ),
        "fallbackStrategy": FALLBACK_STRATEGY,
    },
    default={},
    rules=[
        Rule(
            cel="!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && "
            "self.whenCanPreempt == 'TryNextFlavor')",
            message="preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
            check=_preference_allowed,
        )
    ],
)

# --- preemption ----------------------------------------------------------------------------------


def _preemption_consistent(p: dict[str, Any]) -> bool:
    reclaim = p.get("reclaimWithinCohort", c.PREEMPT_NEVER)
    borrow = (p.get("borrowWithinCohort") or {}).get("policy", c.PREEMPT_NEVER)
    return not (reclaim == c.PREEMPT_NEVER and borrow != c.PREEMPT_NEVER)


PREEMPTION = obj(
    "Which workloads a pending workload of this ClusterQueue may preempt.",
    {
        "reclaimWithinCohort": string(
            "Whether a workload that fits in this queue's nominal quota may preempt workloads of "
            "other ClusterQueues in the cohort that borrow: Never, LowerPriority or Any.",
            enum=[c.PREEMPT_NEVER, c.PREEMPT_LOWER_PRIORITY, c.PREEMPT_ANY],
            default=c.PREEMPT_NEVER,
        ),
        "borrowWithinCohort": obj(
            "Whether a workload that needs to borrow may preempt workloads of other ClusterQueues "
            "in the cohort.",
            {
                "policy": string(
                    "Never (default) or LowerPriority.",
                    enum=[c.PREEMPT_NEVER, c.PREEMPT_LOWER_PRIORITY],
                    default=c.PREEMPT_NEVER,
                ),
                "maxPriorityThreshold": integer(
                    "Only workloads with a priority up to this value may be preempted while borrowing."
                ),
            },
            default={},
        ),
        "withinClusterQueue": string(
            "Whether a workload that does not fit may preempt admitted workloads of the same "
            "ClusterQueue: Never, LowerPriority or LowerOrNewerEqualPriority.",
            enum=[c.PREEMPT_NEVER, c.PREEMPT_LOWER_PRIORITY, c.PREEMPT_LOWER_OR_NEWER_EQUAL_PRIORITY],
            default=c.PREEMPT_NEVER,
        ),
    },
    default={},
    rules=[
        Rule(
            # Two spaces after the second && as in Kueue's CRD, so the rule text is Kueue's.
            cel="!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&  "
            "self.borrowWithinCohort.policy != 'Never')",
            message="reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
            check=_preemption_consistent,
        )
    ],
)

# --- concurrent admission ---------------------------------------------------------------------------


def _target_config_matches_policy(ca: dict[str, Any]) -> bool:
    wants = ca.get("onSuccess") == c.ON_SUCCESS_REMOVE_BELOW_TARGET
    return wants == ("removeBelowTargetConfig" in ca)


EXPLICIT_OPTION = obj(
    "One explicitly configured option: a set of flavors the option workload may be assigned.",
    {
        "name": string(
            "Name of the option, unique in the ClusterQueue; the option workload is named "
            "<workload>-option-<name>.",
            min_length=1,
            max_length=63,
            pattern=DNS1123_LABEL,
        ),
        "createDelaySeconds": integer(
            "How long after the parent workload's creation this option is created, so more "
            "preferred options get a head start.",
            minimum=0,
        ),
        "deleteDelaySeconds": integer(
            "How long after its creation this option is discarded (the migration window).",
            minimum=0,
        ),
        "allowedResourceFlavors": array(
            "The flavors of this ClusterQueue that the option's podSets may be assigned.",
            flavor_ref("Name of a ResourceFlavor of this ClusterQueue."),
            min_items=1,
            max_items=64,
            list_type="atomic",
        ),
    },
    required=["name", "allowedResourceFlavors"],
)

CONCURRENT_ADMISSION = obj(
    "Concurrent Admission: each workload becomes a parent that tries several flavor options at "
    "once as separate option workloads; one option holds quota at a time. Not supported with "
    "StrictFIFO.",
    {
        "onSuccess": string(
            "What happens to the other options once one is admitted: RemoveOther stops them all; "
            "RemoveLower stops the less preferred ones (more preferred ones keep trying and may "
            "migrate the workload); RemoveBelowTarget stops those below removeBelowTargetConfig."
            "targetResourceFlavor.",
            enum=[c.ON_SUCCESS_REMOVE_OTHER, c.ON_SUCCESS_REMOVE_LOWER, c.ON_SUCCESS_REMOVE_BELOW_TARGET],
        ),
        # Atomic, not a list-map keyed by name: the options are one ordered preference list owned
        # by the queue's admin (there is nothing for server-side apply to merge per entry), and
        # the webhook, not the apiserver, must answer duplicate names so users read the
        # webhook's `explicitOptions[1].name: Duplicate value: "spot"` rather than a dump of the whole item.
        "explicitOptions": array(
            "Explicit options in order of preference; names must be unique. When empty, one option "
            "per flavor of the ClusterQueue's single resource group is created, in flavor order.",
            EXPLICIT_OPTION,
            max_items=16,
            list_type="atomic",
        ),
        "removeBelowTargetConfig": obj(
            "Configuration of the RemoveBelowTarget policy (required with it, forbidden otherwise).",
            {
                "targetResourceFlavor": flavor_ref(
                    "Options for flavors less preferred than this one are stopped once an option is "
                    "admitted; options at or above it keep trying."
                ),
            },
            required=["targetResourceFlavor"],
        ),
    },
    required=["onSuccess"],
    rules=[
        Rule(
            cel="(self.onSuccess == 'RemoveBelowTarget') == has(self.removeBelowTargetConfig)",
            message="removeBelowTargetConfig is required when onSuccess is RemoveBelowTarget and "
            "forbidden otherwise",
            check=_target_config_matches_policy,
        )
    ],
)

# --- admission checks -------------------------------------------------------------------------------

ADMISSION_CHECKS_STRATEGY = obj(
    "Admission checks, optionally restricted to workloads assigned some flavors.",
    {
        "admissionChecks": array(
            "The checks a workload of this ClusterQueue must pass before it is admitted.",
            obj(
                "One admission check and the flavors it applies to.",
                {
                    "name": admission_check_ref("Name of the AdmissionCheck."),
                    "onFlavors": array(
                        "The flavors this check applies to; empty means all workloads of the queue.",
                        flavor_ref("Name of a flavor of this ClusterQueue."),
                    ),
                },
                required=["name"],
            ),
        ),
    },
)

# --- spec-level rules ------------------------------------------------------------------------------


def _has_cohort(spec: dict[str, Any]) -> bool:
    return bool(spec.get("cohort"))


def _no_limit_without_cohort(limit: str) -> Callable[[dict[str, Any]], bool]:
    def check(spec: dict[str, Any]) -> bool:
        if _has_cohort(spec):
            return True
        return all(
            limit not in quota
            for group in spec.get("resourceGroups", [])
            for flavor in group.get("flavors", [])
            for quota in flavor.get("resources", [])
        )

    return check


SPEC_RULES = [
    Rule(
        cel="!has(self.cohort) && has(self.resourceGroups) ? "
        "self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
        message="borrowingLimit must be nil when cohort is empty",
        check=_no_limit_without_cohort("borrowingLimit"),
    ),
]
# admissionChecks and admissionChecksStrategy are mutually exclusive: Kueue's CRD has no rule for
# it, the webhook (webhook/rules/clusterqueue.py) denies both at once.
# No CEL rule for "concurrentAdmission is not supported with StrictFIFO" on purpose: it is the
# webhook's rule (webhook/rules/concurrent.py, docs/design/concurrent-admission.md), and the
# apiserver runs CEL before validating webhooks, so a CEL twin would always answer first and the
# webhook's denial would never be seen.

SPEC = obj(
    "The desired state of the ClusterQueue: its quotas and admission policies.",
    {
        "resourceGroups": resource_groups(
            "Groups of resources with the flavors (and their quotas) that can serve them."
        ),
        "cohort": cohort_ref(
            "The cohort this ClusterQueue belongs to; queues in a cohort borrow each other's unused "
            "quota. It may name a Cohort object (hierarchical cohorts) or an implicit cohort. "
            "Empty means no borrowing or lending."
        ),
        "queueingStrategy": string(
            "How pending workloads are ordered: BestEffortFIFO (priority then creation time; a "
            "workload that does not fit does not block the ones behind it) or StrictFIFO (the head "
            "blocks the queue).",
            enum=[c.STRICT_FIFO, c.BEST_EFFORT_FIFO],
            default=c.BEST_EFFORT_FIFO,
        ),
        "namespaceSelector": LABEL_SELECTOR
        | {
            "description": "Which namespaces may submit workloads to this ClusterQueue through their "
            "LocalQueues. Unset means none; {} means all namespaces."
        },
        "flavorFungibility": FLAVOR_FUNGIBILITY,
        "preemption": PREEMPTION,
        "admissionChecks": array(
            "Names of AdmissionChecks every workload of this queue must pass (v1beta1 shorthand; "
            "mutually exclusive with admissionChecksStrategy).",
            admission_check_ref("Name of an AdmissionCheck."),
        ),
        "admissionChecksStrategy": ADMISSION_CHECKS_STRATEGY,
        "stopPolicy": STOP_POLICY,
        "fairSharing": FAIR_SHARING,
        "admissionScope": obj(
            "Admission fair sharing scope of this queue.",
            {
                "admissionMode": string(
                    "UsageBasedAdmissionFairSharing or NoAdmissionFairSharing.",
                )
            },
            required=["admissionMode"],
        ),
        "concurrentAdmission": CONCURRENT_ADMISSION,
    },
    rules=SPEC_RULES,
)

# --- status --------------------------------------------------------------------------------------


def flavor_usage(description: str, *, borrowed: bool = True) -> Schema:
    resource_fields: dict[str, Schema] = {
        "name": resource_name("Name of the resource."),
        "total": quantity("Total quota used of this resource in this flavor."),
    }
    if borrowed:
        resource_fields["borrowed"] = quantity("The part of total that is borrowed from the cohort.")
    return array(
        description,
        obj(
            "Usage of one flavor.",
            {
                "name": flavor_ref("Name of the flavor."),
                "resources": array(
                    "Usage per resource.",
                    obj("Usage of one resource.", resource_fields, required=["name"]),
                    max_items=64,
                    list_type="map",
                    map_keys=["name"],
                ),
            },
            required=["name", "resources"],
        ),
        max_items=64,
        list_type="map",
        map_keys=["name"],
    )


STATUS = obj(
    "The observed state of the ClusterQueue.",
    {
        "conditions": conditions("Conditions of the ClusterQueue; Active tells whether it admits workloads."),
        "flavorsReservation": flavor_usage("Quota reserved by workloads holding a reservation, per flavor."),
        "flavorsUsage": flavor_usage("Quota used by admitted workloads, per flavor."),
        "pendingWorkloads": integer("Number of workloads waiting for admission."),
        "reservingWorkloads": integer("Number of workloads holding a quota reservation."),
        "admittedWorkloads": integer("Number of admitted, unfinished workloads."),
        "pendingWorkloadsStatus": obj(
            "Deprecated (ineffective since Kueue v0.14): the head of the pending queue.",
            {
                "clusterQueuePendingWorkload": array(
                    "Pending workloads at the head of the queue.",
                    obj(
                        "A pending workload.",
                        {
                            "name": string("Name of the workload."),
                            "namespace": string("Namespace of the workload."),
                        },
                        required=["name", "namespace"],
                    ),
                    list_type="atomic",
                ),
                "lastChangeTime": {"type": "string", "format": "date-time", "description": "When the list changed."},
            },
            required=["lastChangeTime"],
        ),
        "fairSharing": FAIR_SHARING_STATUS,
    },
)

KIND = KindInfo(
    kind="ClusterQueue",
    plural="clusterqueues",
    description="ClusterQueue is the Schema for the clusterQueue API: a pool of quota that "
    "LocalQueues submit workloads to.",
    properties={"spec": SPEC, "status": STATUS},
    short_names=("cq",),
    status_subresource=True,
    printer_columns=(
        PrinterColumn("Cohort", ".spec.cohort", description="Cohort that this ClusterQueue belongs to"),
        PrinterColumn("Strategy", ".spec.queueingStrategy", priority=1,
                      description="The queueing strategy used to prioritize workloads"),
        PrinterColumn("Pending Workloads", ".status.pendingWorkloads", type="integer",
                      description="Number of pending workloads"),
        PrinterColumn("Admitted Workloads", ".status.admittedWorkloads", type="integer", priority=1,
                      description="Number of admitted workloads that haven't finished yet"),
    ),
)
