"""CPU seconds and peak RSS of a process from /proc."""

from __future__ import annotations

import subprocess
import sys

from bench.procstats import parse_stat_cpu_seconds, parse_status_kib, sample


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
