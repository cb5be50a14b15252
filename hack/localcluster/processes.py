"""Starting and stopping the cluster's processes by saved PID, and only those.

Other people run their own clusters and programs on the same machine, so nothing here ever
looks processes up by name. A PID file is trusted only when the process behind it still runs
the expected binary *and* its command line mentions this cluster's state directory; a PID that
was recycled for something else is left alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessSpec:
    """Everything needed to (re)start one component and to recognise it later."""

    name: str
    argv: tuple[str, ...]
    # Text that must appear in the process's command line; the cluster's state directory.
    marker: str
    log_path: Path
    pid_path: Path
    env: Mapping[str, str] | None = None

    @property
    def binary(self) -> Path:
        return Path(self.argv[0])


def _read_pid(pid_path: Path) -> int | None:
    try:
        return int(pid_path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _proc_state(pid: int) -> str | None:
    """The one-letter state from /proc/<pid>/stat, or None when the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may contain spaces; the state follows the last ')'.
    return stat.rsplit(")", 1)[1].split()[0]


def _reap(pid: int) -> None:
    """Collect the exit status if `pid` is our own child, so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def process_matches(pid: int, binary: Path, marker: str) -> bool:
    """True when `pid` is alive, runs `binary` and names the path `marker` in its command line."""
    state = _proc_state(pid)
    if state is None or state in ("Z", "X"):
        return False
    try:
        exe = os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    args = [part.decode(errors="replace") for part in cmdline if part]
    expected = str(binary.resolve())
    same_binary = exe == expected or (bool(args) and str(Path(args[0]).resolve()) == expected)
    return same_binary and any(names_path(arg, marker) for arg in args)


def names_path(arg: str, path: str) -> bool:
    """True when `arg` mentions `path` itself or a path inside it.

    A plain substring test is not enough: the state directory of cluster ``pykueue`` is a prefix
    of that of ``pykueue-e2e``, so a recycled PID now running the e2e cluster's etcd would pass
    as the ``pykueue`` cluster's own and be stopped by its ``down``.
    """
    start = arg.find(path)
    while start != -1:
        end = start + len(path)
        if end == len(arg) or arg[end] == "/":
            return True
        start = arg.find(path, start + 1)
    return False


def running_pid(spec: ProcessSpec) -> int | None:
    """The PID saved for `spec` if that process is still the one we started, else None."""
    pid = _read_pid(spec.pid_path)
    if pid is None:
        return None
    _reap(pid)
    return pid if process_matches(pid, spec.binary, spec.marker) else None


def start(spec: ProcessSpec) -> int:
    """Start `spec` detached from our session (it outlives the CLI), logging to its log file."""
    spec.log_path.parent.mkdir(parents=True, exist_ok=True)
    spec.pid_path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **(spec.env or {})}
    with spec.log_path.open("ab") as log:
        log.write(f"\n==> {time.strftime('%Y-%m-%dT%H:%M:%S')} starting {' '.join(spec.argv)}\n".encode())
        log.flush()
        proc = subprocess.Popen(
            list(spec.argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    spec.pid_path.write_text(f"{proc.pid}\n")
    _wait_recognisable(proc.pid, spec)
    return proc.pid


def _wait_recognisable(pid: int, spec: ProcessSpec, timeout: float = 5.0) -> None:
    """Wait until the new process shows its command line (or has already exited).

    Popen can return while the kernel is still completing the exec, when /proc/<pid>/cmdline is
    briefly empty; a stop() in that window would not recognise the process as ours.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process_matches(pid, spec.binary, spec.marker) or exited(pid):
            return
        time.sleep(0.005)


def stop(spec: ProcessSpec, *, timeout: float = 15.0) -> bool:
    """Stop the saved process of `spec` (SIGTERM, then SIGKILL after `timeout`).

    Returns True when a process was stopped. The PID file is removed either way, since after
    this call it no longer names a process we own.
    """
    pid = running_pid(spec)
    stopped = False
    if pid is not None:
        _signal(pid, signal.SIGTERM)
        if not _wait_gone(pid, timeout):
            _signal(pid, signal.SIGKILL)
            _wait_gone(pid, 5.0)
        stopped = True
    with contextlib.suppress(FileNotFoundError):
        spec.pid_path.unlink()
    return stopped


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _wait_gone(pid: int, timeout: float) -> bool:
    """Wait until `pid` (already verified as ours) has exited; a process tearing itself down can
    briefly show an empty command line, so the check is on the process state, not the marker."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if exited(pid):
            return True
        time.sleep(0.05)
    return exited(pid)


def exited(pid: int) -> bool:
    """True when `pid` is no longer a live process (reaping it if it was our child)."""
    _reap(pid)
    state = _proc_state(pid)
    return state is None or state in ("Z", "X")


def tail(path: Path, lines: int = 5) -> Sequence[str]:
    """The last `lines` lines of a log file, for error messages."""
    try:
        return path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def stop_child(
    process: subprocess.Popen[bytes], *, timeout: float = 30.0, sig: int = signal.SIGTERM, group: bool = False
) -> None:
    """Stop a child this program started with ``start_new_session=True``: ``sig`` to it (to its
    whole process group with ``group``), then SIGKILL to that process group after ``timeout``.
    The group is the child's own session, so a hung worker (gunicorn's, py-spy's target) cannot
    outlive it and nothing else on the machine is touched."""
    if process.poll() is not None:
        return
    if group:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
    else:
        process.send_signal(sig)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
