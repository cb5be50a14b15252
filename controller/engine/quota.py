"""Quota accounting: ClusterQueues and Cohorts as a forest of resource nodes.

This follows Kueue's ``resource_node.go`` arithmetic so that borrowing and lending behave the same:

* ``subtree[fr]`` of a ClusterQueue is its nominal quota; of a Cohort, its own nominal quota plus,
  for every child, ``child.subtree - child.local_quota``.
* ``local_quota(fr)`` = ``max(0, subtree - lendingLimit)`` when a lending limit is set, else 0: the
  part a node keeps private and never lends to its parent.
* usage of a Cohort is the sum of what spills out of its children's private quota; adding or
  removing usage walks up and pushes only that spill to the parent, so every operation costs
  O(depth), independent of how many workloads exist.
* ``available`` is the node's private headroom plus what its parent can give, capped by the
  node's ``borrowingLimit``; ``potential_available`` is the same with zero usage (the most the
  queue could ever get, against which "exceeds max quota" is judged).

All numbers are Python integers in engine units, so there is no rounding and no overflow.
Topology changes (a ClusterQueue or Cohort added, removed or edited) rebuild the forest: they are
rare, and a rebuild costs O(nodes * flavor-resources), not O(workloads).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .records import ClusterQueueSpec, CohortSpec, FlavorResource, Quota, ResourceGroup


class QuotaNode:
    """A ClusterQueue or Cohort in the quota forest."""

    __slots__ = (
        "borrowing",
        "children",
        "fair_weight",
        "height",
        "is_cluster_queue",
        "lendable",
        "local",
        "name",
        "nominals",
        "parent",
        "potential",
        "quotas",
        "subtree",
        "tree_borrowers",
        "usage",
    )

    def __init__(self, name: str, is_cluster_queue: bool, quotas: dict[FlavorResource, Quota]) -> None:
        self.name = name
        self.is_cluster_queue = is_cluster_queue
        self.quotas = quotas
        # Nominal quota per flavor/resource, read on every usage change (the borrowing index).
        self.nominals: dict[FlavorResource, int] = {fr: q.nominal for fr, q in quotas.items()}
        self.parent: QuotaNode | None = None
        self.children: list[QuotaNode] = []
        self.subtree: dict[FlavorResource, int] = {}
        # local_quota per flavor/resource (only those with a lending limit), fixed with subtree:
        # read on every usage change and availability check, so computed once per rebuild.
        self.local: dict[FlavorResource, int] = {}
        # potential_available per flavor/resource, remembered as asked (quota only, fixed
        # between rebuilds, which make new nodes).
        self.potential: dict[FlavorResource, int] = {}
        self.usage: dict[FlavorResource, int] = {}
        # Cohorts only: how many levels of the tree hang below this one (a Cohort whose children are
        # only ClusterQueues has height 1), set when the forest is built.
        self.height = 0
        # ClusterQueues only: the flavor/resources it uses above its nominal quota, and the set of
        # borrowing ClusterQueues of its tree (one set object shared by the tree). Preemption looks
        # for reclaimable workloads only in those queues instead of scanning the whole tree.
        self.borrowing: set[FlavorResource] = set()
        self.tree_borrowers: set[QuotaNode] = set()
        # Fair sharing (controller.engine.fairshare): the node's weight, and what its parent could
        # lend it per resource name (quota only, so fixed between rebuilds).
        self.fair_weight = 1.0
        self.lendable: dict[str, int] = {}

    def track_borrowing(self, fr: FlavorResource) -> None:
        """Refresh the borrowing indexes after this ClusterQueue's usage of ``fr`` changed."""
        if self.usage.get(fr, 0) > self.nominals.get(fr, 0):
            self.borrowing.add(fr)
            self.tree_borrowers.add(self)
        elif fr in self.borrowing:
            self.borrowing.discard(fr)
            if not self.borrowing:
                self.tree_borrowers.discard(self)

    def nominal(self, fr: FlavorResource) -> int:
        return self.nominals.get(fr, 0)

    def local_quota(self, fr: FlavorResource) -> int:
        return self.local.get(fr, 0)

    def compute_local(self) -> None:
        """Fill :attr:`local` from the quotas and :attr:`subtree` (the forest calls it once the
        subtree is known): ``max(0, subtree - lendingLimit)`` where a lending limit is set."""
        self.local = {
            fr: max(0, self.subtree.get(fr, 0) - quota.lending_limit)
            for fr, quota in self.quotas.items()
            if quota.lending_limit is not None
        }

    def path(self) -> str:
        """``/root/child/cq`` — how Kueue names a queue's place in the tree in preemption messages."""
        parts = []
        node: QuotaNode | None = self
        while node is not None:
            parts.append(node.name)
            node = node.parent
        return "/" + "/".join(reversed(parts))


