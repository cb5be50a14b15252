"""``KubeClient.with_own_rate_limit``: same connections, a separate QPS/burst bucket."""

from __future__ import annotations

from pykueue.kube.client import KubeClient
from pykueue.kube.resources import CONFIG_MAPS
from tests.unit.kube.fake_transport import ScriptedTransport


def test_the_clone_spends_its_own_tokens_on_the_same_transport() -> None:
    transport = ScriptedTransport([{"metadata": {"name": str(i)}} for i in range(4)])
    waits: list[float] = []
    main = KubeClient(transport, qps=1.0, burst=1, sleep=waits.append)
    events = main.with_own_rate_limit()

    main.get(CONFIG_MAPS, "a", "default")  # the main bucket's only token
    events.get(CONFIG_MAPS, "b", "default")  # the clone's own token: no wait
    assert waits == []
    main.get(CONFIG_MAPS, "c", "default")  # the main bucket is empty: about a second
    assert len(waits) == 1 and 0.5 < waits[0] <= 1.0
    events.get(CONFIG_MAPS, "d", "default")  # and so is the clone's, separately
    assert len(waits) == 2 and 0.5 < waits[1] <= 1.0
    assert len(transport.sent) == 4, "both clients send through the one transport"
