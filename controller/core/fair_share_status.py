"""``status.fairSharing.weightedShare`` of ClusterQueues and Cohorts, and its metrics (leader only,
with fair sharing enabled).

Shares live in the engine (``controller.engine.fairshare``), which only the scheduler loop's
thread may read: every :data:`PERIOD_SECONDS` this writer asks the loop for them
(``EngineReads``, served between two cycles), compares them with what each object's status shows in
the informer cache and patches the status of those that differ, at most :data:`WRITES_PER_PERIOD`
per period (the rest follow in the next periods), so that a busy cohort costs a bounded number of
status writes however often its shares move — as the other queue status writes are rate-limited.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from controller.core import metrics as m
from controller.core.engine_reads import EngineReads, NotLeading
from controller.runtime.periodic import PeriodicRunnable
from controller.workload import view as wv
from controller.workload.indexes import ApiClient, InformerLike
from pykueue.kube.errors import ApiError
from pykueue.kube.resources import CLUSTER_QUEUES, COHORTS

log = logging.getLogger(__name__)

PERIOD_SECONDS = 2.0
WRITES_PER_PERIOD = 10
MAX_INT64 = 2**63 - 1


def shown_share(obj: dict[str, Any]) -> int | None:
    fair = wv.status(obj).get("fairSharing")
    value = fair.get("weightedShare") if isinstance(fair, dict) else None
    return value if isinstance(value, int) else None


def share_patch(share: int) -> dict[str, Any]:
    return {"status": {"fairSharing": {"weightedShare": share}}}


def metric_value(share: int) -> float:
    return math.nan if share == MAX_INT64 else float(share)


class FairShareStatus(PeriodicRunnable):
    """The periodic writer; ``tick()`` is one period's work (tests call it directly)."""

    name = "fair-share-status"
    quiet = (NotLeading, TimeoutError)

    def __init__(self, client: ApiClient, reads: EngineReads, cluster_queues: InformerLike,
                 cohorts: InformerLike, period: float = PERIOD_SECONDS) -> None:
        super().__init__(period)
        self._client = client
        self._reads = reads
        self._cluster_queues = cluster_queues
        self._cohorts = cohorts

    def tick(self) -> int:
        """Write what differs (bounded); the number of writes."""
        queues, cohorts = self._reads.submit(lambda engine: engine.weighted_shares())
        for name, (share, cohort) in queues.items():
            m.CLUSTER_QUEUE_WEIGHTED_SHARE.labels(name, cohort).set(metric_value(share))
        for name, share in cohorts.items():
            m.COHORT_WEIGHTED_SHARE.labels(name).set(metric_value(share))
        writes = 0
        for resource, informer, shares in (
            (CLUSTER_QUEUES, self._cluster_queues, {n: s for n, (s, _) in queues.items()}),
            (COHORTS, self._cohorts, cohorts),
        ):
            for name, share in sorted(shares.items()):
                if writes >= WRITES_PER_PERIOD:
                    return writes
                obj = informer.store.get(name)
                if obj is None or shown_share(obj) == share:
                    continue  # an implicit cohort has no object to write
                try:
                    self._client.patch_status(resource, name, share_patch(share))
                except ApiError as err:
                    log.warning("weighted share not written", extra={"object": name, "error": str(err)})
                writes += 1
        return writes
