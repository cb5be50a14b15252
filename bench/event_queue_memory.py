"""Bytes one waiting Event costs in the Event queue, and what the queue's bound costs.

    python -m bench.event_queue_memory [--entries 20000] [--scale 1.0]

The Event queue (controller/runtime/event_queue.py) is the waiting room between the scheduler,
which emits two Events per admission, and the Event client's budget; it is sized in entries
(``MAX_QUEUED``) from the bytes one entry costs (``ENTRY_BYTES``, a bound the unit tests hold).
This fills a queue with ``--entries`` distinct ``QuotaReserved`` Events of as many Workloads,
named as the scheduler baseline names them, and measures with tracemalloc what the queue and
every string it keeps cost: the worst case, where no string is shared with the informer's copy
of the object (an object updated since the Event was emitted). It prints bytes per entry, the
bound, and what ``MAX_QUEUED`` entries cost at the measured size and at the bound, then a JSON
summary as its last line.
"""

from __future__ import annotations

import argparse
import gc
import json
import tracemalloc
import uuid

from controller.runtime.event_queue import ENTRY_BYTES, PendingEvents
from controller.runtime.events import COMPONENT, MAX_QUEUED, reference


def bytes_per_entry(entries: int = 20_000) -> float:
    """Traced bytes per waiting entry, its strings included, for ``entries`` distinct Events."""
    pending = PendingEvents(entries, clock=lambda: 1.0)
    uids = [uuid.UUID(int=index + 1) for index in range(entries)]  # uuid objects are not kept
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for index in range(entries):
            # Each string is built here, so the queue's copy is the only one left afterwards.
            workload = {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {
                    "name": f"job-small-{index:05d}-{index % 99991:05x}",
                    "namespace": f"team-{index % 30}",
                    "uid": str(uids[index]),
                    "resourceVersion": str(1_000_000 + index),
                },
                "spec": {"queueName": "lq"},
            }
            message = f"Quota reserved in ClusterQueue cq-{index % 30}, wait time since queued was {index % 300}s"
            pending.put(reference(workload), "Normal", "QuotaReserved", message, COMPONENT)
            del workload, message
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(pending) == entries
    return (after - before) / entries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--entries", type=int, default=20_000, help="distinct Events to queue (default 20000)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply --entries (run_all's smoke runs)")
    args = parser.parse_args(argv)
    entries = max(1_000, int(args.entries * args.scale))
    measured = bytes_per_entry(entries)
    mib = 1024 * 1024
    print(f"bytes per waiting Event (worst case, its strings included): {measured:.0f} (bound ENTRY_BYTES {ENTRY_BYTES})")
    print(
        f"MAX_QUEUED {MAX_QUEUED} entries: {MAX_QUEUED * measured / mib:.1f} MiB measured, "
        f"{MAX_QUEUED * ENTRY_BYTES / mib:.1f} MiB at the bound"
    )
    print(
        json.dumps(
            {
                "benchmark": "event_queue_memory",
                "entries": entries,
                "bytes_per_entry": round(measured, 1),
                "entry_bytes_bound": ENTRY_BYTES,
                "max_queued": MAX_QUEUED,
                "max_queued_mib_measured": round(MAX_QUEUED * measured / mib, 1),
                "max_queued_mib_bound": round(MAX_QUEUED * ENTRY_BYTES / mib, 1),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
