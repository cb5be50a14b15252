"""A small harness for engine tests: an Engine fed with builder objects, with a test-controlled clock."""

from __future__ import annotations

from typing import Any, Self

from controller.engine import CycleResult, Engine
from pykueue.api.config import AdmissionFairSharing
from tests.builders import LocalQueueBuilder, ResourceFlavorBuilder

Obj = dict[str, Any]


class World:
    """An engine plus the objects it was fed; time is controlled by the test."""

    def __init__(
        self,
        *,
        heads: int = 8,
        batch: float = 0.0,
        requeuing_timestamp: str = "Eviction",
        fair_sharing: tuple[str, ...] | None = None,
        admission_fair_sharing: AdmissionFairSharing | None = None,
        preemption_grace: float = 0.0,
    ) -> None:
        self.now = 1_000.0
        self.engine = Engine(
            heads_per_cluster_queue=heads,
            requeue_batch_seconds=batch,
            requeuing_timestamp=requeuing_timestamp,
            fair_sharing=fair_sharing,
            admission_fair_sharing=admission_fair_sharing,
            preemption_grace_seconds=preemption_grace,
            clock=lambda: self.now,  # the engine's clock outside schedule(now) is the test's too
        )
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
