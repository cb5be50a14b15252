"""The check-state table (Kueue's ``syncCheckStates`` cases in ``controller_test.go``), on a fake clock."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controller.provisioning.checkstate import backoff_seconds, decide_check, next_attempt
from controller.provisioning.config import ProvisioningConfig, RetryStrategy, parse_config
from tests.builders import ProvisioningRequestBuilder, ProvisioningRequestConfigBuilder, WorkloadBuilder

NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
STAMP = "2026-01-01T00:10:00Z"


def _config(limit: int | None = None) -> ProvisioningConfig:
    config = parse_config(ProvisioningRequestConfigBuilder("prc").retry(limit=limit).obj())
    assert config is not None
    return config


def _wl(admitted: bool = False) -> dict[str, Any]:
    builder = WorkloadBuilder("wl", "ns").podset(count=2, cpu="1").reserved("cq")
    return (builder.admitted() if admitted else builder).obj()


def _request(*conditions: tuple[str, str, str], attempt: int = 1) -> dict[str, Any]:
    builder = ProvisioningRequestBuilder(f"wl-check-{attempt}", "ns").pod_set(f"ppt-wl-check-{attempt}-main", 2)
    for type_, status, message in conditions:
        builder.condition(type_, status == "True", type_, message)
    return builder.obj()


def _pending(**extra: Any) -> dict[str, Any]:
    return {"name": "check", "state": "Pending", "lastTransitionTime": "2026-01-01T00:00:00Z", "message": "", **extra}


def _decide(state: dict[str, Any], request: dict[str, Any] | None, *, attempt: int = 1, admitted: bool = False,
            config: ProvisioningConfig | None = None, needed: bool = True) -> Any:
    return decide_check(
        state, config=config or _config(), needed=needed, wl=_wl(admitted), request=request, attempt=attempt, now=NOW
    )


def test_backoff_doubles_from_the_base_up_to_the_cap() -> None:
    retry = RetryStrategy()
    assert [backoff_seconds(retry, n) for n in range(7)] == [60, 120, 240, 480, 960, 1800, 1800]
    assert backoff_seconds(RetryStrategy(base_seconds=1, max_seconds=3), 5) == 3


def test_backoff_jitter_is_kueues_hundredth_of_a_percent_in_whole_seconds() -> None:
    # Below 10 000 s the largest jitter (0.01 %) stays under a second and is truncated away ...
    assert [backoff_seconds(RetryStrategy(), n, rand=lambda: 0.999999) for n in range(7)] == [
        60, 120, 240, 480, 960, 1800, 1800,
    ]
    # ... above it, it adds up to 0.01 % of the wait, the capped one included.
    long = RetryStrategy(base_seconds=20000, max_seconds=40000)
    assert backoff_seconds(long, 0, rand=lambda: 0.0) == 20000
    assert backoff_seconds(long, 0, rand=lambda: 0.5) == 20001
    assert backoff_seconds(long, 0, rand=lambda: 0.999999) == 20001
    assert backoff_seconds(long, 3, rand=lambda: 0.999999) == 40003


def test_inactive_check_is_pending_with_kueues_message() -> None:
    decision = decide_check(_pending(), config=None, needed=True, wl=_wl(), request=None, attempt=0, now=NOW)
    assert decision.state["state"] == "Pending" and decision.state["message"] == "the check is not active"


def test_no_pod_set_of_interest_is_ready_at_once() -> None:
    decision = _decide(_pending(), None, needed=False)
    assert decision.state["state"] == "Ready"
    assert decision.state["message"] == "the provisioning request is not needed"
    assert decision.state["lastTransitionTime"] == STAMP and "podSetUpdates" not in decision.state


def test_no_request_yet_leaves_the_state_and_creates_attempt_one() -> None:
    decision = _decide(_pending(), None)
    assert decision.state == _pending()
    assert next_attempt(decision.state, None, 0, admitted=False) == 1
    assert next_attempt(_pending(retryCount=2), None, 0, admitted=False) == 3


def test_eta_is_copied_and_reported_once_per_new_message() -> None:
    request = _request(("Accepted", "True", ""), ("Provisioned", "False", "ETA 10:30"))
    decision = _decide(_pending(), request)
    assert decision.state["state"] == "Pending" and decision.state["message"] == "ETA 10:30"
    assert decision.eta_message == "ETA 10:30"
    again = _decide(decision.state, request)
    assert again.eta_message == "" and again.state == decision.state
    later = _decide(decision.state, _request(("Provisioned", "False", "ETA 11:00")))
    assert later.eta_message == "ETA 11:00"


def test_provisioned_makes_the_check_ready_with_pod_set_updates() -> None:
    decision = _decide(_pending(), _request(("Provisioned", "True", "capacity is ready")))
    assert decision.state["state"] == "Ready" and decision.state["message"] == "capacity is ready"
    assert decision.state["podSetUpdates"][0]["annotations"]["autoscaling.x-k8s.io/consume-provisioning-request"] == (
        "wl-check-1"
    )
    assert next_attempt(decision.state, _request(("Provisioned", "True", "")), 1, admitted=False) is None


def test_failure_asks_for_a_retry_with_backoff_once_per_attempt() -> None:
    failed = _request(("Failed", "True", "out of stock"))
    decision = _decide(_pending(), failed)
    assert decision.state["state"] == "Retry"
    assert decision.state["message"] == "Retrying after failure: out of stock"
    assert decision.state["requeueAfterSeconds"] == 60 and decision.state["lastTransitionTime"] == STAMP
    # The workload controller evicted it and reset the check (retryCount 1): nothing to re-decide,
    # and the next attempt is 2.
    reset = _pending(retryCount=1)
    assert _decide(reset, failed).state == reset
    assert next_attempt(reset, failed, 1, admitted=False) == 2
    # Attempt 2 fails: the backoff doubles.
    second = _decide(reset, _request(("Failed", "True", "still"), attempt=2), attempt=2)
    assert second.state["state"] == "Retry" and second.state["requeueAfterSeconds"] == 120


def test_failure_past_the_limit_rejects_naming_the_request() -> None:
    decision = _decide(_pending(retryCount=3), _request(("Failed", "True", "no capacity"), attempt=4), attempt=4)
    assert decision.state["state"] == "Rejected"
    assert decision.state["message"] == "ProvisioningRequest wl-check-4 failed: no capacity"
    no_retries = _decide(_pending(), _request(("Failed", "True", "no")), config=_config(limit=0))
    assert no_retries.state["state"] == "Rejected"


@pytest.mark.parametrize(("admitted", "expected"), [(False, "Retry"), (True, "Ready")])
def test_booking_expired_retries_only_before_admission(admitted: bool, expected: str) -> None:
    ready = {**_pending(), "state": "Ready", "message": "ok"}
    state = ready if admitted else _pending()
    request = _request(("Provisioned", "True", "ok"), ("BookingExpired", "True", "booking expired"))
    decision = _decide(state, request, admitted=admitted)
    assert decision.state["state"] == expected
    if not admitted:
        assert decision.state["message"] == "Retrying after booking expired: booking expired"


def test_capacity_revoked_rejects_a_running_workload_but_not_a_finished_one() -> None:
    ready = {**_pending(), "state": "Ready"}
    request = _request(("Provisioned", "True", "ok"), ("CapacityRevoked", "True", "nodes reclaimed"))
    decision = _decide(ready, request, admitted=True)
    assert decision.state["state"] == "Rejected" and decision.state["message"] == "nodes reclaimed"
    finished = WorkloadBuilder("wl", "ns").podset(cpu="1").reserved("cq").admitted().finished().obj()
    kept = decide_check(ready, config=_config(), needed=True, wl=finished, request=request, attempt=1, now=NOW)
    assert kept.state == ready


def test_a_request_without_conditions_keeps_the_check_pending() -> None:
    decision = _decide(_pending(message="old"), _request())
    assert decision.state["state"] == "Pending" and decision.state["message"] == "old"
