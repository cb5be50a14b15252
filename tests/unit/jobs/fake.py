"""An in-memory stand-in for the API and the caches, for reconciler unit tests.

It applies JSON merge patches (RFC 7386) and JSON patches (RFC 6902 test/remove/add/replace)
the way the apiserver does for these objects, enforces ``metadata.resourceVersion``
preconditions (409 Conflict), bumps resourceVersions, and records Events — enough to check what
the reconciler *does*, not how it calls the client.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from typing import Any

from controller.workload.status_plan import EventSpec
from pykueue.kube import resources as R
from pykueue.kube.errors import AlreadyExists, Conflict, Invalid, NotFound
from tests.unit.core.fakes import merge_patch  # RFC 7386, one implementation for every fake API

Obj = dict[str, Any]


def json_patch(target: Obj, ops: list[Obj]) -> Obj:
    result = copy.deepcopy(target)
    for op in ops:
        *parents, last = [p for p in op["path"].split("/")[1:]]
        node: Any = result
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        index: Any = int(last) if isinstance(node, list) else last
        if op["op"] == "test":
            if node[index] != op["value"]:
                raise Conflict(409, "Conflict", f"test failed at {op['path']}")
        elif op["op"] == "remove":
            del node[index]
        elif op["op"] in ("add", "replace"):
            node[index] = copy.deepcopy(op["value"])
    return result


class FakeCluster:
    """:class:`~controller.jobs.reconciler.JobLister`, ``Writer`` and the ``EventSink``."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.events: list[tuple[str, str, str, str]] = []  # (object name, type, reason, message)
        self.pods: dict[str, list[Obj]] = {}  # job uid -> pods
        self._rv = itertools.count(1)
        self._uid = itertools.count(1)

    # --- helpers for tests ---
    def put(self, res: R.Resource, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{next(self._uid)}")
        meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        meta["resourceVersion"] = str(next(self._rv))
        self.objects[(res.plural, meta.get("namespace", ""), meta["name"])] = obj
        return obj

    def get(self, res: R.Resource, name: str, namespace: str = "") -> Obj | None:
        return self.objects.get((res.plural, namespace or "", name))

    def of(self, res: R.Resource) -> list[Obj]:
        return [o for (plural, _, _), o in self.objects.items() if plural == res.plural]

    def reasons(self) -> list[str]:
        return [reason for _, _, reason, _ in self.events]

    # --- JobLister ---
    def job(self, namespace: str, name: str) -> Obj | None:
        return self.get(R.JOBS, name, namespace)

    def workloads_for_job(self, namespace: str, name: str) -> list[Obj]:
        result = []
        for wl in self.of(R.WORKLOADS):
            refs = wl["metadata"].get("ownerReferences") or []
            if wl["metadata"]["namespace"] == namespace and any(
                r.get("controller") and r.get("kind") == "Job" and r.get("name") == name for r in refs
            ):
                result.append(wl)
        return result

    def workload(self, namespace: str, name: str) -> Obj | None:
        return self.get(R.WORKLOADS, name, namespace)

    def flavors(self) -> Mapping[str, Obj]:
        return {f["metadata"]["name"]: f for f in self.of(R.RESOURCE_FLAVORS)}

    def options_of_parent(self, namespace: str, parent_uid: str) -> list[Obj]:
        return [
            wl
            for wl in self.of(R.WORKLOADS)
            if wl["metadata"]["namespace"] == namespace
            and any(
                r.get("controller") and r.get("kind") == "Workload" and r.get("uid") == parent_uid
                for r in wl["metadata"].get("ownerReferences") or []
            )
        ]

    def local_queue_exists(self, namespace: str, name: str) -> bool:
        return self.get(R.LOCAL_QUEUES, name, namespace) is not None

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        ns = self.get(R.NAMESPACES, namespace)
        return (ns or {}).get("metadata", {}).get("labels") or {"kubernetes.io/metadata.name": namespace}

    def workload_priority_class(self, name: str) -> Obj | None:
        return self.get(R.WORKLOAD_PRIORITY_CLASSES, name)

    def priority_class(self, name: str) -> Obj | None:
        return self.get(R.PRIORITY_CLASSES, name)

    def default_priority_class(self) -> Obj | None:
        return next((pc for pc in self.of(R.PRIORITY_CLASSES) if pc.get("globalDefault")), None)

    # --- Writer ---
    def create(self, res: R.Resource, obj: Obj, namespace: str | None = None) -> Obj:
        if self.get(res, obj["metadata"]["name"], namespace or "") is not None:
            raise AlreadyExists(409, "AlreadyExists", obj["metadata"]["name"])
        return copy.deepcopy(self.put(res, obj))

    def list(self, res: R.Resource, namespace: str | None = None, **kwargs: Any) -> Obj:
        assert res == R.PODS
        selector = kwargs.get("label_selector") or ""
        uid = selector.partition("=")[2]
        return {"items": copy.deepcopy(self.pods.get(uid, []))}

    def _patched(self, res: R.Resource, name: str, namespace: str | None, patch: Any, patch_type: str) -> Obj:
        current = self.get(res, name, namespace or "")
        if current is None:
            raise NotFound(404, "NotFound", name)
        if patch_type == "json":
            updated = json_patch(current, patch)
        else:
            wanted_rv = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted_rv is not None and wanted_rv != current["metadata"]["resourceVersion"]:
                raise Conflict(409, "Conflict", f"{name}: resourceVersion {wanted_rv} is stale")
            if res == R.JOBS and "template" in (patch.get("spec") or {}):
                self._check_template_mutable(current)
            updated = merge_patch(current, patch)
        updated["metadata"]["resourceVersion"] = str(next(self._rv))
        self.objects[(res.plural, namespace or "", name)] = updated
        if updated["metadata"].get("deletionTimestamp") and not updated["metadata"].get("finalizers"):
            del self.objects[(res.plural, namespace or "", name)]  # the last finalizer went: gone
        return copy.deepcopy(updated)

    @staticmethod
    def _check_template_mutable(job: Obj) -> None:
        """The Job API: scheduling directives change only on a suspended, not-started Job; like
        the apiserver right after a suspension, also refuse while the Job still counts pods."""
        status = job.get("status") if isinstance(job.get("status"), dict) else {}
        if not job["spec"].get("suspend") or status.get("startTime") or status.get("active"):
            raise Invalid(422, "Invalid", "spec.template: Invalid value: field is immutable")

    def patch(
        self, res: R.Resource, name: str, patch: Any, namespace: str | None = None, **kwargs: Any
    ) -> Obj:
        return self._patched(res, name, namespace, patch, kwargs.get("patch_type", "merge"))

    def patch_status(
        self, res: R.Resource, name: str, patch: Any, namespace: str | None = None, **kwargs: Any
    ) -> Obj:
        assert set(patch) <= {"status", "metadata"}, "a status patch may only change status"
        return self._patched(res, name, namespace, patch, "merge")

    def delete(self, res: R.Resource, name: str, namespace: str | None = None, **kwargs: Any) -> bool:
        obj = self.get(res, name, namespace or "")
        if obj is None:
            raise NotFound(404, "NotFound", name)
        if obj["metadata"].get("finalizers"):
            obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            return True
        del self.objects[(res.plural, namespace or "", name)]
        return True

    # --- EventSink ---
    def emit(self, involved: Mapping[str, Any], event: EventSpec) -> None:
        assert involved.get("kind") and involved.get("apiVersion"), "events must name the object's kind"
        self.events.append((involved["metadata"]["name"], event.type, event.reason, event.message))
