"""Cyclic-GC settings for the process holding the engine, applied once it holds a large state.

Why (measured with ``bench/engine_micro.py``, figures in ``docs/design/engine.md``): CPython's
cyclic collector was the one cost per decision that grew with the backlog. In steady state the
engine frees about as many container objects as it allocates, so the young collections came from
allocation bursts (parsing a workload, building a cycle's results), not from garbage: with the
default threshold of 700 one ran every ~50 decisions, and each young collection, and every full
collection they escalate to, walks objects whose referents are spread over a heap that grows with
the backlog. At 50k pending that was 42 µs of a ~100 µs decision and +5 % instructions; at 1k,
7-11 µs.

Two settings, applied together by :func:`settle` when the engine first holds
:data:`MIN_WORKLOADS` workloads (at the start of the next cycle: right after a large initial load,
or once a backlog that started small has grown that far):

* ``gc.freeze()`` after a full collection: everything alive at that moment (after a large
  initial load, the informers' caches and the engine's state: the bulk of the backlog) moves to
  the permanent generation and is never scanned again. Frozen objects are still freed by reference counting; the engine's
  records and the informers' JSON hold no reference cycles, so nothing leaks.
* young-generation threshold 10,000 instead of 700: a young collection then runs when 10,000 more
  container objects are alive than at the previous one, i.e. when the state really grows (the
  backlog grows, or cyclic garbage accumulates, which reference counting never frees), not on
  every burst. A young collection of 10,000 objects takes about a millisecond.

The process-wide effect is intended: the engine's state is most of the controller's heap. Small
states (tests, small clusters) are left alone, where a full collection is cheap anyway.
"""

from __future__ import annotations

import gc

# Engines holding fewer workloads than this leave the collector as it is.
MIN_WORKLOADS = 1_000
# Young-generation threshold once settled (CPython's default is 700).
YOUNG_THRESHOLD = 10_000


def settle(workloads: int) -> bool:
    """Freeze what is alive and raise the young-generation threshold if the engine holds at
    least :data:`MIN_WORKLOADS` workloads; returns whether it did."""
    if workloads < MIN_WORKLOADS:
        return False
    gc.collect()  # so that no cyclic garbage present now is frozen for good
    gc.freeze()
    young, middle, old = gc.get_threshold()
    if 0 < young < YOUNG_THRESHOLD:  # 0: collection disabled by the process; leave it so
        gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    return True
