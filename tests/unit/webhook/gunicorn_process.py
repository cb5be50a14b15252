"""Stopping a gunicorn started by a test, the way its arbiter expects to be stopped."""

from __future__ import annotations

import subprocess

from hack.localcluster.processes import stop_child


def stop_gunicorn(process: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """SIGTERM for gunicorn's graceful stop; SIGKILL the whole session if it does not end in time.

    The tests start gunicorn with ``start_new_session=True``, so the process group holds the
    arbiter and its workers: a hung worker cannot outlive the test.
    """
    stop_child(process, timeout=timeout)
