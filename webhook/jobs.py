"""batch/v1 Job admission: suspend queued jobs on create, guard the queue name, warn on misfits.

Mirrors Kueue's Job webhook (``pkg/controller/jobs/job/job_webhook.go``):

* mutating CREATE — default the ``kueue.x-k8s.io/queue-name`` label from a LocalQueue named
  ``default`` in the namespace, then, for a queued job (it has the label, or
  ``manageJobsWithoutQueueName`` applies to its namespace): default the priority-class label from
  a WorkloadPriorityClass named ``default``, set ``spec.suspend: true`` — otherwise its pods start
  before the controller has admitted it — and hand it to MultiKueue
  (``spec.managedBy``) when its ClusterQueue runs a MultiKueue admission check;
* validating — label formats on create and update; while the job runs (not suspended) its queue
  name may not change, because its quota is accounted in that queue; a warning at creation when the
  job asks for more than its ClusterQueue could ever provide, so the user learns now rather than
  from a workload pending forever.

Jobs whose controller owner is itself a managed job (a JobSet's child jobs, a Job owned by a
queued Job) are left alone: the owner is the thing that is queued.
"""

from __future__ import annotations

import logging
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pykueue.api import constants as c
from pykueue.api.labelselectors import matches
from pykueue.api.quantity import QuantityError, format_quantity, is_milli_resource, parse_quantity_exact
from pykueue.api.validation import FieldError
from webhook.cluster_state import ClusterState
from webhook.patch import PatchBuilder
from webhook.rules.common import (
    ADMISSION_GATED_BY_PATH,
    admission_gated_by_errors,
    admission_gated_by_update_errors,
    as_dict,
    as_list,
    dns1123_subdomain_errors,
    enumerate_dicts,
)

log = logging.getLogger("pykueue.webhook.jobs")

QUEUE_LABEL_PATH = f"metadata.labels[{c.QUEUE_NAME_LABEL}]"
PRIORITY_LABEL_PATH = f"metadata.labels[{c.PRIORITY_CLASS_LABEL}]"
MAX_EXEC_LABEL_PATH = f"metadata.labels[{c.MAX_EXEC_TIME_LABEL}]"
MIN_PARALLELISM_PATH = f"metadata.annotations[{c.JOB_MIN_PARALLELISM_ANNOTATION}]"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
# Owners that are queued themselves when they carry a queue name (Kueue's job integrations).
INTEGRATION_OWNER_KINDS = frozenset(
    {
        ("jobset.x-k8s.io", "JobSet"),
        ("kubeflow.org", "MPIJob"),
        ("kubeflow.org", "PyTorchJob"),
        ("kubeflow.org", "TFJob"),
        ("kubeflow.org", "PaddleJob"),
        ("kubeflow.org", "XGBoostJob"),
        ("kubeflow.org", "JAXJob"),
        ("trainer.kubeflow.org", "TrainJob"),
        ("ray.io", "RayJob"),
        ("ray.io", "RayCluster"),
        ("workload.codeflare.dev", "AppWrapper"),
    }
)
MAX_OWNER_DEPTH = 4
JOB_CONTROLLER = "kubernetes.io/job-controller"


@dataclass(frozen=True)
class JobPolicy:
    """The Configuration fields that decide which jobs are managed.

    ``managed_jobs_namespace_selector`` of ``None`` means "every namespace"; the program fills in
    the Configuration's (by default ``kubernetes.io/metadata.name NotIn [kube-system, <namespace>]``).
    """

    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: dict[str, Any] | None = None


@dataclass
class JobDecision:
    patch: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def labels_of(obj: dict[str, Any] | None) -> dict[str, Any]:
    return as_dict(as_dict(as_dict(obj).get("metadata")).get("labels"))


def annotations_of(obj: dict[str, Any] | None) -> dict[str, Any]:
    return as_dict(as_dict(as_dict(obj).get("metadata")).get("annotations"))


