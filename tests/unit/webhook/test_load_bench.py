"""The webhook load benchmark's own arithmetic: percentiles, the server histogram split, medians.

The benchmark's figures go into docs/performance.md, so the parts that turn samples into figures
are tested like any other code (the end-to-end smoke run is tests/unit/test_bench_smoke.py).
"""

from __future__ import annotations

import http.client
import json
import math
import socket
import time

from bench.webhook_load import (
    VALIDATE_PATH,
    ConnectionPool,
    Result,
    ServerShare,
    histogram_counts,
    percentile,
    review_body,
    server_share,
    summarise,
)

EXPOSITION = f"""\
# HELP pykueue_webhook_request_duration_seconds Time to answer an admission request.
# TYPE pykueue_webhook_request_duration_seconds histogram
pykueue_webhook_request_duration_seconds_bucket{{le="0.005",outcome="allowed",path="{VALIDATE_PATH}"}} 90.0
pykueue_webhook_request_duration_seconds_bucket{{le="0.01",outcome="allowed",path="{VALIDATE_PATH}"}} 97.0
pykueue_webhook_request_duration_seconds_bucket{{le="+Inf",outcome="allowed",path="{VALIDATE_PATH}"}} 100.0
pykueue_webhook_request_duration_seconds_bucket{{le="0.005",outcome="denied",path="{VALIDATE_PATH}"}} 4.0
pykueue_webhook_request_duration_seconds_bucket{{le="0.01",outcome="denied",path="{VALIDATE_PATH}"}} 5.0
pykueue_webhook_request_duration_seconds_bucket{{le="+Inf",outcome="denied",path="{VALIDATE_PATH}"}} 5.0
pykueue_webhook_request_duration_seconds_bucket{{le="0.005",outcome="patched",path="/mutate-x"}} 7.0
pykueue_webhook_request_duration_seconds_bucket{{le="+Inf",outcome="patched",path="/mutate-x"}} 7.0
"""


def test_percentile_is_nearest_rank_and_nan_when_empty() -> None:
    samples = [float(i) for i in range(1, 101)]
    assert percentile(samples, 0.50) == 51.0
    assert percentile(samples, 0.99) == 100.0
    assert percentile([3.0], 0.99) == 3.0
    assert math.isnan(percentile([], 0.5))


def test_histogram_counts_sum_outcomes_of_one_path_only() -> None:
    counts = histogram_counts(EXPOSITION, VALIDATE_PATH)
    assert counts == {0.005: 94.0, 0.01: 102.0, math.inf: 105.0}


def test_server_share_is_the_difference_between_two_scrapes() -> None:
    before = {0.005: 94.0, 0.01: 102.0, math.inf: 105.0}
    after = {0.005: 194.0, 0.01: 300.0, math.inf: 305.0}
    share = server_share(before, after)
    assert share == ServerShare(requests=200, within_5ms=100, within_10ms=198)
    assert "server<=10ms= 99.00%" in share.text()


def test_summary_takes_medians_over_repeats() -> None:
    runs = [
        Result("validate", 3, 0, 1.0, [0.001, 0.002, 0.010]),
        Result("validate", 3, 1, 1.0, [0.001, 0.002, 0.030]),
        Result("validate", 6, 0, 1.0, [0.001, 0.002, 0.003, 0.004, 0.005, 0.020]),
    ]
    for run in runs:
        run.server = ServerShare(requests=3, within_5ms=3, within_10ms=2)
    (row,) = summarise({"new": {"validate": runs}})
    assert row["p99_ms"] == [10.0, 30.0, 20.0]
    assert row["median_p99_ms"] == 20.0
    assert row["median_rate_per_s"] == 3.0
    assert row["errors"] == 1
    assert row["server_within_10ms_pct"] == round(6 / 9 * 100, 2)


def test_each_review_has_its_own_uid() -> None:
    first, second = json.loads(review_body()), json.loads(review_body())
    assert first["request"]["uid"] != second["request"]["uid"]
    assert first["request"]["object"] == second["request"]["object"]



def _idle_pool_connection(listener: socket.socket) -> tuple[ConnectionPool, http.client.HTTPConnection, socket.socket]:
    """A pool holding one idle plain-HTTP connection to ``listener``, and the server's end of it."""
    client = http.client.HTTPConnection("127.0.0.1", listener.getsockname()[1], timeout=5)
    client.connect()
    server_end, _ = listener.accept()
    pool = ConnectionPool(0, b"")
    pool._idle.append(client)  # type: ignore[arg-type]
    return pool, client, server_end


def test_pool_reuses_a_live_idle_connection() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        pool, client, server_end = _idle_pool_connection(listener)
        try:
            assert pool._take_idle() is client
        finally:
            client.close()
            server_end.close()


def test_pool_drops_a_connection_the_server_closed_while_idle() -> None:
    """Sending on a keep-alive connection the server already closed is an error the apiserver
    never makes (Go's transport notices the close); the pool must not make it either."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        pool, client, server_end = _idle_pool_connection(listener)
        server_end.close()
        deadline = time.monotonic() + 5
        while not ConnectionPool._closed_by_server(client) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pool._take_idle() is None
        assert client.sock is None  # closed, not handed out
