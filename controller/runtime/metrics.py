"""Prometheus metrics of the informers and leader election.

Names follow what Kueue exports through client-go where such a metric exists
(``leader_election_master_status``; the work queue's controller-runtime ``workqueue_*`` live in
:mod:`controller.runtime.workqueue`); informer internals have no Kueue counterpart and carry the
``pykueue_`` prefix.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

# Kueue's wait-time buckets (``pkg/metrics/metrics.go``, generateExponentialBuckets(14)): 1 s
# doubling up to ~2.3 h. Shared by every area that reports how long a workload waited.
WAIT_BUCKETS = tuple(float(2**i) for i in range(14))

# --- reflectors / informers -------------------------------------------------------------------
RELISTS = Counter(
    "pykueue_reflector_relists_total",
    "Full lists after the initial one, by cause (expired: 410 Gone).",
    ["resource", "reason"],
)
WATCH_RESTARTS = Counter(
    "pykueue_reflector_watch_restarts_total",
    "Watches re-opened, by cause (timeout: the server closed it; stalled: no bytes within the read "
    "timeout; disconnected: connection error; expired: 410; error: other API errors).",
    ["resource", "reason"],
)
WATCH_EVENTS = Counter(
    "pykueue_reflector_watch_events_total", "Watch events received, by type.", ["resource", "type"]
)
LIST_DURATION = Histogram(
    "pykueue_reflector_list_duration_seconds",
    "Time to list (all pages) and replace the store.",
    ["resource"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
CACHED_OBJECTS = Gauge("pykueue_informer_cached_objects", "Objects in the informer's store.", ["resource"])
SYNCED = Gauge("pykueue_informer_synced", "1 once the informer completed its first list.", ["resource"])
HANDLER_QUEUE = Gauge(
    "pykueue_informer_handler_queue_depth",
    "Notifications waiting for the informer's handler thread.",
    ["resource"],
)
HANDLER_ERRORS = Counter(
    "pykueue_informer_handler_errors_total", "Exceptions raised by event handlers.", ["resource"]
)

# --- leader election (client-go name) ----------------------------------------------------------
LEADER = Gauge(
    "leader_election_master_status", "1 while this process holds the lease, else 0.", ["name"]
)


# --- gauges read when scraped -----------------------------------------------------------------
_summed: dict[tuple[int, str], weakref.WeakSet[Any]] = {}
_summed_lock = threading.Lock()


def sum_when_scraped(gauge: Gauge, label: str, owner: Any, read: Callable[[Any], float]) -> None:
    """Make ``gauge{label}`` the sum of ``read(o)`` over the live owners registered under it.

    A value that changes on every watch event (a store's size, a handler's backlog) costs a
    labelled ``set`` per event when pushed; read when Prometheus asks, it costs nothing per event
    and is never stale. Owners are held weakly, so a stopped informer drops out of the sum, and
    several owners of one label (informers of one resource in different namespaces) add up.
    ``read`` must be the same function for every owner of a gauge.
    """
    with _summed_lock:
        key = (id(gauge), label)
        owners = _summed.get(key)
        if owners is None:
            owners = _summed[key] = weakref.WeakSet()
            live = owners
            gauge.labels(label).set_function(lambda: float(sum(read(o) for o in list(live))))
        owners.add(owner)
