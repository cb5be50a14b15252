"""Prometheus metrics of concurrent admission (Kueue has none for it; hence the pykueue_ prefix).

Migrations themselves are counted by the scheduler as evictions with reason ``FlavorMigration``
(``kueue_evicted_workloads_total``), where every other eviction is counted too.
"""

from __future__ import annotations

from prometheus_client import Counter

OPTIONS_CREATED = Counter(
    "pykueue_concurrent_admission_options_created_total",
    "Option workloads created for concurrent-admission parents.",
    ["cluster_queue"],
)
OPTIONS_REMOVED = Counter(
    "pykueue_concurrent_admission_options_removed_total",
    "Option workloads removed, by cause: policy (onSuccess), window (deleteDelaySeconds), "
    "config (the ClusterQueue or parent changed) or parent (finished, deleted or inactive).",
    ["cluster_queue", "cause"],
)
