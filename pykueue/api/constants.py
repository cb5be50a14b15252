"""Names shared by the webhook and the controller: API group, labels, annotations, conditions, reasons.

Every string a user can see or set (a label on their Job, a condition reason on a Workload, an
Event reason) is defined here once, with Kueue's spelling, so manifests and tooling written for
Kueue keep working and the two programs never disagree on a name.
"""

from __future__ import annotations

from typing import Final

# --- API group and versions -------------------------------------------------------------------
GROUP: Final = "kueue.x-k8s.io"
VERSION: Final = "v1beta1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
# Also served: Kueue's current version. VERSION is the one the programs' code reads and writes;
# STORAGE_VERSION the one etcd stores and the one the programs' client sends Kueue kinds in,
# converting in-process (pykueue/kube/versions.py); the conversion webhook serves the other.
# The one switch of the storage version (docs/design/api-versions.md): Kueue's v1beta2, as
# Kueue v0.19 stores.
V1BETA2_VERSION: Final = "v1beta2"
STORAGE_VERSION: Final = V1BETA2_VERSION
CONFIG_GROUP: Final = "config.kueue.x-k8s.io"
CONFIG_API_VERSION: Final = f"{CONFIG_GROUP}/v1beta1"
AUTOSCALING_GROUP: Final = "autoscaling.x-k8s.io"
PROVISIONING_REQUEST_API_VERSION: Final = f"{AUTOSCALING_GROUP}/v1"

# --- Labels and annotations on user objects (inputs) ------------------------------------------
QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL: Final = "kueue.x-k8s.io/priority-class"
PREBUILT_WORKLOAD_LABEL: Final = "kueue.x-k8s.io/prebuilt-workload-name"
MAX_EXEC_TIME_LABEL: Final = "kueue.x-k8s.io/max-exec-time-seconds"
ADMISSION_GATED_BY_ANNOTATION: Final = "kueue.x-k8s.io/admission-gated-by"
PROVREQ_ANNOTATION_PREFIX: Final = "provreq.kueue.x-k8s.io/"
DEFAULT_LOCAL_QUEUE: Final = "default"
DEFAULT_PRIORITY_CLASS: Final = "default"

# --- Labels, annotations and finalizers set by pykueue ----------------------------------------
JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"
PODSET_LABEL: Final = "kueue.x-k8s.io/podset"
WORKLOAD_ANNOTATION: Final = "kueue.x-k8s.io/workload"
CLUSTER_QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/cluster-queue-name"
LOCAL_QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/local-queue-name"
MANAGED_LABEL: Final = "kueue.x-k8s.io/managed"
STOPPING_ANNOTATION: Final = "kueue.x-k8s.io/stopping"
RESOURCE_IN_USE_FINALIZER: Final = "kueue.x-k8s.io/resource-in-use"
CONCURRENT_ADMISSION_PARENT_LABEL: Final = "kueue.x-k8s.io/concurrent-admission-parent"
# The job's pod template as it was before admission injected node selectors and tolerations, so
# that eviction can restore it exactly (JSON of {nodeSelector, tolerations, labels, annotations}
# per podSet).
ORIGINAL_TEMPLATE_ANNOTATION: Final = "kueue.x-k8s.io/original-pod-template"
# Partial admission of a batch Job: the fewest pods it may start with, and whether completions
# follow the admitted parallelism (Kueue's job_controller.go).
JOB_MIN_PARALLELISM_ANNOTATION: Final = "kueue.x-k8s.io/job-min-parallelism"
JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION: Final = "kueue.x-k8s.io/job-completions-equal-parallelism"
CONSUME_PROVISIONING_REQUEST_ANNOTATION: Final = "autoscaling.x-k8s.io/consume-provisioning-request"
PROVISIONING_CLASS_NAME_ANNOTATION: Final = "autoscaling.x-k8s.io/provisioning-class-name"
MULTIKUEUE_ORIGIN_LABEL: Final = "kueue.x-k8s.io/multikueue-origin"
MULTIKUEUE_ORIGIN_UID_ANNOTATION: Final = "kueue.x-k8s.io/multikueue-origin-uid"
# ResourceFlavor fallbacks (docs/design/fallbacks.md): which trigger ended each excluded flavor's
# try, "flavor=Trigger,..." sorted by flavor. pykueue's own (Kueue has no fallbacks); the Workload
# schema stays Kueue's, so the record lives in an annotation the workload controller writes.
FLAVOR_FALLBACK_TRIGGERS_ANNOTATION: Final = "pykueue.x-k8s.io/flavor-fallback-triggers"
MULTIKUEUE_KUBECONFIG_SECRET_KEY: Final = "kubeconfig"
DEFAULT_PODSET_NAME: Final = "main"

