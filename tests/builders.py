"""Fluent builders for the API objects tests create (plain JSON dicts, as the API serves them).

Shared by every area's unit and e2e tests. Each area keeps its builders in its own clearly marked
section; a builder returns a fresh dict from ``.obj()`` so tests can keep mutating the builder.
"""

from __future__ import annotations

import copy
from typing import Any, Self

from pykueue.api.constants import API_VERSION, QUEUE_NAME_LABEL

Obj = dict[str, Any]


# =================================================================================================
# Kueue core objects: Workload, ClusterQueue, LocalQueue, ResourceFlavor, AdmissionCheck,
# WorkloadPriorityClass (core controllers area)
# =================================================================================================


def condition(
    type_: str,
    status: bool | str,
    reason: str,
    message: str = "",
    *,
    at: str = "2026-01-01T00:00:00Z",
    generation: int = 1,
) -> Obj:
    """A metav1.Condition dict."""
    value = status if isinstance(status, str) else ("True" if status else "False")
    return {
        "type": type_,
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
        "observedGeneration": generation,
    }


class _Builder:
    def __init__(self, obj: Obj) -> None:
        self._obj = obj

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)

    def label(self, key: str, value: str) -> Self:
        self._obj["metadata"].setdefault("labels", {})[key] = value
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._obj["metadata"].setdefault("annotations", {})[key] = value
        return self

    def generation(self, generation: int) -> Self:
        self._obj["metadata"]["generation"] = generation
        return self

    def uid(self, uid: str) -> Self:
        self._obj["metadata"]["uid"] = uid
        return self

    def condition(
        self, type_: str, status: bool | str, reason: str, message: str = "", at: str = "2026-01-01T00:00:00Z"
    ) -> Self:
        conds = self._obj.setdefault("status", {}).setdefault("conditions", [])
        conds[:] = [c for c in conds if c["type"] != type_]
        conds.append(condition(type_, status, reason, message, at=at))
        return self


class WorkloadBuilder(_Builder):
    """``WorkloadBuilder("wl", "ns").queue("lq").podset(count=2, cpu="1").obj()``."""

    def __init__(self, name: str, namespace: str = "default") -> None:
        super().__init__(
            {
                "apiVersion": API_VERSION,
                "kind": "Workload",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "generation": 1,
                    "creationTimestamp": "2026-01-01T00:00:00Z",
                    "uid": f"uid-{namespace}-{name}",
                },
                "spec": {"queueName": "", "podSets": []},
            }
        )

    def queue(self, name: str) -> Self:
        self._obj["spec"]["queueName"] = name
        return self

    def priority(self, value: int, class_name: str | None = None) -> Self:
        self._obj["spec"]["priority"] = value
        if class_name:
            self._obj["spec"]["priorityClassName"] = class_name
        return self

    def priority_class(self, name: str, source: str = "kueue.x-k8s.io/workloadpriorityclass") -> Self:
        self._obj["spec"]["priorityClassName"] = name
        self._obj["spec"]["priorityClassSource"] = source
        return self

    def active(self, active: bool) -> Self:
        self._obj["spec"]["active"] = active
        return self

    def created(self, timestamp: str) -> Self:
        self._obj["metadata"]["creationTimestamp"] = timestamp
        return self

    def podset(self, name: str = "main", count: int = 1, **requests: str) -> Self:
        """A pod set whose single container requests ``requests`` (``cpu="1", memory="1Gi"``)."""
        self._obj["spec"]["podSets"].append(
            {
                "name": name,
                "count": count,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "c",
                                "image": "registry.k8s.io/pause:3.9",
                                "resources": {"requests": dict(requests)},
                            }
                        ],
                    }
                },
            }
        )
        return self

    def owner(self, kind: str, name: str, uid: str, api_version: str = "batch/v1") -> Self:
        self._obj["metadata"]["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}
        ]
        return self

    def reserved(
        self,
        cluster_queue: str,
        flavors: dict[str, str] | None = None,
        usage: dict[str, str] | None = None,
        at: str = "2026-01-01T00:00:00Z",
        counts: dict[str, int] | None = None,
    ) -> Self:
        """Quota reserved in ``cluster_queue`` (one assignment per pod set); ``counts`` admits some
        pod sets with fewer pods than their spec count (partial admission)."""
        status = self._obj.setdefault("status", {})
        status["admission"] = {
            "clusterQueue": cluster_queue,
            "podSetAssignments": [
                {
                    "name": ps["name"],
                    "flavors": dict(flavors or {}),
                    "resourceUsage": dict(usage or {}),
                    "count": (counts or {}).get(ps["name"], ps.get("count", 1)),
                }
                for ps in self._obj["spec"]["podSets"]
            ],
        }
        return self.condition(
            "QuotaReserved", True, "QuotaReserved", f"Quota reserved in ClusterQueue {cluster_queue}", at
        )

    def admitted(self, at: str = "2026-01-01T00:00:00Z") -> Self:
        return self.condition("Admitted", True, "Admitted", "The workload is admitted", at)

    def reclaimable(self, count: int, podset: str = "main") -> Self:
        """``status.reclaimablePods``: ``count`` pods of ``podset`` finished for good."""
        self._obj.setdefault("status", {})["reclaimablePods"] = [{"name": podset, "count": count}]
        return self

    def finished(self, reason: str = "Succeeded") -> Self:
        return self.condition("Finished", True, reason, "done")

    def check(
        self,
        name: str,
        state: str,
        *,
        message: str = "",
        at: str = "2026-01-01T00:00:00Z",
        requeue_after: int | None = None,
        retry_count: int | None = None,
    ) -> Self:
        checks = self._obj.setdefault("status", {}).setdefault("admissionChecks", [])
        checks[:] = [c for c in checks if c["name"] != name]
        entry: Obj = {"name": name, "state": state, "lastTransitionTime": at, "message": message}
        if requeue_after is not None:
            entry["requeueAfterSeconds"] = requeue_after
        if retry_count is not None:
            entry["retryCount"] = retry_count
        checks.append(entry)
        return self

    def requeue_state(self, count: int | None = None, requeue_at: str | None = None) -> Self:
        state: Obj = {}
        if count is not None:
            state["count"] = count
        if requeue_at is not None:
            state["requeueAt"] = requeue_at
        self._obj.setdefault("status", {})["requeueState"] = state
        return self


