"""The admission invariants (docs/design/core.md, "Invariants"), checked from the API alone after every e2e test.

1. **No over-committed ClusterQueue.** For every (flavor, resource): a queue without a cohort
   holds at most its nominal quota; a queue in a cohort holds at most nominal + borrowingLimit;
   and a whole cohort tree never holds more than it owns (the guaranteed part that
   ``lendingLimit`` keeps back counts only for its own queue).
2. **No workload admitted twice.** Among unfinished workloads with the same Job as controller
   owner at most one holds a reservation.
3. **No admitted workload without its job.** A reserving workload owned by a Job whose uid no
   longer exists is a leak (quota held for nothing).
4. **Concurrent admission** (docs/design/concurrent-admission.md): a parent's ``status.admission``
   only mirrors its winning option, so it never counts as usage; at most one option of a parent
   is Admitted; once one is, no other option of that parent holds quota (while none is, several
   may hold reservations: their checks race); and an admitted option's parent, and that
   parent's Job, exist.

:func:`find_violations` is pure (lists of dicts in, messages out) so it is unit tested too;
:func:`check_cluster` fetches the objects with the plain ``kubernetes`` client, independently of
pykueue's own client, so a bug there cannot hide a violation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from pykueue.api.constants import STORAGE_VERSION
from pykueue.api.conversion import convert_shared
from pykueue.api.quantity import QuantityError, parse_quantity

Obj = Mapping[str, Any]
FR = tuple[str, str]
INF = float("inf")


def _cond_true(obj: Obj, type_: str) -> bool:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == type_:
            return cond.get("status") == "True"
    return False


def _name(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def holds_quota(wl: Obj) -> bool:
    """Reserving and unfinished: its usage counts against its ClusterQueue."""
    status = wl.get("status") or {}
    return (
        bool(status.get("admission")) and _cond_true(wl, "QuotaReserved") and not _cond_true(wl, "Finished")
    )


def _qty(value: Any, resource: str) -> int:
    try:
        return parse_quantity(value, resource)
    except (QuantityError, TypeError):
        return 0


def workload_usage(wl: Obj) -> dict[FR, int]:
    usage: dict[FR, int] = defaultdict(int)
    for psa in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
        flavors = psa.get("flavors") or {}
        for resource, amount in (psa.get("resourceUsage") or {}).items():
            usage[(flavors.get(resource, "?"), resource)] += _qty(amount, resource)
    return usage


def _quotas(spec: Obj) -> dict[FR, dict[str, int | None]]:
    quotas: dict[FR, dict[str, int | None]] = {}
    for group in spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for res in flavor.get("resources") or []:
                name = res.get("name")
                quotas[(flavor.get("name"), name)] = {
                    "nominal": _qty(res.get("nominalQuota", 0), name),
                    "borrowing": _qty(res["borrowingLimit"], name)
                    if res.get("borrowingLimit") is not None
                    else None,
                    "lending": _qty(res["lendingLimit"], name)
                    if res.get("lendingLimit") is not None
                    else None,
                }
    return quotas


def _cohort_of_cq(cq: Obj) -> str:
    spec = cq.get("spec") or {}
    return str(spec.get("cohort") or spec.get("cohortName") or "")


def _root(cohort: str, parents: Mapping[str, str]) -> str:
    seen = set()
    while parents.get(cohort) and cohort not in seen:
        seen.add(cohort)
        cohort = parents[cohort]
    return cohort


def find_violations(
    cluster_queues: Iterable[Obj],
    cohorts: Iterable[Obj],
    workloads: Iterable[Obj],
    jobs: Iterable[Obj] | None = None,
    terminating_namespaces: Iterable[str] = (),
) -> list[str]:
    """Every invariant violation, as a message naming the objects involved.

    Workloads in namespaces being deleted are left out: a finished test deletes its namespace
    and its ClusterQueues concurrently, and what is half-deleted is no longer the system's state.
    """
    violations: list[str] = []
    cqs = {str((cq.get("metadata") or {}).get("name")): cq for cq in cluster_queues}
    gone = set(terminating_namespaces)
    workloads = [wl for wl in workloads if (wl.get("metadata") or {}).get("namespace") not in gone]
    holding = [wl for wl in workloads if holds_quota(wl) and not _is_parent(wl)]

    usage: dict[str, dict[FR, int]] = defaultdict(lambda: defaultdict(int))
    for wl in holding:
        cq_name = str(((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")
        for fr, amount in workload_usage(wl).items():
            usage[cq_name][fr] += amount

    parents = {}
    cohort_quota: dict[str, dict[FR, int]] = {}
    for co in cohorts:
        spec = co.get("spec") or {}
        name = str((co.get("metadata") or {}).get("name"))
        parents[name] = str(spec.get("parentName") or "")
        cohort_quota[name] = {fr: q["nominal"] or 0 for fr, q in _quotas(spec).items()}

    # Per ClusterQueue: nominal (+ borrowing limit when in a cohort).
    tree_used: dict[str, dict[FR, int]] = defaultdict(lambda: defaultdict(int))
    tree_pool: dict[str, dict[FR, float]] = defaultdict(lambda: defaultdict(float))
    for cq_name, used in usage.items():
        cq = cqs.get(cq_name)
        if cq is None:
            violations.append(f"workloads hold quota in ClusterQueue {cq_name!r}, which does not exist")
            continue
        quotas = _quotas(cq.get("spec") or {})
        cohort = _cohort_of_cq(cq)
        for fr, amount in used.items():
            quota = quotas.get(fr)
            if quota is None:
                violations.append(
                    f"ClusterQueue {cq_name}: {amount} of {fr[1]} in flavor {fr[0]!r} it has no quota for"
                )
                continue
            nominal = quota["nominal"] or 0
            limit: float = nominal
            if cohort:
                limit = INF if quota["borrowing"] is None else nominal + quota["borrowing"]
            if amount > limit:
                violations.append(
                    f"ClusterQueue {cq_name} over-committed on {fr[0]}/{fr[1]}: {amount} > {limit} allowed"
                )
    # Per cohort tree: borrowed usage fits in what the members lend plus the cohorts' own quota.
    for cq_name, cq in cqs.items():
        cohort = _cohort_of_cq(cq)
        if not cohort:
            continue
        root = _root(cohort, parents)
        for fr, quota in _quotas(cq.get("spec") or {}).items():
            nominal = quota["nominal"] or 0
            lendable = nominal if quota["lending"] is None else min(nominal, quota["lending"])
            guaranteed = nominal - lendable
            tree_pool[root][fr] += lendable
            tree_used[root][fr] += max(0, usage.get(cq_name, {}).get(fr, 0) - guaranteed)
    for name, quota in cohort_quota.items():
        root = _root(name, parents)
        for fr, amount in quota.items():
            tree_pool[root][fr] += amount
    for root, used in tree_used.items():
        for fr, amount in used.items():
            if amount > tree_pool[root][fr]:
                violations.append(
                    f"cohort tree {root!r} over-committed on {fr[0]}/{fr[1]}: {amount} > {tree_pool[root][fr]} available"
                )

    # At most one reservation per Job; options: at most one admitted, alone once it is.
    by_owner: dict[str, list[Obj]] = defaultdict(list)
    for wl in holding:
        for ref in (wl.get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("controller") is True and ref.get("uid"):
                by_owner[f"{ref.get('kind')} {ref.get('name')} ({ref['uid']})"].append(wl)
    for owner, members in by_owner.items():
        names = sorted(_name(wl) for wl in members)
        if not owner.startswith("Workload "):
            if len(names) > 1:
                violations.append(f"{owner} has {len(names)} workloads holding quota: {names}")
            continue
        admitted = [wl for wl in members if _cond_true(wl, "Admitted")]
        if len(admitted) > 1:
            violations.append(f"{owner} has {len(admitted)} admitted options: {sorted(_name(w) for w in admitted)}")
        elif admitted and len(names) > 1:
            violations.append(f"{owner} is admitted through {_name(admitted[0])} but options {names} hold quota")
    violations.extend(_orphan_options(workloads, holding, jobs))

    # Admitted workloads owned by a Job need that Job.
    if jobs is not None:
        job_uids = {str((j.get("metadata") or {}).get("uid")) for j in jobs}
        for wl in holding:
            if (wl.get("metadata") or {}).get("deletionTimestamp"):
                continue
            for ref in (wl.get("metadata") or {}).get("ownerReferences") or []:
                if (
                    ref.get("controller") is True
                    and ref.get("kind") == "Job"
                    and ref.get("uid") not in job_uids
                ):
                    violations.append(
                        f"workload {_name(wl)} holds quota but its Job {ref.get('name')} is gone"
                    )
    return violations


def _is_parent(wl: Obj) -> bool:
    mode = ((wl.get("spec") or {}).get("workloadMode") or {}).get("type")
    return mode == "Parent"


def _orphan_options(workloads: list[Obj], holding: list[Obj], jobs: Iterable[Obj] | None) -> list[str]:
    """Admitted options whose parent, or whose parent's Job, is gone."""
    by_uid = {str((wl.get("metadata") or {}).get("uid")): wl for wl in workloads}
    job_uids = {str((j.get("metadata") or {}).get("uid")) for j in jobs} if jobs is not None else None
    found = []
    for wl in holding:
        meta = wl.get("metadata") or {}
        if not _cond_true(wl, "Admitted") or meta.get("deletionTimestamp"):
            continue
        for ref in meta.get("ownerReferences") or []:
            if not (ref.get("controller") is True and ref.get("kind") == "Workload"):
                continue
            parent = by_uid.get(str(ref.get("uid")))
            if parent is None:
                found.append(f"option {_name(wl)} is admitted but its parent {ref.get('name')} is gone")
                continue
            for pref in (parent.get("metadata") or {}).get("ownerReferences") or []:
                if (
                    job_uids is not None
                    and pref.get("controller") is True
                    and pref.get("kind") == "Job"
                    and pref.get("uid") not in job_uids
                ):
                    found.append(f"option {_name(wl)} is admitted but the Job {pref.get('name')} of its parent is gone")
    return found


