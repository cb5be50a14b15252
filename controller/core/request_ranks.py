"""Which of the controller's requests get the main client's next token first, when it is short.

At Kueue's QPS (50) the main client's token bucket is the admission bottleneck, and its waiting
callers are served by rank (:mod:`pykueue.kube.ratelimit`). The order follows what each write
buys:

1. :data:`FREEING`: evictions (preemptions, HoldAndDrain, concurrent-admission migrations) and
   clearing an evicted workload's reservation. Each releases quota a preemptor or the next head
   is waiting for; delaying it delays them and leaves the decision to age against the cache.
2. :func:`reservation`: a reservation, ordered by workload priority, as Kueue orders heads
   (a priority-200 workload's admission does not queue behind priority-50 ones).
3. Everything untagged (:data:`pykueue.kube.ratelimit.DEFAULT_RANK`): informers, the workload
   controller's other steps, the job integration.
4. :data:`STATUS`: ClusterQueue/LocalQueue status and pending reasons. Both are only eventually
   true and the next write carries everything that changed meanwhile; the bucket's ``max_wait``
   bounds how long they can be held back.
"""

from __future__ import annotations

from pykueue.kube.ratelimit import DEFAULT_RANK, Rank

FREEING: Rank = (2, 0)
STATUS: Rank = (-1, 0)
DEFAULT: Rank = DEFAULT_RANK


def reservation(priority: int) -> Rank:
    """A reservation's rank: above the default, by workload priority within the class."""
    return (1, priority)