class ClusterQueueBuilder(_Builder):
    """``ClusterQueueBuilder("cq").cohort("co").flavor("default", cpu="4").obj()``."""

    def __init__(self, name: str) -> None:
        super().__init__(
            {
                "apiVersion": API_VERSION,
                "kind": "ClusterQueue",
                "metadata": {"name": name, "generation": 1},
                "spec": {"namespaceSelector": {}, "resourceGroups": []},
            }
        )

    def cohort(self, name: str) -> Self:
        self._obj["spec"]["cohort"] = name
        return self

    def flavor(
        self,
        flavor: str,
        *,
        borrowing_limit: dict[str, str] | None = None,
        lending_limit: dict[str, str] | None = None,
        **nominal: str,
    ) -> Self:
        """Add ``flavor`` with nominal quotas; flavors with the same resources share a group."""
        resources = sorted(nominal)
        quotas = []
        for res in resources:
            quota: Obj = {"name": res, "nominalQuota": nominal[res]}
            if borrowing_limit and res in borrowing_limit:
                quota["borrowingLimit"] = borrowing_limit[res]
            if lending_limit and res in lending_limit:
                quota["lendingLimit"] = lending_limit[res]
            quotas.append(quota)
        for group in self._obj["spec"]["resourceGroups"]:
            if sorted(group["coveredResources"]) == resources:
                group["flavors"].append({"name": flavor, "resources": quotas})
                return self
        self._obj["spec"]["resourceGroups"].append(
            {"coveredResources": resources, "flavors": [{"name": flavor, "resources": quotas}]}
        )
        return self

    def weight(self, weight: str) -> Self:
        """``spec.fairSharing.weight``."""
        self._obj["spec"]["fairSharing"] = {"weight": weight}
        return self

    def preemption(
        self,
        within_cluster_queue: str | None = None,
        reclaim_within_cohort: str | None = None,
        borrow_within_cohort: str | None = None,
    ) -> Self:
        preemption = self._obj["spec"].setdefault("preemption", {})
        if within_cluster_queue:
            preemption["withinClusterQueue"] = within_cluster_queue
        if reclaim_within_cohort:
            preemption["reclaimWithinCohort"] = reclaim_within_cohort
        if borrow_within_cohort:
            preemption["borrowWithinCohort"] = {"policy": borrow_within_cohort}
        return self

    def strategy(self, strategy: str) -> Self:
        self._obj["spec"]["queueingStrategy"] = strategy
        return self

    def stop_policy(self, policy: str) -> Self:
        self._obj["spec"]["stopPolicy"] = policy
        return self

    def admission_checks(self, *names: str) -> Self:
        self._obj["spec"]["admissionChecks"] = list(names)
        return self

    def admission_check_strategy(self, name: str, *on_flavors: str) -> Self:
        strategy = self._obj["spec"].setdefault("admissionChecksStrategy", {"admissionChecks": []})
        rule: Obj = {"name": name}
        if on_flavors:
            rule["onFlavors"] = list(on_flavors)
        strategy["admissionChecks"].append(rule)
        return self

    def namespace_selector(self, selector: Obj | None) -> Self:
        self._obj["spec"]["namespaceSelector"] = selector
        return self

    def admission_mode(self, mode: str = "UsageBasedAdmissionFairSharing") -> Self:
        """``spec.admissionScope.admissionMode`` (admission fair sharing among its LocalQueues)."""
        self._obj["spec"]["admissionScope"] = {"admissionMode": mode}
        return self