def _quotas(groups: Iterable[ResourceGroup]) -> dict[FlavorResource, Quota]:
    return {(fq.name, resource): quota for group in groups for fq in group.flavors for resource, quota in fq.quotas.items()}


def add_usage(node: QuotaNode, usage: Mapping[FlavorResource, int]) -> None:
    for fr, amount in usage.items():
        current: QuotaNode | None = node
        val = amount
        while current is not None and val:
            used = current.usage.get(fr, 0)
            local_available = max(0, current.local.get(fr, 0) - used)
            current.usage[fr] = used + val
            val = max(0, val - local_available)
            current = current.parent
        if node.is_cluster_queue:
            node.track_borrowing(fr)


def remove_usage(node: QuotaNode, usage: Mapping[FlavorResource, int]) -> None:
    for fr, amount in usage.items():
        current: QuotaNode | None = node
        val = amount
        while current is not None and val:
            used = current.usage.get(fr, 0)
            stored_in_parent = used - current.local.get(fr, 0)
            current.usage[fr] = used - val
            if stored_in_parent <= 0:
                break
            val = min(val, stored_in_parent)
            current = current.parent
        if node.is_cluster_queue:
            node.track_borrowing(fr)


def available(node: QuotaNode, fr: FlavorResource) -> int:
    """What ``node`` could still take of ``fr`` now (may be negative after quota was removed)."""
    parent = node.parent
    if parent is None:
        return node.subtree.get(fr, 0) - node.usage.get(fr, 0)
    local = node.local.get(fr, 0)
    used = node.usage.get(fr, 0)
    local_available = max(0, local - used)
    # A parent that is the root answers without a call (the usual two-level tree).
    parent_available = (
        parent.subtree.get(fr, 0) - parent.usage.get(fr, 0) if parent.parent is None else available(parent, fr)
    )
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing_limit is not None:
        stored_in_parent = node.subtree.get(fr, 0) - local
        used_in_parent = max(0, used - local)
        parent_available = min(stored_in_parent - used_in_parent + quota.borrowing_limit, parent_available)
    return local_available + parent_available


def potential_available(node: QuotaNode, fr: FlavorResource) -> int:
    """The most ``node`` could ever get of ``fr`` with the whole tree idle (quota only: remembered
    per node, which a rebuild replaces)."""
    known = node.potential.get(fr)
    if known is not None:
        return known
    if node.parent is None:
        result = node.subtree.get(fr, 0)
    else:
        result = node.local_quota(fr) + potential_available(node.parent, fr)
        quota = node.quotas.get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            result = min(node.subtree.get(fr, 0) + quota.borrowing_limit, result)
    node.potential[fr] = result
    return result


