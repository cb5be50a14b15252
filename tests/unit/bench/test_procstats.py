"""CPU seconds and peak RSS of a process from /proc."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.procstats import control_plane_pids, parse_stat_cpu_seconds, parse_status_kib, sample


def test_stat_line_with_spaces_and_parentheses_in_the_name() -> None:
    fields = ["S"] + ["0"] * 10 + ["250", "50"] + ["0"] * 30
    line = "1234 (my (odd) name) " + " ".join(fields)
    assert parse_stat_cpu_seconds(line, clock_ticks=100) == 3.0


def test_status_entries_in_kib() -> None:
    status = "Name:\tpython\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n"
    assert parse_status_kib(status, "VmHWM") == 204800
    assert parse_status_kib(status, "VmRSS") == 102400
    assert parse_status_kib(status, "VmSwap") == 0


def test_sample_of_a_busy_child_and_of_a_gone_process() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time\nt=time.process_time()\nwhile time.process_time()-t<0.3: pass\n"
         "print('done', flush=True)\nimport sys; sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "done"
        figures = sample(child.pid)
        assert figures is not None
        assert figures.cpu_seconds >= 0.25
        assert figures.peak_rss_mib >= figures.rss_mib > 1
    finally:
        child.communicate("")
    assert sample(child.pid) is None, "a reaped process has no /proc entry"


def test_control_plane_pids_are_read_beside_a_local_clusters_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "pids").mkdir()
    (tmp_path / "pids" / "kube-apiserver.pid").write_text(f"{os.getpid()}\n")  # a process that exists
    (tmp_path / "pids" / "etcd.pid").write_text("not a pid")
    assert control_plane_pids(tmp_path / "kubeconfig") == {"apiserver": os.getpid()}


def test_no_control_plane_pids_for_a_cluster_we_did_not_start(tmp_path: Path) -> None:
    assert control_plane_pids(tmp_path / "kind-kubeconfig") == {}
    (tmp_path / "pids").mkdir()
    (tmp_path / "pids" / "kube-apiserver.pid").write_text("999999999")  # gone (beyond pid_max)
    assert control_plane_pids(tmp_path / "kubeconfig") == {}