class LocalQueueBuilder(_Builder):
    def __init__(self, name: str, namespace: str, cluster_queue: str) -> None:
        super().__init__(
            {
                "apiVersion": API_VERSION,
                "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": namespace, "generation": 1},
                "spec": {"clusterQueue": cluster_queue},
            }
        )

    def stop_policy(self, policy: str) -> Self:
        self._obj["spec"]["stopPolicy"] = policy
        return self

    def weight(self, weight: str) -> Self:
        """``spec.fairSharing.weight`` (admission fair sharing divides the queue's usage by it)."""
        self._obj["spec"]["fairSharing"] = {"weight": weight}
        return self

    def consumed(self, last_update: str = "2026-01-01T00:00:00Z", **resources: str) -> Self:
        """``status.fairSharing.admissionFairSharingStatus``: usage persisted by an earlier leader."""
        self._obj.setdefault("status", {})["fairSharing"] = {
            "weightedShare": 0,
            "admissionFairSharingStatus": {"consumedResources": dict(resources), "lastUpdate": last_update},
        }
        return self


class ResourceFlavorBuilder(_Builder):
    def __init__(self, name: str) -> None:
        super().__init__(
            {
                "apiVersion": API_VERSION,
                "kind": "ResourceFlavor",
                "metadata": {"name": name, "generation": 1},
                "spec": {},
            }
        )

    def node_labels(self, **labels: str) -> Self:
        self._obj["spec"]["nodeLabels"] = dict(labels)
        return self


class AdmissionCheckBuilder(_Builder):
    def __init__(self, name: str, controller_name: str = "pykueue.dev/test-check") -> None:
        super().__init__(
            {
                "apiVersion": API_VERSION,
                "kind": "AdmissionCheck",
                "metadata": {"name": name, "generation": 1},
                "spec": {"controllerName": controller_name},
            }
        )

    def active(self, active: bool = True, reason: str = "Active") -> Self:
        return self.condition("Active", active, reason, "set by test")


