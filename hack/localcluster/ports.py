"""Loopback port selection.

Several people (and test sessions) run clusters side by side on one machine, so no component
uses a well-known port: each cluster asks the kernel for free ports. A port can still be pinned
with an environment variable (``PYKUEUE_APISERVER_PORT``), and then it is checked up front so a
clash reads as a one-line message instead of a component crashing later.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterable

from .errors import PrerequisiteError

LOOPBACK = "127.0.0.1"


def pick_free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """Return `count` distinct ports that were free on `host` a moment ago.

    All sockets stay open until every port is chosen, so the kernel cannot hand out one port
    twice within a call.
    """
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    """True when something already listens on (or holds) `host:port`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def require_free(ports: Iterable[tuple[str, int]], host: str = LOOPBACK) -> None:
    """Raise PrerequisiteError naming the first pinned port that is already taken.

    `ports` pairs a human description (where the pin came from) with the port number.
    """
    for origin, port in ports:
        if port_in_use(port, host):
            raise PrerequisiteError(
                f"port {port} on {host} ({origin}) is already in use; stop whatever listens there "
                f"(see `ss -ltnp 'sport = :{port}'`) or choose another port"
            )


def parse_port(value: str, origin: str) -> int:
    """Parse a port number from configuration, naming `origin` when the value is unusable."""
    with contextlib.suppress(ValueError):
        port = int(value)
        if 1 <= port <= 65535:
            return port
    raise PrerequisiteError(f"{origin}={value!r} is not a port number (1-65535)")
