"""The one reconcile loop of every controller: keys from a work queue, worker threads, drain on stop.

``reconcile(key)`` returns ``None`` (done) or the seconds after which to look at the key again (a
timer such as ``requeueAt``, the PodsReady deadline or a poll while pods terminate). What the
loop does with each outcome follows controller-runtime's ``reconcileHandler``
(pkg/internal/controller/controller.go):

* **success**: the key's backoff history is forgotten; a requeue-after parks it that long;
* **exception**: logged with the controller and the key and retried through the queue's rate
  limiter (per-key exponential backoff, overall bucket). A ``Conflict`` is routine (our cache was
  behind) and logged at debug, another API error as a warning with its status, anything else
  with its traceback: a strange object slows its own key down but never stops the loop.

:meth:`Workers.stop` shuts the queue down (queued keys are dropped, no new reconcile starts),
lets in-flight reconciles finish (bounded by a timeout) and joins the threads before it returns,
so a runnable stopped on SIGTERM or lost leadership never leaves a write half done behind it.

Metrics carry controller-runtime's names (``controller_runtime_reconcile_*``), which Kueue
exports; the queue's own ``workqueue_*`` metrics live in :mod:`controller.runtime.workqueue`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from prometheus_client import Counter, Gauge, Histogram

from controller.runtime.workqueue import WorkQueue
from pykueue.kube.errors import ApiError, Conflict

log = logging.getLogger(__name__)

Reconcile = Callable[[str], float | None]

# How long stop() waits for in-flight reconciles and threads by default (the manager stops
# every runnable in turn before the Lease is released).
DEFAULT_STOP_TIMEOUT = 10.0

RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile_total",
    "Reconciles per controller, by result (success, error, requeue_after).",
    ["controller", "result"],
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors_total", "Reconciles that raised, per controller.", ["controller"]
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Time per reconcile, per controller.",
    ["controller"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers", "Workers currently reconciling, per controller.", ["controller"]
)


class Workers:
    """``count`` worker threads running ``reconcile`` on the keys of ``queue``; see the module docstring.

    ``name`` names the controller in logs, metrics and thread names. :meth:`process_one` is the
    body of the loop for one key, callable directly by tests.
    """

    def __init__(
        self,
        queue: WorkQueue[str],
        reconcile: Reconcile,
        *,
        name: str,
        count: int = 1,
        stop_timeout: float = DEFAULT_STOP_TIMEOUT,
    ) -> None:
        self.queue = queue
        self.name = name
        self._reconcile = reconcile
        self._count = max(1, count)
        self._stop_timeout = stop_timeout
        self._threads: list[threading.Thread] = []
        # Labelled children resolved once: this runs for every key (see WorkQueue.__init__).
        self._success = RECONCILE_TOTAL.labels(name, "success")
        self._requeue_after = RECONCILE_TOTAL.labels(name, "requeue_after")
        self._error = RECONCILE_TOTAL.labels(name, "error")
        self._errors = RECONCILE_ERRORS.labels(name)
        self._time = RECONCILE_TIME.labels(name)
        self._active = ACTIVE_WORKERS.labels(name)

    @property
    def threads(self) -> list[threading.Thread]:
        return list(self._threads)

    def start(self) -> None:
        """Start the worker threads (daemons: a stuck reconcile cannot keep the process alive)."""
        for index in range(self._count):
            thread = threading.Thread(target=self._run, name=f"{self.name}-worker-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info("workers started", extra={"controller": self.name, "workers": self._count})

    def stop(self, timeout: float | None = None) -> bool:
        """Shut the queue down, let in-flight reconciles finish, join the threads.

        Returns False when ``timeout`` (default :data:`DEFAULT_STOP_TIMEOUT`) expired first; the
        threads left are daemons and end with the process.
        """
        budget = self._stop_timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        drained = self.queue.shutdown_with_drain(budget)
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        joined = not any(thread.is_alive() for thread in self._threads)
        self._threads = [thread for thread in self._threads if thread.is_alive()]
        if drained and joined:
            log.info("workers stopped", extra={"controller": self.name})
        else:
            log.warning("workers did not stop in time", extra={"controller": self.name, "timeout": budget})
        return drained and joined

    def _run(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            try:
                self.process_one(key)
            finally:
                self.queue.done(key)

    def process_one(self, key: str) -> None:
        """Reconcile ``key`` once and schedule what follows; never raises."""
        started = time.monotonic()
        self._active.inc()
        try:
            requeue_after = self._reconcile(key)
        except Conflict:
            log.debug("conflict; retrying with fresh state", extra={"controller": self.name, "key": key})
            self._failed(key)
        except ApiError as err:
            log.warning(
                "API error in reconcile",
                extra={"controller": self.name, "key": key, "status": err.status, "error": str(err)},
            )
            self._failed(key)
        except Exception:
            log.exception("reconcile failed", extra={"controller": self.name, "key": key})
            self._failed(key)
        else:
            self.queue.forget(key)
            if requeue_after is not None:
                self._requeue_after.inc()
                self.queue.add_after(key, requeue_after)
            else:
                self._success.inc()
        finally:
            self._active.dec()
            self._time.observe(time.monotonic() - started)

    def _failed(self, key: str) -> None:
        self._error.inc()
        self._errors.inc()
        self.queue.add_rate_limited(key)