def is_suspended(job: dict[str, Any] | None) -> bool:
    return as_dict(as_dict(job).get("spec")).get("suspend") is True


def _namespace_matches(state: ClusterState, namespace: str, policy: JobPolicy) -> bool:
    # No selector configured: no namespace restriction (Kueue always defaults the field). A
    # configured selector has metav1's meaning, ``{}`` matching every namespace.
    if policy.managed_jobs_namespace_selector is None:
        return True
    ns = state.namespace(namespace)
    labels = dict(labels_of(ns))
    labels.setdefault(NAMESPACE_NAME_LABEL, namespace)
    return matches(policy.managed_jobs_namespace_selector, labels)


def is_managed(job: dict[str, Any], namespace: str, state: ClusterState, policy: JobPolicy) -> bool:
    """Whether pykueue queues ``job`` (queue-name label, or manageJobsWithoutQueueName)."""
    if labels_of(job).get(c.QUEUE_NAME_LABEL):
        return True
    return policy.manage_jobs_without_queue_name and _namespace_matches(state, namespace, policy)


def owned_by_managed_job(job: dict[str, Any], namespace: str, state: ClusterState, policy: JobPolicy) -> bool:
    """Walk controller owner references: is an ancestor a job that pykueue (or an integration) queues?"""
    current = job
    for _ in range(MAX_OWNER_DEPTH):
        owner = next(
            (ref for ref in as_list(as_dict(current.get("metadata")).get("ownerReferences"))
             if isinstance(ref, dict) and ref.get("controller") is True),
            None,
        )
        if owner is None:
            return False
        group = str(owner.get("apiVersion", "")).rpartition("/")[0]
        kind = owner.get("kind")
        if (group, kind) in INTEGRATION_OWNER_KINDS:
            return True
        if (group, kind) != ("batch", "Job") or not isinstance(owner.get("name"), str):
            return False
        parent = state.job(namespace, owner["name"])
        if parent is None:
            return False
        if is_managed(parent, namespace, state, policy):
            return True
        current = parent
    return False


def mutate_job_create(job: dict[str, Any], namespace: str, state: ClusterState, policy: JobPolicy) -> JobDecision:
    builder = PatchBuilder(job)
    if owned_by_managed_job(job, namespace, state, policy):
        return JobDecision()
    if (
        not labels_of(job).get(c.QUEUE_NAME_LABEL)
        and _namespace_matches(state, namespace, policy)
        and state.local_queue(namespace, c.DEFAULT_LOCAL_QUEUE) is not None
    ):
        builder.set(["metadata", "labels", c.QUEUE_NAME_LABEL], c.DEFAULT_LOCAL_QUEUE)
    if not is_managed(builder.result, namespace, state, policy):
        return JobDecision(patch=builder.operations)
    if (
        not labels_of(builder.result).get(c.PRIORITY_CLASS_LABEL)
        and state.workload_priority_class(c.DEFAULT_PRIORITY_CLASS) is not None
    ):
        builder.set(["metadata", "labels", c.PRIORITY_CLASS_LABEL], c.DEFAULT_PRIORITY_CLASS)
    if not is_suspended(builder.result):
        builder.set(["spec", "suspend"], True)
    if _dispatched_by_multikueue(builder.result, namespace, state):
        builder.set(["spec", "managedBy"], c.MULTIKUEUE_CONTROLLER)
    return JobDecision(patch=builder.operations)


