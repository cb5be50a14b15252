"""``KubeClient.with_spare_budget``: Events inside the controller's one QPS/burst budget, behind
everything else (Kueue's binary shares one rate limiter among all its clients)."""

from __future__ import annotations

import pytest

from pykueue.kube.backoff import TokenBucket
from pykueue.kube.client import KubeClient
from pykueue.kube.resources import CONFIG_MAPS
from tests.unit.kube.fake_transport import FakeClock, ScriptedTransport


def test_spare_tokens_leave_half_the_burst_for_everyone_else() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=4, clock=clock, sleep=clock.sleep)
    assert bucket.headroom == 2
    assert bucket.try_spare() == 0.0  # 4 -> 3
    assert bucket.try_spare() == 0.0  # 3 -> 2
    assert bucket.try_spare() == pytest.approx(0.1), "the last half of the burst is not spare"
    assert bucket.acquire() == 0.0 and bucket.acquire() == 0.0, "it is still there for acquire"
    assert bucket.acquire() == pytest.approx(0.1)


def test_nothing_is_spare_while_a_normal_caller_waits() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=2, clock=clock, sleep=clock.sleep)
    for _ in range(5):
        bucket.reserve()  # 2 tokens, then three callers in debt: -3
    # Spare needs headroom (1) + 1 token: 5 tokens away, half a second at 10/s.
    assert bucket.try_spare() == pytest.approx(0.5)
    clock.now += 0.3  # the debt is being paid: still nothing spare
    assert bucket.try_spare() == pytest.approx(0.2)
    clock.now += 0.2
    assert bucket.try_spare() == 0.0


def test_acquire_spare_polls_a_busy_bucket_and_counts_its_wait() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=1, burst=100, clock=clock, sleep=clock.sleep)
    for _ in range(100):
        bucket.reserve()  # the burst spent: 50 more tokens until anything is spare
    waited = bucket.acquire_spare(max_poll=20.0)
    assert clock.slept == [20.0, 20.0, pytest.approx(11.0)], "re-checked at least every max_poll"
    assert waited == pytest.approx(51.0)


def test_burst_of_one_has_no_headroom_and_no_limit_means_no_wait() -> None:
    clock = FakeClock()
    single = TokenBucket(qps=1, burst=1, clock=clock, sleep=clock.sleep)
    assert single.try_spare() == 0.0
    assert single.try_spare() == pytest.approx(1.0)
    unlimited = TokenBucket(qps=0, burst=1)
    assert all(unlimited.acquire_spare() == 0.0 for _ in range(100))


def test_the_spare_client_shares_the_main_clients_budget_and_transport() -> None:
    transport = ScriptedTransport([{"metadata": {"name": str(i)}} for i in range(5)])
    clock = FakeClock()
    main = KubeClient(transport, qps=1.0, burst=2, sleep=clock.sleep, clock=clock)
    events = main.with_spare_budget()

    events.get(CONFIG_MAPS, "a", "default")  # 2 tokens, headroom 1: one is spare
    main.get(CONFIG_MAPS, "b", "default")  # the main client takes the headroom at once
    assert clock.slept == []
    main.get(CONFIG_MAPS, "c", "default")  # the Event's token came out of the same bucket
    assert clock.slept == [pytest.approx(1.0)]
    # The bucket is at 0 after c's wait: a spare token needs the headroom back plus one, 2 s.
    events.get(CONFIG_MAPS, "d", "default")
    assert clock.slept[1:] == [pytest.approx(1.0), pytest.approx(1.0)]
    assert len(transport.sent) == 4, "both clients send through the one transport"


def test_speaking_another_version_keeps_the_budget() -> None:
    transport = ScriptedTransport([{"metadata": {"name": str(i)}} for i in range(2)])
    clock = FakeClock()
    main = KubeClient(transport, qps=1.0, burst=1, sleep=clock.sleep, clock=clock)
    old = main.speaking("v1beta1")
    main.get(CONFIG_MAPS, "a", "default")
    old.get(CONFIG_MAPS, "b", "default")
    assert clock.slept == [pytest.approx(1.0)], "one bucket for both"