class WorkloadPriorityClassBuilder(_Builder):
    def __init__(self, name: str, value: int) -> None:
        super().__init__(
            {
                "apiVersion": API_VERSION,
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )


def job_queue_label(name: str) -> dict[str, str]:
    """Labels putting a Job into LocalQueue ``name``."""
    return {QUEUE_NAME_LABEL: name}


# =================================================================================================
# batch/v1 Job (jobs area)
# =================================================================================================

SIM_RUN_SECONDS_ANNOTATION = "pykueue.dev/sim-run-seconds"


class JobBuilder(_Builder):
    """``JobBuilder("job", "ns").queue("lq").parallelism(2).requests(cpu="1").obj()``.

    A batch/v1 Job whose single container requests nothing until told; ``.obj()`` is what a test
    sends to the apiserver (no uid unless :meth:`uid` was called: unit tests set one, the
    apiserver assigns its own).
    """

    def __init__(self, name: str, namespace: str = "default") -> None:
        self._obj: Obj = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "parallelism": 1,
                "completions": 1,
                "template": {
                    "metadata": {},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": "main", "image": "registry.k8s.io/pause:3.9", "resources": {}}
                        ],
                    },
                },
            },
        }

    # --- metadata (obj, label, annotation: _Builder) ---
    def queue(self, name: str) -> Self:
        return self.label(QUEUE_NAME_LABEL, name)

    def workload_priority_class(self, name: str) -> Self:
        return self.label("kueue.x-k8s.io/priority-class", name)

    def resource_version(self, value: str) -> Self:
        self._obj["metadata"]["resourceVersion"] = value
        return self

    def owner(self, kind: str, name: str, uid: str, api_version: str = "batch/v1") -> Self:
        self._obj["metadata"]["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}
        ]
        return self

    # --- spec ---
    def suspend(self, suspend: bool = True) -> Self:
        self._obj["spec"]["suspend"] = suspend
        return self

    def parallelism(self, value: int) -> Self:
        self._obj["spec"]["parallelism"] = value
        return self

    def min_parallelism(self, value: int | str, *, completions_follow: bool = False) -> Self:
        """Partial admission: ``kueue.x-k8s.io/job-min-parallelism`` (and completions following
        the admitted parallelism)."""
        self.annotation("kueue.x-k8s.io/job-min-parallelism", str(value))
        if completions_follow:
            self.annotation("kueue.x-k8s.io/job-completions-equal-parallelism", "true")
        return self

    def completions(self, value: int | None) -> Self:
        if value is None:
            self._obj["spec"].pop("completions", None)
        else:
            self._obj["spec"]["completions"] = value
        return self

    def _pod_spec(self) -> Obj:
        return self._obj["spec"]["template"]["spec"]

    def requests(self, **requests: str) -> Self:
        """Requests of the main container (``cpu="1", memory="1Gi"``)."""
        self._pod_spec()["containers"][0].setdefault("resources", {})["requests"] = dict(requests)
        return self

    def limits(self, **limits: str) -> Self:
        self._pod_spec()["containers"][0].setdefault("resources", {})["limits"] = dict(limits)
        return self

    def env(self, name: str, value: str) -> Self:
        """Append an environment variable to the main container (names may repeat, as the Job API allows)."""
        self._pod_spec()["containers"][0].setdefault("env", []).append({"name": name, "value": value})
        return self

    def container(self, name: str, **requests: str) -> Self:
        self._pod_spec()["containers"].append(
            {"name": name, "image": "registry.k8s.io/pause:3.9", "resources": {"requests": dict(requests)}}
        )
        return self

    def init_container(self, name: str, *, sidecar: bool = False, **requests: str) -> Self:
        container: Obj = {"name": name, "image": "registry.k8s.io/pause:3.9", "resources": {"requests": dict(requests)}}
        if sidecar:
            container["restartPolicy"] = "Always"
        self._pod_spec().setdefault("initContainers", []).append(container)
        return self

    def overhead(self, **overhead: str) -> Self:
        self._pod_spec()["overhead"] = dict(overhead)
        return self

    def node_selector(self, **selector: str) -> Self:
        self._pod_spec()["nodeSelector"] = dict(selector)
        return self

    def toleration(self, key: str, value: str = "", effect: str = "NoSchedule", operator: str = "Equal") -> Self:
        toleration: Obj = {"key": key, "operator": operator, "effect": effect}
        if operator == "Equal":
            toleration["value"] = value
        self._pod_spec().setdefault("tolerations", []).append(toleration)
        return self

    def pod_priority_class(self, name: str) -> Self:
        self._pod_spec()["priorityClassName"] = name
        return self

    def pod_label(self, key: str, value: str) -> Self:
        self._obj["spec"]["template"].setdefault("metadata", {}).setdefault("labels", {})[key] = value
        return self

    def pod_annotation(self, key: str, value: str) -> Self:
        self._obj["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})[key] = value
        return self

    def run_seconds(self, seconds: float) -> Self:
        """How long each simulated pod runs before it succeeds (``-1``: forever)."""
        return self.pod_annotation(SIM_RUN_SECONDS_ANNOTATION, str(seconds))

    def indexed(self) -> Self:
        """``completionMode: Indexed``: each completion index runs once."""
        self._obj["spec"]["completionMode"] = "Indexed"
        return self

    def active_deadline_seconds(self, seconds: int) -> Self:
        """The Job controller fails the Job (``DeadlineExceeded``) once it ran this long."""
        self._obj["spec"]["activeDeadlineSeconds"] = seconds
        return self

    # --- status (unit tests play the Job controller) ---
    def status(self, **fields: Any) -> Self:
        """Set status fields, e.g. ``.status(active=2, ready=2, startTime="2026-01-01T00:00:00Z")``."""
        self._obj.setdefault("status", {}).update(fields)
        return self

    def job_condition(self, type_: str, status: str = "True", reason: str = "", message: str = "") -> Self:
        conds = self._obj.setdefault("status", {}).setdefault("conditions", [])
        conds[:] = [c for c in conds if c["type"] != type_]
        conds.append({"type": type_, "status": status, "reason": reason, "message": message})
        return self


# =================================================================================================
# core/v1 Pod (foundation area: simulated-pod behaviour of the local cluster)
# =================================================================================================


class PodBuilder(_Builder):
    """``PodBuilder("p", "ns").run_seconds(-1).requests(cpu="1").obj()``: a bare one-container Pod.

    ``restartPolicy`` defaults to Never, as for the pods of a batch Job.
    """

    def __init__(self, name: str, namespace: str = "default") -> None:
        self._obj: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9", "resources": {}}],
            },
        }

    def run_seconds(self, seconds: float) -> Self:
        """How long the simulated pod runs before it succeeds (``-1``: forever)."""
        return self.annotation(SIM_RUN_SECONDS_ANNOTATION, str(seconds))

    def requests(self, **requests: str) -> Self:
        self._obj["spec"]["containers"][0]["resources"]["requests"] = dict(requests)
        return self

    def node_selector(self, **selector: str) -> Self:
        self._obj["spec"]["nodeSelector"] = dict(selector)
        return self

    def restart_policy(self, policy: str) -> Self:
        self._obj["spec"]["restartPolicy"] = policy
        return self


