"""The real HTTP transport against a local socket server: streaming, stall detection, close from
another thread, bearer tokens and the credential reload after a 401."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from kubernetes import client as k8s_client

from pykueue.kube.client import KubeClient
from pykueue.kube.resources import CONFIG_MAPS
from pykueue.kube.transport import ApiClientTransport, StreamTimeout


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen_tokens: ClassVar[list[str]] = []
    valid_token: ClassVar[str] = "fresh"
    stall_seconds: ClassVar[float] = 5.0

    def do_GET(self) -> None:
        Handler.seen_tokens.append(self.headers.get("Authorization", ""))
        if self.headers.get("Authorization") != f"Bearer {Handler.valid_token}":
            body = json.dumps({"kind": "Status", "code": 401, "reason": "Unauthorized", "message": "bad token"})
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())
            return
        if "watch=true" in self.path:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            line = json.dumps({"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "2"}}})
            self._chunk(line + "\n")
            time.sleep(Handler.stall_seconds)  # a silent, open connection
            return
        body = json.dumps({"kind": "ConfigMap", "metadata": {"name": "a"}})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def _chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def server() -> Iterator[str]:
    Handler.seen_tokens = []
    Handler.valid_token = "fresh"
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def client_for(host: str, tokens: list[str]) -> tuple[KubeClient, list[int]]:
    """A client whose credentials come from ``tokens`` in turn (a rotating token file)."""
    loads: list[int] = []

    def load() -> k8s_client.Configuration:
        configuration = k8s_client.Configuration(host=host)
        configuration.api_key = {"BearerToken": tokens[min(len(loads), len(tokens) - 1)]}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
        loads.append(1)
        return configuration

    return KubeClient(ApiClientTransport(load), qps=0, sleep=lambda _s: None), loads


def test_rotated_token_is_reloaded_after_a_401(server: str) -> None:
    client, loads = client_for(server, ["expired", "fresh"])
    assert client.get(CONFIG_MAPS, "a", "ns") == {"kind": "ConfigMap", "metadata": {"name": "a"}}
    assert Handler.seen_tokens == ["Bearer expired", "Bearer fresh"]
    assert len(loads) == 2


def test_silent_stream_raises_stream_timeout_after_the_read_timeout(server: str) -> None:
    client, _ = client_for(server, ["fresh"])
    watch = client.watch(CONFIG_MAPS, resource_version="1", timeout_seconds=60, read_timeout=0.5)
    assert next(watch)["type"] == "ADDED"
    started = time.monotonic()
    with pytest.raises(StreamTimeout):
        next(watch)
    assert time.monotonic() - started < 3


def test_close_from_another_thread_ends_a_blocked_watch(server: str) -> None:
    client, _ = client_for(server, ["fresh"])
    watch = client.watch(CONFIG_MAPS, resource_version="1", timeout_seconds=60, read_timeout=30)
    assert next(watch)["type"] == "ADDED"
    threading.Timer(0.2, watch.close).start()
    started = time.monotonic()
    assert list(watch) == []
    assert time.monotonic() - started < 3
