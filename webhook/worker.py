"""The gunicorn worker class: gthread, whose request thread waits a moment for the next request.

A stock ``gthread`` worker passes every request on a kept-alive connection through two threads:
the main thread's poller wakes up and hands the connection to a pool thread, the pool thread wakes
up (and waits for the GIL until the main thread is back in ``select``), answers, and hands the
connection back through a pipe for the poller to watch again. On an idle machine that costs tens
of microseconds; on two cores shared with an apiserver, etcd and a load generator every one of
those wake-ups may wait for a core, and such waits are what the p99 is made of.

An apiserver sends its calls over a few kept-alive HTTP/1.1 connections and reuses the most
recently used one first, so under load the next request on a connection follows within
milliseconds. Here the pool thread that answered a request keeps its connection for up to
``linger_seconds``, blocked in ``poll`` with the GIL released; the next request wakes that one
thread directly and the main thread is not involved. When nothing arrives in time the connection
goes back to the poller exactly as in stock gunicorn.

Lingering never takes the last idle thread: at most ``threads - 1`` threads linger at once, so a
request on any other connection still finds a thread. The worst case — every non-lingering thread
busy, say with a slow apiserver read of a Job hook — delays such a request by at most
``linger_seconds``, which is why the linger is short. Nor does a lingering thread jump the queue:
while requests the poller dispatched wait for a thread, a thread neither starts lingering nor
serves its own connection's next request, but hands the connection back to the poller (behind
the waiting ones) and takes the oldest waiting request. So a saturated worker serves its
connections first come, first served, as stock gthread does. A stopping worker stops lingering,
and HTTP/2 connections are left to gunicorn.

This builds on gunicorn 27's ``ThreadWorker`` (``handle`` answers one request and returns whether
the connection may be kept; ``TConn`` holds the socket and the parser), hence the pin to
gunicorn 27 in ``pyproject.toml``.
"""

from __future__ import annotations

import select
import threading

from gunicorn.workers.gthread import TConn, ThreadWorker

# Spans the gap between two requests on a connection an apiserver reuses at ten or more requests
# per second, and bounds how long a request can queue behind lingering threads (module docstring).
DEFAULT_LINGER_SECONDS = 0.1


class LingeringThreadWorker(ThreadWorker):
    """A gthread worker whose request threads wait briefly on their connection for its next request."""

    linger_seconds: float = DEFAULT_LINGER_SECONDS

    def init_process(self) -> None:
        self._lingering = 0
        self._waiting = 0  # requests the poller submitted that no thread has started yet
        self._linger_lock = threading.Lock()
        super().init_process()

    def enqueue_req(self, conn: TConn) -> None:
        with self._linger_lock:
            self._waiting += 1
        super().enqueue_req(conn)

    def handle(self, conn: TConn) -> bool:
        with self._linger_lock:
            self._waiting -= 1
        keep = super().handle(conn)
        while keep is True and self.alive and not conn.is_http2 and self.next_request_arrived(conn):
            keep = super().handle(conn)
        return keep

    def others_waiting(self) -> bool:
        """Whether requests dispatched by the poller wait for a thread (then lingering would jump them)."""
        with self._linger_lock:
            return self._waiting > 0

    def next_request_arrived(self, conn: TConn) -> bool:
        """Whether this thread should answer ``conn``'s next request itself.

        Yes when the connection becomes readable (a request, or the peer closing) within the
        linger and no request dispatched by the poller is waiting for a thread. Bytes gunicorn
        already read past the last request, or that the TLS layer decrypted and holds, do not
        make the socket readable to the poller, so they are always answered here at once — the
        same read-ahead check gunicorn makes before handing a connection back to its poller.
        """
        unreader = getattr(conn.parser, "unreader", None)
        if unreader is not None and unreader.buf.getvalue():
            return True
        pending = getattr(conn.sock, "pending", None)
        if pending is not None and pending():
            return True
        if self.linger_seconds <= 0 or self.others_waiting() or not self._take_linger_slot():
            return False
        try:
            poller = select.poll()
            poller.register(conn.sock, select.POLLIN)
            readable = bool(poller.poll(self.linger_seconds * 1000))
        except (OSError, ValueError):  # closed under us: let gunicorn's own path deal with it
            return False
        finally:
            self._release_linger_slot()
        return readable and not self.others_waiting()

    def _take_linger_slot(self) -> bool:
        with self._linger_lock:
            if self._lingering >= self.cfg.threads - 1:
                return False
            self._lingering += 1
            return True

    def _release_linger_slot(self) -> None:
        with self._linger_lock:
            self._lingering -= 1


def lingering_worker(linger_seconds: float) -> type[LingeringThreadWorker]:
    """A worker class for gunicorn's ``worker_class`` setting that lingers ``linger_seconds``."""
    return type("LingeringThreadWorker", (LingeringThreadWorker,), {"linger_seconds": linger_seconds})