def _dispatched_by_multikueue(job: dict[str, Any], namespace: str, state: ClusterState) -> bool:
    """Whether the job's ClusterQueue runs a MultiKueue admission check (the job then runs remotely).

    Kueue hands such jobs to MultiKueue with ``spec.managedBy`` so the manager cluster's job
    controller never starts them; ``managedBy`` is immutable, so it must be set at creation.
    """
    managed_by = as_dict(job.get("spec")).get("managedBy")
    if managed_by not in (None, JOB_CONTROLLER):
        return False
    queue = labels_of(job).get(c.QUEUE_NAME_LABEL)
    local_queue = state.local_queue(namespace, queue) if queue else None
    cq_name = as_dict(as_dict(local_queue).get("spec")).get("clusterQueue")
    cq_spec = as_dict(as_dict(state.cluster_queue(cq_name)).get("spec")) if cq_name else {}
    names = [n for n in as_list(cq_spec.get("admissionChecks")) if isinstance(n, str)]
    names += [
        rule["name"] for _, rule in enumerate_dicts(as_dict(cq_spec.get("admissionChecksStrategy")).get("admissionChecks"))
        if isinstance(rule.get("name"), str)
    ]
    return any(
        as_dict(as_dict(state.admission_check(name)).get("spec")).get("controllerName") == c.MULTIKUEUE_CONTROLLER
        for name in names
    )


def validate_job_labels(job: dict[str, Any]) -> list[FieldError]:
    labels = labels_of(job)
    errors: list[FieldError] = []
    queue = labels.get(c.QUEUE_NAME_LABEL)
    if queue is not None:
        errors += dns1123_subdomain_errors(QUEUE_LABEL_PATH, queue)
    max_exec = labels.get(c.MAX_EXEC_TIME_LABEL)
    if max_exec is not None:
        try:
            valid = int(max_exec) > 0
        except (TypeError, ValueError):
            valid = False
        if not valid:
            errors.append(FieldError.invalid(MAX_EXEC_LABEL_PATH, max_exec, "should be greater than 0"))
    prebuilt = labels.get(c.PREBUILT_WORKLOAD_LABEL)
    if prebuilt is not None:
        errors += dns1123_subdomain_errors(f"metadata.labels[{c.PREBUILT_WORKLOAD_LABEL}]", prebuilt)
    gates = annotations_of(job).get(c.ADMISSION_GATED_BY_ANNOTATION)
    if gates is not None:
        errors += admission_gated_by_errors(ADMISSION_GATED_BY_PATH, gates)
    return errors


def min_parallelism_errors(job: dict[str, Any]) -> list[FieldError]:
    """``job-min-parallelism`` must be a whole number of pods fewer than the Job runs (Kueue's
    ``validatePartialAdmissionCreate``)."""
    raw = annotations_of(job).get(c.JOB_MIN_PARALLELISM_ANNOTATION)
    if raw is None:
        return []
    if not re.fullmatch(r"[+-]?[0-9]+", str(raw)):
        # Kueue reports Go's parse error for the value.
        return [FieldError.invalid(MIN_PARALLELISM_PATH, raw, f'strconv.Atoi: parsing "{raw}": invalid syntax')]
    value = int(str(raw))
    count = job_pod_count(job)
    if value <= 0 or value >= count:
        return [FieldError.invalid(MIN_PARALLELISM_PATH, value, f"should be between 0 and {count - 1}")]
    return []


