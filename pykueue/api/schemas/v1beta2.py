"""``kueue.x-k8s.io/v1beta2``: each kind's v1beta2 schema as the named edits of its v1beta1 schema.

The per-kind modules describe v1beta1, the version the controller and the webhook read and write
(docs/design/api-versions.md). Kueue's v1beta2 (``apis/kueue/v1beta2`` in kubernetes-sigs/kueue)
is v1beta1 with a handful of renames, moves, removals and tighter limits; writing v1beta2 as that
list keeps one source of truth: every field not named here is the very same schema object in both
versions, so a fix to a v1beta1 field reaches v1beta2 too. :func:`v1beta2_schema` applies the
edits; the CRD generator emits both versions from it, and the parity test compares each version
with Kueue's own CRD.

The conversion between the versions (:mod:`pykueue.api.conversion`) is the data counterpart of
these edits: a field renamed or moved here is renamed or moved there.

Paths are dotted property names with ``[]`` for list items (``spec.podSets[].topologyRequest``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pykueue.api.dsl import DNS1123_SUBDOMAIN, Rule, Schema, array, integer, obj, string, timestamp
from pykueue.api.kindinfo import KindInfo, PrinterColumn

V1BETA2 = "v1beta2"
DEPRECATION_WARNING = "This version is deprecated. Use v1beta2 instead."
# Kueue v0.19.2 deprecates v1beta1 of every kind but MultiKueueConfig.
NOT_DEPRECATED_IN_V1BETA1 = frozenset({"MultiKueueConfig"})


def _node(schema: Schema, path: str) -> Schema:
    """The sub-schema at ``path`` (``a.b[].c``)."""
    node = schema
    for step in path.split("."):
        many = step.endswith("[]")
        name = step[:-2] if many else step
        if name:
            node = node["properties"][name]
        if many:
            node = node["items"]
    return node


def _parent(schema: Schema, path: str) -> tuple[Schema, str]:
    head, _, name = path.rpartition(".")
    return (_node(schema, head) if head else schema), name


@dataclass(frozen=True)
class Drop:
    """A field v1beta2 no longer has (its value travels in the conversion annotation)."""

    path: str

    def apply(self, schema: Schema) -> None:
        parent, name = _parent(schema, self.path)
        del parent["properties"][name]
        if name in parent.get("required", []):
            parent["required"] = [r for r in parent["required"] if r != name]
            if not parent["required"]:
                del parent["required"]


@dataclass(frozen=True)
class Put:
    """A field v1beta2 adds (or whose whole schema it replaces)."""

    path: str
    schema: Schema

    def apply(self, schema: Schema) -> None:
        parent, name = _parent(schema, self.path)
        parent["properties"][name] = copy.deepcopy(self.schema)


@dataclass(frozen=True)
class Rename:
    """A field v1beta2 spells differently; its schema is unchanged."""

    path: str
    new_name: str

    def apply(self, schema: Schema) -> None:
        parent, name = _parent(schema, self.path)
        parent["properties"] = {
            (self.new_name if key == name else key): value for key, value in parent["properties"].items()
        }
        if name in parent.get("required", []):
            parent["required"] = [self.new_name if r == name else r for r in parent["required"]]


@dataclass(frozen=True)
class Facets:
    """Schema keywords v1beta2 sets differently (``None`` removes the keyword)."""

    path: str
    values: dict[str, Any] = field(default_factory=dict)

    def apply(self, schema: Schema) -> None:
        node = _node(schema, self.path) if self.path else schema
        for key, value in self.values.items():
            if value is None:
                node.pop(key, None)
            else:
                node[key] = copy.deepcopy(value)


def _rules(rules: list[Rule]) -> list[dict[str, str]]:
    return [r.to_json() for r in rules]


Edit = Drop | Put | Rename | Facets

# --- ClusterQueue ---------------------------------------------------------------------------------


def _no_borrowing_limit_without_cohort_name(spec: dict[str, Any]) -> bool:
    if spec.get("cohortName"):
        return True
    return all(
        "borrowingLimit" not in quota
        for group in spec.get("resourceGroups", [])
        for flavor in group.get("flavors", [])
        for quota in flavor.get("resources", [])
    )


def _not_both_policies(spec: dict[str, Any]) -> bool:
    return not ("concurrentAdmission" in spec and "concurrentAdmissionPolicy" in spec)


BORROWING_LIMIT_NEEDS_COHORT_NAME = Rule(
    cel="!has(self.cohortName) && has(self.resourceGroups) ? "
    "self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
    message="borrowingLimit must be nil when cohort is empty",
    check=_no_borrowing_limit_without_cohort_name,
)
# pykueue's own rule: Kueue's policy and pykueue's concurrentAdmission describe the same thing two
# ways (pykueue.api.concurrent_policy), so a queue may carry one of them.
ONE_CONCURRENT_ADMISSION_POLICY = Rule(
    cel="!(has(self.concurrentAdmission) && has(self.concurrentAdmissionPolicy))",
    message="spec.concurrentAdmission and spec.concurrentAdmissionPolicy may not be set together",
    check=_not_both_policies,
)

def _last_acceptable_needs_try_preferred(migration: dict[str, Any]) -> bool:
    constraints = migration.get("constraints") or {}
    return "lastAcceptableFlavorName" not in constraints or migration.get("mode") == "TryPreferredFlavors"


CONCURRENT_ADMISSION_POLICY = obj(
    "Kueue's Concurrent Admission: a workload pursues several flavors at once and may migrate to "
    "a more preferred one once admitted. pykueue runs it as the spec.concurrentAdmission policy it "
    "corresponds to (docs/design/api-versions.md).",
    {
        "migration": obj(
            "Whether and how far an admitted workload may migrate to a more preferred flavor.",
            {
                "mode": string(
                    "TryPreferredFlavors: keep trying more preferred flavors after admission; "
                    "RetainFirstAdmission: stay on the first flavor admitted.",
                    enum=["TryPreferredFlavors", "RetainFirstAdmission"],
                    max_length=253,
                ),
                "constraints": obj(
                    "Limits of the migration.",
                    {
                        "lastAcceptableFlavorName": string(
                            "The least preferred flavor (in the ClusterQueue's flavor order) still "
                            "worth trying; only with TryPreferredFlavors.",
                            max_length=253,
                            pattern=DNS1123_SUBDOMAIN,
                        )
                    },
                ),
            },
            required=["mode"],
            # pykueue's own rule (Kueue's webhook has it): every accepted policy maps to a
            # concurrentAdmission (pykueue.api.concurrent_policy), none is silently dropped.
            rules=[
                Rule(
                    cel="!has(self.constraints) || !has(self.constraints.lastAcceptableFlavorName) || "
                    "self.mode == 'TryPreferredFlavors'",
                    message="lastAcceptableFlavorName can only be used with mode TryPreferredFlavors",
                    check=_last_acceptable_needs_try_preferred,
                )
            ],
        )
    },
    required=["migration"],
)

CLUSTER_QUEUE: list[Edit] = [
    Rename("spec.cohort", "cohortName"),
    Facets("spec", {"x-kubernetes-validations": _rules([BORROWING_LIMIT_NEEDS_COHORT_NAME, ONE_CONCURRENT_ADMISSION_POLICY])}),
    Drop("spec.admissionChecks"),
    Facets("spec.admissionChecksStrategy", {"required": ["admissionChecks"]}),
    Facets(
        "spec.admissionChecksStrategy.admissionChecks",
        {"minItems": 1, "maxItems": 64, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    ),
    Facets("spec.admissionChecksStrategy.admissionChecks[].name", {"minLength": 1}),
    Facets("spec.admissionChecksStrategy.admissionChecks[].onFlavors", {"maxItems": 64, "x-kubernetes-list-type": "set"}),
    Facets("spec.admissionScope.admissionMode", {"enum": ["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"]}),
    Facets("spec.flavorFungibility.whenCanBorrow", {"enum": ["MayStopSearch", "TryNextFlavor"]}),
    Facets("spec.flavorFungibility.whenCanPreempt", {"enum": ["MayStopSearch", "TryNextFlavor"]}),
    Facets("spec.resourceGroups[].coveredResources", {"x-kubernetes-list-type": "atomic"}),
    Put("spec.concurrentAdmissionPolicy", CONCURRENT_ADMISSION_POLICY),
    Facets("status.conditions", {"maxItems": 16}),
    Drop("status.fairSharing.admissionFairSharingStatus"),
    Drop("status.pendingWorkloadsStatus"),
]


def _cluster_queue_columns(columns: tuple[PrinterColumn, ...]) -> tuple[PrinterColumn, ...]:
    return tuple(
        PrinterColumn(col.name, ".spec.cohortName", col.type, col.priority, col.description, col.format)
        if col.json_path == ".spec.cohort"
        else col
        for col in columns
    )


COHORT: list[Edit] = [
    Facets("spec.resourceGroups[].coveredResources", {"x-kubernetes-list-type": "atomic"}),
    Drop("status.fairSharing.admissionFairSharingStatus"),
]

LOCAL_QUEUE: list[Edit] = [
    Facets("status.conditions", {"maxItems": 16}),
    Rename("status.flavorUsage", "flavorsUsage"),
    Drop("status.flavors"),
]

# --- Workload ---------------------------------------------------------------------------------------

_RESERVED = "oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')"
_WAS_RESERVED = f"(has(oldSelf.status) && has(oldSelf.status.conditions) && {_RESERVED}"
_BOTH_REFS = "has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)"
PRIORITY_CLASS_REF_RULES = [
    Rule(
        cel=f"{_WAS_RESERVED}) ? (!has(oldSelf.spec.priorityClassRef) && !has(self.spec.priorityClassRef)) "
        "|| (has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) : true",
        message="priorityClassRef is immutable while workload quota reserved",
    ),
    Rule(
        cel=f"{_WAS_RESERVED} && {_BOTH_REFS}) ? oldSelf.spec.priorityClassRef.group == self.spec.priorityClassRef.group : true",
        message="priorityClassRef.group is immutable while workload quota reserved",
    ),
    Rule(
        cel=f"{_WAS_RESERVED} && {_BOTH_REFS}) ? oldSelf.spec.priorityClassRef.kind == self.spec.priorityClassRef.kind : true",
        message="priorityClassRef.kind is immutable while workload quota reserved",
    ),
    Rule(
        cel=f"{_WAS_RESERVED} && {_BOTH_REFS} && self.spec.priorityClassRef.group == 'scheduling.k8s.io' && "
        "self.spec.priorityClassRef.kind == 'PriorityClass') ? "
        "oldSelf.spec.priorityClassRef.name == self.spec.priorityClassRef.name : true",
        message="priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass while workload quota reserved",
    ),
]
# The two v1beta1 rules on priorityClassName/priorityClassSource that v1beta2 replaces.
_V1BETA1_PRIORITY_MESSAGES = frozenset(
    {
        "priorityClassName is immutable while workload quota reserved and priorityClassSource is not equal to "
        "kueue.x-k8s.io/workloadpriorityclass",
        "priorityClassSource is immutable while workload quota reserved",
    }
)


def _priority_with_ref(spec: dict[str, Any]) -> bool:
    return "priorityClassRef" not in spec or "priority" in spec


def _ref_kind_matches(group: str, kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda ref: ref.get("group") != group or ref.get("kind") == kind


PRIORITY_CLASS_REF = obj(
    "The priority class the workload's priority comes from: a kueue.x-k8s.io WorkloadPriorityClass "
    "or a scheduling.k8s.io PriorityClass (v1beta1: priorityClassName and priorityClassSource).",
    {
        "group": string("API group of the class.", enum=["kueue.x-k8s.io", "scheduling.k8s.io"]),
        "kind": string("Kind of the class.", enum=["WorkloadPriorityClass", "PriorityClass"]),
        "name": string("Name of the class.", min_length=1, max_length=253, pattern=DNS1123_SUBDOMAIN),
    },
    required=["group", "kind", "name"],
    rules=[
        Rule(
            cel="(self.group == 'scheduling.k8s.io') ? self.kind == 'PriorityClass' : true",
            message="only the PriorityClass kind is allowed for the scheduling.k8s.io group",
            check=_ref_kind_matches("scheduling.k8s.io", "PriorityClass"),
        ),
        Rule(
            cel="(self.group == 'kueue.x-k8s.io') ? self.kind == 'WorkloadPriorityClass' : true",
            message="only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group",
            check=_ref_kind_matches("kueue.x-k8s.io", "WorkloadPriorityClass"),
        ),
    ],
)

_GATE_NAME = string("Name of the gate.", min_length=1, max_length=63)
PREEMPTION_GATES = array(
    "Gates that must all be open before the workload may preempt others (Kueue's preemption gates; "
    "accepted and kept, not acted on by pykueue).",
    obj("One gate.", {"name": _GATE_NAME}, required=["name"]),
    max_items=8,
    list_type="map",
    map_keys=["name"],
)
PREEMPTION_GATE_STATES = array(
    "The state of each preemption gate.",
    obj(
        "One gate's state.",
        {
            "name": _GATE_NAME,
            "position": string("Open or Closed.", enum=["Open", "Closed"]),
            "lastTransitionTime": timestamp("When the gate last changed position."),
        },
        required=["name", "position", "lastTransitionTime"],
    ),
    max_items=8,
    list_type="map",
    map_keys=["name"],
)
SLICE_TOPOLOGY_CONSTRAINTS = array(
    "Slice constraints per topology level (Kueue's topology-aware scheduling; accepted and kept).",
    obj(
        "One constraint.",
        {
            "topology": string("The topology level.", min_length=1, max_length=63),
            "size": integer("Pods per slice at that level.", minimum=1),
        },
        required=["topology", "size"],
    ),
    max_items=3,
    list_type="atomic",
)


def _one_of(a: str, b: str) -> str:
    return f"exactly one of the fields in [{a} {b}] must be set"


def _exactly_one(a: str, b: str) -> Callable[[dict[str, Any]], bool]:
    return lambda value: (a in value) != (b in value)


_TOPOLOGY_VALUE = string("A domain value.", max_length=63)
TOPOLOGY_SLICES = array(
    "The assigned domains in Kueue's compact v1beta2 form: slices of domains sharing a pod count "
    "and a value per level (v1beta1: domains, one value list per domain).",
    obj(
        "A run of domains.",
        {
            "domainCount": integer("How many domains this slice holds.", minimum=1),
            "podCounts": obj(
                "Pods per domain: one count for all, or one per domain.",
                {
                    "universal": integer("The pod count of every domain.", minimum=1),
                    "individual": array(
                        "The pod count of each domain.",
                        integer("A pod count.", minimum=1),
                        min_items=1,
                        max_items=100000,
                        list_type="atomic",
                    ),
                },
                rules=[
                    Rule(
                        cel="[has(self.universal),has(self.individual)].filter(x,x==true).size() == 1",
                        message=_one_of("universal", "individual"),
                        check=_exactly_one("universal", "individual"),
                    )
                ],
            ),
            "valuesPerLevel": array(
                "The domains' values at each level, in the order of levels.",
                obj(
                    "The values at one level: one for all domains, or one per domain.",
                    {
                        "universal": _TOPOLOGY_VALUE,
                        "individual": obj(
                            "One value per domain, as prefix + root + suffix.",
                            {
                                "prefix": _TOPOLOGY_VALUE,
                                "suffix": _TOPOLOGY_VALUE,
                                "roots": array(
                                    "The varying part of each domain's value.",
                                    _TOPOLOGY_VALUE,
                                    min_items=1,
                                    max_items=100000,
                                    list_type="atomic",
                                ),
                            },
                            required=["roots"],
                        ),
                    },
                    rules=[
                        Rule(
                            cel="has(self.universal) != has(self.individual)",
                            message=_one_of("universal", "individual"),
                            check=_exactly_one("universal", "individual"),
                        )
                    ],
                ),
                min_items=1,
                max_items=16,
                list_type="atomic",
            ),
        },
        required=["domainCount", "podCounts", "valuesPerLevel"],
        rules=[
            Rule(
                cel="!has(self.podCounts.individual) || size(self.podCounts.individual) == self.domainCount",
                message="podCounts.individual must have length equal to domainCount",
            ),
            Rule(
                cel="self.valuesPerLevel.all(x, !has(x.individual) || size(x.individual.roots) == self.domainCount)",
                message="valuesPerLevel.individual, if set, must have roots of length equal to domainCount of this "
                "TopologyAssignmentSlice",
            ),
        ],
    ),
    max_items=1000,
    list_type="atomic",
)
TOPOLOGY_LEVELS_RULE = Rule(
    cel="self.slices.all(x, size(x.valuesPerLevel) == size(self.levels))",
    message="valuesPerLevel must have the same length as the number of levels in this TopologyAssignment",
)

_TOPOLOGY_ASSIGNMENT = "status.admission.podSetAssignments[].topologyAssignment"
WORKLOAD: list[Edit] = [
    Facets("spec", {"x-kubernetes-validations": _rules([Rule(
        cel="!has(self.priorityClassRef) || has(self.priority)",
        message="priority should not be nil when priorityClassRef is set",
        check=_priority_with_ref,
    )]), "required": None}),
    Drop("spec.priorityClassName"),
    Drop("spec.priorityClassSource"),
    Put("spec.priorityClassRef", PRIORITY_CLASS_REF),
    Put("spec.preemptionGates", PREEMPTION_GATES),
    Facets("spec.podSets[]", {"required": ["template"]}),
    Facets("spec.podSets[].topologyRequest.required", {"maxLength": 63}),
    Facets("spec.podSets[].topologyRequest.preferred", {"maxLength": 63}),
    Facets("spec.podSets[].topologyRequest.podSetSliceRequiredTopology", {"maxLength": 63}),
    Facets("spec.podSets[].topologyRequest.podIndexLabel", {"maxLength": 317}),
    Facets("spec.podSets[].topologyRequest.subGroupIndexLabel", {"maxLength": 317}),
    Facets("spec.podSets[].topologyRequest.podSetGroupName", {"maxLength": 256}),
    Put("spec.podSets[].topologyRequest.podsetSliceRequiredTopologyConstraints", SLICE_TOPOLOGY_CONSTRAINTS),
    Rename("status.accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds"),
    Facets("status.admission", {"required": None}),
    Facets("status.admission.podSetAssignments[]", {"required": None}),
    Facets("status.admission.podSetAssignments[].delayedTopologyRequest", {"maxLength": 7, "enum": ["Pending", "Ready"]}),
    Drop(f"{_TOPOLOGY_ASSIGNMENT}.domains"),
    Put(f"{_TOPOLOGY_ASSIGNMENT}.slices", TOPOLOGY_SLICES),
    Facets(_TOPOLOGY_ASSIGNMENT, {"required": ["levels", "slices"], "x-kubernetes-validations": _rules([TOPOLOGY_LEVELS_RULE])}),
    Facets(f"{_TOPOLOGY_ASSIGNMENT}.levels[]", {"maxLength": 317}),
    Facets("status.admissionChecks[].name", {"minLength": 1}),
    Facets("status.admissionChecks[].podSetUpdates[].tolerations", {"x-kubernetes-list-type": "atomic"}),
    Facets("status.clusterName", {"maxLength": 256}),
    Facets("status.conditions", {"maxItems": 16}),
    Facets("status.nominatedClusterNames[]", {"maxLength": 256}),
    Put("status.preemptionGates", PREEMPTION_GATE_STATES),
    Facets("status.schedulingStats.evictions", {"maxItems": 256}),
    Facets("status.unhealthyNodes", {"maxItems": 8, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}),
    Facets("status.unhealthyNodes[].name", {"maxLength": 63}),
]


def _workload_rules(rules: list[dict[str, str]]) -> list[dict[str, str]]:
    kept = [r for r in rules if r["message"] not in _V1BETA1_PRIORITY_MESSAGES]
    return kept + _rules(PRIORITY_CLASS_REF_RULES)


# --- the other kinds ------------------------------------------------------------------------------

ADMISSION_CHECK: list[Edit] = [
    Facets("spec.controllerName", {"minLength": 1, "maxLength": 253}),
    Facets("spec.parameters.apiGroup", {"minLength": 1}),
    Facets("spec.parameters.kind", {"minLength": 1}),
    Facets("spec.parameters.name", {"minLength": 1}),
    Drop("spec.retryDelayMinutes"),
    Facets("status.conditions", {"maxItems": 16}),
]

WORKLOAD_PRIORITY_CLASS: list[Edit] = [Facets("description", {"maxLength": 2048})]

PROVISIONING_REQUEST_CONFIG: list[Edit] = [
    Facets("spec.provisioningClassName", {"minLength": 1}),
    Facets("spec.podSetUpdates.nodeSelector", {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["key"]}),
]


def _unique(values: list[Any]) -> bool:
    return len(values) == len(set(map(str, values)))


MULTIKUEUE_CONFIG: list[Edit] = [
    Facets(
        "spec.clusters",
        {
            "x-kubernetes-list-type": "atomic",
            "x-kubernetes-validations": _rules(
                [Rule(cel="size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0", message="must be unique", check=_unique)]
            ),
        },
    ),
    Facets("spec.clusters[]", {"maxLength": 256}),
    Put(
        "spec.quotaManagement",
        string(
            "Whose quota the worker clusters use: Manual (their own queues) or Automated "
            "(accepted and kept; pykueue dispatches as with Manual).",
            enum=["Manual", "Automated"],
        ),
    ),
]


def _multikueue_cluster(schema: Schema) -> None:
    """v1beta2 moves ``spec.kubeConfig`` and ``spec.clusterProfileRef`` under ``spec.clusterSource``."""
    spec = _node(schema, "spec")
    source = obj(
        "Where the worker cluster's credentials come from: a kubeconfig or a ClusterProfile.",
        {"kubeConfig": spec["properties"].pop("kubeConfig"), "clusterProfileRef": spec["properties"].pop("clusterProfileRef")},
        rules=[
            Rule(
                cel="[has(self.kubeConfig),has(self.clusterProfileRef)].filter(x,x==true).size() == 1",
                message=_one_of("kubeConfig", "clusterProfileRef"),
                check=_exactly_one("kubeConfig", "clusterProfileRef"),
            )
        ],
    )
    spec["properties"] = {"clusterSource": source, **spec["properties"]}
    spec["required"] = ["clusterSource"]


MULTIKUEUE_CLUSTER: list[Edit] = [
    Facets("spec.clusterSource.kubeConfig", {"required": ["location"]}),
    Facets("spec.clusterSource.kubeConfig.location", {"minLength": 1, "maxLength": 256}),
    Facets("status.conditions", {"maxItems": 16}),
]


@dataclass(frozen=True)
class VersionChanges:
    """What a kind's v1beta2 changes: schema edits, an optional structural rewrite, columns, object rules."""

    edits: list[Edit] = field(default_factory=list)
    rewrite: Callable[[Schema], None] | None = None
    columns: Callable[[tuple[PrinterColumn, ...]], tuple[PrinterColumn, ...]] | None = None
    object_rules: Callable[[list[dict[str, str]]], list[dict[str, str]]] | None = None


