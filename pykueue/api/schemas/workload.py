"""Workload (namespaced): the unit of admission, one per job, with its pod sets and admission state.

v1beta1 spelling: ``spec.priorityClassName`` + ``spec.priorityClassSource`` and the
``accumulatedPastExexcutionTimeSeconds`` typo.  Seed extensions: ``spec.workloadMode``,
``podSets[].allowedResourceFlavors`` and ``status.options`` (concurrent admission),
``status.flavorAssignmentHistory`` (ResourceFlavor fallbacks), ``status.nominatedClusterNames`` /
``status.clusterName`` (MultiKueue).
"""

from __future__ import annotations

from typing import Any

from pykueue.api import constants as c
from pykueue.api.dsl import Rule, array, boolean, integer, map_of, obj, string, timestamp
from pykueue.api.kindinfo import AGE_COLUMN, KindInfo, PrinterColumn
from pykueue.api.schemas.common import (
    admission_check_ref,
    cluster_queue_ref,
    conditions,
    flavor_ref,
    local_queue_name,
    pod_template,
    podset_ref,
    resource_list,
    tolerations,
)

# --- spec ----------------------------------------------------------------------------------------

TOPOLOGY_ASSIGNMENT = obj(
    "Topology-aware scheduling assignment of the pods: the topology levels and, per domain, how "
    "many pods are placed there.",
    {
        "levels": array(
            "The node labels of the topology levels, from the widest to the narrowest.",
            string("A node label key."),
            min_items=1,
            max_items=16,
            list_type="atomic",
        ),
        "domains": array(
            "The topology domains and the number of pods in each.",
            obj(
                "One topology domain.",
                {
                    "values": array(
                        "The values of the levels' labels identifying the domain.",
                        string("A label value."),
                        min_items=1,
                        max_items=16,
                        list_type="atomic",
                    ),
                    "count": integer("Number of pods in this domain.", minimum=1),
                },
                required=["count", "values"],
            ),
        ),
    },
    required=["domains", "levels"],
)

TOPOLOGY_REQUEST = obj(
    "Topology-aware scheduling request of the pod set (mirrors the kueue.x-k8s.io/podset-* annotations).",
    {
        "required": string("Topology level the pods must all be placed in."),
        "preferred": string("Topology level the pods should preferably be placed in."),
        "unconstrained": boolean("The pods may be placed anywhere that fits."),
        "podIndexLabel": string("Label holding the pod's index within the pod set."),
        "subGroupIndexLabel": string("Label holding the pod's sub-group index."),
        "subGroupCount": integer("Number of sub-groups in the pod set."),
        "podSetGroupName": string("Pod sets of one group get the same flavor and topology."),
        "podSetSliceRequiredTopology": string("Topology level each slice must fit in."),
        "podSetSliceSize": integer("Number of pods in each slice."),
    },
)


def _min_count_fits(podset: dict[str, Any]) -> bool:
    if "minCount" not in podset:
        return True
    return podset["minCount"] <= podset.get("count", 1)


POD_SET = obj(
    "A group of identical pods of the workload.",
    {
        "name": podset_ref("Name of the pod set, unique in the workload.", default=c.DEFAULT_PODSET_NAME),
        "template": pod_template(
            "The pod template of the pod set. Container requests (or limits) count towards quota; "
            "node selectors and required node affinity narrow the eligible flavors."
        ),
        "count": integer("Number of pods of this pod set.", minimum=0, default=1),
        "minCount": integer(
            "With partial admission, the smallest count the pod set may be admitted with.", minimum=1
        ),
        "topologyRequest": TOPOLOGY_REQUEST,
        "allowedResourceFlavors": array(
            "When set, only these ResourceFlavors may be assigned to this pod set (used by "
            "Concurrent Admission options, and usable on any workload).",
            flavor_ref("Name of a ResourceFlavor."),
            max_items=64,
            list_type="set",
        ),
    },
    required=["template", "count"],
    rules=[
        Rule(
            cel="has(self.minCount) ? self.minCount <= self.count : true",
            message="minCount should be positive and less or equal to count",
            check=_min_count_fits,
        )
    ],
)

WORKLOAD_MODE = obj(
    "The role of the workload in Concurrent Admission. Only the controller may create Parent and "
    "ResourceFlavorOption workloads.",
    {
        "type": string(
            "Default (an ordinary workload), Parent (drives the job and owns option workloads, never "
            "scheduled itself) or ResourceFlavorOption (one attempt of a parent on some flavors).",
            enum=[c.WORKLOAD_MODE_DEFAULT, c.WORKLOAD_MODE_OPTION, c.WORKLOAD_MODE_PARENT],
        ),
    },
    required=["type"],
)

