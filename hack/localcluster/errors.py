"""Errors the local cluster reports to a person rather than to a debugger.

Every error here carries a one-line message that says what is wrong and how to fix it; the CLI
prints that line and exits non-zero instead of showing a traceback.
"""

from __future__ import annotations

import subprocess


class LocalClusterError(Exception):
    """Base class: something about the local cluster went wrong; `str(err)` is the whole story."""


class PrerequisiteError(LocalClusterError):
    """A tool, binary, network access or free port the cluster needs is missing."""


class ComponentFailedError(LocalClusterError):
    """A control-plane process exited or never became ready; the message names its log file."""


class UnsupportedOperationError(LocalClusterError):
    """The operation needs control of the processes (restart, compaction) but the cluster is external."""


class KubectlError(LocalClusterError, subprocess.CalledProcessError):
    """A failed kubectl call; unlike CalledProcessError its message includes kubectl's output."""

    def __str__(self) -> str:
        detail = (self.stderr or self.stdout or "").strip()
        args = list(self.cmd[1:])
        for flag in ("--kubeconfig", "--cache-dir"):  # drop the local paths, keep what was asked
            if flag in args:
                at = args.index(flag)
                del args[at : at + 2]
        return f"kubectl {' '.join(args)} failed (exit {self.returncode}): {detail}"
