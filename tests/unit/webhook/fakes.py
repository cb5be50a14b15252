"""A dict-backed ClusterState for the webhook's unit tests (no cluster)."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


class FakeClusterState:
    def __init__(self, *objects: Obj) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.reads = 0
        for obj in objects:
            self.add(obj)

    def add(self, obj: Obj) -> FakeClusterState:
        meta = obj["metadata"]
        self.objects[(obj["kind"], meta.get("namespace", ""), meta["name"])] = obj
        return self

    def _get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        self.reads += 1
        return self.objects.get((kind, namespace, name))

    def namespace(self, name: str) -> Obj | None:
        return self._get("Namespace", name) or {"kind": "Namespace", "metadata": {"name": name, "labels": {
            "kubernetes.io/metadata.name": name}}}

    def local_queue(self, namespace: str, name: str) -> Obj | None:
        return self._get("LocalQueue", name, namespace)

    def cluster_queue(self, name: str) -> Obj | None:
        return self._get("ClusterQueue", name)

    def cluster_queues(self) -> list[Obj]:
        return [o for (kind, _, _), o in self.objects.items() if kind == "ClusterQueue"]

    def cohort(self, name: str) -> Obj | None:
        return self._get("Cohort", name)

    def job(self, namespace: str, name: str) -> Obj | None:
        return self._get("Job", name, namespace)
