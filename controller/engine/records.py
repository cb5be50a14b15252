"""Compact internal records the engine works on.

The apiserver hands us deeply nested JSON; the scheduling cycle must not walk it. Each object is
converted once per change (``controller.engine.parse``) into one of these records, holding exactly
what admission needs with quantities already turned into integers (milli-cpu, bytes, units). This
is the Python counterpart of Kueue's ``workload.Info`` and its ClusterQueue/Cohort snapshots.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pykueue.api.labelselectors import LabelSelector, SelectorRequirement
from pykueue.api.objects import namespaced_key

# A (flavor, resource) pair: the unit quota is accounted in.
FlavorResource = tuple[str, str]
# "namespace/name": how workloads and local queues are addressed everywhere in the engine.
ObjectKey = str
# A pending workload's place in its ClusterQueue: (-priority, queue timestamp, arrival, tiebreak).
OrderKey = tuple[int, float, int, str]


@dataclass(frozen=True, slots=True)
class Quota:
    """One resource's quota in one flavor. ``None`` limits mean "unlimited" / "everything lendable"."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    name: str
    quotas: dict[str, Quota]  # resource -> quota


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    covered: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str  # Equal | Exists
    value: str
    effect: str  # "" means every effect

    def tolerates(self, taint: Taint) -> bool:
        """corev1 ``Toleration.ToleratesTaint``: effect, key and value (or Exists) must match."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class FlavorInfo:
    """A ResourceFlavor: what a podSet must tolerate and match to be placed on it."""

    name: str
    node_labels: dict[str, str]
    # Only NoSchedule and NoExecute taints matter at admission (PreferNoSchedule is advisory).
    node_taints: tuple[Taint, ...]
    tolerations: tuple[Toleration, ...]


@dataclass(frozen=True, slots=True)
class CheckRule:
    name: str
    on_flavors: frozenset[str]  # empty: applies to every workload of the ClusterQueue


@dataclass(frozen=True, slots=True)
class PreemptionPolicy:
    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueueSpec:
    name: str
    cohort: str | None
    groups: tuple[ResourceGroup, ...]
    resource_group: dict[str, int]  # resource -> index into groups
    strict_fifo: bool
    namespace_selector: LabelSelector | None  # None: no namespace is eligible (Kueue's nil)
    when_can_borrow_try_next: bool
    when_can_preempt_try_next: bool
    preemption_over_borrowing: bool
    preemption: PreemptionPolicy
    checks: tuple[CheckRule, ...]
    stop_policy: str
    # Configuration errors that keep the queue inactive (e.g. an unparsable quantity).
    errors: tuple[str, ...] = ()
    # spec.concurrentAdmission is set: its workloads are scheduled through options
    # (docs/design/concurrent-admission.md).
    concurrent_admission: bool = False
    terminating: bool = False  # metadata.deletionTimestamp is set: admits nothing new
    # spec.flavorFungibility.fallbackStrategy is set: a workload's excluded flavors are skipped and
    # reservations record their flavors' assignment time (docs/design/fallbacks.md).
    fallbacks: bool = False
    # spec.fairSharing.weight (default 1); read only when fair sharing is enabled.
    fair_weight: float = 1.0
    # spec.admissionScope.admissionMode is UsageBasedAdmissionFairSharing: pending workloads are
    # ordered by their LocalQueue's usage first when the Configuration enables admission fair
    # sharing (controller.engine.afs).
    admission_fair_sharing: bool = False

    @property
    def flavor_names(self) -> tuple[str, ...]:
        return tuple(fq.name for group in self.groups for fq in group.flavors)

    def quota_of(self, flavor: str, resource: str) -> Quota | None:
        index = self.resource_group.get(resource)
        if index is None:
            return None
        for fq in self.groups[index].flavors:
            if fq.name == flavor:
                return fq.quotas.get(resource)
        return None


@dataclass(frozen=True, slots=True)
class CohortSpec:
    name: str
    parent: str | None
    groups: tuple[ResourceGroup, ...]
    errors: tuple[str, ...] = ()
    fair_weight: float = 1.0  # spec.fairSharing.weight


@dataclass(frozen=True, slots=True)
class LocalQueueInfo:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str
    fair_weight: float = 1.0  # spec.fairSharing.weight: admission fair sharing divides usage by it

    @property
    def key(self) -> ObjectKey:
        return namespaced_key(self.namespace, self.name)


@dataclass(frozen=True, slots=True)
class PodSetInfo:
    name: str
    count: int
    requests: dict[str, int]  # total for all pods of the podSet, engine units
    node_selector: dict[str, str]
    # requiredDuringScheduling nodeSelectorTerms; each term is a tuple of requirements (ANDed),
    # terms are ORed. None when the pod template has no required node affinity.
    affinity_terms: tuple[tuple[SelectorRequirement, ...], ...] | None
    tolerations: tuple[Toleration, ...]
    allowed_flavors: frozenset[str] | None
    min_count: int | None = None  # partial admission: the fewest pods it may run with

    def scaled(self, count: int) -> PodSetInfo:
        """This podSet with ``count`` pods (requests scale with it)."""
        if count == self.count:
            return self
        per_pod = {resource: amount // self.count for resource, amount in self.requests.items()} if self.count else {}
        return replace(self, count=count, requests={r: amount * count for r, amount in per_pod.items()})


@dataclass(frozen=True, slots=True)
class OptionInfo:
    """An option workload of concurrent admission (see ``controller.engine.options``)."""

    parent: ObjectKey
    rank: int  # preference among its siblings, 0 = most preferred
    migration_target: bool  # may take over from a less preferred sibling holding quota
    # The parent's identity: its key and uid. Siblings are options of the same *object*: a parent
    # deleted and re-created under the same name has other siblings (its old options may linger
    # until the garbage collector takes them).
    family: str = ""
    # When this option took its parent's preemption gate (epoch seconds), if it holds it.
    gate_opened: float | None = None
    # Evicted by a migration (FlavorMigration) and not reserved since: it waits while a more
    # preferred sibling that may take over is pending.
    migrated_away: bool = False


@dataclass(slots=True)
class AdmissionInfo:
    """What an admitted (or assumed) workload holds: its ClusterQueue and usage per flavor/resource."""

    cluster_queue: str
    usage: dict[FlavorResource, int]
    admitted: bool  # Admitted=True (all checks Ready), as opposed to only QuotaReserved
    reserved_at: float = 0.0  # when quota was reserved; preemption evicts the most recent first
    # Reserved by this engine and not yet seen back from the API. Until the informer shows the
    # reservation, events without it are older than our write and must not undo it.
    assumed: bool = False
    write_confirmed: bool = False  # the controller reported the API write succeeded
    # When others could first see the reservation; the preemption grace counts from here. For
    # our own reservation that is its echo's arrival (until then the assumption's time), for one
    # we did not make its reservation time (Engine._visible_since).
    visible_since: float = 0.0


@dataclass(slots=True)
class WorkloadInfo:
    """A Workload reduced to what scheduling reads; built once per object change."""

    namespace: str
    name: str
    uid: str
    queue_name: str
    priority: int
    creation_ts: float
    queue_ts: float  # queue order timestamp: creation, or the eviction time after some evictions
    podsets: tuple[PodSetInfo, ...]
    shape: int  # equivalence hash: workloads with the same shape fit or fail together
    job_uid: str = ""
    active: bool = True
    finished: bool = False
    deleting: bool = False
    admission: AdmissionInfo | None = None
    evicted: bool = False
    requeue_at: float | None = None
    requeued_false: bool = False
    blocked_by_checks: bool = False  # an admission check in Retry or Rejected
    pending_reason: tuple[str, str] | None = None  # QuotaReserved=False (reason, message) as stored
    invalid: str | None = None  # why the object cannot be scheduled at all (bad quantity, ...)
    spec_problem: str | None = None  # the part of ``invalid`` that comes from the spec
    generation: int = 0
    gated: bool = False  # kueue.x-k8s.io/admission-gated-by annotation present
    priority_class: str | None = None
    priority_class_source: str = ""
    has_priority: bool = True
    # Concurrent admission (docs/design/concurrent-admission.md): parents are never scheduled;
    # options carry their parent and preference.
    is_parent: bool = False
    option: OptionInfo | None = None
    # ResourceFlavor fallbacks: flavors in status.flavorAssignmentHistory that the workload does not
    # hold, i.e. whose attempt failed (controller.workload.fallbacks); honoured only in a
    # ClusterQueue with a fallback strategy.
    excluded_flavors: frozenset[str] = frozenset()
    order_tiebreak: str = ""  # replaces the UID in the queue order when set
    # status.reclaimablePods as (podSet, count), capped at each podSet's count: pods that finished
    # for good and whose quota goes back (Kueue's ReclaimablePods). ``podsets`` already has them taken off.
    reclaimed: tuple[tuple[str, int], ...] = ()
    # When the engine first observed this workload (set by the engine, kept across updates):
    # creationTimestamp has whole seconds, so workloads created in the same second are ordered
    # by arrival rather than by their (random) UIDs. 0 = unknown (loaded at start-up).
    arrival: int = 0
    # Derived once: hot paths index by these on every queue and quota operation.
    key: ObjectKey = field(default="", init=False)
    local_queue_key: ObjectKey = field(default="", init=False)

    def __post_init__(self) -> None:
        # namespaced_key's format, spelled out: one record per Workload update.
        self.key = f"{self.namespace}/{self.name}"
        self.local_queue_key = f"{self.namespace}/{self.queue_name}"

    @property
    def order_key(self) -> OrderKey:
        """Heap order inside a ClusterQueue: higher priority, then older timestamp, then earlier
        arrival (the same second), then UID (only among workloads loaded at start-up)."""
        return (-self.priority, self.queue_ts, self.arrival, self.order_tiebreak or self.uid)