def lowest_fitting_subtree(node: QuotaNode, fr: FlavorResource, val: int) -> tuple[int, bool]:
    """How far ``val`` more of ``fr`` has to reach for quota, as Kueue measures it
    (``FindHeightOfLowestSubtreeThatFits`` in kueue/pkg/scheduler/preemption/classical).

    The first value is the borrowing level: 0 when ``val`` fits within the ClusterQueue's nominal
    quota, else the *height* of the lowest Cohort on the way up whose subtree has room for what the
    queue cannot hold itself. Height, not distance: a Cohort's height is that of its deepest
    branch, so in an uneven tree two queues borrowing from the same Cohort get the same level and
    entries compare fairly. The walk subtracts, at every node, only what that node keeps private
    (its lending limit's remainder), because everything else it holds is already counted in its
    parent's subtree.

    The second value says whether room for ``val`` exists below the root, so that preempting
    inside that subtree could help even when the request is above the queue's nominal quota.
    """
    used = node.usage.get(fr, 0)
    if node.parent is None:
        return 0, False
    if used + val <= node.nominals.get(fr, 0):
        return 0, True
    remaining = val - max(0, node.local_quota(fr) - used)
    current = node.parent
    while True:
        if current.usage.get(fr, 0) + remaining <= current.subtree.get(fr, 0):
            return current.height, current.parent is not None
        if current.parent is None:
            return current.height, False  # does not fit anywhere: the whole tree's height
        remaining -= max(0, current.local_quota(fr) - current.usage.get(fr, 0))
        current = current.parent


def borrowing_level(node: QuotaNode, fr: FlavorResource, val: int) -> int:
    """The borrowing level of :func:`lowest_fitting_subtree` alone."""
    return lowest_fitting_subtree(node, fr, val)[0]


def fits(node: QuotaNode, usage: Mapping[FlavorResource, int], allow_borrowing: bool = True) -> bool:
    for fr, val in usage.items():
        if val > available(node, fr):
            return False
        if not allow_borrowing and node.usage.get(fr, 0) + val > node.nominal(fr):
            return False
    return True


def is_borrowing(node: QuotaNode, fr: FlavorResource) -> bool:
    return node.usage.get(fr, 0) > node.nominal(fr)


