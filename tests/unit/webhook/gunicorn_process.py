"""Stopping a gunicorn started by a test, the way its arbiter expects to be stopped."""

from __future__ import annotations

import os
import signal
import subprocess


def stop_gunicorn(process: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """SIGTERM for gunicorn's graceful stop; SIGKILL the whole session if it does not end in time.

    The tests start gunicorn with ``start_new_session=True``, so the process group holds the
    arbiter and its workers: a hung worker cannot outlive the test.
    """
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
