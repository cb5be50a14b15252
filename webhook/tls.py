"""The serving TLS context: TLS 1.2 or newer, reloaded when the certificate files change.

gunicorn asks its ``ssl_context`` hook for a context on every accepted connection. Building a new
context each time would re-read and re-parse the key per connection; keeping one forever would
serve a rotated-away certificate until a restart. :class:`ReloadingContext` keeps one context and
rebuilds it when the files' identity (inode, size, mtime) changes — the same idea as kopf's
periodic hash check, cheap enough to do per connection (two ``stat`` calls). Kubelet updates
mounted Secrets by swapping a symlink, which changes the inode, so cert-manager's files are picked
up the same way as the files :mod:`webhook.certprovision` writes.

If a reload fails (say, the certificate was replaced but the key not yet), the previous context is
kept and the reload is retried on the next connection.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading

log = logging.getLogger("pykueue.webhook.tls")

FileIdentity = tuple[tuple[int, int, int], ...]


def new_server_context(certfile: str, keyfile: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile=certfile, keyfile=keyfile)
    return context


class ReloadingContext:
    def __init__(self, certfile: str, keyfile: str) -> None:
        self.certfile = certfile
        self.keyfile = keyfile
        self._lock = threading.Lock()
        self._identity: FileIdentity | None = None
        self._context: ssl.SSLContext | None = None
        self.loads = 0

    def _current_identity(self) -> FileIdentity:
        identity = []
        for path in (self.certfile, self.keyfile):
            stat = os.stat(path)
            identity.append((stat.st_ino, stat.st_size, stat.st_mtime_ns))
        return tuple(identity)

    def context(self) -> ssl.SSLContext:
        """The context for the files as they are now (rebuilt only when they changed)."""
        with self._lock:
            try:
                identity = self._current_identity()
            except OSError:
                if self._context is None:
                    raise
                return self._context
            if identity != self._identity or self._context is None:
                try:
                    self._context = new_server_context(self.certfile, self.keyfile)
                    self._identity = identity
                    self.loads += 1
                    if self.loads > 1:
                        log.info("reloaded the serving certificate", extra={"certfile": self.certfile})
                except (OSError, ssl.SSLError):
                    if self._context is None:
                        raise
                    log.warning("certificate files changed but could not be loaded yet; serving the previous ones")
            return self._context
