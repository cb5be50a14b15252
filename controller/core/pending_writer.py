"""Background writer for pending reasons (``QuotaReserved=False``), off the admission path.

A scheduling cycle over a deep backlog can produce thousands of new pending reasons at once
(every workload's first "why am I waiting"). Writing them inline would make the loop wait on
thousands of API calls, at the client's QPS, before it could admit anything else. Here they go
to a coalescing queue instead: one entry per workload, a newer reason replacing one not yet
written, drained by a few threads. Reservations and preemptions stay on the loop's own path.

A write that no longer applies (the workload was admitted meanwhile) is skipped by the patch
builder, which re-checks the object (and re-reads it on a 409).

While admission is busy (``admission_busy()``, half the scheduler's write threads occupied) the
writer spends at most :data:`BUSY_WRITES_PER_SECOND`: a reason is only eventually true, a queued
one is replaced by newer ones and dropped when its workload is reserved, so writing less under
load mostly skips reasons that would have been outdated within seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from pykueue.kube.backoff import TokenBucket

log = logging.getLogger(__name__)

Write = Callable[[str, str, str], None]

BUSY_WRITES_PER_SECOND = 1.0


class PendingReasonWriter:
    def __init__(
        self,
        write: Write,
        *,
        threads: int = 2,
        admission_busy: Callable[[], bool] = lambda: False,
        busy_budget: TokenBucket | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._write = write
        self._admission_busy = admission_busy
        self._busy_budget = busy_budget or TokenBucket(BUSY_WRITES_PER_SECOND, 1)
        self._sleep = sleep
        self._threads_wanted = max(1, threads)
        self._latest: dict[str, tuple[str, str]] = {}
        self._order: deque[str] = deque()
        self._in_flight = 0
        self._cond = threading.Condition()
        self._stopped = False
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        with self._cond:
            self._stopped = False
        self._threads = [
            threading.Thread(target=self._run, name=f"pending-reasons-{i}", daemon=True)
            for i in range(self._threads_wanted)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, key: str, reason: str, message: str) -> None:
        with self._cond:
            if key not in self._latest:
                self._order.append(key)
            self._latest[key] = (reason, message)
            self._cond.notify()

    def discard(self, key: str) -> None:
        """Drop ``key``'s reason if not written yet: the workload was just reserved, and writing
        it would only collide with the reservation (a 409 and a GET, then nothing to write)."""
        with self._cond:
            self._latest.pop(key, None)  # its entry in _order is skipped when reached

    def _superseded(self, key: str) -> bool:
        """After a wait: a newer reason is queued for ``key`` (it will be written instead)."""
        with self._cond:
            return key in self._latest

    def backlog(self) -> int:
        with self._cond:
            return len(self._latest) + self._in_flight

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything submitted so far was written (True) or ``timeout`` passed."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._latest and not self._in_flight, timeout)

    def stop(self) -> None:
        """Stop the threads; reasons not yet written are dropped (the next leader recomputes)."""
        with self._cond:
            self._stopped = True
            self._latest.clear()
            self._order.clear()
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopped or bool(self._order))
                if self._stopped:
                    return
                key = self._order.popleft()
                latest = self._latest.pop(key, None)
                if latest is None:
                    continue  # discarded
                reason, message = latest
                self._in_flight += 1
            try:
                if self._admission_busy():
                    delay = self._busy_budget.reserve()
                    if delay > 0:
                        self._sleep(delay)
                        if self._superseded(key):
                            continue
                self._write(key, reason, message)
            except Exception:
                log.exception("writing a pending reason failed", extra={"workload": key, "reason": reason})
            finally:
                with self._cond:
                    self._in_flight -= 1
                    self._cond.notify_all()
