"""The e2e invariant checker itself: it must flag over-commit, double admission and leaked quota."""

from __future__ import annotations

from tests.builders import ClusterQueueBuilder, WorkloadBuilder
from tests.e2e.helpers.invariants import find_violations


def _holding(name: str, cq: str, cpu: str, flavor: str = "default") -> WorkloadBuilder:
    return WorkloadBuilder(name, "ns").podset(cpu=cpu).reserved(cq, {"cpu": flavor}, {"cpu": cpu})


def test_within_quota_is_clean() -> None:
    cq = ClusterQueueBuilder("cq").flavor("default", cpu="4").obj()
    wls = [
        _holding("a", "cq", "2").obj(),
        _holding("b", "cq", "2").obj(),
        _holding("c", "cq", "9").finished().obj(),
    ]
    assert find_violations([cq], [], wls, []) == []


def test_over_nominal_without_cohort_is_flagged() -> None:
    cq = ClusterQueueBuilder("cq").flavor("default", cpu="4").obj()
    violations = find_violations(
        [cq], [], [_holding("a", "cq", "3").obj(), _holding("b", "cq", "1500m").obj()], []
    )
    assert len(violations) == 1 and "ClusterQueue cq over-committed on default/cpu" in violations[0]


def test_borrowing_within_cohort_capacity_is_clean_and_beyond_is_flagged() -> None:
    a = ClusterQueueBuilder("a").cohort("co").flavor("default", cpu="4").obj()
    b = ClusterQueueBuilder("b").cohort("co").flavor("default", cpu="4").obj()
    assert find_violations([a, b], [], [_holding("w1", "a", "8").obj()], []) == []
    violations = find_violations(
        [a, b], [], [_holding("w1", "a", "6").obj(), _holding("w2", "b", "3").obj()], []
    )
    assert any("cohort tree 'co' over-committed" in v for v in violations)


def test_borrowing_and_lending_limits() -> None:
    a = ClusterQueueBuilder("a").cohort("co").flavor("default", cpu="4", borrowing_limit={"cpu": "1"}).obj()
    b = ClusterQueueBuilder("b").cohort("co").flavor("default", cpu="4", lending_limit={"cpu": "1"}).obj()
    assert find_violations([a, b], [], [_holding("w", "a", "5").obj()], []) == []
    assert any(
        "ClusterQueue a over-committed" in v
        for v in find_violations([a, b], [], [_holding("w", "a", "6").obj()], [])
    )
    a_unlimited = ClusterQueueBuilder("a").cohort("co").flavor("default", cpu="4").obj()
    violations = find_violations([a_unlimited, b], [], [_holding("w", "a", "6").obj()], [])
    assert any("cohort tree" in v for v in violations)


def test_usage_in_unknown_flavor_or_queue_is_flagged() -> None:
    cq = ClusterQueueBuilder("cq").flavor("default", cpu="4").obj()
    assert find_violations([cq], [], [_holding("a", "cq", "1", flavor="spot").obj()], [])
    assert find_violations([], [], [_holding("a", "ghost", "1").obj()], [])


def test_two_reservations_for_one_owner_is_double_admission() -> None:
    cq = ClusterQueueBuilder("cq").flavor("default", cpu="4").obj()
    w1 = _holding("a", "cq", "1").owner("Job", "j", "uid-j").obj()
    w2 = _holding("b", "cq", "1").owner("Job", "j", "uid-j").obj()
    job = {"metadata": {"name": "j", "namespace": "ns", "uid": "uid-j"}}
    violations = find_violations([cq], [], [w1, w2], [job])
    assert violations == ["Job j (uid-j) has 2 workloads holding quota: ['ns/a', 'ns/b']"]


def test_reserving_workload_whose_job_is_gone_is_flagged() -> None:
    cq = ClusterQueueBuilder("cq").flavor("default", cpu="4").obj()
    wl = _holding("a", "cq", "1").owner("Job", "j", "uid-j").obj()
    assert find_violations([cq], [], [wl], []) == ["workload ns/a holds quota but its Job j is gone"]
    assert find_violations([cq], [], [wl], [{"metadata": {"uid": "uid-j"}}]) == []


def test_workloads_in_terminating_namespaces_are_ignored() -> None:
    wl = _holding("a", "ghost", "1").obj()
    assert find_violations([], [], [wl], [], terminating_namespaces=["ns"]) == []