SPEC = obj(
    "The pod sets of the workload and how it is queued.",
    {
        "podSets": array(
            "The pod sets of the workload. Immutable while the workload holds a quota reservation.",
            POD_SET,
            min_items=1,
            max_items=18,
            list_type="map",
            map_keys=["name"],
        ),
        "queueName": local_queue_name(
            "Name of the LocalQueue (in the workload's namespace) the workload is submitted to. "
            "Immutable while the workload holds a quota reservation."
        ),
        "priorityClassName": string(
            "Name of the WorkloadPriorityClass or PriorityClass the priority comes from.",
            max_length=253,
            pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        ),
        "priority": integer(
            "The workload's priority; higher is more important. Set from the priority class at creation."
        ),
        "priorityClassSource": string(
            "Where priorityClassName comes from: kueue.x-k8s.io/workloadpriorityclass, "
            "scheduling.k8s.io/priorityclass, or empty.",
            enum=["kueue.x-k8s.io/workloadpriorityclass", "scheduling.k8s.io/priorityclass", ""],
            default="",
        ),
        "active": boolean(
            "Whether the workload may be admitted. Setting false evicts it and keeps it out of the "
            "queue until set back to true.",
            default=True,
        ),
        "maximumExecutionTimeSeconds": integer(
            "The workload is deactivated after being admitted for this long in total.", minimum=1
        ),
        "workloadMode": WORKLOAD_MODE,
    },
    required=["podSets"],
    rules=[
        Rule(
            cel="has(self.priorityClassName) ? has(self.priority) : true",
            message="priority should not be nil when priorityClassName is set",
            check=lambda s: "priorityClassName" not in s or "priority" in s,
        )
    ],
)

# --- status --------------------------------------------------------------------------------------

POD_SET_ASSIGNMENT = obj(
    "The flavors and usage assigned to one pod set.",
    {
        "name": podset_ref("Name of the pod set.", default=c.DEFAULT_PODSET_NAME),
        "flavors": map_of(
            "The flavor assigned to each resource of the pod set.", flavor_ref("Name of a ResourceFlavor.")
        ),
        "resourceUsage": resource_list("Total resources used by all the pods of the pod set."),
        "count": integer("Number of pods admitted; absent means spec count.", minimum=0),
        "topologyAssignment": TOPOLOGY_ASSIGNMENT,
        "delayedTopologyRequest": string("Whether the topology assignment waits for a ProvisioningRequest: Pending or Ready."),
    },
    required=["name"],
)

ADMISSION = obj(
    "The ClusterQueue and flavors the workload was admitted with.",
    {
        "clusterQueue": cluster_queue_ref("The ClusterQueue that reserved quota for the workload."),
        "podSetAssignments": array(
            "The assignment of each pod set.",
            POD_SET_ASSIGNMENT,
            max_items=18,
            list_type="map",
            map_keys=["name"],
        ),
    },
    required=["clusterQueue", "podSetAssignments"],
)

POD_SET_UPDATE = obj(
    "Changes an admission check asks for in a pod set's template when the job starts.",
    {
        "name": podset_ref("Name of the pod set to update."),
        "labels": map_of("Labels to add to the pods.", string("Label value.")),
        "annotations": map_of("Annotations to add to the pods.", string("Annotation value.")),
        "nodeSelector": map_of("Node selector entries to add to the pods.", string("Label value.")),
        "tolerations": tolerations("Tolerations to add to the pods.", list_type=None),
    },
    required=["name"],
)

ADMISSION_CHECK_STATE = obj(
    "The state of one admission check for this workload.",
    {
        "name": admission_check_ref("Name of the AdmissionCheck."),
        "state": string(
            "Pending (not yet decided), Ready (passed), Retry (evict and retry later) or Rejected "
            "(will not pass: the workload is deactivated).",
            enum=[c.CHECK_PENDING, c.CHECK_READY, c.CHECK_RETRY, c.CHECK_REJECTED],
        ),
        "lastTransitionTime": timestamp("When the state last changed."),
        "message": string("Human readable detail about the state.", max_length=32768),
        "requeueAfterSeconds": integer(
            "For Retry: retry no earlier than lastTransitionTime plus this many seconds.", minimum=0
        ),
        "retryCount": integer("How many times the check has been retried.", minimum=0),
        "podSetUpdates": array(
            "Changes to the pod templates requested by the check once Ready.",
            POD_SET_UPDATE,
            max_items=18,
            list_type="atomic",
        ),
    },
    required=["name", "state", "lastTransitionTime", "message"],
)