# =================================================================================================
# Seed extensions of ClusterQueue (webhook area: concurrent admission and fallback rules)
# =================================================================================================


class SeedClusterQueueBuilder(ClusterQueueBuilder):
    """ClusterQueueBuilder plus ``concurrentAdmission`` and ``fallbackStrategy`` (pykueue's extensions).

    ``SeedClusterQueueBuilder("cq").flavor("res", cpu="4").concurrent("RemoveOther")
    .option("a", "res").fallback("DeactivateWorkload").fallback_rule("res", timeout="10m").obj()``.
    """

    def concurrent(self, on_success: str, *, target: str | None = None) -> Self:
        policy: Obj = {"onSuccess": on_success}
        if target is not None:
            policy["removeBelowTargetConfig"] = {"targetResourceFlavor": target}
        self._obj["spec"]["concurrentAdmission"] = policy
        return self

    def option(
        self,
        name: str,
        *flavors: str,
        create_delay: int | None = None,
        delete_delay: int | None = None,
    ) -> Self:
        option: Obj = {"name": name, "allowedResourceFlavors": list(flavors)}
        if create_delay is not None:
            option["createDelaySeconds"] = create_delay
        if delete_delay is not None:
            option["deleteDelaySeconds"] = delete_delay
        self._obj["spec"].setdefault("concurrentAdmission", {"onSuccess": "RemoveOther"}).setdefault(
            "explicitOptions", []
        ).append(option)
        return self

    def fallback(self, failure_policy: str = "DeactivateWorkload") -> Self:
        fungibility = self._obj["spec"].setdefault("flavorFungibility", {})
        fungibility.setdefault("fallbackStrategy", {"rules": []})["failurePolicy"] = failure_policy
        return self

    def fallback_rule(
        self,
        name: str,
        trigger: str = "TimeoutForPodsReadyExceeded",
        *,
        timeout: str | None = None,
        minutes: int | None = None,
    ) -> Self:
        rule: Obj = {"name": name, "trigger": trigger}
        if timeout is not None:
            rule["timeout"] = timeout
        if minutes is not None:
            rule["timeoutMinutes"] = minutes
        fungibility = self._obj["spec"].setdefault("flavorFungibility", {})
        fungibility.setdefault("fallbackStrategy", {"failurePolicy": "DeactivateWorkload"}).setdefault(
            "rules", []
        ).append(rule)
        return self


