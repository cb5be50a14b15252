"""Background writer for pending reasons (``QuotaReserved=False``), off the admission path.

A scheduling cycle over a deep backlog can produce thousands of new pending reasons at once
(every workload's first "why am I waiting"). Writing them inline would make the loop wait on
thousands of API calls, at the client's QPS, before it could admit anything else. Here they go
to a coalescing queue instead: one entry per workload, a newer reason replacing one not yet
written, drained by a few threads. Reservations and preemptions stay on the loop's own path.

A write that no longer applies (the workload was admitted meanwhile) is skipped by the patch
builder, which re-checks the object (and re-reads it on a 409).

A reason is written only once its workload has been waiting for :data:`GRACE_SECONDS` since the
reason was first queued: a head that is reserved within the grace (the next cycle found room,
the quota its preemptions freed arrived) never gets a reason, which would cost a request and
could make its reservation conflict. Workloads that really wait get their reason as before, the grace later, and
every change after it, as Kueue writes them. In a full-scale baseline before this, pending
reasons were 0.108 requests per admitted workload at the client's QPS 50 (docs/performance.md).

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
from dataclasses import dataclass

from pykueue.kube.backoff import TokenBucket

log = logging.getLogger(__name__)

Write = Callable[[str, str, str], None]

BUSY_WRITES_PER_SECOND = 1.0
GRACE_SECONDS = 2.0


@dataclass(slots=True)
class _Queued:
    reason: str
    message: str
    due: float  # monotonic time the reason may be written (first queued + grace)


class PendingReasonWriter:
    def __init__(
        self,
        write: Write,
        *,
        threads: int = 2,
        admission_busy: Callable[[], bool] = lambda: False,
        busy_budget: TokenBucket | None = None,
        sleep: Callable[[float], None] = time.sleep,
        grace_seconds: float = GRACE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._write = write
        self._admission_busy = admission_busy
        self._busy_budget = busy_budget or TokenBucket(BUSY_WRITES_PER_SECOND, 1)
        self._sleep = sleep
        self._threads_wanted = max(1, threads)
        self._grace = max(0.0, grace_seconds)
        self._clock = clock
        self._latest: dict[str, _Queued] = {}
        # (key, due) in submission order, hence in due order; an entry whose due no longer matches
        # _latest[key] (discarded, then queued again) is skipped.
        self._order: deque[tuple[str, float]] = deque()
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
            queued = self._latest.get(key)
            if queued is None:
                due = self._clock() + self._grace
                self._latest[key] = _Queued(reason, message, due)
                self._order.append((key, due))
                self._cond.notify()
            else:  # a newer reason keeps the place (and the grace) of the one it replaces
                queued.reason, queued.message = reason, message

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

    def _next_due(self) -> tuple[str, _Queued] | None:
        """Lock held: wait for the oldest queued reason whose grace has passed and take it; None
        when stopped."""
        while not self._stopped:
            if not self._order:
                self._cond.wait()
                continue
            key, due = self._order[0]
            queued = self._latest.get(key)
            if queued is None or queued.due != due:
                self._order.popleft()  # discarded (and perhaps queued again behind)
                continue
            left = due - self._clock()
            if left > 0:
                self._cond.wait(left)
                continue
            self._order.popleft()
            del self._latest[key]
            return key, queued
        return None

    def _run(self) -> None:
        while True:
            with self._cond:
                taken = self._next_due()
                if taken is None:
                    return
                key, queued = taken
                reason, message = queued.reason, queued.message
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