OPTION_STATUS = obj(
    "The state of one Concurrent Admission option of this parent workload.",
    {
        "name": string("Name of the option workload.", max_length=253),
        "resourceFlavors": array(
            "The flavors the option may be assigned.", flavor_ref("Name of a ResourceFlavor."),
            list_type="atomic",
        ),
        "status": string(
            "Pending, QuotaReserved, Admitted, Evicted or Removed.",
            enum=[c.OPTION_PENDING, c.OPTION_QUOTA_RESERVED, c.OPTION_ADMITTED, c.OPTION_EVICTED, c.OPTION_REMOVED],
        ),
        "message": string("Why the option is in this state.", max_length=32768),
    },
    required=["name", "status"],
)

FLAVOR_ASSIGNMENT = obj(
    "When a flavor was last assigned to the workload (ResourceFlavor fallbacks).",
    {
        "resourceFlavor": flavor_ref("Name of the ResourceFlavor."),
        "assignmentTime": timestamp(
            "When the flavor was last assigned (quota reserved); its fallback timeout counts from here."
        ),
    },
    required=["resourceFlavor"],
)


def _cluster_name_exclusive(status: dict[str, Any]) -> bool:
    return not (status.get("clusterName") and status.get("nominatedClusterNames"))


STATUS = obj(
    "The observed state of the workload.",
    {
        "conditions": conditions(
            "Conditions of the workload: QuotaReserved, Admitted, PodsReady, Evicted, Preempted, "
            "Requeued, Finished, DeactivationTarget."
        ),
        "admission": ADMISSION,
        "requeueState": obj(
            "Backoff state after evictions.",
            {
                "count": integer("Number of requeues so far.", minimum=0),
                "requeueAt": timestamp("The workload is not requeued before this time."),
            },
        ),
        "reclaimablePods": array(
            "Pods of each pod set that finished and whose quota can be released.",
            obj(
                "Reclaimable pods of one pod set.",
                {
                    "name": podset_ref("Name of the pod set."),
                    "count": integer("Number of reclaimable pods.", minimum=0),
                },
                required=["name", "count"],
            ),
            max_items=18,
            list_type="map",
            map_keys=["name"],
        ),
        "admissionChecks": array(
            "The state of each admission check of the workload's ClusterQueue.",
            ADMISSION_CHECK_STATE,
            max_items=8,
            list_type="map",
            map_keys=["name"],
        ),
        "resourceRequests": array(
            "Resource requests of each pod set as last considered for a non-admitted workload.",
            obj(
                "Requests of one pod set.",
                {
                    "name": podset_ref("Name of the pod set."),
                    "resources": resource_list("Total requests of the pod set."),
                },
                required=["name"],
            ),
            max_items=18,
            list_type="map",
            map_keys=["name"],
        ),
        "accumulatedPastExexcutionTimeSeconds": integer(
            "Seconds the workload spent admitted in previous admissions (v1beta1 spelling)."
        ),
        "schedulingStats": obj(
            "Scheduling statistics.",
            {
                "evictions": array(
                    "Evictions counted by reason.",
                    obj(
                        "Evictions for one reason.",
                        {
                            "reason": string("Eviction reason.", max_length=316),
                            "underlyingCause": string("Underlying cause, may be empty.", max_length=316),
                            "count": integer("Number of evictions.", minimum=0),
                        },
                        required=["reason", "underlyingCause", "count"],
                    ),
                    list_type="map",
                    map_keys=["reason", "underlyingCause"],
                ),
            },
        ),
        "nominatedClusterNames": array(
            "MultiKueue worker clusters the workload is dispatched to while pending. Mutually "
            "exclusive with clusterName.",
            string("Name of a MultiKueueCluster."),
            max_items=20,
            list_type="atomic",
        ),
        "clusterName": string(
            "The MultiKueue worker cluster that admitted the workload; reset on eviction, otherwise "
            "immutable once set.",
        ),
        "unhealthyNodes": array(
            "Nodes of the workload that failed (topology-aware scheduling).",
            obj("An unhealthy node.", {"name": string("Node name.")}, required=["name"]),
        ),
        "options": array(
            "Concurrent Admission: the state of every option of this parent workload.",
            OPTION_STATUS,
            max_items=64,
            list_type="map",
            map_keys=["name"],
        ),
        "flavorAssignmentHistory": array(
            "ResourceFlavor fallbacks: the last assignment time of each flavor tried.",
            FLAVOR_ASSIGNMENT,
            max_items=64,
            list_type="map",
            map_keys=["resourceFlavor"],
        ),
    },
    rules=[
        Rule(
            cel="!has(self.clusterName) || (!has(self.nominatedClusterNames) || "
            "(has(self.nominatedClusterNames) && size(self.nominatedClusterNames) == 0))",
            message="clusterName and nominatedClusterNames are mutually exclusive",
            check=_cluster_name_exclusive,
        ),
        Rule(
            cel="!has(oldSelf.clusterName) || !has(self.clusterName) || oldSelf.clusterName == self.clusterName",
            message="clusterName is immutable once set",
            field_path=".clusterName",
        ),
    ],
)

