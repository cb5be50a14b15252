"""A thread pool whose queued jobs start by rank, for the scheduler's admission writes.

The client's token bucket serves waiting requests by rank (:mod:`pykueue.kube.ratelimit`), but a
request only reaches the bucket once a write thread runs its job. With a FIFO pool a
priority-200 reservation decided now still waits behind every job submitted before it (up to
``MAX_WRITES_IN_FLIGHT - WRITE_THREADS`` of them, each a token at QPS 50) before it even asks
for a token. :class:`RankedThreadPool` starts the queued job with the highest rank first
(arrival order within a rank), so the order of :mod:`controller.core.request_ranks` holds from
decision to request.

Jobs that must run in order (writes on the same workload, :class:`InFlightWrites`) are given
non-increasing ranks by their submitter, so an earlier job always starts before a later one that
waits for it, and waiting inside a job cannot deadlock the pool.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from pykueue.kube.ratelimit import DEFAULT_RANK, Rank

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(order=True, slots=True)
class _Job:
    order: tuple[int, int, int]  # (-class, -within class, serial): heapq pops the smallest
    future: Future[Any] = field(compare=False)
    run: Callable[[], Any] = field(compare=False)


class RankedThreadPool(Executor):
    """``max_workers`` threads (started on demand) running queued jobs highest rank first."""

    def __init__(self, max_workers: int, thread_name_prefix: str = "ranked-pool") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._cond = threading.Condition()
        self._queue: list[_Job] = []
        self._serials = itertools.count()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._shutdown = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """FIFO among plain submissions: they all have :data:`DEFAULT_RANK`."""
        return self.submit_ranked(DEFAULT_RANK, lambda: fn(*args, **kwargs))

    def submit_ranked(self, rank: Rank, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        with self._cond:
            if self._shutdown:
                raise RuntimeError("cannot schedule new jobs after shutdown")
            heapq.heappush(self._queue, _Job((-rank[0], -rank[1], next(self._serials)), future, fn))
            if self._idle == 0 and len(self._threads) < self._max_workers:
                thread = threading.Thread(
                    target=self._work, name=f"{self._prefix}_{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
            self._cond.notify()
        return future

    def queued(self) -> int:
        """Jobs not started yet."""
        with self._cond:
            return len(self._queue)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._cond:
            self._shutdown = True
            if cancel_futures:
                for job in self._queue:
                    job.future.cancel()
                self._queue.clear()
            self._cond.notify_all()
            threads = list(self._threads)
        if wait:
            for thread in threads:
                thread.join()

    def _work(self) -> None:
        while True:
            with self._cond:
                self._idle += 1
                while not self._queue and not self._shutdown:
                    self._cond.wait()
                self._idle -= 1
                if not self._queue:
                    return  # shut down and nothing left to run
                job = heapq.heappop(self._queue)
            if not job.future.set_running_or_notify_cancel():
                continue
            try:
                result = job.run()
            except BaseException as error:  # the future carries it, as ThreadPoolExecutor's do
                job.future.set_exception(error)
            else:
                job.future.set_result(result)
