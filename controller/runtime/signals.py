"""Graceful shutdown on SIGTERM/SIGINT: the first signal asks, a second one insists.

Kubernetes sends SIGTERM and waits ``terminationGracePeriodSeconds`` before SIGKILL. The first
signal sets an Event that the main loop waits on, so the controller stops its workers, releases
its Lease (letting a standby take over at once) and exits cleanly. A second signal exits
immediately with status 1, for an operator whose Ctrl-C did not seem to work.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from types import FrameType

log = logging.getLogger(__name__)


def install_shutdown_handlers(stop: threading.Event) -> None:
    """Route SIGTERM and SIGINT to ``stop`` (call from the main thread)."""

    def handle(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if stop.is_set():
            log.warning("second signal; exiting now", extra={"signal": name})
            os._exit(1)
        log.info("shutting down", extra={"signal": name})
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
