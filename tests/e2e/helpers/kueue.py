"""Kueue objects through the plain ``kubernetes`` client, for the admission e2e tests.

:class:`KueueApi` creates objects built with ``tests.builders``, reads them back, and drives what
an external actor would (mark a workload Finished, set an admission check's state). Cluster-scoped
objects it created are deleted by :meth:`KueueApi.cleanup`; namespaced ones go with the test's
namespace.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from pykueue.api.conversion import convert, convert_patch
from tests.builders import ClusterQueueBuilder, LocalQueueBuilder, ResourceFlavorBuilder, WorkloadBuilder

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta1"
# The version KueueApi writes and reads: v1beta1 (the default) or, with
# PYKUEUE_E2E_KUEUE_VERSION=v1beta2, Kueue's current version, so every object the helpers handle
# passes through the conversion webhook. Tests keep building and asserting on v1beta1 objects
# (tests.builders); KueueApi converts on the way in and out with pykueue.api.conversion, the very
# functions the webhook runs.
WIRE_VERSION = os.environ.get("PYKUEUE_E2E_KUEUE_VERSION", VERSION)
if WIRE_VERSION not in ("v1beta1", "v1beta2"):
    raise ValueError(f"PYKUEUE_E2E_KUEUE_VERSION={WIRE_VERSION!r}: expected v1beta1 or v1beta2")
PLURALS = {
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
    "Workload": "workloads",
    "ResourceFlavor": "resourceflavors",
    "AdmissionCheck": "admissionchecks",
    "WorkloadPriorityClass": "workloadpriorityclasses",
    "Cohort": "cohorts",
    "ProvisioningRequestConfig": "provisioningrequestconfigs",
}
NAMESPACED = {"LocalQueue", "Workload"}


def unique(prefix: str) -> str:
    """A cluster-unique name (cluster-scoped objects outlive a test's namespace)."""
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return cond
    return None


def is_true(obj: dict[str, Any], type_: str) -> bool:
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


def is_admitted(wl: dict[str, Any]) -> bool:
    return is_true(wl, "Admitted") and bool((wl.get("status") or {}).get("admission"))


def holds_quota(wl: dict[str, Any]) -> bool:
    return is_true(wl, "QuotaReserved") and bool((wl.get("status") or {}).get("admission"))


class KueueApi:
    """Kueue objects through the apiserver in ``version`` (default: ``WIRE_VERSION``); tests build
    and assert on v1beta1 objects whatever the wire version."""

    def __init__(self, api_client: k8s.ApiClient, version: str | None = None) -> None:
        self.custom = k8s.CustomObjectsApi(api_client)
        self.created: list[tuple[str, str]] = []
        self.version = version or WIRE_VERSION
        if self.version not in ("v1beta1", "v1beta2"):
            raise ValueError(f"KueueApi version {self.version!r}: expected v1beta1 or v1beta2")

    def _out(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        """A v1beta1 object or partial patch as the wire version spells it."""
        if self.version == VERSION:
            return body
        converted = convert({**body, "apiVersion": f"{GROUP}/{VERSION}", "kind": kind}, self.version)
        if "apiVersion" not in body:
            converted.pop("apiVersion", None)
            converted.pop("kind", None)
        return converted

    def _out_patch(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        """A v1beta1 merge patch as the wire version spells it: the plain field mapping, without
        the conversion-data annotation or defaults a whole object's conversion adds."""
        return body if self.version == VERSION else convert_patch(kind, body, VERSION, self.version)

    def _in(self, obj: dict[str, Any]) -> dict[str, Any]:
        """What the apiserver answered, as the v1beta1 object the tests assert on."""
        if self.version == VERSION or obj.get("apiVersion") != f"{GROUP}/{self.version}":
            return obj
        return convert(obj, VERSION)

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        kind = obj["kind"]
        plural = PLURALS[kind]
        if kind in NAMESPACED:
            return self._in(
                self.custom.create_namespaced_custom_object(
                    GROUP, self.version, obj["metadata"]["namespace"], plural, self._out(kind, obj)
                )
            )
        created = self.custom.create_cluster_custom_object(GROUP, self.version, plural, self._out(kind, obj))
        self.created.append((kind, obj["metadata"]["name"]))
        return self._in(created)

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        try:
            if kind in NAMESPACED:
                return self._in(
                    self.custom.get_namespaced_custom_object(GROUP, self.version, namespace, PLURALS[kind], name)
                )
            return self._in(self.custom.get_cluster_custom_object(GROUP, self.version, PLURALS[kind], name))
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def workload(self, namespace: str, name: str) -> dict[str, Any]:
        wl = self.get("Workload", name, namespace)
        assert wl is not None, f"workload {namespace}/{name} not found"
        return wl

    def workloads(self, namespace: str) -> list[dict[str, Any]]:
        listed = self.custom.list_namespaced_custom_object(GROUP, self.version, namespace, "workloads")["items"]
        return [self._in({"apiVersion": f"{GROUP}/{self.version}", "kind": "Workload", **wl}) for wl in listed]

    def patch(
        self, kind: str, name: str, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        body = self._out_patch(kind, body)
        if kind in NAMESPACED:
            return self._in(
                self.custom.patch_namespaced_custom_object(GROUP, self.version, namespace, PLURALS[kind], name, body)
            )
        return self._in(self.custom.patch_cluster_custom_object(GROUP, self.version, PLURALS[kind], name, body))

    def patch_status(
        self, kind: str, name: str, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        body = self._out_patch(kind, body)
        if kind in NAMESPACED:
            return self._in(
                self.custom.patch_namespaced_custom_object_status(
                    GROUP, self.version, namespace, PLURALS[kind], name, body
                )
            )
        return self._in(
            self.custom.patch_cluster_custom_object_status(GROUP, self.version, PLURALS[kind], name, body)
        )

    def finish(self, wl: dict[str, Any]) -> None:
        """Mark a standalone workload Finished (what a job integration does when the job ends).

        The patch is guarded by resourceVersion so it never erases a condition the controller
        wrote meanwhile; on 409 the workload is read again and the patch retried.
        """
        namespace, name = wl["metadata"]["namespace"], wl["metadata"]["name"]
        for _attempt in range(5):
            conditions = [
                c for c in (wl.get("status") or {}).get("conditions") or [] if c.get("type") != "Finished"
            ]
            conditions.append(
                {
                    "type": "Finished",
                    "status": "True",
                    "reason": "Succeeded",
                    "message": "finished by the test",
                    "lastTransitionTime": now_rfc3339(),
                }
            )
            body = {
                "metadata": {"resourceVersion": wl["metadata"]["resourceVersion"]},
                "status": {"conditions": conditions},
            }
            try:
                self.patch_status("Workload", name, body, namespace)
                return
            except ApiException as err:
                if err.status != 409:
                    raise
            wl = self.workload(namespace, name)
        raise AssertionError(f"could not mark {namespace}/{name} Finished: it kept changing")

    def set_pods_ready(self, namespace: str, name: str) -> None:
        """Play the job integration: the workload's pods are ready (``PodsReady=True``, replacing
        any ``PodsReady`` condition; guarded by resourceVersion, re-read and retried on 409)."""
        def ready(wl: dict[str, Any]) -> dict[str, Any]:
            conditions = [c for c in (wl.get("status") or {}).get("conditions") or [] if c.get("type") != "PodsReady"]
            conditions.append({"type": "PodsReady", "status": "True", "reason": "Started", "message": "pods ready",
                               "lastTransitionTime": now_rfc3339()})
            return {"conditions": conditions}

        self._patch_workload_status(namespace, name, ready, f"could not mark {namespace}/{name} PodsReady")

    def set_check_state(
        self,
        namespace: str,
        name: str,
        check: str,
        state: str,
        message: str = "",
        requeue_after_seconds: int | None = None,
    ) -> None:
        """Play the admission-check controller: set one check's state on the workload (guarded by
        resourceVersion, re-read and retried on 409)."""
        def with_state(wl: dict[str, Any]) -> dict[str, Any]:
            states = []
            for entry in (wl.get("status") or {}).get("admissionChecks") or []:
                if entry["name"] == check:
                    entry = dict(entry, state=state, message=message, lastTransitionTime=now_rfc3339())
                    if requeue_after_seconds is not None:
                        entry["requeueAfterSeconds"] = requeue_after_seconds
                states.append(entry)
            return {"admissionChecks": states}

        self._patch_workload_status(namespace, name, with_state, f"could not set check {check} on {namespace}/{name}")

    def _patch_workload_status(
        self, namespace: str, name: str, status_of: Callable[[dict[str, Any]], dict[str, Any]], failure: str
    ) -> None:
        """A status merge patch computed from the current Workload (``status_of``), guarded by its
        resourceVersion; on 409 the Workload is read again and the patch recomputed (5 attempts)."""
        for _attempt in range(5):
            wl = self.workload(namespace, name)
            body = {"metadata": {"resourceVersion": wl["metadata"]["resourceVersion"]}, "status": status_of(wl)}
            try:
                self.patch_status("Workload", name, body, namespace)
                return
            except ApiException as err:
                if err.status != 409:
                    raise
        raise AssertionError(f"{failure}: it kept changing")

    def set_active_condition(self, kind: str, name: str, active: bool) -> None:
        """Play an admission-check controller: publish the check's ``Active`` condition."""
        self.patch_status(
            kind,
            name,
            {
                "status": {
                    "conditions": [
                        {
                            "type": "Active",
                            "status": "True" if active else "False",
                            "reason": "Active" if active else "Inactive",
                            "message": "set by the test",
                            "lastTransitionTime": now_rfc3339(),
                            "observedGeneration": 1,
                        }
                    ]
                }
            },
        )

    def cleanup(self) -> None:
        """Delete the cluster-scoped objects this test created (finalizers are the controller's job)."""
        for kind, name in reversed(self.created):
            try:
                self.custom.delete_cluster_custom_object(GROUP, VERSION, PLURALS[kind], name)
            except ApiException as err:
                if err.status != 404:
                    raise
        self.created.clear()


def make_queues(
    kueue: KueueApi,
    namespace: str,
    cpu: str,
    *,
    lq: str = "lq",
    cohort: str | None = None,
    flavor: str | None = None,
    **cq_options: Any,
) -> tuple[str, str]:
    """A fresh flavor, a ClusterQueue with ``cpu`` of it (``cq_options`` are builder calls, e.g.
    ``preemption=("LowerPriority",)``) and LocalQueue ``lq`` in ``namespace``; returns
    (flavor, ClusterQueue name). Pass ``flavor`` to share an existing flavor (cohorts lend per
    flavor)."""
    if flavor is None:
        flavor = unique("default")
        kueue.create(ResourceFlavorBuilder(flavor).obj())
    cq_name = unique("cq")
    cq = ClusterQueueBuilder(cq_name).flavor(flavor, cpu=cpu)
    if cohort:
        cq.cohort(cohort)
    for option, value in cq_options.items():
        getattr(cq, option)(*value)
    kueue.create(cq.obj())
    kueue.create(LocalQueueBuilder(lq, namespace, cq_name).obj())
    return flavor, cq_name


def submit(
    kueue: KueueApi, namespace: str, name: str, cpu: str = "1", queue: str = "lq", priority: int | None = None
) -> None:
    wl = WorkloadBuilder(name, namespace).queue(queue).podset(count=1, cpu=cpu)
    if priority is not None:
        wl.priority(priority)
    obj = wl.obj()
    # Let the apiserver assign identity and timestamps.
    del obj["metadata"]["uid"], obj["metadata"]["creationTimestamp"], obj["metadata"]["generation"]
    kueue.create(obj)


def admitted_names(kueue: KueueApi, namespace: str) -> set[str]:
    return {wl["metadata"]["name"] for wl in kueue.workloads(namespace) if is_admitted(wl)}


def holds_for(predicate: Callable[[], bool], seconds: float, message: str) -> None:
    """Assert ``predicate`` stays true for ``seconds`` (polling): how a test shows that something
    does *not* happen."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert predicate(), message
        time.sleep(0.25)
