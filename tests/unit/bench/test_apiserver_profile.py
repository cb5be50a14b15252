"""The apiserver's CPU profiles over windows of a baseline run."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bench.apiserver_profile import (
    NOT_SERVED,
    ApiserverProfiler,
    Captured,
    Window,
    parse_windows,
    serves_profiles,
)
from bench.baseline import build_parser, main
from pykueue.kube.transport import HttpResponse


class PprofServer:
    """Answers the pprof paths as an apiserver started with (or without) --profiling does."""

    def __init__(self, *, profiling: bool = True, fail: bool = False) -> None:
        self.profiling = profiling
        self.fail = fail
        self.requests: list[tuple[str, list[tuple[str, str]], Any]] = []
        self.lock = threading.Lock()

    def request(self, method: str, path: str, *, query: list[tuple[str, str]], body: Any,
                headers: dict[str, str], timeout: Any, stream: bool) -> HttpResponse:
        with self.lock:
            self.requests.append((path, query, timeout))
        if self.fail:
            raise ConnectionError("connection refused")
        if not self.profiling:
            return HttpResponse(404, data=b"404 page not found")
        if path == "/debug/pprof/":
            return HttpResponse(200, data=b"<html>profiles</html>")
        seconds = dict(query)["seconds"]
        return HttpResponse(200, data=f"profile of {seconds}s".encode())

    def reload_credentials(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_windows_are_seconds_from_the_first_create_whole_seconds_long_in_order() -> None:
    assert parse_windows("0-60, 150-210") == [Window(0, 60), Window(150, 60)]
    assert parse_windows("0.5-10.5") == [Window(0.5, 10)]
    assert Window(150, 60).label == "150-210s"
    for bad, why in [
        ("", "none given"),
        ("60", "START-END"),
        ("a-b", "expected START-END"),
        ("10-5", "START < END"),
        ("0-0.5", "whole number"),
        ("0-60,30-90", "starts before the previous one ends"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_windows(bad)


def test_an_apiserver_without_profiling_is_told_apart() -> None:
    assert serves_profiles(PprofServer())
    assert not serves_profiles(PprofServer(profiling=False))
    assert not serves_profiles(PprofServer(fail=True))


def test_each_window_is_one_profile_request_of_its_length_written_to_its_own_file(tmp_path: Path) -> None:
    server = PprofServer()
    profiler = ApiserverProfiler(server, tmp_path / "prof", "kueue-qps-0", [Window(0, 7), Window(0.05, 3)])
    profiler.start(time.monotonic())
    deadline = time.monotonic() + 5
    while len(server.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    captured = profiler.finish()
    assert [c.window for c in captured] == [Window(0, 7), Window(0.05, 3)]
    assert [c.error for c in captured] == [None, None]
    first, second = (c.path for c in captured)
    assert first == tmp_path / "prof" / "apiserver-kueue-qps-0-0-7s.pprof"
    assert first.read_bytes() == b"profile of 7s"
    assert second is not None and second.read_bytes() == b"profile of 3s"
    assert [(path, query) for path, query, _ in server.requests] == [
        ("/debug/pprof/profile", [("seconds", "7")]),
        ("/debug/pprof/profile", [("seconds", "3")]),
    ]
    # The read timeout covers the sampling: the apiserver answers only when it ends.
    assert all(timeout[1] > int(dict(query)["seconds"]) for _, query, timeout in server.requests)


def test_windows_the_run_does_not_reach_are_skipped_and_failures_reported(tmp_path: Path) -> None:
    profiler = ApiserverProfiler(PprofServer(), tmp_path, "run", [Window(3600, 60)])
    profiler.start(time.monotonic())
    [skipped] = profiler.finish()
    assert skipped.path is None and skipped.error == "the run ended before this window"
    assert list(tmp_path.iterdir()) == []

    [missing] = _one_window_against(PprofServer(profiling=False), tmp_path)
    assert missing.path is None and missing.error == NOT_SERVED

    [failed] = _one_window_against(PprofServer(fail=True), tmp_path)
    assert failed.path is None and failed.error is not None and "connection refused" in failed.error


def _one_window_against(server: PprofServer, out_dir: Path) -> list[Captured]:
    """A run whose one window's request has been sent before the run ends."""
    profiler = ApiserverProfiler(server, out_dir, "run", [Window(0, 1)])
    profiler.start(time.monotonic())
    deadline = time.monotonic() + 5
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    return profiler.finish()


def test_the_command_line_checks_the_windows_before_touching_a_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["--apiserver-profile", "/tmp/p"])
    assert args.apiserver_profile_windows == "0-60"
    assert main(["--apiserver-profile", "/tmp/p", "--apiserver-profile-windows", "60-30",
                 "--kubeconfig", "/nonexistent"]) == 2
    assert "apiserver profile window '60-30'" in capsys.readouterr().err