# =================================================================================================
# Controller runtime: plain core objects for informer and leader-election tests (runtime area)
# =================================================================================================


class ConfigMapBuilder(_Builder):
    """A ConfigMap: the cheapest object to create in bulk when testing informers."""

    def __init__(self, name: str, namespace: str) -> None:
        super().__init__({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}})

    def data(self, **values: str) -> Self:
        self._obj.setdefault("data", {}).update(values)
        return self


class LeaseBuilder(_Builder):
    """A coordination.k8s.io/v1 Lease as a leader elector writes it."""

    def __init__(self, name: str, namespace: str) -> None:
        super().__init__(
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {},
            }
        )

    def holder(self, identity: str, duration_seconds: int = 15) -> Self:
        self._obj["spec"].update({"holderIdentity": identity, "leaseDurationSeconds": duration_seconds})
        return self


# =================================================================================================
# API area: Cohort, ProvisioningRequestConfig, MultiKueue objects, ProvisioningRequest, and the
# extension fields of Workload (workloadMode, allowedResourceFlavors, options, fallback history,
# MultiKueue dispatch status)
# =================================================================================================


def _resource_quotas(nominal: dict[str, str], borrowing: dict[str, str] | None, lending: dict[str, str] | None) -> list[Obj]:
    quotas = []
    for res in sorted(nominal):
        quota: Obj = {"name": res, "nominalQuota": nominal[res]}
        if borrowing and res in borrowing:
            quota["borrowingLimit"] = borrowing[res]
        if lending and res in lending:
            quota["lendingLimit"] = lending[res]
        quotas.append(quota)
    return quotas


class CohortBuilder(_Builder):
    """``CohortBuilder("co").parent("root").flavor("on-demand", cpu="8").obj()``."""

    def __init__(self, name: str) -> None:
        super().__init__({"apiVersion": API_VERSION, "kind": "Cohort", "metadata": {"name": name}, "spec": {}})

    def parent(self, name: str) -> Self:
        self._obj["spec"]["parentName"] = name
        return self

    def flavor(
        self,
        flavor: str,
        *,
        borrowing_limit: dict[str, str] | None = None,
        lending_limit: dict[str, str] | None = None,
        **nominal: str,
    ) -> Self:
        """Shared quota of ``flavor``; flavors with the same resources share a resource group."""
        quotas = _resource_quotas(nominal, borrowing_limit, lending_limit)
        groups = self._obj["spec"].setdefault("resourceGroups", [])
        for group in groups:
            if group["coveredResources"] == sorted(nominal):
                group["flavors"].append({"name": flavor, "resources": quotas})
                return self
        groups.append({"coveredResources": sorted(nominal), "flavors": [{"name": flavor, "resources": quotas}]})
        return self

    def weight(self, weight: str) -> Self:
        self._obj["spec"]["fairSharing"] = {"weight": weight}
        return self


class ProvisioningRequestConfigBuilder(_Builder):
    """``ProvisioningRequestConfigBuilder("prc", "check-capacity.autoscaling.x-k8s.io").retry(limit=1).obj()``."""

    def __init__(self, name: str, class_name: str = "check-capacity.autoscaling.x-k8s.io") -> None:
        super().__init__(
            {
                "apiVersion": API_VERSION,
                "kind": "ProvisioningRequestConfig",
                "metadata": {"name": name},
                "spec": {"provisioningClassName": class_name},
            }
        )

    def parameters(self, **params: str) -> Self:
        self._obj["spec"].setdefault("parameters", {}).update(params)
        return self

    def managed_resources(self, *names: str) -> Self:
        self._obj["spec"]["managedResources"] = list(names)
        return self

    def retry(self, limit: int | None = None, base_seconds: int | None = None, max_seconds: int | None = None) -> Self:
        strategy = self._obj["spec"].setdefault("retryStrategy", {})
        for key, value in (("backoffLimitCount", limit), ("backoffBaseSeconds", base_seconds),
                           ("backoffMaxSeconds", max_seconds)):
            if value is not None:
                strategy[key] = value
        return self

    def node_selector_update(self, key: str, detail: str) -> Self:
        updates = self._obj["spec"].setdefault("podSetUpdates", {}).setdefault("nodeSelector", [])
        updates.append({"key": key, "valueFromProvisioningClassDetail": detail})
        return self

    def merge_policy(self, policy: str) -> Self:
        self._obj["spec"]["podSetMergePolicy"] = policy
        return self


