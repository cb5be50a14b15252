"""The in-memory replay of the baseline shape runs to the end and its counts add up."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bench.baseline_replay import ReplayResult, main, replay
from bench.baseline_shape import load_shape, parse_shape

REPO = Path(__file__).resolve().parents[3]

# Two queues of one cohort, small workloads arriving fast and large ones, higher priority, now and
# then: with writes landing at once, every large one finds its queue full of small ones.
CROWDED = {
    "configs": {
        "crowded": {
            "cohorts": 1,
            "cluster_queues_per_cohort": 2,
            "classes": {
                "small": {"count": 30, "cpu": 5, "runtime_ms": 2000, "priority": 50, "every_ms": 100},
                "large": {"count": 3, "cpu": 20, "runtime_ms": 200, "priority": 200, "every_ms": 1000},
            },
            "anchor_kueue": {"wall_s": 1, "cq_utilisation_pct": 1, "mean_time_to_admission_s": {"small": 1}},
        }
    }
}


def _consistent(result: ReplayResult) -> None:
    assert result.finished == result.workloads
    for counts in (result.by_victim_class, result.by_preemptor_class, result.by_pair, result.by_reason):
        assert sum(counts.values()) == result.evictions
    assert 0 <= result.moot_preemptions <= result.evictions
    # Every eviction that landed costs one more admission; a moot one (the victim had finished) none.
    assert result.admissions == result.workloads + result.evictions - result.moot_preemptions
    assert result.cycles > 0 and result.wall_s > 0
    assert set(result.mean_time_to_admission_s) <= {"small", "medium", "large"}


def test_a_tiny_baseline_replay_completes_with_consistent_counts() -> None:
    first = replay(load_shape(), scale=0.02, cycle_ms=5, create_spacing_ms=5, create_jitter_ms=300, trace=3)
    _consistent(first)
    assert first.workloads == 30 * (7 + 2 + 1)
    second = replay(load_shape(), scale=0.02, cycle_ms=5, create_spacing_ms=5, create_jitter_ms=300, trace=3)
    assert second.summary() == first.summary()  # deterministic for a seed
    assert len(first.traces) == min(3, first.evictions)
    # The timeline counts what the totals count: every create, admission and landed eviction.
    rows = first.timeline(5.0)["rows"]
    assert sum(sum(row["created"].values()) for row in rows) == first.workloads
    assert sum(sum(row["admitted"].values()) for row in rows) == first.admissions
    assert sum(sum(row["evicted"].values()) for row in rows) == first.evictions
    # Kueue's backoff after unproductive cycles: fewer cycles for the same work.
    backing_off = replay(load_shape(), scale=0.02, cycle_ms=5, create_spacing_ms=5, create_jitter_ms=300,
                         idle_backoff_ms=100)
    _consistent(backing_off)
    assert backing_off.cycles < first.cycles


@pytest.mark.parametrize("qps", [0.0, 50.0])
def test_preemptions_are_counted_by_class_and_reason(qps: float) -> None:
    # With a 200 ms requeue batch the only preemptions are each large workload's in its own queue
    # (with none, a small one below its nominal quota also reclaims once from the other queue).
    result = replay(
        parse_shape(CROWDED, "crowded"), heads=8, cycle_ms=10, qps=qps, create_spacing_ms=0, trace=100,
        requeue_batch_ms=200, preemption_grace_ms=0,
    )
    _consistent(result)
    assert result.evictions > 0
    assert set(result.by_preemptor_class) == {"large"} and set(result.by_victim_class) == {"small"}
    assert set(result.by_reason) == {"InClusterQueue"}
    for trace in result.traces:
        assert trace.preemptor_cluster_queue == trace.victim_cluster_queue
        assert trace.preemptor_cpu == 20


def test_a_preemption_grace_longer_than_the_victims_runtime_leaves_nothing_to_preempt() -> None:
    """The controller's --preemption-grace-seconds in the replay: the small workloads run 2 s, so
    a large one that waits up to 2.5 s after a small one's admission finds it gone instead."""
    crowded = parse_shape(CROWDED, "crowded")
    at_once = replay(crowded, cycle_ms=10, create_spacing_ms=0, requeue_batch_ms=200, preemption_grace_ms=0)
    waiting = replay(crowded, cycle_ms=10, create_spacing_ms=0, requeue_batch_ms=200, preemption_grace_ms=2500)
    _consistent(waiting)
    assert at_once.evictions > 0 and waiting.evictions == 0


def test_engine_src_replays_another_tree_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--scale", "0.02", "--cycle-ms", "5", "--engine-src", f"same={REPO}"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    runs = json.loads(out[-1])
    assert set(runs) == {"this checkout", "same"}
    assert runs["same"] == {**runs["this checkout"], "replay_cpu_s": runs["same"]["replay_cpu_s"]}
    assert out[0].startswith("engine") and out[1].startswith("this checkout") and out[2].startswith("same")


def test_the_order_of_creates_due_at_one_instant_is_a_replay_setting() -> None:
    """The driver sends a queue's small, medium and large workloads due at one instant in that
    order; ``priority`` sends the large one first, ``random`` shuffles (seeded)."""
    from bench.baseline_driver import creation_timeline
    from bench.baseline_replay import _ordered

    shape = load_shape().scaled(0.02)
    plan = creation_timeline(shape)
    priorities = [k.priority for k in shape.classes]
    at_zero = [p for p in _ordered(plan, "priority", random.Random(1), priorities) if p.due == 0]
    assert [shape.classes[p.class_index].name for p in at_zero[:3]] == ["large"] * 3
    assert [shape.classes[p.class_index].name for p in at_zero[-3:]] == ["small"] * 3
    shuffled = _ordered(plan, "random", random.Random(1), priorities)
    assert sorted(map(id, shuffled)) == sorted(map(id, plan)) and shuffled != plan
    assert [p.due for p in shuffled] == sorted(p.due for p in shuffled)
    assert _ordered(plan, "timeline", random.Random(1), priorities) is plan
    with pytest.raises(ValueError, match="same_instant_order must be one of"):
        replay(load_shape(), scale=0.02, same_instant_order="alphabetical")
    # Deterministic per order; every order completes the same work.
    for order in ("timeline", "priority", "random"):
        result = replay(load_shape(), scale=0.02, cycle_ms=5, same_instant_order=order)
        _consistent(result)
        assert result == replay(load_shape(), scale=0.02, cycle_ms=5, same_instant_order=order)
