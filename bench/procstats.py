"""CPU seconds and peak resident memory of another process, read from ``/proc``.

Kueue's performance runner records the controller's user/sys CPU and maxrss from the process
it started; reading ``/proc/<pid>`` gives the same figures for a process we did not fork (the
e2e session's controller) and lets us sample while it runs, not only after it exits.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcSample:
    cpu_seconds: float  # user + system, this process only (threads included)
    rss_mib: float
    peak_rss_mib: float  # VmHWM: the high-water mark of the resident set


def parse_stat_cpu_seconds(stat_line: str, clock_ticks: int = _CLOCK_TICKS) -> float:
    """utime + stime of a ``/proc/<pid>/stat`` line. The command name (field 2) may contain
    spaces and parentheses, so fields are counted from the last ``)``."""
    fields = stat_line[stat_line.rindex(")") + 2 :].split()
    # After the name: state is field 3, so utime (14) and stime (15) are at offsets 11 and 12.
    return (int(fields[11]) + int(fields[12])) / clock_ticks


def parse_status_kib(status_text: str, key: str) -> int:
    """A ``VmRSS``/``VmHWM``-style entry of ``/proc/<pid>/status`` in KiB (0 when absent)."""
    for line in status_text.splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    return 0


def sample(pid: int) -> ProcSample | None:
    """The process's figures now, or None when it no longer exists (or is not readable)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            cpu = parse_stat_cpu_seconds(fh.read())
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            status = fh.read()
    except (OSError, ValueError, IndexError):
        return None
    return ProcSample(
        cpu_seconds=cpu,
        rss_mib=parse_status_kib(status, "VmRSS") / 1024,
        peak_rss_mib=parse_status_kib(status, "VmHWM") / 1024,
    )


# The local cluster's components whose cost a benchmark reports beside the controller's, by the
# name their PID file has in the cluster's directory (hack/localcluster/layout.py).
CONTROL_PLANE = {"apiserver": "kube-apiserver", "etcd": "etcd"}


def control_plane_pids(kubeconfig: str | Path) -> dict[str, int]:
    """The running apiserver's and etcd's PIDs of the local cluster ``kubeconfig`` belongs to
    (``hack.localcluster`` keeps a cluster's kubeconfig, and its ``pids/`` directory, in one
    place). Empty for a cluster we did not start, such as kind's, whose processes live in a
    container: the figures are then simply not reported."""
    root = Path(kubeconfig).parent
    pids: dict[str, int] = {}
    for name, component in CONTROL_PLANE.items():
        try:
            pid = int((root / "pids" / f"{component}.pid").read_text().strip())
        except (OSError, ValueError):
            continue
        if sample(pid) is not None:
            pids[name] = pid
    return pids
