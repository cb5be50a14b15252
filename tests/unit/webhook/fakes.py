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

    def workload_priority_class(self, name: str) -> Obj | None:
        return self._get("WorkloadPriorityClass", name)

    def admission_check(self, name: str) -> Obj | None:
        return self._get("AdmissionCheck", name)


class FakeKube:
    """The slice of KubeClient the certificate code uses, with resourceVersion compare-and-swap.

    ``before_write`` lets a test slip in another replica's write between a read and a write.
    """

    def __init__(self) -> None:
        self.store: dict[tuple[str, str, str], Obj] = {}
        self.version = 0
        self.before_write: Any = None
        self.patches: list[Any] = []

    def _key(self, res: Any, name: str, namespace: str | None) -> tuple[str, str, str]:
        return (res.plural, namespace or "", name)

    def _bump(self, obj: Obj) -> Obj:
        import copy

        self.version += 1
        stored = copy.deepcopy(obj)
        stored.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        return stored

    def get(self, res: Any, name: str, namespace: str | None = None) -> Obj | None:
        import copy

        found = self.store.get(self._key(res, name, namespace))
        return copy.deepcopy(found) if found is not None else None

    def create(self, res: Any, obj: Obj, namespace: str | None = None) -> Obj:
        from pykueue.kube.errors import AlreadyExists

        if self.before_write:
            hook, self.before_write = self.before_write, None
            hook()
        key = self._key(res, obj["metadata"]["name"], namespace or obj["metadata"].get("namespace"))
        if key in self.store:
            raise AlreadyExists(409, "AlreadyExists", "exists")
        self.store[key] = self._bump(obj)
        return self.store[key]

    def replace(self, res: Any, obj: Obj) -> Obj:
        from pykueue.kube.errors import Conflict

        if self.before_write:
            hook, self.before_write = self.before_write, None
            hook()
        key = self._key(res, obj["metadata"]["name"], obj["metadata"].get("namespace"))
        current = self.store.get(key)
        if current is None or current["metadata"]["resourceVersion"] != obj["metadata"].get("resourceVersion"):
            raise Conflict(409, "Conflict", "the object has been modified")
        self.store[key] = self._bump(obj)
        return self.store[key]

    def patch(self, res: Any, name: str, patch: Any, namespace: str | None = None, **kw: Any) -> Obj:
        from pykueue.kube.errors import Invalid
        from webhook.patch import apply_patch

        key = self._key(res, name, namespace)
        current = self.store[key]
        self.patches.append(patch)
        for op in patch:
            if op["op"] == "test":
                tokens = op["path"].split("/")[1:]
                node: Any = current
                for token in tokens:
                    node = node[int(token)] if isinstance(node, list) else node[token]
                if node != op["value"]:
                    raise Invalid(422, "Invalid", "test failed")
        self.store[key] = self._bump(apply_patch(current, [op for op in patch if op["op"] != "test"]))
        return self.store[key]

    def delete(self, res: Any, name: str, namespace: str | None = None, **kw: Any) -> bool:
        return self.store.pop(self._key(res, name, namespace), None) is not None