class QuotaForest:
    """All ClusterQueues and Cohorts as trees; knows each queue's root and the queues per root."""

    def __init__(self) -> None:
        self.cluster_queues: dict[str, QuotaNode] = {}
        self.cohorts: dict[str, QuotaNode] = {}
        self.root_of: dict[str, str] = {}  # ClusterQueue name -> root key
        self.members: dict[str, list[str]] = {}  # root key -> ClusterQueue names
        self.in_cycle: set[str] = set()  # ClusterQueues under a cohort cycle (disabled)

    @staticmethod
    def root_key_for(node: QuotaNode) -> str:
        root = node
        while root.parent is not None:
            root = root.parent
        return f"{'cq' if root.is_cluster_queue else 'cohort'}:{root.name}"

    def rebuild(self, cluster_queues: Mapping[str, ClusterQueueSpec], cohorts: Mapping[str, CohortSpec]) -> None:
        """Re-create the forest after a topology change, keeping every ClusterQueue's usage."""
        old_usage = {name: node.usage for name, node in self.cluster_queues.items()}
        self._unlink()
        cq_nodes = {name: QuotaNode(name, True, _quotas(spec.groups)) for name, spec in cluster_queues.items()}
        cohort_nodes = {name: QuotaNode(name, False, _quotas(spec.groups)) for name, spec in cohorts.items()}
        for nodes, specs in ((cq_nodes, cluster_queues), (cohort_nodes, cohorts)):
            for name, node in nodes.items():
                node.fair_weight = specs[name].fair_weight

        def cohort_node(name: str) -> QuotaNode:
            if name not in cohort_nodes:  # implicit cohort: referenced but not defined
                cohort_nodes[name] = QuotaNode(name, False, {})
            return cohort_nodes[name]

        for name, spec in list(cohorts.items()):
            if spec.parent:
                child, parent = cohort_nodes[name], cohort_node(spec.parent)
                child.parent = parent
        # Break cycles: a cohort whose ancestor chain returns to itself is cut loose, and every
        # ClusterQueue below it is disabled until the cycle is fixed (as Kueue does).
        cyclic: set[str] = set()
        for name, node in cohort_nodes.items():
            seen = {name}
            current = node.parent
            while current is not None:
                if current.name in seen:
                    cyclic.add(name)
                    break
                seen.add(current.name)
                current = current.parent
        for name in cyclic:
            cohort_nodes[name].parent = None
        for name, cq_spec in cluster_queues.items():
            if cq_spec.cohort:
                cq_nodes[name].parent = cohort_node(cq_spec.cohort)
        for node in [*cohort_nodes.values(), *cq_nodes.values()]:
            if node.parent is not None:
                node.parent.children.append(node)

        roots = [n for n in cohort_nodes.values() if n.parent is None] + [
            n for n in cq_nodes.values() if n.parent is None
        ]
        for root in roots:
            self._compute_height(root)
            self._compute_subtree(root)
            self._share_borrowers(root, set())
            self._compute_lendable(root, root)
        for name, node in cq_nodes.items():
            node.usage = dict(old_usage.get(name, {}))
        for root in roots:
            self._compute_usage(root)

        self.cluster_queues = cq_nodes
        self.cohorts = cohort_nodes
        self.root_of = {name: self.root_key_for(node) for name, node in cq_nodes.items()}
        self.members = {}
        for name, root_key in self.root_of.items():
            self.members.setdefault(root_key, []).append(name)
        self.in_cycle = {
            name
            for name, spec in cluster_queues.items()
            if spec.cohort and self._under_cycle(cohort_nodes[spec.cohort], cyclic)
        }

    def _unlink(self) -> None:
        """Break the references between the nodes about to be replaced (parent/children, the
        tree's shared borrower set), so that reference counting frees them: once the GC has been
        settled (``gcpolicy``: the loaded state is frozen), frozen cyclic garbage would never be
        collected."""
        for node in (*self.cluster_queues.values(), *self.cohorts.values()):
            node.parent = None
            node.children = []
            node.tree_borrowers = set()

    @staticmethod
    def _under_cycle(node: QuotaNode | None, cyclic: set[str]) -> bool:
        while node is not None:
            if node.name in cyclic:
                return True
            node = node.parent
        return False

    def _compute_height(self, node: QuotaNode) -> int:
        """Cohort heights as Kueue counts them: 1 for a Cohort with children, plus one per level of
        child Cohorts below it; 0 for a childless Cohort and for ClusterQueues."""
        if node.is_cluster_queue:
            node.height = 0
            return 0
        height = min(len(node.children), 1)
        for child in node.children:
            child_height = self._compute_height(child)
            if not child.is_cluster_queue:
                height = max(height, child_height + 1)
        node.height = height
        return height

    def _compute_subtree(self, node: QuotaNode) -> None:
        subtree = {fr: q.nominal for fr, q in node.quotas.items()}
        for child in node.children:
            self._compute_subtree(child)
            for fr, amount in child.subtree.items():
                subtree[fr] = subtree.get(fr, 0) + amount - child.local_quota(fr)
        node.subtree = subtree
        node.compute_local()

    def _compute_lendable(self, node: QuotaNode, root: QuotaNode) -> None:
        """Per resource name, the most ``node``'s parent could give it: Kueue's
        ``calculateLendable`` (the parent's potential availability summed over the flavors of
        every flavor/resource the tree knows), the denominator of dominant resource shares."""
        if node.parent is not None:
            lendable: dict[str, int] = {}
            for fr in root.subtree:
                lendable[fr[1]] = lendable.get(fr[1], 0) + potential_available(node.parent, fr)
            node.lendable = lendable
        for child in node.children:
            self._compute_lendable(child, root)

    def _share_borrowers(self, node: QuotaNode, borrowers: set[QuotaNode]) -> None:
        node.tree_borrowers = borrowers
        for child in node.children:
            self._share_borrowers(child, borrowers)

    def _compute_usage(self, node: QuotaNode) -> None:
        """Recompute cohort usage below ``node`` from its ClusterQueues' usage (and their
        borrowing indexes), after ClusterQueue usage was set wholesale."""
        if node.is_cluster_queue:
            node.borrowing = set()
            node.tree_borrowers.discard(node)
            for fr in node.usage:
                node.track_borrowing(fr)
            return
        usage: dict[FlavorResource, int] = {}
        for child in node.children:
            self._compute_usage(child)
            for fr, amount in child.usage.items():
                spill = max(0, amount - child.local_quota(fr))
                if spill:
                    usage[fr] = usage.get(fr, 0) + spill
        node.usage = usage