# --- AdmissionCheck controllers ----------------------------------------------------------------
PROVISIONING_REQUEST_CONTROLLER: Final = "kueue.x-k8s.io/provisioning-request"
MULTIKUEUE_CONTROLLER: Final = "kueue.x-k8s.io/multikueue"

# --- Workload modes (concurrent admission) -----------------------------------------------------
WORKLOAD_MODE_DEFAULT: Final = "Default"
WORKLOAD_MODE_OPTION: Final = "ResourceFlavorOption"
WORKLOAD_MODE_PARENT: Final = "Parent"
OPTION_NAME_INFIX: Final = "-option-"
# Set by the concurrent-admission controller on every option workload, read by the engine: the
# option's place in its parent's preference order (0 = most preferred) and whether the policy lets
# it take over from a less preferred sibling that holds quota (migration).
OPTION_PREFERENCE_ANNOTATION: Final = "kueue.x-k8s.io/option-preference"
OPTION_MIGRATION_TARGET_ANNOTATION: Final = "kueue.x-k8s.io/option-migration-target"
# Set by the concurrent-admission controller when *it* deactivates an option (policy, window,
# inactive parent), holding the reason; removed when it reactivates the option. An inactive
# option without it was deactivated by someone else (a Rejected admission check) and stays off.
OPTION_REMOVED_ANNOTATION: Final = "kueue.x-k8s.io/option-removed"
# The parent's queue timestamp (its creationTimestamp), copied on every option: siblings share it,
# so a delayed or re-created option is ordered by its preference, never behind a less preferred one.
OPTION_QUEUE_TIMESTAMP_ANNOTATION: Final = "kueue.x-k8s.io/option-queue-timestamp"
# The preemption gate of a parent: written by the scheduler on the option that issues
# preemptions (value: when), so that no sibling preempts meanwhile, even across a restart or a
# leader change; removed by the concurrent-admission controller once the option reserved or was
# deactivated, and ignored by the engine once OPTION_PREEMPTION_GATE_SECONDS have passed.
OPTION_PREEMPTION_GATE_ANNOTATION: Final = "kueue.x-k8s.io/option-preemption-gate"
OPTION_PREEMPTION_GATE_SECONDS: Final = 120
# The winner of a parent's race: the name of the option last admitted, written on the parent with
# a resourceVersion precondition *before* that option is marked Admitted, so two options whose
# checks turn Ready together cannot both be admitted (controller/concurrentadmission/winner.py).
OPTION_WINNER_ANNOTATION: Final = "kueue.x-k8s.io/option-winner"

# --- Concurrent admission policies ---------------------------------------------------------------
ON_SUCCESS_REMOVE_OTHER: Final = "RemoveOther"
ON_SUCCESS_REMOVE_LOWER: Final = "RemoveLower"
ON_SUCCESS_REMOVE_BELOW_TARGET: Final = "RemoveBelowTarget"

# Option states in Workload.status.options[].status
OPTION_PENDING: Final = "Pending"
OPTION_QUOTA_RESERVED: Final = "QuotaReserved"
OPTION_ADMITTED: Final = "Admitted"
OPTION_EVICTED: Final = "Evicted"
OPTION_REMOVED: Final = "Removed"

# --- Fallback strategy (ResourceFlavor fallbacks) --------------------------------------------------
FALLBACK_DEACTIVATE: Final = "DeactivateWorkload"
FALLBACK_RETRY_ALL: Final = "RetryAllFlavors"
TRIGGER_PODS_READY_TIMEOUT: Final = "TimeoutForPodsReadyExceeded"
TRIGGER_ADMISSION_CHECK_REJECTED: Final = "AdmissionCheckRejected"