def fetch_state(api_client: Any) -> tuple[list[Obj], list[Obj], list[Obj], list[Obj], list[str]]:
    """ClusterQueues, Cohorts, Workloads, Jobs (raw dicts) and the namespaces being deleted."""
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)

    def items(plural: str) -> list[Obj]:
        # Listed in the stored version and converted here, as the programs read: a list of every
        # Workload in the version not stored is a conversion-webhook call for all of them, and
        # the checker runs after every test and in tight loops (it is not what is under test).
        try:
            listed = custom.list_cluster_custom_object("kueue.x-k8s.io", STORAGE_VERSION, plural)["items"]
            return [convert_shared(item, "v1beta1") for item in listed]
        except client.ApiException as exc:
            if exc.status == 404 and plural == "cohorts":
                return []
            raise

    batch = client.BatchV1Api(api_client)
    jobs = api_client.sanitize_for_serialization(batch.list_job_for_all_namespaces().items)
    namespaces = client.CoreV1Api(api_client).list_namespace().items
    terminating = [
        ns.metadata.name
        for ns in namespaces
        if ns.metadata.deletion_timestamp or ns.status.phase == "Terminating"
    ]
    return items("clusterqueues"), items("cohorts"), items("workloads"), jobs, terminating


def check_cluster(api_client: Any) -> list[str]:
    """Violations in the cluster right now."""
    cqs, cohorts, workloads, jobs, terminating = fetch_state(api_client)
    return find_violations(cqs, cohorts, workloads, jobs, terminating)