def validate_job_update(
    job: dict[str, Any], old: dict[str, Any], namespace: str, state: ClusterState
) -> list[FieldError]:
    errors = validate_job_labels(job)
    min_parallelism = annotations_of(job).get(c.JOB_MIN_PARALLELISM_ANNOTATION)
    if min_parallelism != annotations_of(old).get(c.JOB_MIN_PARALLELISM_ANNOTATION):
        errors += min_parallelism_errors(job)
    if (
        c.JOB_MIN_PARALLELISM_ANNOTATION in annotations_of(old)
        and not is_suspended(old)
        and as_dict(old.get("spec")).get("parallelism", 1) != as_dict(job.get("spec")).get("parallelism", 1)
    ):
        errors.append(FieldError.forbidden(
            "spec.parallelism", "cannot change when partial admission is enabled and the job is not suspended"
        ))
    labels, old_labels = labels_of(job), labels_of(old)
    queue, old_queue = labels.get(c.QUEUE_NAME_LABEL), old_labels.get(c.QUEUE_NAME_LABEL)
    if not is_suspended(job) and queue != old_queue:
        errors.append(FieldError.invalid(QUEUE_LABEL_PATH, queue, "field is immutable while the job is running (not suspended)"))
    elif old_queue and not queue and state.local_queue(namespace, c.DEFAULT_LOCAL_QUEUE) is not None:
        errors.append(FieldError.invalid(QUEUE_LABEL_PATH, queue, "queue-name must not be empty in namespace with default queue"))
    priority, old_priority = labels.get(c.PRIORITY_CLASS_LABEL), old_labels.get(c.PRIORITY_CLASS_LABEL)
    if old_priority and not priority:
        errors.append(FieldError.invalid(PRIORITY_LABEL_PATH, priority, "the priority class label cannot be removed"))
    elif priority and not old_priority and not is_suspended(job):
        errors.append(FieldError.invalid(PRIORITY_LABEL_PATH, priority, "the priority class label cannot be added to a running job"))
    errors += admission_gated_by_update_errors(
        ADMISSION_GATED_BY_PATH,
        annotations_of(job).get(c.ADMISSION_GATED_BY_ANNOTATION),
        annotations_of(old).get(c.ADMISSION_GATED_BY_ANNOTATION),
    )
    max_exec, old_max_exec = labels.get(c.MAX_EXEC_TIME_LABEL), old_labels.get(c.MAX_EXEC_TIME_LABEL)
    if max_exec != old_max_exec and not (is_suspended(job) and is_suspended(old)):
        errors.append(FieldError.invalid(MAX_EXEC_LABEL_PATH, max_exec, "field is immutable while the job is running"))
    return errors


# --- "can never fit" warning ----------------------------------------------------------------------


def pod_requests(pod_spec: dict[str, Any]) -> dict[str, Fraction]:
    """One pod's effective requests: max(sum of containers, largest init container) + overhead.

    A container without a request for a resource it limits requests its limit (the apiserver's
    defaulting), exactly what quota accounting uses.
    """

    def container_requests(container: dict[str, Any]) -> dict[str, Fraction]:
        resources = as_dict(container.get("resources"))
        merged = {**as_dict(resources.get("limits")), **as_dict(resources.get("requests"))}
        out: dict[str, Fraction] = {}
        for name, amount in merged.items():
            try:
                out[name] = parse_quantity_exact(amount)
            except (QuantityError, TypeError, ValueError):
                continue
        return out

    total: dict[str, Fraction] = defaultdict(Fraction)
    for _, container in enumerate_dicts(pod_spec.get("containers")):
        for name, amount in container_requests(container).items():
            total[name] += amount
    for _, container in enumerate_dicts(pod_spec.get("initContainers")):
        for name, amount in container_requests(container).items():
            total[name] = max(total[name], amount)
    for name, amount in as_dict(pod_spec.get("overhead")).items():
        try:
            total[name] += parse_quantity_exact(amount)
        except (QuantityError, TypeError, ValueError):
            continue
    return dict(total)


def job_pod_count(job: dict[str, Any]) -> int:
    spec = as_dict(job.get("spec"))
    parallelism = spec.get("parallelism", 1)
    parallelism = parallelism if isinstance(parallelism, int) and parallelism >= 0 else 1
    completions = spec.get("completions")
    if isinstance(completions, int) and 0 <= completions < parallelism:
        return completions
    return parallelism


def _quota(value: Any) -> Fraction | None:
    try:
        return parse_quantity_exact(value)
    except (QuantityError, TypeError, ValueError):
        return None


