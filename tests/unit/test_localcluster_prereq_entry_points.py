"""A missing prerequisite, met through the real entry points, reads as one fix-it line.

tests/unit/test_localcluster_prereqs.py checks the Python checks one by one; here the programs a
person actually runs on a fresh machine are started as subprocesses, the way `make test`,
`make cluster-up` and `.ci/run` start them: `hack/build-binaries.sh` (behind `make binaries`),
`make binaries` itself, and `python -m hack.localcluster up`. Each is given a PATH holding only
the tools it may use, with `go` absent or replaced by a stand-in that reports a version, and an
empty `PYKUEUE_CACHE`, so nothing real is built or started. Each failure must say what is missing
and how to fix it, exit non-zero, and show no Python traceback.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hack.localcluster import binaries

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "hack" / "build-binaries.sh"
PINS = binaries.read_versions()
# What hack/build-binaries.sh runs before it would need Go (and `make` to run it).
SCRIPT_TOOLS = ("bash", "env", "dirname", "mkdir", "cat", "sed", "sort", "head", "curl", "flock", "ln", "rm")


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def _tools(tmp_path: Path, *, without: tuple[str, ...] = (), go_version: str | None = None) -> Path:
    """A directory to use as the whole PATH: links to the real tools, and a `go` stand-in if asked."""
    bin_dir = tmp_path / "path"
    bin_dir.mkdir()
    for tool in SCRIPT_TOOLS:
        if tool in without:
            continue
        real = shutil.which(tool)
        assert real is not None, f"{tool} is a prerequisite of this machine (see README) but is not on PATH"
        (bin_dir / tool).symlink_to(real)
    if go_version is not None:
        go = bin_dir / "go"  # answers `go env GOVERSION` like a real toolchain of that version
        go.write_text(f"#!/bin/sh\necho {go_version}\n")
        go.chmod(0o755)
    return bin_dir


def _run(argv: list[str], path: Path, tmp_path: Path, **extra_env: str) -> Outcome:
    env = {
        "HOME": str(tmp_path / "home"),
        "PATH": str(path),
        "PYKUEUE_CACHE": str(tmp_path / "cache"),
        "LANG": "C.UTF-8",
        **extra_env,
    }
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    return Outcome(result.returncode, result.stdout, result.stderr)


def _assert_one_fix_it_line(outcome: Outcome, prefix: str) -> str:
    assert outcome.returncode != 0, outcome
    assert "Traceback" not in outcome.stderr + outcome.stdout, outcome.stderr
    assert len(outcome.error_lines) == 1, outcome.stderr
    line = outcome.error_lines[0]
    assert line.startswith(prefix), line
    return line


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A loopback URL nothing answers: the port is held (so no one else takes it) but not listened on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def _stamp_cached_binaries(cache: Path) -> None:
    """Finished builds of every pin, as build-binaries.sh leaves them (stand-in executables)."""
    builds = {
        "kubernetes": (
            PINS["K8S_VERSION"],
            ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"),
        ),
        "etcd": (PINS["ETCD_VERSION"], ("etcd",)),
        "kwok": (PINS["KWOK_VERSION"], ("kwok",)),
        "helm": (PINS["HELM_VERSION"], ("helm",)),
    }
    for target, (version, names) in builds.items():
        directory = cache / "bin" / f"{target}-{version}"
        directory.mkdir(parents=True)
        for name in names:
            (directory / name).write_text("#!/bin/sh\nexit 1\n")
            (directory / name).chmod(0o755)
        (directory / ".stamp").write_text(f"{version}\n")
    crds = cache / f"kueue-{PINS['KUEUE_VERSION']}" / "crds"
    crds.mkdir(parents=True)
    (crds / "kueue.x-k8s.io_workloads.yaml").write_text("kind: CustomResourceDefinition\n")
    (crds / ".stamp").write_text(f"{PINS['KUEUE_VERSION']}\n")


# ------------------------------------------------------------ hack/build-binaries.sh


def test_build_script_without_go_says_how_to_install_it(tmp_path: Path) -> None:
    outcome = _run(["bash", str(BUILD_SCRIPT)], _tools(tmp_path), tmp_path)
    line = _assert_one_fix_it_line(outcome, "build-binaries: Go is not installed.")
    assert f"Install Go {PINS['GO_MIN']} or newer (https://go.dev/dl)" in line


def test_build_script_with_an_old_go_names_the_version_needed(tmp_path: Path) -> None:
    outcome = _run(["bash", str(BUILD_SCRIPT)], _tools(tmp_path, go_version="go1.22.5"), tmp_path)
    line = _assert_one_fix_it_line(outcome, "build-binaries: Go 1.22.5 is too old;")
    assert f"needs Go {PINS['GO_MIN']} or newer" in line


def test_build_script_with_an_unreachable_proxy_names_it_and_the_fix(
    tmp_path: Path, refused_url: str
) -> None:
    tools = _tools(tmp_path, go_version="go1.26.1")
    outcome = _run(["bash", str(BUILD_SCRIPT)], tools, tmp_path, GOPROXY=f"{refused_url},direct")
    line = _assert_one_fix_it_line(
        outcome, f"build-binaries: cannot reach the Go module proxy at {refused_url} ("
    )
    assert "Check the network or set GOPROXY" in line
    assert not (tmp_path / "cache" / "bin" / f"kubernetes-{PINS['K8S_VERSION']}").exists(), (
        "nothing half-built"
    )


def test_build_script_without_curl_says_so_rather_than_blaming_the_network(tmp_path: Path) -> None:
    outcome = _run(
        ["bash", str(BUILD_SCRIPT)], _tools(tmp_path, without=("curl",), go_version="go1.26.1"), tmp_path
    )
    line = _assert_one_fix_it_line(outcome, "build-binaries: curl is not installed")
    assert "install curl and re-run" in line


def test_build_script_with_a_warm_cache_needs_neither_go_nor_network(
    tmp_path: Path, refused_url: str
) -> None:
    _stamp_cached_binaries(tmp_path / "cache")
    outcome = _run(["bash", str(BUILD_SCRIPT)], _tools(tmp_path), tmp_path, GOPROXY=refused_url)
    current = tmp_path / "cache" / "bin" / "current"
    assert outcome.returncode == 0, outcome.stderr
    assert outcome.stdout.strip() == str(current)
    assert (current / "kube-apiserver").resolve() == (
        tmp_path / "cache" / "bin" / f"kubernetes-{PINS['K8S_VERSION']}" / "kube-apiserver"
    )
    assert (
        (current / "etcd").is_symlink()
        and (current / "kwok").is_symlink()
        and (current / "helm").is_symlink()
    )


def test_make_binaries_without_go_stops_with_the_build_scripts_message(tmp_path: Path) -> None:
    """`make test` reaches the binaries through this target, so this is what a fresh machine shows."""
    make = shutil.which("make")
    assert make is not None, "make is a prerequisite (see README) but is not on PATH"
    outcome = _run([make, "--no-print-directory", "binaries"], _tools(tmp_path), tmp_path)
    assert outcome.returncode != 0
    assert "Traceback" not in outcome.stderr + outcome.stdout
    assert outcome.error_lines[0].startswith("build-binaries: Go is not installed."), outcome.stderr
    assert all(line.startswith("make: ***") for line in outcome.error_lines[1:]), outcome.stderr


# ------------------------------------------------------------ python -m hack.localcluster up


def _cluster_up(tmp_path: Path, path: Path, **extra_env: str) -> Outcome:
    argv = [sys.executable, "-m", "hack.localcluster", "up", "--name", "prereq-entry"]
    return _run(argv, path, tmp_path, **extra_env)


def test_cluster_up_without_go_says_how_to_install_it(tmp_path: Path) -> None:
    line = _assert_one_fix_it_line(
        _cluster_up(tmp_path, _tools(tmp_path)), "localcluster: Go is not installed"
    )
    assert "https://go.dev/dl" in line


def test_cluster_up_with_an_unreachable_proxy_names_it_and_the_fix(tmp_path: Path, refused_url: str) -> None:
    outcome = _cluster_up(tmp_path, _tools(tmp_path, go_version="go1.26.1"), GOPROXY=refused_url)
    line = _assert_one_fix_it_line(
        outcome, f"localcluster: cannot reach the Go module proxy at {refused_url} ("
    )
    assert "set GOPROXY to a reachable proxy" in line


def test_cluster_up_with_a_taken_port_names_it_and_starts_nothing(tmp_path: Path) -> None:
    _stamp_cached_binaries(tmp_path / "cache")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        outcome = _cluster_up(tmp_path, _tools(tmp_path), PYKUEUE_APISERVER_PORT=str(port))
    line = _assert_one_fix_it_line(outcome, f"localcluster: port {port} on 127.0.0.1")
    assert "is already in use; stop whatever listens there" in line
    assert not (tmp_path / "cache" / "clusters" / "prereq-entry" / "pids").exists()


def test_the_stand_in_tools_path_really_lacks_go(tmp_path: Path) -> None:
    """Guards the tests above: with the real `go` reachable they would prove nothing."""
    path = _tools(tmp_path)
    assert shutil.which("go", path=str(path)) is None
    assert os.access(path / "bash", os.X_OK)


# ------------------------------------------------------------ python -m hack.run_pykueue (make cluster-up)


def test_starting_pykueue_without_built_binaries_names_the_make_target(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "hack.run_pykueue", "start", "--name", "prereq-entry"]
    line = _assert_one_fix_it_line(
        _run(argv, _tools(tmp_path), tmp_path), "run_pykueue: missing binaries kube-apiserver"
    )
    assert line.endswith("run `make binaries`")
