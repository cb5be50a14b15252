"""The order in which one cycle considers its entries (the heads it popped), as Kueue's classical
iterator orders them: less borrowing first, then higher priority, then the queue-order timestamp
(creation, or the eviction time after a PodsReady timeout when requeuing by eviction time).

Cases re-expressed from ``TestEntryOrdering`` in kueue/pkg/scheduler/scheduler_test.go (v0.19.2)
with priority sorting on (Kueue's default). ``PrioritizePreemptorWorkloads`` (an alpha gate, off by
default) and the cases with priority sorting off are not offered by pykueue."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from controller.engine.cycle import _Entry
from controller.engine.flavors import FIT, Assignment
from controller.engine.parse import parse_workload
from tests.builders import PlacementWorkloadBuilder


def _at(second: int) -> str:
    return f"2026-01-01T00:00:{10 + second:02d}Z"


@dataclass
class E:
    name: str
    created: int
    priority: int = 0
    borrowing: int = 0
    evicted_at: int | None = None  # Evicted=True by PodsReadyTimeout at this second
    preempted: tuple[str, int] | None = None  # Preempted=True (reason, second): not an eviction timestamp


def _entries(inputs: list[E], requeue_by_creation: bool) -> list[_Entry]:
    entries = []
    for index, e in enumerate(inputs):
        builder = PlacementWorkloadBuilder(e.name, "ns").queue("lq").podset(cpu="1").priority(e.priority)
        builder.created(_at(e.created)).uid(f"uid-{index:02d}")  # ties keep the input order, as Kueue's test
        if e.evicted_at is not None:
            builder.condition("Evicted", True, "PodsReadyTimeout", "timeout", at=_at(e.evicted_at))
        if e.preempted is not None:
            builder.condition("Preempted", True, e.preempted[0], "preempted", at=_at(e.preempted[1]))
        info = parse_workload(builder.obj(), pods_ready_requeue_by_creation=requeue_by_creation)
        entries.append(_Entry(info, "cq", Assignment(mode=FIT, borrowing_level=e.borrowing), []))
    return entries


INPUT = [
    E("old_borrowing", 0, borrowing=1),
    E("old", 1),
    E("new", 3),
    E("high_pri_borrowing", 3, priority=1, borrowing=1),
    E("new_high_pri", 4, priority=1),
    E("new_borrowing", 3, borrowing=1),
    E("evicted_borrowing", 1, borrowing=1, evicted_at=2),
    E("recently_evicted", 0, evicted_at=2),
    E("high_pri_borrowing_more", 3, priority=1, borrowing=2),
]

PREEMPTED = [
    E("old-mid-recently-preempted-in-queue", 0, priority=1, preempted=("InClusterQueue", 5)),
    E("old-mid-recently-reclaimed-while-borrowing", 0, priority=1, preempted=("InCohortReclaimWhileBorrowing", 6)),
    E("old-mid-more-recently-reclaimed-while-borrowing", 0, priority=1, preempted=("InCohortReclaimWhileBorrowing", 7)),
    E("old-mid-not-preempted-yet", 1, priority=1),
    E("preemptor", 7, priority=2),
]


@pytest.mark.parametrize(
    ("inputs", "requeue_by_creation", "expected"),
    [
        pytest.param(INPUT, False, ["new_high_pri", "old", "recently_evicted", "new", "high_pri_borrowing", "old_borrowing",
                                    "evicted_borrowing", "new_borrowing", "high_pri_borrowing_more"],
                     id="Priority sorting is enabled (default) using pods-ready Eviction timestamp (default)"),
        pytest.param(INPUT, True, ["new_high_pri", "recently_evicted", "old", "new", "high_pri_borrowing", "old_borrowing",
                                   "evicted_borrowing", "new_borrowing", "high_pri_borrowing_more"],
                     id="Priority sorting is enabled (default) using pods-ready Creation timestamp"),
        pytest.param(PREEMPTED, False, ["preemptor", "old-mid-recently-preempted-in-queue",
                                        "old-mid-recently-reclaimed-while-borrowing",
                                        "old-mid-more-recently-reclaimed-while-borrowing", "old-mid-not-preempted-yet"],
                     id="Some workloads are preempted; Priority sorting is enabled"),
    ],
)
def test_kueue_entry_ordering_case(inputs: list[E], requeue_by_creation: bool, expected: list[str]) -> None:
    entries = _entries(inputs, requeue_by_creation)
    entries.sort(key=_Entry.order)
    assert [entry.info.name for entry in entries] == expected
