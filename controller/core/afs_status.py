"""LocalQueue ``status.fairSharing.admissionFairSharingStatus`` and its metric (leader only, with
the Configuration's ``admissionFairSharing``).

The usage lives in the engine (``controller.engine.afs``), sampled every ``usageSamplingInterval``
on the scheduler loop's thread. Every :data:`PERIOD_SECONDS` this writer asks the loop for the
ledger's published copy (``EngineReads``), and patches each LocalQueue whose status shows an older
sample (another ``lastUpdate``), at most :data:`WRITES_PER_PERIOD` per period, as the other queue
status writers bound theirs. Kueue writes the status from its LocalQueue reconciler at each sample
(``updateAdmissionFsStatus`` in ``pkg/controller/core/localqueue_controller.go``); the values are
the same, the write may come up to a period later. The persisted status seeds the ledger after a
restart or a leader change, as in Kueue.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from controller.core import metrics as m
from controller.core.engine_reads import EngineReads, NotLeading
from controller.engine.afs import PublishedUsage
from controller.runtime.periodic import PeriodicRunnable
from controller.workload import view as wv
from controller.workload.indexes import ApiClient, InformerLike
from pykueue.api.timestamps import format_time, parse_epoch
from pykueue.kube.errors import ApiError
from pykueue.kube.resources import LOCAL_QUEUES

log = logging.getLogger(__name__)

PERIOD_SECONDS = 2.0
WRITES_PER_PERIOD = 10
_NANO = 10**9


def format_amount(value: float) -> str:
    """A consumed amount as a quantity, rounded down to nano units as Kueue's ``MulByFloat`` does:
    whole numbers plain (``"2"``), others with the coarsest exact suffix (``"1500m"``,
    ``"292893218n"``)."""
    nanos = int(max(0.0, value) * _NANO)
    if nanos % _NANO == 0:
        return str(nanos // _NANO)
    for suffix, per_unit in (("m", 10**6), ("u", 10**3)):
        if nanos % per_unit == 0:
            return f"{nanos // per_unit}{suffix}"
    return f"{nanos}n"


def consumed_resources(consumed: Mapping[str, float]) -> dict[str, str]:
    """The ledger's per-resource amounts (cpu in cores) as a ResourceList."""
    return {name: format_amount(amount) for name, amount in sorted(consumed.items())}


def shown_last_update(lq: Mapping[str, Any]) -> float | None:
    fair = wv.status(lq).get("fairSharing")
    afs = fair.get("admissionFairSharingStatus") if isinstance(fair, dict) else None
    return parse_epoch(afs.get("lastUpdate")) if isinstance(afs, dict) else None


def status_patch(lq: Mapping[str, Any], usage: PublishedUsage) -> dict[str, Any]:
    """A merge patch: the resources now consumed, and ``None`` for any the status still shows
    that the sample no longer has (a merge patch keeps absent map keys)."""
    fair = wv.status(lq).get("fairSharing")
    afs = fair.get("admissionFairSharingStatus") if isinstance(fair, dict) else None
    shown = afs.get("consumedResources") if isinstance(afs, dict) else None
    resources: dict[str, Any] = dict.fromkeys(shown if isinstance(shown, dict) else {}, None)
    resources.update(consumed_resources(usage.consumed))
    moment = datetime.fromtimestamp(int(usage.last_update), tz=UTC)
    # v1beta1 shares the status type with ClusterQueues, where weightedShare is required; a
    # LocalQueue's is 0 (Kueue writes the zero value too).
    share = fair.get("weightedShare") if isinstance(fair, dict) else None
    return {
        "status": {
            "fairSharing": {
                "weightedShare": share if isinstance(share, int) else 0,
                "admissionFairSharingStatus": {"consumedResources": resources, "lastUpdate": format_time(moment)},
            }
        }
    }


class AfsStatus(PeriodicRunnable):
    """The periodic writer; ``tick()`` is one period's work (tests call it directly)."""

    name = "afs-status"
    quiet = (NotLeading, TimeoutError)

    def __init__(self, client: ApiClient, reads: EngineReads, local_queues: InformerLike,
                 period: float = PERIOD_SECONDS) -> None:
        super().__init__(period)
        self._client = client
        self._reads = reads
        self._local_queues = local_queues

    def tick(self) -> int:
        """Write the LocalQueues whose shown sample is older (bounded); the number of writes."""
        published: Mapping[str, PublishedUsage] = self._reads.submit(
            lambda engine: engine.afs.published() if engine.afs is not None else {}
        )
        writes = 0
        for key, usage in sorted(published.items()):
            namespace, _, name = key.partition("/")
            m.LOCAL_QUEUE_AFS_USAGE.labels(name, namespace, usage.cluster_queue).set(usage.usage)
            if writes >= WRITES_PER_PERIOD:
                continue
            lq = self._local_queues.store.get(key)
            if lq is None or usage.last_update <= 0:
                continue
            shown = shown_last_update(lq)
            if shown is not None and int(shown) == int(usage.last_update):
                continue
            try:
                self._client.patch_status(LOCAL_QUEUES, name, status_patch(lq, usage), namespace)
            except ApiError as err:
                log.warning("admission fair sharing status not written", extra={"localQueue": key, "error": str(err)})
            writes += 1
        return writes
