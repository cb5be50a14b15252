"""The reconcile loop shared by the core controllers: keys from a work queue, one at a time.

``reconcile(key)`` returns ``None`` (done) or seconds after which to look again (a timer such as
``requeueAt`` or the PodsReady deadline). An exception is logged with the key and the key retried
with per-item backoff: a strange object can slow its own key down but never stop the loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable

from controller.runtime.workqueue import WorkQueue

log = logging.getLogger(__name__)

Reconcile = Callable[[str], float | None]


def _worker(queue: WorkQueue[str], reconcile: Reconcile, controller: str) -> None:
    while True:
        key = queue.get()
        if key is None:
            return
        try:
            requeue_after = reconcile(key)
        except Exception:
            log.exception("reconcile failed", extra={"controller": controller, "key": key})
            queue.add_rate_limited(key)
        else:
            queue.forget(key)
            if requeue_after is not None:
                queue.add_after(key, requeue_after)
        finally:
            queue.done(key)


def start_workers(
    queue: WorkQueue[str], reconcile: Reconcile, count: int, controller: str
) -> list[threading.Thread]:
    """Start ``count`` daemon worker threads; they exit when ``queue`` is shut down."""
    threads = []
    for index in range(max(1, count)):
        thread = threading.Thread(
            target=_worker,
            args=(queue, reconcile, controller),
            name=f"{controller}-worker-{index}",
            daemon=True,
        )
        thread.start()
        threads.append(thread)
    return threads


def enqueue_all(queue: WorkQueue[str], keys: list[Hashable]) -> None:
    for key in keys:
        queue.add(str(key))