def provisioning_admission_check(name: str, config_name: str) -> Obj:
    """An AdmissionCheck run by the ProvisioningRequest controller with ``config_name`` as parameters."""
    return {
        "apiVersion": API_VERSION,
        "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "spec": {
            "controllerName": "kueue.x-k8s.io/provisioning-request",
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": config_name},
        },
    }


def multikueue_admission_check(name: str, config_name: str) -> Obj:
    """An AdmissionCheck run by the MultiKueue controller with MultiKueueConfig ``config_name``."""
    return {
        "apiVersion": API_VERSION,
        "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "spec": {
            "controllerName": "kueue.x-k8s.io/multikueue",
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": config_name},
        },
    }


class MultiKueueConfigBuilder(_Builder):
    """``MultiKueueConfigBuilder("workers", "east", "west").obj()``."""

    def __init__(self, name: str, *clusters: str) -> None:
        super().__init__(
            {"apiVersion": API_VERSION, "kind": "MultiKueueConfig", "metadata": {"name": name},
             "spec": {"clusters": list(clusters)}}
        )


class MultiKueueClusterBuilder(_Builder):
    """``MultiKueueClusterBuilder("east").secret("east-kubeconfig").obj()`` (or ``.path(...)``)."""

    def __init__(self, name: str) -> None:
        super().__init__(
            {"apiVersion": API_VERSION, "kind": "MultiKueueCluster", "metadata": {"name": name},
             "spec": {"kubeConfig": {"locationType": "Secret", "location": f"{name}-kubeconfig"}}}
        )

    def secret(self, secret_name: str) -> Self:
        self._obj["spec"]["kubeConfig"] = {"locationType": "Secret", "location": secret_name}
        return self

    def path(self, file_path: str) -> Self:
        self._obj["spec"]["kubeConfig"] = {"locationType": "Path", "location": file_path}
        return self

    def active(self, active: bool = True, reason: str = "Active") -> Self:
        return self.condition("Active", active, reason, "Connected" if active else "set by test")


class ProvisioningRequestBuilder(_Builder):
    """An ``autoscaling.x-k8s.io/v1`` ProvisioningRequest, as tests playing the autoscaler see it."""

    def __init__(self, name: str, namespace: str, class_name: str = "check-capacity.autoscaling.x-k8s.io") -> None:
        super().__init__(
            {
                "apiVersion": "autoscaling.x-k8s.io/v1",
                "kind": "ProvisioningRequest",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"provisioningClassName": class_name, "podSets": []},
            }
        )

    def pod_set(self, template_name: str, count: int = 1) -> Self:
        self._obj["spec"]["podSets"].append({"podTemplateRef": {"name": template_name}, "count": count})
        return self

    def details(self, **details: str) -> Self:
        self._obj.setdefault("status", {}).setdefault("provisioningClassDetails", {}).update(details)
        return self


class SeedWorkloadBuilder(WorkloadBuilder):
    """WorkloadBuilder plus pykueue's extension fields: ``.mode("Parent")``, ``.allowed_flavors("main", "spot")``,
    ``.option_status(...)``, ``.flavor_assigned(...)``, ``.nominated(...)``, ``.cluster_name(...)``."""

    def mode(self, mode_type: str) -> Self:
        self._obj["spec"]["workloadMode"] = {"type": mode_type}
        return self

    def allowed_flavors(self, podset: str, *flavors: str) -> Self:
        for ps in self._obj["spec"]["podSets"]:
            if ps["name"] == podset:
                ps["allowedResourceFlavors"] = list(flavors)
                return self
        raise KeyError(f"no pod set {podset!r}; add it with .podset() first")

    def option_status(self, name: str, status: str, *flavors: str, message: str = "") -> Self:
        options = self._obj.setdefault("status", {}).setdefault("options", [])
        options[:] = [o for o in options if o["name"] != name]
        options.append({"name": name, "resourceFlavors": list(flavors), "status": status, "message": message})
        return self

    def flavor_assigned(self, flavor: str, at: str = "2026-01-01T00:00:00Z") -> Self:
        history = self._obj.setdefault("status", {}).setdefault("flavorAssignmentHistory", [])
        history[:] = [h for h in history if h["resourceFlavor"] != flavor]
        history.append({"resourceFlavor": flavor, "assignmentTime": at})
        return self

    def nominated(self, *clusters: str) -> Self:
        self._obj.setdefault("status", {})["nominatedClusterNames"] = list(clusters)
        return self

    def cluster_name(self, cluster: str) -> Self:
        status = self._obj.setdefault("status", {})
        status.pop("nominatedClusterNames", None)
        status["clusterName"] = cluster
        return self