# --- Queueing ----------------------------------------------------------------------------------
STRICT_FIFO: Final = "StrictFIFO"
BEST_EFFORT_FIFO: Final = "BestEffortFIFO"
# ClusterQueue spec.admissionScope.admissionMode (admission fair sharing, KEP 4136).
ADMISSION_MODE_USAGE_BASED: Final = "UsageBasedAdmissionFairSharing"
ADMISSION_MODE_NONE: Final = "NoAdmissionFairSharing"
STOP_POLICY_NONE: Final = "None"
STOP_POLICY_HOLD: Final = "Hold"
STOP_POLICY_HOLD_AND_DRAIN: Final = "HoldAndDrain"
# waitForPodsReady.requeuingStrategy.timestamp: the queue order of a PodsReady-timeout eviction
REQUEUE_BY_EVICTION: Final = "Eviction"
REQUEUE_BY_CREATION: Final = "Creation"

# Preemption policies
PREEMPT_NEVER: Final = "Never"
PREEMPT_LOWER_PRIORITY: Final = "LowerPriority"
PREEMPT_LOWER_OR_NEWER_EQUAL_PRIORITY: Final = "LowerOrNewerEqualPriority"
PREEMPT_ANY: Final = "Any"

# Flavor fungibility
FUNGIBILITY_BORROW: Final = "Borrow"
FUNGIBILITY_PREEMPT: Final = "Preempt"
FUNGIBILITY_MAY_STOP_SEARCH: Final = "MayStopSearch"
FUNGIBILITY_TRY_NEXT_FLAVOR: Final = "TryNextFlavor"

# --- Workload condition types --------------------------------------------------------------------
COND_QUOTA_RESERVED: Final = "QuotaReserved"
COND_ADMITTED: Final = "Admitted"
COND_FINISHED: Final = "Finished"
COND_PODS_READY: Final = "PodsReady"
COND_EVICTED: Final = "Evicted"
COND_PREEMPTED: Final = "Preempted"
COND_REQUEUED: Final = "Requeued"
COND_DEACTIVATION_TARGET: Final = "DeactivationTarget"
# ClusterQueue / LocalQueue / AdmissionCheck / MultiKueueCluster
COND_ACTIVE: Final = "Active"

# --- Workload condition reasons ------------------------------------------------------------------
# QuotaReserved
REASON_QUOTA_RESERVED: Final = "QuotaReserved"
REASON_PENDING: Final = "Pending"
REASON_NO_MATCHING_FLAVOR: Final = "NoMatchingFlavor"
REASON_WAITING_FOR_QUOTA: Final = "WaitingForQuota"
REASON_EXCEEDS_MAX_QUOTA: Final = "ExceedsMaxQuota"
REASON_WAITING_FOR_PREEMPTED: Final = "WaitingForPreemptedWorkloads"
REASON_MISCONFIGURED: Final = "Misconfigured"
REASON_SUSPENDED: Final = "Suspended"
REASON_INADMISSIBLE: Final = "Inadmissible"
REASON_ADMISSION_GATED: Final = "AdmissionGated"
# Admitted
REASON_ADMITTED: Final = "Admitted"
REASON_NO_RESERVATION: Final = "NoReservation"
REASON_UNSATISFIED_CHECKS: Final = "UnsatisfiedAdmissionChecks"
# pykueue: an option whose checks are Ready but whose sibling won the parent's race.
REASON_OTHER_OPTION_ADMITTED: Final = "OtherOptionAdmitted"
# Finished
REASON_SUCCEEDED: Final = "Succeeded"
REASON_FAILED: Final = "Failed"
REASON_OUT_OF_SYNC: Final = "OutOfSync"
REASON_OWNER_NOT_FOUND: Final = "OwnerNotFound"
# PodsReady
REASON_STARTED: Final = "Started"
REASON_RECOVERED: Final = "Recovered"
REASON_WAIT_FOR_START: Final = "WaitForStart"
REASON_WAIT_FOR_RECOVERY: Final = "WaitForRecovery"
# Evicted
REASON_PREEMPTED: Final = "Preempted"
REASON_PODS_READY_TIMEOUT: Final = "PodsReadyTimeout"
REASON_ADMISSION_CHECK: Final = "AdmissionCheck"
REASON_CLUSTER_QUEUE_STOPPED: Final = "ClusterQueueStopped"
REASON_LOCAL_QUEUE_STOPPED: Final = "LocalQueueStopped"
REASON_DEACTIVATED: Final = "Deactivated"
REASON_FLAVOR_MIGRATION: Final = "FlavorMigration"
REASON_FLAVOR_FALLBACK: Final = "FlavorFallback"
REASON_DEACTIVATED_DUE_TO_ADMISSION_CHECK: Final = "DeactivatedDueToAdmissionCheck"
REASON_DEACTIVATED_DUE_TO_REQUEUING_LIMIT: Final = "DeactivatedDueToRequeuingLimitExceeded"
REASON_DEACTIVATED_DUE_TO_FLAVORS_EXHAUSTED: Final = "DeactivatedDueToFlavorsExhausted"
# Preempted (detail)
REASON_IN_CLUSTER_QUEUE: Final = "InClusterQueue"
REASON_IN_COHORT_RECLAMATION: Final = "InCohortReclamation"
REASON_IN_COHORT_RECLAIM_WHILE_BORROWING: Final = "InCohortReclaimWhileBorrowing"
REASON_IN_COHORT_FAIR_SHARING: Final = "InCohortFairSharing"
# Requeued
REASON_BACKOFF_FINISHED: Final = "BackoffFinished"
REASON_REACTIVATED: Final = "Reactivated"
REASON_CLUSTER_QUEUE_RESTARTED: Final = "ClusterQueueRestarted"
REASON_LOCAL_QUEUE_RESTARTED: Final = "LocalQueueRestarted"
# DeactivationTarget causes
REASON_REQUEUING_LIMIT_EXCEEDED: Final = "RequeuingLimitExceeded"
REASON_MAXIMUM_EXECUTION_TIME_EXCEEDED: Final = "MaximumExecutionTimeExceeded"

