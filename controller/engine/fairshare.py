"""Dominant resource share (DRS): how far a ClusterQueue or Cohort borrows, for fair sharing.

Kueue's definition (``pkg/cache/scheduler/fair_sharing.go``; KEP 1714-fair-sharing), read off the
engine's quota forest (``quota.QuotaNode``) at the moment it is asked, so it always reflects the
live usage and costs O(flavor/resources of the node) — no scan of workloads or queues:

* A node without a parent has share 0. Otherwise, for every flavor/resource, what the node uses
  above its subtree quota (plus, when asked, a request not yet admitted) is *borrowed*; the
  borrowed amounts are summed per resource name over flavors.
* Each resource's ratio is ``borrowed * 1000 / lendable``, where ``lendable`` is what the parent
  could give the node of that resource over all flavors (``QuotaNode.lendable``, computed from
  quota alone when the forest is built). The largest ratio is the *unweighted share*; its resource
  (alphabetically first on a tie) is the *dominant resource*.
* The *weighted share* divides by ``fairSharing.weight``. A weight of 0 makes a borrowing node's
  share infinite: it gets borrowed capacity last and loses it first; such nodes compare among
  themselves by unweighted share.
* ``status.fairSharing.weightedShare`` is the weighted share rounded up, ``2^63-1`` for the
  infinite case.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from .quota import QuotaNode
from .records import FlavorResource

MAX_INT64 = 2**63 - 1


@dataclass(frozen=True, slots=True)
class DRS:
    """One node's dominant resource share (Kueue's ``DRS``)."""

    weight: float = 1.0
    unweighted: float = 0.0
    dominant_resource: str = ""
    borrowing: bool = False
    borrowed: frozenset[FlavorResource] = frozenset()

    @property
    def is_zero(self) -> bool:
        return self.unweighted == 0

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and not self.is_zero

    @property
    def weighted(self) -> float:
        """The precise weighted share (``inf`` for a borrowing node of weight 0)."""
        if self.is_zero:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.unweighted / self.weight

    def rounded(self) -> int:
        """``status.fairSharing.weightedShare`` and the metric's value."""
        if self.zero_weight_borrows:
            return MAX_INT64
        return min(MAX_INT64, math.ceil(self.weighted))

    def borrows_on(self, requested: Mapping[FlavorResource, int]) -> bool:
        """Whether the node borrows on a flavor/resource of which ``requested`` asks some."""
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)


NEGATIVE = DRS(unweighted=-1.0)  # below every real share: the start of a search for the highest


def compare(a: DRS, b: DRS) -> int:
    """-1, 0 or 1: lower goes first to admission, higher first to preemption (``CompareDRS``)."""
    if a.zero_weight_borrows and b.zero_weight_borrows:
        x, y = a.unweighted, b.unweighted
    elif a.zero_weight_borrows:
        return 1
    elif b.zero_weight_borrows:
        return -1
    else:
        x, y = a.weighted, b.weighted
    return (x > y) - (x < y)


def share(node: QuotaNode, request: Mapping[FlavorResource, int] | None = None) -> DRS:
    """``node``'s share now, or with ``request`` added to its usage when given."""
    if node.parent is None:
        return DRS(weight=node.fair_weight)
    borrowed_by_resource: dict[str, int] = {}
    borrowed: list[FlavorResource] = []
    usage = node.usage
    for fr, quota in node.subtree.items():
        extra = request.get(fr, 0) if request else 0
        over = usage.get(fr, 0) + extra - quota
        if over > 0:
            borrowed_by_resource[fr[1]] = borrowed_by_resource.get(fr[1], 0) + over
            borrowed.append(fr)
    if not borrowed_by_resource:
        return DRS(weight=node.fair_weight)
    ratio, dominant = 0.0, ""
    for resource, amount in borrowed_by_resource.items():
        lendable = node.lendable.get(resource, 0)
        if lendable > 0:
            value = amount * 1000.0 / lendable
            if value > ratio or (value == ratio and resource < dominant):
                ratio, dominant = value, resource
    return DRS(node.fair_weight, ratio, dominant, True, frozenset(borrowed))


def weighted_share(node: QuotaNode) -> int:
    """The rounded weighted share published in ``status.fairSharing.weightedShare``."""
    return share(node).rounded()
