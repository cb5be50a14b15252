"""Engine-test extensions of the shared builders in ``tests/builders.py``.

Adds what engine tests need beyond the core builders: Cohort objects, flavor taints and
tolerations, podSet placement constraints, fungibility, and a small ``World`` that loads a set of
objects into an :class:`Engine` and runs cycles with a controlled clock.
"""

from __future__ import annotations

import copy
from typing import Any, Self

from controller.engine import CycleResult, Engine
from pykueue.api.constants import API_VERSION
from tests.builders import (
    ClusterQueueBuilder,
    LocalQueueBuilder,
    ResourceFlavorBuilder,
    WorkloadBuilder,
)

Obj = dict[str, Any]


class CohortBuilder:
    def __init__(self, name: str) -> None:
        self._obj: Obj = {"apiVersion": API_VERSION, "kind": "Cohort", "metadata": {"name": name}, "spec": {}}

    def parent(self, name: str) -> Self:
        self._obj["spec"]["parent"] = name
        return self

    def flavor(
        self,
        flavor: str,
        *,
        borrowing_limit: dict[str, str] | None = None,
        lending_limit: dict[str, str] | None = None,
        **nominal: str,
    ) -> Self:
        quotas = []
        for res in sorted(nominal):
            quota: Obj = {"name": res, "nominalQuota": nominal[res]}
            if borrowing_limit and res in borrowing_limit:
                quota["borrowingLimit"] = borrowing_limit[res]
            if lending_limit and res in lending_limit:
                quota["lendingLimit"] = lending_limit[res]
            quotas.append(quota)
        groups = self._obj["spec"].setdefault("resourceGroups", [])
        for group in groups:
            if sorted(group["coveredResources"]) == sorted(nominal):
                group["flavors"].append({"name": flavor, "resources": quotas})
                return self
        groups.append({"coveredResources": sorted(nominal), "flavors": [{"name": flavor, "resources": quotas}]})
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


class FlavorBuilder(ResourceFlavorBuilder):
    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        self._obj["spec"].setdefault("nodeTaints", []).append({"key": key, "value": value, "effect": effect})
        return self

    def toleration(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        self._obj["spec"].setdefault("tolerations", []).append(
            {"key": key, "operator": "Equal", "value": value, "effect": effect}
        )
        return self


class QueueBuilder(ClusterQueueBuilder):
    def fungibility(self, when_can_borrow: str | None = None, when_can_preempt: str | None = None,
                    preference: str | None = None) -> Self:
        fung = self._obj["spec"].setdefault("flavorFungibility", {})
        if when_can_borrow:
            fung["whenCanBorrow"] = when_can_borrow
        if when_can_preempt:
            fung["whenCanPreempt"] = when_can_preempt
        if preference:
            fung["preference"] = preference
        return self

    def borrow_threshold(self, threshold: int) -> Self:
        self._obj["spec"]["preemption"]["borrowWithinCohort"]["maxPriorityThreshold"] = threshold
        return self


class WlBuilder(WorkloadBuilder):
    """Workload with placement constraints on its last podSet and a creation second offset."""

    def at(self, second: int) -> Self:
        return self.created(f"2026-01-01T00:{second // 60:02d}:{second % 60:02d}Z")

    def _pod_spec(self) -> Obj:
        return self._obj["spec"]["podSets"][-1]["template"]["spec"]

    def node_selector(self, **labels: str) -> Self:
        self._pod_spec()["nodeSelector"] = dict(labels)
        return self

    def required_affinity(self, *terms: list[Obj]) -> Self:
        self._pod_spec()["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": list(term)} for term in terms]
                }
            }
        }
        return self

    def toleration(self, key: str, value: str = "", effect: str = "NoSchedule", operator: str = "Equal") -> Self:
        tol: Obj = {"key": key, "operator": operator, "effect": effect}
        if operator == "Equal":
            tol["value"] = value
        self._pod_spec().setdefault("tolerations", []).append(tol)
        return self

    def allowed_flavors(self, *names: str) -> Self:
        self._obj["spec"]["podSets"][-1]["allowedResourceFlavors"] = list(names)
        return self


class World:
    """An engine plus the objects it was fed; time is controlled by the test."""

    def __init__(self, *, heads: int = 8, batch: float = 0.0) -> None:
        self.engine = Engine(heads_per_cluster_queue=heads, requeue_batch_seconds=batch)
        self.now = 1_000.0
        self.objects: dict[str, Obj] = {}

    def flavors(self, *names: str) -> Self:
        for name in names:
            self.engine.upsert_resource_flavor(ResourceFlavorBuilder(name).obj())
        return self

    def queue(self, cq: Obj, *, namespace: str = "ns", lq: str | None = None) -> Self:
        """Add a ClusterQueue and a LocalQueue named after it (``lq-<cq>``) in ``namespace``."""
        self.engine.upsert_cluster_queue(cq)
        name = cq["metadata"]["name"]
        self.engine.upsert_local_queue(LocalQueueBuilder(lq or f"lq-{name}", namespace, name).obj())
        return self

    def add(self, wl: Obj) -> Obj:
        self.objects[f"{wl['metadata']['namespace']}/{wl['metadata']['name']}"] = wl
        self.engine.upsert_workload(wl)
        return wl

    def cycle(self, advance: float = 1.0) -> CycleResult:
        self.now += advance
        return self.engine.schedule(now=self.now)

    def admit(self, advance: float = 1.0) -> list[str]:
        """Run a cycle, confirm every reservation (as the API write would) and return the keys."""
        result = self.cycle(advance)
        for r in result.reservations:
            self.engine.confirm(r.workload)
        return [r.workload for r in result.reservations]

    def finish(self, key: str) -> None:
        namespace, name = key.split("/")
        self.engine.delete_workload(namespace, name)

    def usage(self, cq: str, flavor: str = "default", resource: str = "cpu") -> int:
        return self.engine.forest.cluster_queues[cq].usage.get((flavor, resource), 0)
