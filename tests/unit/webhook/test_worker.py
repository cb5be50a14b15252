"""The lingering gthread worker: when a request thread keeps its connection, and that it never
keeps the last free thread (unit level on a socket pair, then through a real gunicorn over TLS)."""

from __future__ import annotations

import http.client
import io
import json
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pykueue.tls.certs import generate_bundle
from tests.builders import SeedClusterQueueBuilder
from tests.unit.webhook.gunicorn_process import stop_gunicorn
from tests.unit.webhook.reviews import review
from webhook.registry import kueue_path
from webhook.worker import LingeringThreadWorker, lingering_worker

REPO = Path(__file__).resolve().parents[3]


# --- next_request_arrived on a socket pair --------------------------------------------------------

def _worker(threads: int, linger: float) -> LingeringThreadWorker:
    """A worker object without a gunicorn arbiter: only what ``next_request_arrived`` reads."""
    worker = lingering_worker(linger).__new__(lingering_worker(linger))
    worker.cfg = SimpleNamespace(threads=threads)  # type: ignore[assignment]
    worker._lingering = 0
    worker._waiting = 0
    worker._linger_lock = threading.Lock()
    return worker


def _conn(sock: socket.socket, read_ahead: bytes = b"") -> Any:
    return SimpleNamespace(sock=sock, parser=SimpleNamespace(unreader=SimpleNamespace(buf=io.BytesIO(read_ahead))))


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    server, client = socket.socketpair()
    with server, client:
        yield server, client


