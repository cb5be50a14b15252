"""How many admission writes the scheduler sends at once: sized from the client's QPS, so that
an unthrottled client is bounded by the apiserver, not by a fixed thread count."""

from __future__ import annotations

from typing import Any

from controller.core.scheduler import (
    KINDS,
    MAX_WRITE_THREADS,
    MAX_WRITES_IN_FLIGHT,
    WRITE_THREADS,
    SchedulerLoop,
    write_threads_for_qps,
)
from controller.core.setup import admission_write_threads
from controller.runtime.events import RecordingEvents
from pykueue.kube.client import KubeClient
from tests.unit.core.fakes import FakeApi, FakeInformer


def test_up_to_kueues_qps_the_threads_stay_at_the_default() -> None:
    assert write_threads_for_qps(20) == WRITE_THREADS == 16
    assert write_threads_for_qps(50) == WRITE_THREADS


def test_above_it_the_threads_grow_with_the_budget() -> None:
    # 100 writes/s at 0.25 s each need 25 in flight.
    assert write_threads_for_qps(100) == 25
    assert write_threads_for_qps(150) == 38


def test_an_unlimited_client_gets_the_most() -> None:
    assert write_threads_for_qps(100_000) == MAX_WRITE_THREADS == 48
    assert write_threads_for_qps(0) == MAX_WRITE_THREADS


def test_an_unknown_rate_keeps_the_default() -> None:
    assert write_threads_for_qps(None) == WRITE_THREADS


def _loop(**kwargs: Any) -> SchedulerLoop:
    informers = {kind: FakeInformer() for kind in KINDS}
    return SchedulerLoop(FakeApi(informers), informers, RecordingEvents(), **kwargs)


def test_the_in_flight_cap_is_twice_the_threads_unless_given() -> None:
    assert _loop().writes.cap == MAX_WRITES_IN_FLIGHT == 2 * WRITE_THREADS
    assert _loop(write_threads=48).writes.cap == 96
    assert _loop(write_threads=48, max_in_flight=10).writes.cap == 10


def test_the_controller_sizes_the_threads_from_its_clients_rate() -> None:
    transport: Any = object()  # never called: only the rate limit is read
    assert admission_write_threads(KubeClient(transport, qps=50, burst=100)) == WRITE_THREADS
    assert admission_write_threads(KubeClient(transport, qps=100_000, burst=200_000)) == MAX_WRITE_THREADS
    assert admission_write_threads(FakeApi({})) == WRITE_THREADS  # a fake that has no rate limit
