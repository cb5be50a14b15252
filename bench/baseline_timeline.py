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
"""

from __future__ import annotations

import math
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


@dataclass(frozen=True)
class Stamp:
    """One thing that happened to a workload of class ``klass``, ``at`` seconds into the run."""

    at: float
    kind: str
    klass: str


@dataclass
class Window:
    """The counts of one window ``[start_s, start_s + width)``, per kind and class."""

    start_s: float
    counts: dict[str, dict[str, int]] = field(default_factory=lambda: {kind: {} for kind in KINDS})

    def total(self, kind: str) -> int:
        return sum(self.counts[kind].values())


def build(stamps: Iterable[Stamp], window_s: float = DEFAULT_WINDOW_S) -> list[Window]:
    """Windows from 0 to the last stamp, every one present (an idle window shows as zeros).
    Stamps before 0 (clock skew between the driver's threads) count in the first window."""
    if window_s <= 0:
        raise ValueError(f"window_s must be positive, got {window_s}")
    windows: dict[int, Window] = {}
    for stamp in stamps:
        if stamp.kind not in KINDS:
            raise ValueError(f"unknown stamp kind {stamp.kind!r} (known: {', '.join(KINDS)})")
        index = max(0, math.floor(stamp.at / window_s))
        window = windows.setdefault(index, Window(index * window_s))
        per_class = window.counts[stamp.kind]
        per_class[stamp.klass] = per_class.get(stamp.klass, 0) + 1
    if not windows:
        return []
    return [windows.get(i) or Window(i * window_s) for i in range(max(windows) + 1)]


def as_json(windows: Sequence[Window], window_s: float = DEFAULT_WINDOW_S) -> dict[str, Any]:
    return {
        "window_s": window_s,
        "rows": [{"from_s": round(w.start_s, 3), **{kind: dict(sorted(w.counts[kind].items())) for kind in KINDS}}
                 for w in windows],
    }


def from_json(data: dict[str, Any]) -> tuple[list[Window], float]:
    """The windows and their width back from :func:`as_json` (a run's JSON summary)."""
    windows = []
    for row in data.get("rows", []):
        window = Window(float(row["from_s"]))
        for kind in KINDS:
            window.counts[kind] = {str(k): int(v) for k, v in (row.get(kind) or {}).items()}
        windows.append(window)
    return windows, float(data.get("window_s", DEFAULT_WINDOW_S))


def format_table(windows: Sequence[Window], classes: Sequence[str], *, window_s: float = DEFAULT_WINDOW_S,
                 budget_per_s: float | None = None) -> str:
    """One line per window: admissions per second (and per class), Evicted rises per class and
    workloads created; with ``budget_per_s``, the share of the write budget admissions used."""
    names = "/".join(classes)
    header = f"{'window':>11}  {'admitted/s':>10}  {'admitted ' + names:>28}  {'Evicted ' + names:>24}  {'created':>7}"
    if budget_per_s:
        header += f"  {'budget used':>11}"
    lines = [header]
    for w in windows:
        rate = w.total(ADMITTED) / window_s
        admitted = "/".join(str(w.counts[ADMITTED].get(c, 0)) for c in classes)
        evicted = "/".join(str(w.counts[EVICTED].get(c, 0)) for c in classes)
        line = (f"{w.start_s:>5.0f}-{w.start_s + window_s:<5.0f}  {rate:>10.1f}  {admitted:>28}  {evicted:>24}  "
                f"{w.total(CREATED):>7}")
        if budget_per_s:
            line += f"  {100.0 * rate / budget_per_s:>10.0f}%"
        lines.append(line)
    return "\n".join(lines)