def test_a_request_already_waiting_is_taken_at_once(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    client.sendall(b"POST / HTTP/1.1\r\n")
    started = time.monotonic()
    assert _worker(threads=4, linger=5.0).next_request_arrived(_conn(server))
    assert time.monotonic() - started < 1.0


def test_a_request_arriving_within_the_linger_wakes_the_thread(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    timer = threading.Timer(0.05, client.sendall, args=(b"POST / HTTP/1.1\r\n",))
    timer.start()
    try:
        assert _worker(threads=4, linger=5.0).next_request_arrived(_conn(server))
    finally:
        timer.cancel()


def test_an_idle_connection_goes_back_to_the_poller_after_the_linger(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    server, _client = pair
    worker = _worker(threads=4, linger=0.05)
    started = time.monotonic()
    assert not worker.next_request_arrived(_conn(server))
    assert time.monotonic() - started >= 0.04
    assert worker._lingering == 0, "the linger slot was not given back"


def test_a_peer_closing_counts_as_arrived_so_gunicorn_closes_the_connection(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    server, client = pair
    client.close()
    assert _worker(threads=4, linger=5.0).next_request_arrived(_conn(server))


def test_read_ahead_bytes_count_without_waiting(pair: tuple[socket.socket, socket.socket]) -> None:
    server, _client = pair
    worker = _worker(threads=1, linger=5.0)  # no slot to linger in: only the read-ahead can answer
    assert worker.next_request_arrived(_conn(server, read_ahead=b"POST / HTTP/1.1\r\n"))


def test_the_last_free_thread_never_lingers(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    client.sendall(b"POST / HTTP/1.1\r\n")  # even with a request waiting: the poller must get it
    assert not _worker(threads=1, linger=5.0).next_request_arrived(_conn(server))
    worker = _worker(threads=3, linger=5.0)
    worker._lingering = 2
    assert not worker.next_request_arrived(_conn(server))


def test_a_thread_does_not_jump_requests_waiting_for_a_thread(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    client.sendall(b"POST / HTTP/1.1\r\n")
    worker = _worker(threads=4, linger=5.0)
    worker._waiting = 1  # the poller dispatched a request on another connection; no thread has it yet
    assert not worker.next_request_arrived(_conn(server)), "served its own connection ahead of the queue"
    # Bytes already read cannot go back to the poller (it would never see them): served here.
    assert worker.next_request_arrived(_conn(server, read_ahead=b"POST / HTTP/1.1\r\n"))


def test_a_request_dispatched_during_the_linger_is_not_jumped(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    worker = _worker(threads=4, linger=5.0)

    def dispatch_then_send() -> None:
        worker._waiting = 1
        client.sendall(b"POST / HTTP/1.1\r\n")

    timer = threading.Timer(0.05, dispatch_then_send)
    timer.start()
    try:
        assert not worker.next_request_arrived(_conn(server))
    finally:
        timer.cancel()


def test_zero_linger_is_stock_gthread(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    client.sendall(b"POST / HTTP/1.1\r\n")
    assert not _worker(threads=4, linger=0.0).next_request_arrived(_conn(server))


# --- through a real gunicorn ----------------------------------------------------------------------

@dataclass
class Served:
    port: int
    ca: bytes
    process: subprocess.Popen[bytes]
    log: Path

    def connect(self) -> http.client.HTTPSConnection:
        context = ssl.create_default_context(cadata=self.ca.decode())
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=context, timeout=20)
        connection.connect()
        return connection


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(tmp_path: Path, *flags: str) -> Served:
    bundle = generate_bundle(dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    (tmp_path / "tls.crt").write_bytes(bundle.cert)
    (tmp_path / "tls.key").write_bytes(bundle.key)
    port = _free_port()
    log = tmp_path / "log"
    process = subprocess.Popen(
        [sys.executable, "-m", "webhook.main", "--cert-management", "external", "--cert-dir", str(tmp_path),
         "--bind", "127.0.0.1", "--port", str(port), "--log-format", "text",
         "--kubeconfig", str(tmp_path / "no-kubeconfig"), *flags],
        stdout=subprocess.DEVNULL, stderr=log.open("wb"), start_new_session=True, cwd=REPO,
    )
    served = Served(port, bundle.ca_cert, process, log)
    deadline = time.monotonic() + 30
    while True:
        try:
            connection = served.connect()
            connection.request("GET", "/readyz")
            if connection.getresponse().status == 200:
                connection.close()
                return served
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            stop_gunicorn(process)
            raise AssertionError(f"gunicorn did not start:\n{log.read_text()}")
        time.sleep(0.2)


@pytest.fixture
def one_worker_two_threads(tmp_path: Path) -> Iterator[Served]:
    """One worker, two threads, and a linger long enough to be told apart from a served request."""
    served = _serve(tmp_path, "--workers", "1", "--threads", "2", "--keepalive-linger", "1")
    try:
        yield served
    finally:
        stop_gunicorn(served.process)


VALIDATE = kueue_path("validate", "ClusterQueue")
BODY = json.dumps(review("ClusterQueue", SeedClusterQueueBuilder("cq").flavor("res", cpu="4").obj())).encode()


def _timed_post(connection: http.client.HTTPSConnection) -> float:
    started = time.monotonic()
    connection.request("POST", VALIDATE, body=BODY, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    payload = json.loads(response.read())
    assert response.status == 200 and payload["response"]["allowed"] is True, payload
    return time.monotonic() - started


def test_every_connection_is_served_while_another_thread_lingers(one_worker_two_threads: Served) -> None:
    # A's thread lingers on A for 1 s. B (handshake and request) takes the other thread, which then
    # must not linger, being the last free one; so C is answered at once, not after a linger.
    connections: list[http.client.HTTPSConnection] = []
    latencies = []
    try:
        for _ in range(3):
            started = time.monotonic()
            connections.append(one_worker_two_threads.connect())
            _timed_post(connections[-1])
            latencies.append(time.monotonic() - started)
    finally:
        for connection in connections:
            connection.close()
    assert max(latencies) < 0.8, f"a connection waited for a lingering thread: {latencies}"


def test_a_connection_is_served_within_and_after_the_linger(one_worker_two_threads: Served) -> None:
    connection = one_worker_two_threads.connect()
    try:
        for pause in (0.0, 0.05, 1.3, 0.0):  # 1.3 s: the thread has handed it back to the poller
            time.sleep(pause)
            _timed_post(connection)
    finally:
        connection.close()


def test_a_worker_with_a_lingering_thread_stops_promptly(one_worker_two_threads: Served) -> None:
    connection = one_worker_two_threads.connect()
    _timed_post(connection)
    started = time.monotonic()
    one_worker_two_threads.process.send_signal(signal.SIGTERM)
    one_worker_two_threads.process.wait(timeout=15)
    connection.close()
    # At most the linger plus gunicorn's own 2 s for kept-alive connections of a stopping worker.
    assert time.monotonic() - started < 6.0
