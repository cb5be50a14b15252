"""``/healthz``, ``/readyz`` and ``/metrics`` over plain HTTP (standard library, one thread each).

* ``/healthz`` (liveness) fails only when a check says the process is wedged (a reflector or
  handler thread died): restarting is then the fix.
* ``/readyz`` (readiness) fails until the informers completed their first list, so a rollout
  waits for warm caches. Standbys are ready too: readiness is not leadership.
* ``/metrics`` serves the default Prometheus registry, with Kueue's ``replica_role`` label on the
  ``kueue_*`` series when the process gives its role (``controller.runtime.replica_role``).

Health and metrics may share one address (as in local runs) or use two (as the chart does).
``?verbose`` on the health paths lists each check, like the apiserver's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import urlsplit

from prometheus_client import CONTENT_TYPE_LATEST

from controller.runtime.replica_role import Role, exposition

log = logging.getLogger(__name__)

Check = Callable[[], bool]


class HealthChecks:
    """Named liveness and readiness checks; thread-safe to add while serving."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._liveness: dict[str, Check] = {"ping": lambda: True}
        self._readiness: dict[str, Check] = {"ping": lambda: True}

    def add_liveness(self, name: str, check: Check) -> None:
        with self._lock:
            self._liveness[name] = check

    def add_readiness(self, name: str, check: Check) -> None:
        with self._lock:
            self._readiness[name] = check

    def evaluate(self, kind: str) -> list[tuple[str, bool]]:
        with self._lock:
            checks = dict(self._liveness if kind == "healthz" else self._readiness)
        results = []
        for name, check in checks.items():
            try:
                ok = bool(check())
            except Exception:
                log.exception("health check raised", extra={"check": name})
                ok = False
            results.append((name, ok))
        return results


def parse_address(address: str) -> tuple[str, int]:
    """``host:port``; ``:8081`` means all interfaces and port 0 picks a free port.

    (The bare address ``"0"`` disables a server, as in controller-runtime; see
    :func:`start_probe_servers`.)
    """
    host, sep, port = address.rpartition(":")
    if not sep:
        host, port = "", address
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"address {address!r}: port must be a number") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"address {address!r}: port must be between 0 and 65535")
    return host.strip("[]") or "0.0.0.0", number


class _Handler(BaseHTTPRequestHandler):
    checks: ClassVar[HealthChecks]
    serve_health: ClassVar[bool]
    serve_metrics: ClassVar[bool]
    role: ClassVar[Role | None]

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        if self.serve_metrics and path == "/metrics":
            self._reply(200, exposition(type(self).role), CONTENT_TYPE_LATEST)
        elif self.serve_health and path in ("/healthz", "/readyz", "/livez"):
            kind = "readyz" if path == "/readyz" else "healthz"
            results = self.checks.evaluate(kind)
            healthy = all(ok for _, ok in results)
            if "verbose" in url.query or not healthy:
                lines = [f"[{'+' if ok else '-'}]{name} {'ok' if ok else 'failed'}" for name, ok in results]
                lines.append(f"{path[1:]} check {'passed' if healthy else 'failed'}")
                body = ("\n".join(lines) + "\n").encode()
            else:
                body = b"ok"
            self._reply(200 if healthy else 503, body, "text/plain; charset=utf-8")
        else:
            self._reply(404, b"not found\n", "text/plain; charset=utf-8")

    def _reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return  # probes every few seconds would drown the logs


class ProbeServer:
    """One listening socket serving health and/or metrics from a daemon thread."""

    def __init__(
        self, address: str, checks: HealthChecks, *, health: bool, metrics: bool, role: Role | None = None
    ) -> None:
        host, port = parse_address(address)
        handler = type(
            "ProbeHandler",
            (_Handler,),
            {
                "checks": checks,
                "serve_health": health,
                "serve_metrics": metrics,
                "role": staticmethod(role) if role is not None else None,
            },
        )
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"http-{port}", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()
        log.info("serving", extra={"port": self.port})

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def start_probe_servers(
    health_addr: str, metrics_addr: str, checks: HealthChecks, role: Role | None = None
) -> list[ProbeServer]:
    """Start the health and metrics endpoints (one server when both addresses are the same);
    ``role``: the replica's role for the ``replica_role`` label (None: no label)."""
    servers: list[ProbeServer] = []
    if health_addr == metrics_addr and health_addr in ("0", ""):
        return servers
    if health_addr == metrics_addr:
        servers.append(ProbeServer(health_addr, checks, health=True, metrics=True, role=role))
    else:
        if health_addr not in ("0", ""):
            servers.append(ProbeServer(health_addr, checks, health=True, metrics=False))
        if metrics_addr not in ("0", ""):
            servers.append(ProbeServer(metrics_addr, checks, health=False, metrics=True, role=role))
    for server in servers:
        server.start()
    return servers
