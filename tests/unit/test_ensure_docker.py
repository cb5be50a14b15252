"""hack/ensure-docker.sh with stand-ins for docker, dockerd and apt-get: each way Docker can be
missing ends in one line saying what is missing, and a daemon someone else runs is left alone.

The script runs with a PATH of stand-ins plus links to the system's programs minus the real
docker, dockerd and apt-get, so the machine's own Docker never changes the outcome.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.unit.test_kind_script import system_tools_without

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "hack" / "ensure-docker.sh"
BASH = shutil.which("bash") or "/bin/bash"

WORKING_DOCKER = '#!/bin/bash\necho "docker $*" >>"$CALLS"\nexit 0\n'
# `docker info` answers only once the stand-in dockerd has written its pid file.
DOCKER_NEEDS_DAEMON = (
    '#!/bin/bash\necho "docker $*" >>"$CALLS"\n'
    '[ -f "$PYKUEUE_CACHE/docker/dockerd.pid.daemon" ] && exit 0\n'
    'echo "Cannot connect to the Docker daemon" >&2\nexit 1\n'
)
DYING_DOCKERD = '#!/bin/bash\necho "dockerd $*" >>"$CALLS"\necho "failed to start daemon: no cgroups" >&2\nexit 1\n'
# A daemon that writes its pid file (as dockerd --pidfile does) and runs until stopped.
LIVING_DOCKERD = (
    '#!/bin/bash\necho "dockerd $*" >>"$CALLS"\n'
    'while [ $# -gt 0 ]; do [ "$1" = --pidfile ] && echo $$ >"$2"; shift; done\n'
    'trap "exit 0" TERM\nwhile true; do sleep 0.2; done\n'
)


def run(tmp_path: Path, action: str, **tools: str) -> tuple[int, list[str], str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in tools.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    system = system_tools_without(tmp_path / "system", "docker", "dockerd", "apt-get", "sudo")
    calls = tmp_path / "calls.log"
    calls.touch()
    env = {
        "PATH": f"{bin_dir}:{system}",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "CALLS": str(calls),
        "PYKUEUE_CACHE": str(tmp_path / "cache"),
        "DOCKERD_WAIT": "5",
    }
    result = subprocess.run(
        [BASH, str(SCRIPT), action], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    return result.returncode, calls.read_text().splitlines(), result.stdout, result.stderr


def test_a_daemon_that_answers_is_used_as_it_is(tmp_path: Path) -> None:
    code, calls, out, err = run(tmp_path, "start", docker=WORKING_DOCKER)
    assert (code, out, err) == (0, "", "")
    assert set(calls) == {"docker info"}, "no install, no dockerd"
    code, calls, out, err = run(tmp_path, "stop", docker=WORKING_DOCKER)
    assert code == 0 and set(calls) == {"docker info"}, "stop never touches a daemon start did not start"


def test_no_docker_and_no_apt_is_one_line(tmp_path: Path) -> None:
    code, calls, _, err = run(tmp_path, "start")
    assert code == 1
    assert calls == []
    assert err == (
        "ensure-docker: Docker is not installed and this is not a Debian-like system; "
        "install Docker Engine and re-run.\n"
    )


def test_a_daemon_that_dies_at_start_up_is_named_with_its_last_log_line(tmp_path: Path) -> None:
    if os.geteuid() != 0 and not shutil.which("sudo"):
        code, _, _, err = run(tmp_path, "start", docker=DOCKER_NEEDS_DAEMON, dockerd=DYING_DOCKERD)
        assert code == 1 and err.count("\n") == 1 and "needs root" in err
        return
    code, calls, _, err = run(tmp_path, "start", docker=DOCKER_NEEDS_DAEMON, dockerd=DYING_DOCKERD)
    assert code == 1
    assert any(call.startswith("dockerd --pidfile") for call in calls)
    assert err == "ensure-docker: dockerd exited at start-up: failed to start daemon: no cgroups\n"
    assert not (tmp_path / "cache" / "docker" / "dockerd.pid").exists()


def test_a_started_daemon_is_reported_and_stopped_again(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("starting the stand-in daemon needs root here (the script runs dockerd as root)")
    code, calls, out, err = run(tmp_path, "start", docker=DOCKER_NEEDS_DAEMON, dockerd=LIVING_DOCKERD)
    assert (code, out) == (0, "started\n"), err
    assert next(call for call in calls if call.startswith("dockerd")).startswith("dockerd --pidfile")
    pid = int((tmp_path / "cache" / "docker" / "dockerd.pid.daemon").read_text())
    os.kill(pid, 0)  # running
    code, _, _, err = run(tmp_path, "stop", docker=DOCKER_NEEDS_DAEMON, dockerd=LIVING_DOCKERD)
    assert code == 0, err
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError(f"dockerd stand-in {pid} still runs after stop")
    assert not (tmp_path / "cache" / "docker" / "dockerd.pid").exists()
