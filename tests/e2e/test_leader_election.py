"""Two pykueue-controller processes against the real apiserver: exactly one leads, a standby
takes over after the leader is killed (within the lease timing), and SIGTERM hands over at once."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.main import build_parser, election_config, load_configuration
from pykueue.kube.client import KubeClient
from pykueue.kube.resources import LEASES
from tests.e2e.helpers.wait import wait_for

# The Lease and timings the processes use, taken from the same code path they run (default
# Configuration, no --config).
_ELECTION = election_config(load_configuration(None), build_parser().parse_args([]), "probe")
assert _ELECTION is not None
LEASE_NAME = _ELECTION.lease_name
LEASE_DURATION = _ELECTION.lease_duration
RETRY_PERIOD = _ELECTION.retry_period
# The standby counts the lease duration from a read that preceded the leader's last renewal, so
# it leads within the lease duration of the kill; the second is slack for request latency and
# this test's 0.2 s polling.
TAKEOVER_BOUND = LEASE_DURATION + 1.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ControllerProcess:
    identity: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, ""

    def leader_metric(self) -> float | None:
        """``leader_election_master_status`` as this process reports it (None if unreachable)."""
        try:
            _, body = self.get("/metrics")
        except OSError:
            return None
        for line in body.splitlines():
            if line.startswith("leader_election_master_status{"):
                return float(line.rsplit(" ", 1)[1])
        return None

    def ready(self) -> bool:
        try:
            return self.get("/readyz")[0] == 200
        except OSError:
            return False


@pytest.fixture
def controllers(cluster: Any, namespace: str, tmp_path: Path) -> Iterator[Any]:
    started: list[ControllerProcess] = []

    def start(identity: str) -> ControllerProcess:
        port = free_port()
        log_path = tmp_path / f"{identity}.log"
        command = [
            sys.executable,
            "-m",
            "controller.main",
            "--kubeconfig",
            cluster.kubeconfig,
            "--namespace",
            namespace,
            "--leader-elect",
            "--identity",
            identity,
            "--health-addr",
            f"127.0.0.1:{port}",
            "--metrics-addr",
            f"127.0.0.1:{port}",
        ]
        with log_path.open("wb") as log_file:
            process = subprocess.Popen(
                command, stdout=log_file, stderr=subprocess.STDOUT, env=os.environ.copy()
            )
        handle = ControllerProcess(identity, port, process, log_path)
        started.append(handle)
        return handle

    yield start
    for handle in started:
        if handle.process.poll() is None:
            handle.process.kill()
            handle.process.wait(10)


@pytest.fixture
def client(cluster: Any) -> Iterator[KubeClient]:
    kube_client = KubeClient.from_config(cluster.kubeconfig)
    try:
        yield kube_client
    finally:
        kube_client.close()


def holder(client: KubeClient, namespace: str) -> str:
    lease = client.get(LEASES, LEASE_NAME, namespace)
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


def renew_time(client: KubeClient, namespace: str) -> str:
    lease = client.get(LEASES, LEASE_NAME, namespace)
    return str(((lease or {}).get("spec") or {}).get("renewTime") or "")


def exactly_one_leader(
    processes: list[ControllerProcess], client: KubeClient, namespace: str
) -> ControllerProcess | None:
    """The single leader, if the Lease and both processes' own metrics agree on it."""
    current = holder(client, namespace)
    statuses = {p.identity: p.leader_metric() for p in processes}
    leaders = [p for p in processes if statuses[p.identity] == 1.0]
    followers = [p for p in processes if statuses[p.identity] == 0.0]
    if len(leaders) == 1 and len(followers) == len(processes) - 1 and leaders[0].identity == current:
        return leaders[0]
    return None


def test_exactly_one_leads_and_standby_takes_over_after_kill_9(
    controllers, client: KubeClient, namespace: str
) -> None:
    a, b = controllers("controller-a"), controllers("controller-b")
    wait_for(lambda: a.ready() and b.ready(), timeout=60, message="both controllers ready (informers synced)")
    leader = wait_for(
        lambda: exactly_one_leader([a, b], client, namespace), timeout=30, message="exactly one leader"
    )
    standby = b if leader is a else a
    # Stays that way across renewals: the leader keeps renewing, the standby keeps waiting.
    for _ in range(2):
        renewed = renew_time(client, namespace)
        wait_for(
            lambda renewed=renewed: (
                renew_time(client, namespace) != renewed
                and exactly_one_leader([a, b], client, namespace) is leader
            ),
            timeout=RETRY_PERIOD * 3,
            message="the same leader renewed the lease",
        )

    leader.process.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    leader.process.wait(10)
    wait_for(
        lambda: holder(client, namespace) == standby.identity,
        timeout=TAKEOVER_BOUND + 5,
        message=f"{standby.identity} took over the lease",
    )
    takeover = time.monotonic() - killed_at
    assert takeover <= TAKEOVER_BOUND, f"takeover took {takeover:.1f}s"
    wait_for(lambda: standby.leader_metric() == 1.0, timeout=5, message="new leader reports leading")
    lease = client.get(LEASES, LEASE_NAME, namespace)
    assert lease is not None and lease["spec"]["leaseTransitions"] >= 1
    assert lease["spec"]["leaseDurationSeconds"] == int(LEASE_DURATION)
    print(f"takeover after kill -9: {takeover:.1f}s")


def test_sigterm_releases_the_lease_for_an_immediate_handover(
    controllers, client: KubeClient, namespace: str
) -> None:
    a, b = controllers("controller-a"), controllers("controller-b")
    leader = wait_for(
        lambda: exactly_one_leader([a, b], client, namespace), timeout=60, message="exactly one leader"
    )
    standby = b if leader is a else a
    leader.process.send_signal(signal.SIGTERM)
    stopped_at = time.monotonic()
    assert leader.process.wait(20) == 0, leader.log_path.read_text()[-2000:]
    wait_for(
        lambda: holder(client, namespace) == standby.identity,
        timeout=10,
        message=f"{standby.identity} took over the released lease",
    )
    handover = time.monotonic() - stopped_at
    assert handover < LEASE_DURATION, f"released lease still took {handover:.1f}s"
    log_lines = leader.log_path.read_text()
    assert '"msg":"released the lease"' in log_lines
