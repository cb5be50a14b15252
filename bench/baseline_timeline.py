"""Where a baseline run's time went: workloads created, admitted and evicted per time window.

The scheduler baseline's wall is bounded below by the client's write budget (one admission
write per workload: 15,000 at QPS 50 is 300 s), yet runs end near 345 s. The per-class
totals a run prints cannot say where the missing 45 s went; a timeline can. Both the cluster
run (:mod:`bench.baseline`, from the driver's watch) and the in-memory replay
(:mod:`bench.baseline_replay`, from its simulated writes) build one from the same kind of
stamps, so a cluster's evictions and idle budget can be laid beside the replay's, window by
window: when the admissions per second fall below the budget while workloads wait, something
other than the budget (quota, priority order) is binding then; when the ``Evicted`` rises
bunch, that is the phase to explain.

Counts alone do not say *why* a window admitted few workloads while workloads waited. Two
delays per window do (:class:`Delay`): the **hold**, how much longer than its runtime a workload
held its quota (admission seen to ``Finished`` seen, less the runtime: the runner's patch and two
trips through the apiserver), and the **turnaround**, how long quota freed in a ClusterQueue
stayed unused before its next waiting workload was admitted (``Finished`` seen to the next
admission seen in the same queue: the controller's watch, cycle and admission write). On a loaded
apiserver both grow, and a queue that can run one large workload at a time admits one per
runtime + hold + turnaround.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

# What one stamp records: a workload of a class was created, admitted (every admission,
# re-admissions after an eviction included) or saw its Evicted condition rise.
CREATED = "created"
ADMITTED = "admitted"
EVICTED = "evicted"
KINDS = (CREATED, ADMITTED, EVICTED)

DEFAULT_WINDOW_S = 10.0

# The delays a window reports the median of (seconds), keyed by the JSON name.
HOLD = "hold_s"
TURNAROUND = "turnaround_s"
DELAYS = (HOLD, TURNAROUND)


@dataclass(frozen=True)
class Stamp:
    """One thing that happened to a workload of class ``klass``, ``at`` seconds into the run."""

    at: float
    kind: str
    klass: str


@dataclass(frozen=True)
class Delay:
    """One delay of kind ``kind`` (:data:`HOLD` or :data:`TURNAROUND`) that ended ``at`` seconds
    into the run and lasted ``seconds``."""

    at: float
    kind: str
    seconds: float


@dataclass
class Window:
    """The counts of one window ``[start_s, start_s + width)``, per kind and class, and the
    delays that ended in it."""

    start_s: float
    counts: dict[str, dict[str, int]] = field(default_factory=lambda: {kind: {} for kind in KINDS})
    delays: dict[str, list[float]] = field(default_factory=lambda: {kind: [] for kind in DELAYS})

    def total(self, kind: str) -> int:
        return sum(self.counts[kind].values())

    def median(self, kind: str) -> float | None:
        values = self.delays[kind]
        return round(statistics.median(values), 2) if values else None


def build(stamps: Iterable[Stamp], window_s: float = DEFAULT_WINDOW_S, delays: Iterable[Delay] = ()) -> list[Window]:
    """Windows from 0 to the last stamp or delay, every one present (an idle window shows as
    zeros). Stamps before 0 (clock skew between the driver's threads) count in the first window."""
    if window_s <= 0:
        raise ValueError(f"window_s must be positive, got {window_s}")
    windows: dict[int, Window] = {}

    def window_at(at: float) -> Window:
        index = max(0, math.floor(at / window_s))
        return windows.setdefault(index, Window(index * window_s))

    for stamp in stamps:
        if stamp.kind not in KINDS:
            raise ValueError(f"unknown stamp kind {stamp.kind!r} (known: {', '.join(KINDS)})")
        per_class = window_at(stamp.at).counts[stamp.kind]
        per_class[stamp.klass] = per_class.get(stamp.klass, 0) + 1
    for delay in delays:
        if delay.kind not in DELAYS:
            raise ValueError(f"unknown delay kind {delay.kind!r} (known: {', '.join(DELAYS)})")
        window_at(delay.at).delays[delay.kind].append(delay.seconds)
    if not windows:
        return []
    return [windows.get(i) or Window(i * window_s) for i in range(max(windows) + 1)]


def as_json(windows: Sequence[Window], window_s: float = DEFAULT_WINDOW_S) -> dict[str, Any]:
    return {
        "window_s": window_s,
        "rows": [{"from_s": round(w.start_s, 3), **{kind: dict(sorted(w.counts[kind].items())) for kind in KINDS},
                  **{kind: w.median(kind) for kind in DELAYS}}
                 for w in windows],
    }


def from_json(data: dict[str, Any]) -> tuple[list[Window], float]:
    """The windows and their width back from :func:`as_json` (a run's JSON summary); a delay
    comes back as its median alone (a summary from before delays were recorded has none)."""
    windows = []
    for row in data.get("rows", []):
        window = Window(float(row["from_s"]))
        for kind in KINDS:
            window.counts[kind] = {str(k): int(v) for k, v in (row.get(kind) or {}).items()}
        for kind in DELAYS:
            median = row.get(kind)
            window.delays[kind] = [float(median)] if isinstance(median, int | float) else []
        windows.append(window)
    return windows, float(data.get("window_s", DEFAULT_WINDOW_S))


def format_table(windows: Sequence[Window], classes: Sequence[str], *, window_s: float = DEFAULT_WINDOW_S,
                 budget_per_s: float | None = None) -> str:
    """One line per window: admissions per second (and per class), Evicted rises per class,
    workloads created and the median hold and turnaround (when any window has one: the replay
    records none); with ``budget_per_s``, the share of the write budget admissions used."""
    names = "/".join(classes)
    with_delays = any(w.delays[kind] for w in windows for kind in DELAYS)
    header = f"{'window':>11}  {'admitted/s':>10}  {'admitted ' + names:>28}  {'Evicted ' + names:>24}  {'created':>7}"
    if with_delays:
        header += f"  {'hold/turnaround p50':>19}"
    if budget_per_s:
        header += f"  {'budget used':>11}"
    lines = [header]
    for w in windows:
        rate = w.total(ADMITTED) / window_s
        admitted = "/".join(str(w.counts[ADMITTED].get(c, 0)) for c in classes)
        evicted = "/".join(str(w.counts[EVICTED].get(c, 0)) for c in classes)
        line = (f"{w.start_s:>5.0f}-{w.start_s + window_s:<5.0f}  {rate:>10.1f}  {admitted:>28}  {evicted:>24}  "
                f"{w.total(CREATED):>7}")
        if with_delays:
            delays = " / ".join("-" if w.median(k) is None else f"{w.median(k):.2f}" for k in DELAYS)
            line += f"  {delays + ' s':>19}"
        if budget_per_s:
            line += f"  {100.0 * rate / budget_per_s:>10.0f}%"
        lines.append(line)
    return "\n".join(lines)
