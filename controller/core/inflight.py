"""Admission writes in flight: sent to a thread pool, their outcomes applied on the loop thread.

Kueue assumes a reservation in its cache, fires the status patch from a goroutine and moves on to
the next cycle; only a failed patch comes back to undo the assumption. The scheduler loop used to
wait for every write of a cycle before starting the next one, so one slow write stalled every
queue and admissions per second were bounded by threads / write latency (docs/performance.md).

:class:`InFlightWrites` keeps the loop moving while staying single-threaded where it matters:

* the engine is not thread-safe, so a write's *outcome* (confirm, rollback, ``eviction_failed``,
  ``preemption_failed``, block-admission bookkeeping) is never applied from a pool thread: the
  future's callback puts it on a completion queue and wakes the loop, which applies it with
  :meth:`apply_completed` at the start of its next step;
* writes on the same workload are chained: a later write waits for the earlier one, so it is
  built on the earlier write's result (the scheduler reads its own writes before the cache has
  them, :mod:`controller.core.own_writes`). This is what keeps a preemption of a just-assumed
  victim, or a concurrent-admission migration of a just-assumed sibling, from reading a stale
  "holds no quota" and doing nothing;
* :meth:`full` is the backpressure signal: at ``cap`` outcomes not yet applied, the loop waits for
  completions instead of running more cycles (decisions would otherwise pile up far ahead of the
  client's rate limit, each holding assumed quota);
* each outcome carries the epoch it was submitted in; :meth:`reset` (a new engine, a new term as
  leader) bumps it, so an outcome can never be applied to an engine that did not make the decision.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

log = logging.getLogger(__name__)

# write() -> ok, run on a pool thread.
Write = Callable[[], bool]
# Applied on the loop thread with the write's outcome.
OnDone = Callable[[bool], None]


@dataclass(slots=True)
class _Completion:
    epoch: int
    future: Future[bool]
    keys: tuple[str, ...]
    on_done: OnDone
    ok: bool


class InFlightWrites:
    """See the module docstring. All methods except the future callbacks run on the loop thread."""

    def __init__(self, cap: int, wake: Callable[[], None]) -> None:
        if cap < 1:
            raise ValueError("cap must be at least 1")
        self.cap = cap
        self._wake = wake
        self._completed: queue.SimpleQueue[_Completion] = queue.SimpleQueue()
        self._epoch = 0
        self._count = 0
        self._last_by_key: dict[str, Future[bool]] = {}

    def __len__(self) -> int:
        """Writes submitted in this epoch whose outcome has not been applied yet."""
        return self._count

    def full(self) -> bool:
        return self._count >= self.cap

    def reset(self) -> None:
        """Forget everything in flight: outcomes submitted before this call are dropped unapplied
        (their engine is gone; the writes themselves are resourceVersion-guarded)."""
        self._epoch += 1
        self._count = 0
        self._last_by_key.clear()
        while True:
            try:
                self._completed.get_nowait()
            except queue.Empty:
                return

    def submit(
        self, pool: ThreadPoolExecutor, keys: Sequence[str], write: Write, on_done: OnDone
    ) -> Future[bool]:
        """Run ``write`` on ``pool`` after any earlier write on one of ``keys``; ``on_done(ok)`` is
        applied later by :meth:`apply_completed` (ok is False when ``write`` raised). Returns the
        write's future, for a later write that must wait for this one's outcome."""
        keys = tuple(keys)
        earlier = [f for k in keys if (f := self._last_by_key.get(k)) is not None and not f.done()]

        def job() -> bool:
            if earlier:
                # Earlier jobs were queued first on a FIFO pool, so they are running or done:
                # waiting here cannot deadlock the pool.
                wait(earlier)
            return write()

        epoch = self._epoch
        future = pool.submit(job)
        self._count += 1
        for key in keys:
            self._last_by_key[key] = future

        def completed(done: Future[bool]) -> None:
            ok = False
            if not done.cancelled():
                error = done.exception()
                if error is None:
                    ok = bool(done.result())
                else:
                    log.error("admission write raised", exc_info=error, extra={"workloads": list(keys)})
            self._completed.put(_Completion(epoch, done, keys, on_done, ok))
            self._wake()

        future.add_done_callback(completed)
        return future

    def apply_completed(self, timeout: float | None = None) -> int:
        """Apply every outcome that has arrived (waiting up to ``timeout`` for the first one when
        given); returns how many were applied."""
        applied = 0
        block = timeout is not None
        while True:
            try:
                completion = self._completed.get(timeout=timeout) if block else self._completed.get_nowait()
            except queue.Empty:
                return applied
            block = False
            if completion.epoch != self._epoch:
                continue  # submitted to an engine that is gone
            self._count -= 1
            for key in completion.keys:
                if self._last_by_key.get(key) is completion.future:
                    del self._last_by_key[key]
            try:
                completion.on_done(completion.ok)
            except Exception:
                log.exception(
                    "applying an admission write's outcome failed", extra={"workloads": list(completion.keys)}
                )
            applied += 1

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until every write in flight has finished and its outcome is applied (True), or
        ``timeout`` seconds passed. Used for sequential admission (blockAdmission) and tests."""
        deadline = time.monotonic() + timeout
        while self._count > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.apply_completed(timeout=min(left, 0.5))
        return True