# --- object-level rules ----------------------------------------------------------------------------

_RESERVED = "self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')"
_OLD_RESERVED = _RESERVED.replace("self.", "oldSelf.")


def _holds_reservation(wl: dict[str, Any]) -> bool:
    return any(
        cond.get("type") == c.COND_QUOTA_RESERVED and cond.get("status") == "True"
        for cond in (wl.get("status") or {}).get("conditions", [])
    )


def _assignments_match_podsets(wl: dict[str, Any]) -> bool:
    admission = (wl.get("status") or {}).get("admission")
    if not admission or not _holds_reservation(wl):
        return True
    return len(wl.get("spec", {}).get("podSets", [])) == len(admission.get("podSetAssignments", []))


ROOT_RULES = (
    Rule(
        cel="has(self.status) && has(self.status.conditions) && " + _RESERVED + " && has(self.status.admission) "
        "? size(self.spec.podSets) == size(self.status.admission.podSetAssignments) : true",
        message="podSetAssignments must have the same number of podSets as the spec",
        check=_assignments_match_podsets,
    ),
    # Updates of a workload holding a reservation: Kueue's transition rules, word for word (no
    # Python twin: on updates the webhook decides, webhook/rules/workload.py).
    Rule(
        cel="((has(oldSelf.status) && has(oldSelf.status.conditions) && "
        "oldSelf.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')) && "
        "(has(self.status) && has(self.status.conditions) && "
        "self.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')))?"
        "((has(oldSelf.spec.maximumExecutionTimeSeconds)?oldSelf.spec.maximumExecutionTimeSeconds:0) ==  "
        "(has(self.spec.maximumExecutionTimeSeconds)?self.spec.maximumExecutionTimeSeconds:0)):true",
        message="maximumExecutionTimeSeconds is immutable while workload quota reserved",
    ),
    Rule(
        cel="((has(oldSelf.status) && has(oldSelf.status.conditions) && " + _OLD_RESERVED + ") && "
        "(has(self.status) && has(self.status.conditions) && " + _RESERVED + ")) ? "
        "((has(oldSelf.spec.queueName) == has(self.spec.queueName)) && "
        "(!has(oldSelf.spec.queueName) || oldSelf.spec.queueName == self.spec.queueName)) : true",
        message="queueName is immutable while workload quota reserved",
    ),
    Rule(
        cel="(has(oldSelf.status) && has(oldSelf.status.conditions) && " + _OLD_RESERVED + " && "
        "has(oldSelf.spec.priorityClassSource) && has(self.spec.priorityClassSource) && "
        "(self.spec.priorityClassSource != 'kueue.x-k8s.io/workloadpriorityclass') && "
        "has(oldSelf.spec.priorityClassName) && has(self.spec.priorityClassName)) ? "
        "(oldSelf.spec.priorityClassName == self.spec.priorityClassName) : true",
        message="priorityClassName is immutable while workload quota reserved and priorityClassSource "
        "is not equal to kueue.x-k8s.io/workloadpriorityclass",
    ),
    Rule(
        cel="(has(oldSelf.status) && has(oldSelf.status.conditions) && " + _OLD_RESERVED + " && "
        "has(oldSelf.spec.priorityClassSource) && has(self.spec.priorityClassSource)) ? "
        "(oldSelf.spec.priorityClassSource == self.spec.priorityClassSource) : true",
        message="priorityClassSource is immutable while workload quota reserved",
    ),
)

KIND = KindInfo(
    kind="Workload",
    plural="workloads",
    description="Workload is the Schema for the workloads API: the unit of admission, one per job.",
    properties={"spec": SPEC, "status": STATUS},
    namespaced=True,
    short_names=("kwl", "kueueworkload", "kueueworkloads"),
    status_subresource=True,
    rules=ROOT_RULES,
    selectable_fields=(".status.admission.clusterQueue",),
    printer_columns=(
        PrinterColumn("Queue", ".spec.queueName", description="Name of the queue this workload was submitted to"),
        PrinterColumn("Reserved in", ".status.admission.clusterQueue",
                      description="Name of the ClusterQueue where the workload is reserving quota"),
        PrinterColumn("Admitted", ".status.conditions[?(@.type=='Admitted')].status",
                      description="Admission status"),
        PrinterColumn("Finished", ".status.conditions[?(@.type=='Finished')].status",
                      description="Workload finished"),
        AGE_COLUMN,
    ),
)