def max_capacity(cq: dict[str, Any], state: ClusterState) -> dict[str, Fraction] | None:
    """The most of each resource ``cq`` could ever hold: nominal quota plus what it could borrow.

    Without a cohort that is the nominal quota. In a cohort, borrowing is capped by the flavor's
    ``borrowingLimit`` and by what the other members (and the Cohort object itself) can lend. A
    cohort with a parent cohort can borrow from a tree this check does not walk; ``None`` then
    means "unbounded as far as we know", so no warning is given.
    """
    spec = as_dict(cq.get("spec"))
    cohort_name = spec.get("cohort") or spec.get("cohortName")
    lendable: dict[tuple[str, str], Fraction] = defaultdict(Fraction)
    if cohort_name:
        cohort = state.cohort(cohort_name)
        if as_dict(as_dict(cohort).get("spec")).get("parentName"):
            return None
        members = [
            other for other in state.cluster_queues()
            if as_dict(other.get("spec")).get("cohort", as_dict(other.get("spec")).get("cohortName")) == cohort_name
            and as_dict(other.get("metadata")).get("name") != as_dict(cq.get("metadata")).get("name")
        ]
        for holder in [*members, *([cohort] if cohort else [])]:
            for group in as_list(as_dict(holder.get("spec")).get("resourceGroups")):
                for flavor in as_list(as_dict(group).get("flavors")):
                    for quota in as_list(as_dict(flavor).get("resources")):
                        quota = as_dict(quota)
                        amount = _quota(quota.get("lendingLimit", quota.get("nominalQuota", 0)))
                        if amount is not None:
                            lendable[(as_dict(flavor).get("name", ""), quota.get("name", ""))] += amount
    capacity: dict[str, Fraction] = defaultdict(Fraction)
    for group in as_list(spec.get("resourceGroups")):
        for flavor in as_list(as_dict(group).get("flavors")):
            flavor_name = as_dict(flavor).get("name", "")
            for quota in as_list(as_dict(flavor).get("resources")):
                quota = as_dict(quota)
                nominal = _quota(quota.get("nominalQuota", 0)) or Fraction(0)
                borrow = Fraction(0)
                if cohort_name:
                    borrow = lendable[(flavor_name, quota.get("name", ""))]
                    limit = _quota(quota.get("borrowingLimit")) if quota.get("borrowingLimit") is not None else None
                    if limit is not None:
                        borrow = min(borrow, limit)
                capacity[quota.get("name", "")] += nominal + borrow
    return dict(capacity)


def never_fits_warnings(job: dict[str, Any], namespace: str, state: ClusterState) -> list[str]:
    """Warnings for a queued job whose queue is missing or that asks for more than it could ever get."""
    queue = labels_of(job).get(c.QUEUE_NAME_LABEL)
    if not queue:
        return []
    local_queue = state.local_queue(namespace, queue)
    if local_queue is None:
        return [f'LocalQueue "{queue}" does not exist in namespace "{namespace}"; the job stays suspended until it does']
    cq_name = as_dict(local_queue.get("spec")).get("clusterQueue")
    cq = state.cluster_queue(cq_name) if cq_name else None
    if cq is None:
        return [f'ClusterQueue "{cq_name}" of LocalQueue "{queue}" does not exist; the job stays suspended until it does']
    capacity = max_capacity(cq, state)
    if capacity is None:
        return []
    template_spec = as_dict(as_dict(as_dict(job.get("spec")).get("template")).get("spec"))
    count = job_pod_count(job)
    warnings: list[str] = []
    for resource, per_pod in sorted(pod_requests(template_spec).items()):
        total = per_pod * count
        if total <= 0:
            continue
        if resource not in capacity:
            warnings.append(
                f'resource "{resource}" is not covered by ClusterQueue "{cq_name}"; this job can never be admitted'
            )
        elif total > capacity[resource]:
            warnings.append(
                f'this job requests {_show(total, resource)} {resource} in total but ClusterQueue "{cq_name}" '
                f"can provide at most {_show(capacity[resource], resource)} (nominal quota plus borrowing); "
                "it can never be admitted"
            )
    return warnings


def _show(amount: Fraction, resource: str) -> str:
    return format_quantity(math.ceil(amount * 1000) if is_milli_resource(resource) else math.ceil(amount), resource)
