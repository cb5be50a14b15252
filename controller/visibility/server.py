"""The visibility API's HTTPS listener: TLS with an optional client certificate, then
:class:`controller.visibility.service.VisibilityService`.

The serving certificate (``pykueue.tls.provision`` keeps the files fresh) and the front proxy's
CA (``auth.RequestHeaderConfig``) may both change while the process runs, so every accepted
connection is wrapped with the context for the files and CA as they are now
(:class:`ServingContext`; rebuilt only when one of them changed). The TLS handshake runs on the
connection's own thread, never on the accepting one.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .auth import Authenticator, RequestHeaderConfig, UserInfo, user_from_front_proxy
from .service import VisibilityService

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT_SECONDS = 10.0


class ServingContext:
    """An ``SSLContext`` for the certificate files and the client CA, rebuilt when either changes."""

    def __init__(self, certfile: str, keyfile: str, client_ca: Callable[[], str | None]) -> None:
        self.certfile = certfile
        self.keyfile = keyfile
        self._client_ca = client_ca
        self._lock = threading.Lock()
        self._key: tuple[Any, ...] | None = None
        self._context: ssl.SSLContext | None = None
        self.loads = 0

    def context(self) -> ssl.SSLContext:
        ca = self._client_ca()
        with self._lock:
            try:
                stats = tuple((s.st_ino, s.st_size, s.st_mtime_ns) for s in map(os.stat, (self.certfile, self.keyfile)))
            except OSError:
                if self._context is None:
                    raise
                return self._context
            key = (stats, ca)
            if key != self._key or self._context is None:
                try:
                    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                    context.minimum_version = ssl.TLSVersion.TLSv1_2
                    context.load_cert_chain(self.certfile, self.keyfile)
                    if ca:
                        context.load_verify_locations(cadata=ca)
                        context.verify_mode = ssl.CERT_OPTIONAL  # bearer tokens need no certificate
                    self._context, self._key = context, key
                    self.loads += 1
                except (OSError, ssl.SSLError):
                    if self._context is None:
                        raise
                    log.warning("serving certificate or client CA changed but could not be loaded yet")
            return self._context


def client_common_name(connection: ssl.SSLSocket) -> str | None:
    """The CN of a client certificate the handshake verified, else None."""
    peer = connection.getpeercert()
    if not peer:
        return None
    for rdn in peer.get("subject", ()):
        for pair in rdn:
            if pair[0] == "commonName":
                return str(pair[1])
    return None


class VisibilityServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        context: ServingContext,
        service: VisibilityService,
        authenticator: Authenticator,
        requestheader: Callable[[], RequestHeaderConfig | None],
    ) -> None:
        self.serving = context
        self.service = service
        self.authenticator = authenticator
        self.requestheader = requestheader
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = self.socket.accept()
        sock.settimeout(HANDSHAKE_TIMEOUT_SECONDS)
        try:
            wrapped = self.serving.context().wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        except (OSError, ssl.SSLError):
            sock.close()
            raise
        return wrapped, address

    def authenticate(self, connection: ssl.SSLSocket, headers: Any) -> UserInfo | None:
        config = self.requestheader()
        if config is not None:
            user = user_from_front_proxy(config, client_common_name(connection), headers)
            if user is not None:
                return user
        authorization = headers.get("Authorization") or ""
        if authorization.startswith("Bearer "):
            try:
                return self.authenticator.from_token(authorization[len("Bearer "):].strip())
            except Exception:
                log.exception("TokenReview failed")
        return None


class _Handler(BaseHTTPRequestHandler):
    server: VisibilityServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        try:
            self.request.do_handshake()
        except (OSError, ssl.SSLError) as exc:
            log.debug("TLS handshake failed", extra={"error": str(exc)})
            raise
        self.request.settimeout(60)
        super().setup()

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        try:
            user = self.server.authenticate(self.request, self.headers)
            code, body = self.server.service.handle(url.path, parse_qs(url.query, keep_blank_values=True), user)
        except Exception:
            log.exception("visibility request failed", extra={"path": url.path})
            code, body = 500, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500,
                               "reason": "InternalError", "message": "internal error", "metadata": {}}
        payload = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("visibility request", extra={"request": format % args})