CHANGES: dict[str, VersionChanges] = {
    "ClusterQueue": VersionChanges(CLUSTER_QUEUE, columns=_cluster_queue_columns),
    "Cohort": VersionChanges(COHORT),
    "LocalQueue": VersionChanges(LOCAL_QUEUE),
    "Workload": VersionChanges(WORKLOAD, object_rules=_workload_rules),
    "AdmissionCheck": VersionChanges(ADMISSION_CHECK),
    "WorkloadPriorityClass": VersionChanges(WORKLOAD_PRIORITY_CLASS),
    "ProvisioningRequestConfig": VersionChanges(PROVISIONING_REQUEST_CONFIG),
    "MultiKueueConfig": VersionChanges(MULTIKUEUE_CONFIG),
    "MultiKueueCluster": VersionChanges(MULTIKUEUE_CLUSTER, rewrite=_multikueue_cluster),
}


def v1beta2_schema(info: KindInfo, v1beta1: Schema) -> Schema:
    """The v1beta2 whole-object schema of ``info``'s kind, from its v1beta1 schema (left untouched)."""
    schema = copy.deepcopy(v1beta1)
    changes = CHANGES.get(info.kind, VersionChanges())
    if changes.rewrite:
        changes.rewrite(schema)
    for edit in changes.edits:
        edit.apply(schema)
    if changes.object_rules:
        rules = changes.object_rules(schema.get("x-kubernetes-validations", []))
        if rules:
            schema["x-kubernetes-validations"] = rules
    return schema


def v1beta2_columns(info: KindInfo) -> tuple[PrinterColumn, ...]:
    changes = CHANGES.get(info.kind, VersionChanges())
    return changes.columns(info.printer_columns) if changes.columns else info.printer_columns
