"""The order of a round's entries with fair sharing on: Kueue's tournament
(``pkg/scheduler/fair_sharing_iterator.go``; KEP 1714-fair-sharing).

Entries are handed out one at a time, and each choice is made against the quota as the entries
processed before it left it (an admitted entry raises its queue's share before the next choice),
as Kueue's iterator does:

* An entry whose ClusterQueue has no Cohort goes as it comes.
* Otherwise, within the entry's cohort tree, every remaining entry's usage is added to its queue
  for a moment and the dominant resource share (``fairshare.share``) of its queue and of every
  Cohort up to the root is noted: the share *after* admission.
* A tournament then runs from the root down: at each Cohort, one candidate per child (a child
  ClusterQueue's entry, or the winner of a child Cohort's own tournament) and the winner is, in
  order: the one whose child (at this level) would not borrow on the flavor/resources it asks for
  (Kueue's FairSharingPrioritizeNonBorrowing, on by default); the lower share; the higher
  priority; the older queue timestamp.

Cost per choice: O(entries of that tree x depth x flavor/resources) — the shares are read off the
quota forest, never recomputed from workloads. Trees do not share quota, so each tree's entries
are taken in turn.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, TypeVar

from . import fairshare, quota
from .fairshare import DRS
from .records import FlavorResource, OrderKey


class Entry(Protocol):
    """What the tournament reads of a cycle entry."""

    @property
    def cluster_queue(self) -> str: ...

    @property
    def usage(self) -> dict[FlavorResource, int]: ...

    @property
    def order_key(self) -> OrderKey: ...


E = TypeVar("E", bound=Entry)


def _root(node: quota.QuotaNode) -> quota.QuotaNode:
    while node.parent is not None:
        node = node.parent
    return node


def tournament_order(entries: Sequence[E], forest: quota.QuotaForest) -> Iterator[E]:
    """``entries`` (one per ClusterQueue, in classical order) in fair-sharing order, lazily: the
    caller processes each before the next is chosen."""
    trees: dict[int, tuple[quota.QuotaNode, dict[str, E]]] = {}
    for entry in entries:
        node = forest.cluster_queues.get(entry.cluster_queue)
        if node is None or node.parent is None:
            yield entry
            continue
        root = _root(node)
        trees.setdefault(id(root), (root, {}))[1][entry.cluster_queue] = entry
    for root, by_queue in trees.values():
        while by_queue:
            shares = _shares_after_admission(forest, by_queue)
            winner = _play(root, by_queue, shares)
            if winner is None:  # cannot happen: every entry's queue is in this tree
                break
            del by_queue[winner.cluster_queue]
            yield winner


def _shares_after_admission(
    forest: quota.QuotaForest, by_queue: dict[str, E]
) -> dict[tuple[str, str], DRS]:
    """(Cohort, ClusterQueue of the entry) -> share of the Cohort's child on the entry's path,
    with the entry admitted."""
    shares: dict[tuple[str, str], DRS] = {}
    for name, entry in by_queue.items():
        node = forest.cluster_queues[name]
        usage = entry.usage
        quota.add_usage(node, usage)
        try:
            child: quota.QuotaNode = node
            while child.parent is not None:
                shares[(child.parent.name, name)] = fairshare.share(child)
                child = child.parent
        finally:
            quota.remove_usage(node, usage)
    return shares


def _play(cohort: quota.QuotaNode, by_queue: dict[str, E], shares: dict[tuple[str, str], DRS]) -> E | None:
    best: E | None = None
    for child in cohort.children:
        candidate = by_queue.get(child.name) if child.is_cluster_queue else _play(child, by_queue, shares)
        if candidate is None:
            continue
        if best is None or _less(candidate, best, cohort.name, shares):
            best = candidate
    return best


def _less(a: E, b: E, cohort: str, shares: dict[tuple[str, str], DRS]) -> bool:
    a_share = shares[(cohort, a.cluster_queue)]
    b_share = shares[(cohort, b.cluster_queue)]
    a_borrows, b_borrows = a_share.borrows_on(a.usage), b_share.borrows_on(b.usage)
    if a_borrows != b_borrows:
        return not a_borrows
    order = fairshare.compare(a_share, b_share)
    if order:
        return order < 0
    a_key, b_key = a.order_key, b.order_key
    return (a_key[0], a_key[1]) < (b_key[0], b_key[1])