# AdmissionCheckState.state
CHECK_PENDING: Final = "Pending"
CHECK_READY: Final = "Ready"
CHECK_RETRY: Final = "Retry"
CHECK_REJECTED: Final = "Rejected"

# ClusterQueue / LocalQueue Active condition reasons
REASON_READY: Final = "Ready"
REASON_CQ_STOPPED: Final = "Stopped"
REASON_FLAVOR_NOT_FOUND: Final = "FlavorNotFound"
REASON_ADMISSION_CHECK_NOT_FOUND: Final = "AdmissionCheckNotFound"
REASON_ADMISSION_CHECK_INACTIVE: Final = "AdmissionCheckInactive"
REASON_MULTIPLE_MULTIKUEUE_CHECKS: Final = "MultipleMultiKueueAdmissionChecks"
REASON_MULTIKUEUE_CHECK_PER_FLAVOR: Final = "MultiKueueAdmissionCheckAppliedPerFlavor"
REASON_MULTIKUEUE_WITH_PROVISIONING: Final = "MultiKueueWithProvisioningRequest"
REASON_CLUSTER_QUEUE_DOES_NOT_EXIST: Final = "ClusterQueueDoesNotExist"
REASON_CLUSTER_QUEUE_IS_INACTIVE: Final = "ClusterQueueIsInactive"
REASON_TERMINATING: Final = "Terminating"

# --- Event reasons ---------------------------------------------------------------------------------
EVENT_CREATED_WORKLOAD: Final = "CreatedWorkload"
EVENT_UPDATED_WORKLOAD: Final = "UpdatedWorkload"
EVENT_DELETED_WORKLOAD: Final = "DeletedWorkload"
EVENT_FINISHED_WORKLOAD: Final = "FinishedWorkload"
EVENT_STARTED: Final = "Started"
EVENT_SUSPENDED: Final = "Suspended"
EVENT_STOPPED: Final = "Stopped"
EVENT_QUOTA_RESERVED: Final = "QuotaReserved"
EVENT_ADMITTED: Final = "Admitted"
EVENT_PREEMPTED: Final = "Preempted"
EVENT_PREEMPTED_WORKLOAD: Final = "PreemptedWorkload"
EVENT_ADMISSION_CHECK_REJECTED: Final = "AdmissionCheckRejected"
EVENT_ADMISSION_CHECK_UPDATED: Final = "AdmissionCheckUpdated"
EVENT_ERR_WORKLOAD_COMPOSE: Final = "ErrWorkloadCompose"
EVENT_PRIORITY_CLASS_NOT_FOUND: Final = "WorkloadPriorityClassNotFound"
EVENT_CREATED_OPTION: Final = "CreatedOption"
EVENT_REMOVED_OPTION: Final = "RemovedOption"
EVENT_REACTIVATED_OPTION: Final = "ReactivatedOption"
EVENT_OPTIONS_REJECTED: Final = "OptionsRejected"
EVENT_OPTION_NAME_TAKEN: Final = "OptionNameTaken"


def evicted_event_reason(reason: str) -> str:
    """Kueue's Event reason for an eviction: ``EvictedDueTo<reason>``."""
    return f"EvictedDueTo{reason}"
