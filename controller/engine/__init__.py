"""The admission engine: pure, in-memory, no Kubernetes API calls, no threads.

It matches the observable behaviour of Kueue's queue manager, scheduler cache and scheduler
(``docs/design/engine.md`` explains the data structures and why a cycle stays cheap).

Driving it (what the controller does)
-------------------------------------
Objects are passed exactly as the apiserver serves them (plain JSON dicts, ``kueue.x-k8s.io/v1beta1``).
Feed every informer event to the matching method; each call converts the object once into a
compact record and updates indexes, so the cycle never re-parses JSON::

    engine = Engine(heads_per_cluster_queue=8, requeue_batch_seconds=1.0)
    engine.upsert_resource_flavor(rf)            # delete_resource_flavor(name)
    engine.upsert_cluster_queue(cq)              # delete_cluster_queue(name)
    engine.upsert_cohort(cohort)                 # delete_cohort(name)
    engine.upsert_local_queue(lq)                # delete_local_queue(namespace, name)
    engine.upsert_admission_check(ac)            # delete_admission_check(name)
    engine.upsert_priority_class(wpc_or_pc)      # delete_priority_class(name, kind=...)
    engine.set_namespace(name, labels)           # delete_namespace(name); for namespaceSelector
    engine.upsert_workload(wl)                   # delete_workload(namespace, name)

Then, in the scheduler loop (leader only)::

    result = engine.schedule(now=time.time())    # -> CycleResult
    for r in result.reservations:   # already assumed in the engine's cache
        write status.admission = r.admission, QuotaReserved=True (message r.message) and,
        if not r.admission_checks, Admitted=True; else add Pending AdmissionCheckStates for
        r.admission_checks.  On success: engine.confirm(r.workload); on failure:
        engine.rollback(r.workload) (the workload is requeued at once).
    for p in result.preemptions:    # evict p.victim: Evicted=True reason Preempted, and
        Preempted=True reason p.reason with p.message; events Preempted / PreemptedWorkload.
        The engine will not pick the same victim again until it sees it evicted; if the
        write fails, call engine.preemption_failed(p.victim).
    for e in result.evictions:      # stopPolicy HoldAndDrain: evict e.workload with e.reason.
    for s in result.pending:        # QuotaReserved=False with s.reason / s.message. Only
        emitted when it differs from what the engine last saw or emitted for that workload.

Kueue backs off between unproductive cycles: loop again at once while
``result.admitted_anything``, else sleep until the next informer event or
``engine.next_timer()`` (when a backoff ends or a batched requeue is due), whichever is first.

State moves back in through the informers: when the controller's write of ``status.admission``
comes back, ``upsert_workload`` sees the reservation (the assumption becomes the record); when a
workload finishes, is deleted, or has its admission cleared after eviction, its quota is freed and
parked workloads of that cohort tree are requeued (batched per ``requeue_batch_seconds``).

ClusterQueue/LocalQueue status is computed by ``controller.core.queue_status`` from the informer
caches, not here; the engine only says whether a queue is active (``engine.is_active(name)``,
``engine.inactive``) and how many workloads wait (``engine.pending_count(cluster_queue)``).
Pending workloads in scheduling order with positions and last reason (visibility):
``engine.pending_workloads(cluster_queue, offset=0, limit=None)`` on the engine's thread, or
``engine.pending_snapshot(cluster_queue)`` there and the sort and paging of
``controller.engine.visibility`` on another thread (the visibility API does that).

Feed the informers' initial contents inside ``with engine.initial_load():``. Once the engine
holds 1,000 or more workloads (right after a large initial load, or when the backlog has grown
that far), its next cycle settles CPython's cyclic GC, process-wide and once per engine
(``controller.engine.gcpolicy``: full collection, ``gc.freeze()``, young-generation threshold
10,000); ``Engine(settle_gc=False)`` opts out. Workload records hold no reference cycles, so
freezing them leaks nothing.
"""

from __future__ import annotations

from .engine import Engine
from .results import CycleResult, Eviction, PendingReason, Preemption, Reservation
from .visibility import PendingWorkload

__all__ = [
    "CycleResult",
    "Engine",
    "Eviction",
    "PendingReason",
    "PendingWorkload",
    "Preemption",
    "Reservation",
]
