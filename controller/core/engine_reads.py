"""Reads of the engine's state from other threads, served by the scheduler loop between cycles.

The engine is single-threaded (``controller.engine.Engine``). A reader — the visibility API —
submits a function; the loop runs it on its own thread before its next step and hands back the
result. Functions submitted here must only *copy* (``Engine.pending_snapshot`` copies references
in about a millisecond for 50,000 workloads); the expensive part of an answer (sorting, paging,
serialising) runs on the reader's thread, so a deep queue never holds up admission.

While this replica does not lead, nothing serves reads: :meth:`EngineReads.submit` raises
:class:`NotLeading` at once (the visibility API answers 503, see docs/design/visibility.md).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from controller.engine import Engine

log = logging.getLogger(__name__)

T = TypeVar("T")


class NotLeading(Exception):
    """This replica holds no engine (it is not the leader, or leadership just ended)."""


class EngineReads:
    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        self._requests: queue.SimpleQueue[tuple[Callable[[Engine], Any], Future[Any]]] = queue.SimpleQueue()
        self._open = threading.Event()
        self.served = 0

    # --- reader side (any thread) ----------------------------------------------------------------
    def submit(self, read: Callable[[Engine], T], timeout: float = 5.0) -> T:
        """Run ``read(engine)`` on the loop's thread; its result, or its exception re-raised.
        Raises :class:`NotLeading` without an engine and ``TimeoutError`` if the loop does not
        get to it in ``timeout`` seconds (a cycle is running long)."""
        if not self._open.is_set():
            raise NotLeading()
        future: Future[T] = Future()
        self._requests.put((read, future))
        self._wake()
        return future.result(timeout)

    # --- loop side -------------------------------------------------------------------------------
    def open(self) -> None:
        self._open.set()

    def serve(self, engine: Engine) -> None:
        """Run every submitted read (loop thread, between steps)."""
        while True:
            try:
                read, future = self._requests.get_nowait()
            except queue.Empty:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(read(engine))
            except Exception as exc:  # the reader gets it; the loop carries on
                future.set_exception(exc)
            self.served += 1

    def close(self) -> None:
        """Leadership ended: refuse new reads and fail the ones not served."""
        self._open.clear()
        while True:
            try:
                _, future = self._requests.get_nowait()
            except queue.Empty:
                return
            if future.set_running_or_notify_cancel():
                future.set_exception(NotLeading())
