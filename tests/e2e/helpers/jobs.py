"""Jobs for e2e tests: a client over a namespace's Jobs, their pods and Workloads, and the
queues and Job shapes the Job stories share (``tests/e2e/test_jobs.py`` and the feature files)."""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s

from tests.builders import ClusterQueueBuilder, JobBuilder, LocalQueueBuilder, ResourceFlavorBuilder
from tests.e2e.helpers.kueue import KueueApi, unique
from tests.e2e.helpers.wait import wait_for as _wait_for

FLAVOR_LABEL = "pykueue.dev/e2e-flavor"
# Deadlines are generous: the machine is shared, and a loaded one only makes the tests slower.
DEFAULT_TIMEOUT = 90.0
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"


def wait_for(predicate: Any, timeout: float = DEFAULT_TIMEOUT, **kwargs: Any) -> Any:
    """The shared poll helper with this module's generous default deadline."""
    return _wait_for(predicate, timeout=timeout, **kwargs)


class Jobs:
    """Jobs, their pods and their Workloads through the API."""

    def __init__(self, kube: k8s.ApiClient, kueue: KueueApi, namespace: str) -> None:
        self.batch = k8s.BatchV1Api(kube)
        self.core = k8s.CoreV1Api(kube)
        self.kueue = kueue
        self.namespace = namespace

    def create(self, job: JobBuilder) -> dict[str, Any]:
        obj = job.obj()
        created = self.batch.api_client.sanitize_for_serialization(
            self.batch.create_namespaced_job(self.namespace, obj)
        )
        assert isinstance(created, dict)
        return created

    def get(self, name: str) -> dict[str, Any]:
        job = self.batch.api_client.sanitize_for_serialization(
            self.batch.read_namespaced_job(name, self.namespace)
        )
        assert isinstance(job, dict)
        return job

    def delete(self, name: str) -> None:
        self.batch.delete_namespaced_job(name, self.namespace, propagation_policy="Background")

    def pods(self, name: str) -> list[k8s.V1Pod]:
        return self.core.list_namespaced_pod(
            self.namespace, label_selector=f"batch.kubernetes.io/job-name={name}"
        ).items

    def live_pods(self, name: str) -> list[k8s.V1Pod]:
        return [p for p in self.pods(name) if p.status.phase not in ("Succeeded", "Failed")]

    def workload(self, name: str) -> dict[str, Any] | None:
        uid = self.get(name)["metadata"]["uid"]
        found = [
            w
            for w in self.kueue.workloads(self.namespace)
            if w["metadata"].get("labels", {}).get(JOB_UID_LABEL) == uid
        ]
        return found[0] if found else None

    def events(self, name: str, kind: str = "Job") -> list[str]:
        items = self.core.list_namespaced_event(
            self.namespace, field_selector=f"involvedObject.name={name},involvedObject.kind={kind}"
        ).items
        return [e.reason for e in items]

    def succeeded(self, name: str) -> bool:
        conditions = self.get(name).get("status", {}).get("conditions") or []
        return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)


def make_queues(kueue: KueueApi, namespace: str, node_value: str, cpu: str, **preemption: str) -> str:
    """A flavor pinned to ``node_value`` nodes, a ClusterQueue with ``cpu`` of it, LocalQueue ``lq``."""
    flavor = unique("flavor")
    kueue.create(ResourceFlavorBuilder(flavor).node_labels(**{FLAVOR_LABEL: node_value}).obj())
    cq = unique("cq")
    builder = ClusterQueueBuilder(cq).flavor(flavor, cpu=cpu)
    if preemption:
        builder.preemption(**preemption)
    kueue.create(builder.obj())
    kueue.create(LocalQueueBuilder("lq", namespace, cq).obj())
    return cq


def queued(name: str, namespace: str, *, pods: int = 2, cpu: str = "1", seconds: float = 3) -> JobBuilder:
    """A Job in LocalQueue ``lq`` — created *unsuspended*: the webhook must suspend it."""
    return (
        JobBuilder(name, namespace)
        .queue("lq")
        .parallelism(pods)
        .completions(pods)
        .requests(cpu=cpu)
        .run_seconds(seconds)
    )
