"""Processes are stopped by saved PID only when that PID is still the process we started."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hack.localcluster import processes
from hack.localcluster.processes import ProcessSpec

PYTHON = sys.executable
SLEEP = "import time; time.sleep(60)"


def _spec(tmp_path: Path, marker: str | None = None) -> ProcessSpec:
    marker = marker or str(tmp_path)
    return ProcessSpec(
        name="sleeper",
        # A process that starts no children (a shell would leave its `sleep` behind when
        # stopped); the state directory is an extra argument, as in the real command lines.
        argv=(PYTHON, "-c", SLEEP, str(tmp_path)),
        marker=marker,
        log_path=tmp_path / "logs" / "sleeper.log",
        pid_path=tmp_path / "pids" / "sleeper.pid",
    )


@pytest.fixture
def started(tmp_path: Path) -> Iterator[tuple[ProcessSpec, int]]:
    spec = _spec(tmp_path)
    pid = processes.start(spec)
    yield spec, pid
    if processes.running_pid(spec):
        processes.stop(spec, timeout=2)


def test_start_saves_the_pid_and_logs_the_command(started: tuple[ProcessSpec, int]) -> None:
    spec, pid = started
    assert spec.pid_path.read_text().strip() == str(pid)
    assert processes.running_pid(spec) == pid
    assert "starting" in spec.log_path.read_text()


def test_stop_ends_the_process_and_forgets_its_pid(started: tuple[ProcessSpec, int]) -> None:
    spec, pid = started
    assert processes.stop(spec, timeout=5)
    assert processes.exited(pid)
    assert not spec.pid_path.exists()
    assert processes.running_pid(spec) is None


def test_a_pid_file_naming_someone_elses_process_is_not_trusted(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    spec.pid_path.parent.mkdir(parents=True)
    spec.pid_path.write_text(f"{os.getpid()}\n")  # this test process: a different binary
    assert processes.running_pid(spec) is None
    assert processes.stop(spec) is False
    assert not processes.exited(os.getpid())


def test_same_binary_without_our_marker_is_left_alone(tmp_path: Path) -> None:
    stranger = subprocess.Popen([PYTHON, "-c", SLEEP])
    try:
        spec = _spec(tmp_path)
        spec.pid_path.parent.mkdir(parents=True)
        spec.pid_path.write_text(f"{stranger.pid}\n")
        assert processes.stop(spec) is False
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_garbage_pid_file_means_not_running(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    spec.pid_path.parent.mkdir(parents=True)
    spec.pid_path.write_text("not-a-pid\n")
    assert processes.running_pid(spec) is None


def test_a_cluster_whose_name_extends_ours_is_not_ours(tmp_path: Path) -> None:
    """`pykueue`'s state directory is a prefix of `pykueue-e2e`'s; a recycled PID running the
    other cluster's process must not pass as ours."""
    ours, theirs = tmp_path / "clusters" / "pykueue", tmp_path / "clusters" / "pykueue-e2e"
    stranger = subprocess.Popen([PYTHON, "-c", SLEEP, f"--data-dir={theirs}/etcd-data"])
    try:
        spec = _spec(ours, marker=str(ours))
        spec.pid_path.parent.mkdir(parents=True)
        spec.pid_path.write_text(f"{stranger.pid}\n")
        assert processes.running_pid(spec) is None
        assert processes.stop(spec) is False
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


@pytest.mark.parametrize(
    ("arg", "named"),
    [
        ("/s/clusters/pykueue", True),
        ("--data-dir=/s/clusters/pykueue/etcd-data", True),
        ("--kubeconfig=/s/clusters/pykueue-e2e/kubeconfig", False),
        ("/s/clusters/pykueue2", False),
        ("/s/clusters/pykueue-e2e/x,/s/clusters/pykueue/y", True),
    ],
)
def test_names_path_matches_the_directory_and_what_is_inside_it_only(arg: str, named: bool) -> None:
    assert processes.names_path(arg, "/s/clusters/pykueue") is named