# =================================================================================================
# Admission engine area: placement constraints, fungibility and taints for flavor-assignment tests
# =================================================================================================


class PlacementWorkloadBuilder(SeedWorkloadBuilder):
    """Constraints on the *last* pod set: ``.podset(cpu="1").node_selector(zone="a").at(30)``."""

    def at(self, second: int) -> Self:
        """Created ``second`` seconds after 2026-01-01T00:00:00Z (queue order in tests)."""
        return self.created(f"2026-01-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z")

    def _last_pod_spec(self) -> Obj:
        return self._obj["spec"]["podSets"][-1]["template"]["spec"]

    def node_selector(self, **labels: str) -> Self:
        self._last_pod_spec()["nodeSelector"] = dict(labels)
        return self

    def required_affinity(self, *terms: list[Obj]) -> Self:
        """Required node affinity; each argument is one term's matchExpressions (terms are ORed)."""
        self._last_pod_spec()["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": list(term)} for term in terms]
                }
            }
        }
        return self

    def toleration(self, key: str, value: str = "", effect: str = "NoSchedule", operator: str = "Equal") -> Self:
        toleration: Obj = {"key": key, "operator": operator, "effect": effect}
        if operator == "Equal":
            toleration["value"] = value
        self._last_pod_spec().setdefault("tolerations", []).append(toleration)
        return self


class FungibleClusterQueueBuilder(ClusterQueueBuilder):
    """ClusterQueue with ``flavorFungibility`` and a ``borrowWithinCohort`` priority threshold."""

    def fungibility(
        self, when_can_borrow: str | None = None, when_can_preempt: str | None = None, preference: str | None = None
    ) -> Self:
        fungibility = self._obj["spec"].setdefault("flavorFungibility", {})
        if when_can_borrow:
            fungibility["whenCanBorrow"] = when_can_borrow
        if when_can_preempt:
            fungibility["whenCanPreempt"] = when_can_preempt
        if preference:
            fungibility["preference"] = preference
        return self

    def borrow_threshold(self, threshold: int) -> Self:
        """``borrowWithinCohort.maxPriorityThreshold`` (set ``.preemption(borrow_within_cohort=...)`` first)."""
        self._obj["spec"]["preemption"]["borrowWithinCohort"]["maxPriorityThreshold"] = threshold
        return self


class TaintedFlavorBuilder(ResourceFlavorBuilder):
    """ResourceFlavor with ``nodeTaints`` and ``tolerations``."""

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        self._obj["spec"].setdefault("nodeTaints", []).append({"key": key, "value": value, "effect": effect})
        return self

    def toleration(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        self._obj["spec"].setdefault("tolerations", []).append(
            {"key": key, "operator": "Equal", "value": value, "effect": effect}
        )
        return self


# =================================================================================================
# apps/v1 DaemonSet (kind path: keeping node agents off simulated nodes)
# =================================================================================================


class DaemonSetBuilder(_Builder):
    """``DaemonSetBuilder("agent", "ns").tolerate_everything().obj()``: one pause container per node."""

    def __init__(self, name: str, namespace: str = "default") -> None:
        labels = {"app": name}
        self._obj: Obj = {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "selector": {"matchLabels": dict(labels)},
                "template": {
                    "metadata": {"labels": dict(labels)},
                    "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}]},
                },
            },
        }

    def tolerate_everything(self) -> Self:
        """Like kindnet and kube-proxy: no taint keeps these pods away."""
        self._obj["spec"]["template"]["spec"]["tolerations"] = [{"operator": "Exists"}]
        return self
