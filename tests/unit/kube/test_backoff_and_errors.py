"""Token bucket pacing, jittered backoff, and the mapping of HTTP answers to typed errors."""

from __future__ import annotations

import random

import pytest

from pykueue.kube.backoff import Backoff, TokenBucket
from pykueue.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
    Unauthorized,
    error_from_response,
    error_from_status,
)
from tests.unit.kube.fake_transport import FakeClock


def test_token_bucket_allows_burst_then_paces_at_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock, sleep=clock.sleep)
    for _ in range(3):
        assert bucket.acquire() == 0
    assert bucket.acquire() == pytest.approx(0.1)
    assert bucket.acquire() == pytest.approx(0.1)
    clock.now += 10  # idle: tokens refill, but never beyond the burst
    assert [bucket.acquire() for _ in range(4)][-1] == pytest.approx(0.1)


def test_token_bucket_disabled_with_zero_qps() -> None:
    bucket = TokenBucket(qps=0, burst=1)
    assert all(bucket.acquire() == 0 for _ in range(100))


def test_backoff_grows_is_capped_jittered_and_resets_after_quiet_period() -> None:
    clock = FakeClock()
    backoff = Backoff(0.8, 30.0, 2.0, reset_after=120, clock=clock, rng=random.Random(7))
    delays = [backoff.next_delay() for _ in range(10)]
    steps = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30, 30, 30]
    for delay, step in zip(delays, steps, strict=True):
        assert step / 2 <= delay <= step
    clock.now += 121
    assert backoff.next_delay() <= 0.8, "a failure after two quiet minutes starts over"


@pytest.mark.parametrize(
    ("status", "reason", "cls"),
    [
        (404, "NotFound", NotFound),
        (409, "Conflict", Conflict),
        (409, "AlreadyExists", AlreadyExists),
        (410, "Gone", Gone),
        (500, "Expired", Gone),
        (403, "Forbidden", Forbidden),
        (401, "Unauthorized", Unauthorized),
        (422, "Invalid", Invalid),
        (429, "TooManyRequests", TooManyRequests),
        (503, "ServiceUnavailable", ServerError),
        (400, "BadRequest", ApiError),
    ],
)
def test_status_codes_map_to_typed_errors(status: int, reason: str, cls: type) -> None:
    error = error_from_status({"code": status, "reason": reason, "message": "m"})
    assert type(error) is cls
    assert error.status == status and error.message == "m"


def test_error_keeps_causes_and_retry_after() -> None:
    body = (
        b'{"kind":"Status","code":422,"reason":"Invalid","message":"bad",'
        b'"details":{"causes":[{"field":"spec.x","message":"Required value"}]}}'
    )
    error = error_from_response(422, body, None)
    assert isinstance(error, Invalid)
    assert error.causes == [{"field": "spec.x", "message": "Required value"}]
    throttled = error_from_response(429, b"", "7")
    assert isinstance(throttled, TooManyRequests) and throttled.retry_after == 7.0


def test_non_json_error_body_is_kept_as_the_message() -> None:
    error = error_from_response(502, b"<html>bad gateway</html>", "soon")
    assert isinstance(error, ServerError)
    assert "bad gateway" in error.message
    assert error.retry_after is None, "an unparseable Retry-After is ignored, not fatal"
