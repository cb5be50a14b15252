"""A runnable that does one piece of work every few seconds on a thread of its own.

Several leader-only jobs are periodic rather than event-driven (status writers that poll the
engine, MultiKueue's garbage collector). They share this lifecycle: started when leadership is
won, stopped when it is lost, and never stopped by one failed round — a strange object or an
unreachable worker is logged and the next round tries again.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


class PeriodicRunnable:
    """Calls :meth:`tick` every ``period`` seconds until stopped (a period of 0 or less never
    starts the thread). Subclasses set :attr:`name` and implement :meth:`tick`; exceptions of
    the types in :attr:`quiet` end a round silently (expected, e.g. leadership being handed over),
    any other is logged with its traceback."""

    name = "periodic"
    quiet: tuple[type[BaseException], ...] = ()

    def __init__(self, period: float, *, join_timeout: float = 5.0) -> None:
        self.period = period
        self._join_timeout = join_timeout
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def register_handlers(self) -> None:
        """Nothing to hear: periodic work polls."""

    def start(self) -> None:
        if self.period <= 0:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self._join_timeout)

    def tick(self) -> int:
        """One round's work; returns how many things it did (writes, deletions)."""
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.tick()
            except self.quiet:
                continue
            except Exception:  # one failed round must not end the job
                log.exception("periodic round failed", extra={"runnable": self.name})
