"""Admission-check state transitions: which checks apply, initial Pending, verdicts, reset."""

from __future__ import annotations

from datetime import UTC, datetime

from controller.workload import admissionchecks as checks
from tests.builders import ClusterQueueBuilder, WorkloadBuilder

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def _admission(*flavors: str) -> dict:
    return {
        "clusterQueue": "cq",
        "podSetAssignments": [{"name": "main", "flavors": {"cpu": f}} for f in flavors],
    }


def test_required_checks_honour_on_flavors_and_plain_list() -> None:
    cq = (
        ClusterQueueBuilder("cq")
        .admission_checks("always")
        .admission_check_strategy("spot-only", "spot")
        .admission_check_strategy("everywhere")
        .obj()
    )
    assert checks.required_checks(cq["spec"], _admission("on-demand")) == ["always", "everywhere"]
    assert checks.required_checks(cq["spec"], _admission("spot")) == ["always", "everywhere", "spot-only"]


def test_on_flavors_entry_for_a_flavor_the_queue_lacks_never_applies() -> None:
    cq = (
        ClusterQueueBuilder("cq")
        .admission_check_strategy("ghost-only", "ghost")
        .admission_check_strategy("spot-and-ghost", "spot", "ghost")
        .obj()
    )
    assert checks.required_checks(cq["spec"], _admission("on-demand")) == []
    assert checks.required_checks(cq["spec"], _admission("spot")) == ["spot-and-ghost"]


def test_sync_adds_pending_entries_keeps_states_and_drops_stale() -> None:
    existing = [
        {"name": "a", "state": "Ready", "lastTransitionTime": "2026-01-01T00:00:00Z", "message": "ok"},
        {"name": "gone", "state": "Pending", "lastTransitionTime": "2026-01-01T00:00:00Z", "message": ""},
    ]
    synced = checks.sync_check_states(existing, ["a", "b"], NOW)
    assert synced == [
        existing[0],
        {"name": "b", "state": "Pending", "lastTransitionTime": "2026-01-01T12:00:00Z", "message": ""},
    ]


def test_sync_returns_none_when_nothing_changes() -> None:
    existing = [{"name": "a", "state": "Retry", "lastTransitionTime": "2026-01-01T00:00:00Z", "message": ""}]
    assert checks.sync_check_states(existing, ["a"], NOW) is None
    assert checks.sync_check_states(None, [], NOW) is None


def test_sync_drops_malformed_entries() -> None:
    assert checks.sync_check_states(["junk", {"state": "Ready"}], [], NOW) == []


def test_verdict_priority_rejected_over_retry_over_pending() -> None:
    wl = (
        WorkloadBuilder("w")
        .check("a", "Ready")
        .check("b", "Retry", message="later")
        .check("c", "Rejected")
        .obj()
    )
    states = wl["status"]["admissionChecks"]
    assert checks.evaluate(states, ["a", "b", "c"]).verdict is checks.Verdict.REJECTED
    retry = checks.evaluate(states, ["a", "b"])
    assert retry.verdict is checks.Verdict.RETRY and retry.names == ("b",) and "later" in retry.message
    assert checks.evaluate(states, ["a"]).verdict is checks.Verdict.READY
    assert checks.evaluate(states, ["a", "missing"]).verdict is checks.Verdict.PENDING


def test_no_required_checks_is_ready() -> None:
    assert checks.evaluate([], []).verdict is checks.Verdict.READY


def test_retry_not_before_is_latest_transition_plus_delay() -> None:
    wl = (
        WorkloadBuilder("w")
        .check("a", "Retry", at="2026-01-01T12:00:00Z", requeue_after=30)
        .check("b", "Retry", at="2026-01-01T12:00:10Z", requeue_after=60)
        .check("c", "Retry", at="2026-01-01T12:00:00Z")
        .check("d", "Ready", at="2026-01-01T12:00:00Z", requeue_after=999)
        .obj()
    )
    assert checks.retry_not_before(wl["status"]["admissionChecks"]) == datetime(
        2026, 1, 1, 12, 1, 10, tzinfo=UTC
    )
    assert checks.retry_not_before([{"name": "x", "state": "Retry"}]) is None


def test_reset_after_eviction_counts_retries_and_keeps_pending() -> None:
    wl = (
        WorkloadBuilder("w")
        .check("p", "Pending")
        .check("r", "Retry", retry_count=2)
        .check("ok", "Ready")
        .obj()
    )
    reset = checks.reset_after_eviction(wl["status"]["admissionChecks"], NOW)
    assert reset is not None
    by_name = {s["name"]: s for s in reset}
    assert by_name["p"] == wl["status"]["admissionChecks"][0]
    assert by_name["r"]["state"] == "Pending" and by_name["r"]["retryCount"] == 3
    assert by_name["r"]["message"] == "Reset to Pending after eviction. Previously: Retry"
    assert by_name["ok"]["state"] == "Pending" and "retryCount" not in by_name["ok"]
    assert by_name["ok"]["lastTransitionTime"] == "2026-01-01T12:00:00Z"


def test_reset_is_none_when_all_pending() -> None:
    wl = WorkloadBuilder("w").check("p", "Pending").obj()
    assert checks.reset_after_eviction(wl["status"]["admissionChecks"], NOW) is None
