"""Missing prerequisites produce one-line fix-it messages, never tracebacks."""

from __future__ import annotations

import socket
import subprocess
import urllib.error
from pathlib import Path

import pytest

from hack.localcluster import __main__ as cli
from hack.localcluster import binaries
from hack.localcluster.errors import KubectlError, PrerequisiteError


def _go_reporting(version: str):
    def run(*args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args=["go"], returncode=0, stdout=f"{version}\n", stderr="")

    return run


def test_no_go_says_how_to_install_it() -> None:
    with pytest.raises(PrerequisiteError) as err:
        binaries.check_go("1.26", which=lambda _: None)
    assert "Go is not installed" in str(err.value)
    assert "https://go.dev/dl" in str(err.value)


def test_old_go_is_refused_with_the_version_needed() -> None:
    with pytest.raises(PrerequisiteError) as err:
        binaries.check_go("1.26", which=lambda _: "/usr/bin/go", run=_go_reporting("go1.22.5"))
    assert "Go 1.22 is too old" in str(err.value)
    assert "1.26 or newer" in str(err.value)


@pytest.mark.parametrize("version", ["go1.26.0", "go1.27.1", "go2.0"])
def test_recent_go_is_accepted(version: str) -> None:
    binaries.check_go("1.26", which=lambda _: "/usr/bin/go", run=_go_reporting(version))


def test_unreachable_module_proxy_names_the_proxy_and_the_fix() -> None:
    def offline(url: str, timeout: float) -> None:
        raise urllib.error.URLError("Name or service not known")

    with pytest.raises(PrerequisiteError) as err:
        binaries.check_module_proxy("v1.36.3", proxy="https://proxy.example", opener=offline)
    message = str(err.value)
    assert "cannot reach the Go module proxy at https://proxy.example" in message
    assert "GOPROXY" in message


def test_module_proxy_probe_asks_for_the_pinned_kubernetes_module() -> None:
    asked: list[str] = []
    binaries.check_module_proxy(
        "v1.36.3", proxy="https://proxy.example", opener=lambda url, timeout: asked.append(url)
    )
    assert asked == ["https://proxy.example/k8s.io/kubernetes/@v/v1.36.3.info"]


def test_versions_file_pins_every_cluster_binary() -> None:
    pins = binaries.read_versions()
    for _, pin_key in binaries.BINARY_SOURCES.values():
        assert pins[pin_key].startswith("v"), pin_key
    assert pins["K8S_VERSION"].startswith("v1.36.")


def _fake_binaries(cache: Path) -> None:
    """Stamped, executable stand-ins for every pinned binary, so no build is attempted."""
    pins = binaries.read_versions()
    for name in binaries.CLUSTER_BINARIES:
        path = binaries.binary_path(name, pins, cache / "bin")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\nexit 1\n")
        path.chmod(0o755)
        _, pin_key = binaries.BINARY_SOURCES[name]
        (path.parent / ".stamp").write_text(pins[pin_key] + "\n")


def test_missing_binaries_lists_unbuilt_and_unstamped_pins(tmp_path: Path) -> None:
    pins = binaries.read_versions()
    assert set(binaries.missing_binaries(pins, tmp_path / "bin")) == set(binaries.CLUSTER_BINARIES)
    _fake_binaries(tmp_path)
    assert binaries.missing_binaries(pins, tmp_path / "bin") == []
    (binaries.binary_path("etcd", pins, tmp_path / "bin").parent / ".stamp").write_text("v0.0.1\n")
    assert binaries.missing_binaries(pins, tmp_path / "bin") == ["etcd"]


def _run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.err


def test_cli_without_go_prints_one_line_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PYKUEUE_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    code, err = _run_cli(["up", "--name", "prereq-test"], capsys)
    assert code == 1
    assert err.startswith("localcluster: Go is not installed")
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_cli_with_a_taken_pinned_port_prints_one_line_and_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_binaries(tmp_path)
    monkeypatch.setenv("PYKUEUE_CACHE", str(tmp_path))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        monkeypatch.setenv("PYKUEUE_APISERVER_PORT", str(port))
        code, err = _run_cli(["up", "--name", "prereq-test"], capsys)
    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(
        f"localcluster: port {port} on 127.0.0.1 ($PYKUEUE_APISERVER_PORT) is already in use"
    )
    assert not (tmp_path / "clusters" / "prereq-test" / "pids").exists()


def test_cli_rejects_a_bad_cluster_name_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run_cli(["status", "--name", "Not_A_Name"], capsys)
    assert code == 1
    assert err.strip() == (
        "localcluster: cluster name 'Not_A_Name' is invalid: use 1-40 lower-case letters, digits and '-', "
        "starting and ending with a letter or digit"
    )


def test_kubectl_errors_show_the_request_and_kubectls_message_without_local_paths() -> None:
    err = KubectlError(
        1,
        ["kubectl", "--kubeconfig", "/s/kubeconfig", "--cache-dir", "/s/cache", "get", "cq"],
        "",
        'error: the server doesn\'t have a resource type "cq"\n',
    )
    assert str(err) == 'kubectl get cq failed (exit 1): error: the server doesn\'t have a resource type "cq"'
