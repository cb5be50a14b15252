"""The apiserver's CPU profile over windows of a benchmark run.

On two shared cores the local apiserver, not the controller, sets the pace of the baseline's
first phase ("The first hundred seconds on a cluster" in ``docs/performance.md``); its process
CPU (:mod:`bench.procstats`) says how much it takes, a profile says on what: request handling by
verb, CEL validation, managed fields, watch encoding, client-certificate checks, garbage
collection. The apiserver serves Go's ``/debug/pprof`` when started with ``--profiling`` (the
local cluster does so with ``PYKUEUE_APISERVER_PROFILING=1``, :mod:`hack.localcluster.components`);
``GET /debug/pprof/profile?seconds=N`` samples N seconds and answers with a gzipped protobuf
profile that ``go tool pprof`` reads.

:class:`ApiserverProfiler` takes one profile per :class:`Window` of a run, timed from the run's
first create, on a thread of its own, and writes each to a file. A window the run does not
reach is skipped; one under way when the run ends is waited for (its last seconds then cover
the run's cleanup).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pykueue.kube.transport import Transport

PPROF_INDEX = "/debug/pprof/"
PPROF_PROFILE = "/debug/pprof/profile"
NOT_SERVED = (
    "the apiserver does not serve /debug/pprof: bring the local cluster up with "
    "PYKUEUE_APISERVER_PROFILING=1 (python -m hack.localcluster down, then up), or start the "
    "apiserver with --profiling"
)
# Beyond a window's own seconds: the apiserver answers once the sampling ends.
ANSWER_GRACE_S = 30.0


@dataclass(frozen=True)
class Window:
    """Seconds ``start_s`` to ``start_s + seconds`` after the run's first create."""

    start_s: float
    seconds: int

    @property
    def label(self) -> str:
        return f"{self.start_s:g}-{self.start_s + self.seconds:g}s"


def parse_windows(text: str) -> list[Window]:
    """``"0-60,150-210"``: windows in seconds from the first create, whole seconds long (pprof
    samples whole seconds), in order and not overlapping (the apiserver runs one CPU profile at
    a time)."""
    windows: list[Window] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        start_text, sep, end_text = part.partition("-")
        try:
            start, end = float(start_text), float(end_text)
        except ValueError:
            raise ValueError(f"apiserver profile window {part!r}: expected START-END in seconds, e.g. 0-60") from None
        if not sep or start < 0 or end <= start or (end - start) != int(end - start):
            raise ValueError(
                f"apiserver profile window {part!r}: START-END with 0 <= START < END, a whole number of seconds long"
            )
        if windows and start < windows[-1].start_s + windows[-1].seconds:
            raise ValueError(f"apiserver profile window {part!r} starts before the previous one ends")
        windows.append(Window(start, int(end - start)))
    if not windows:
        raise ValueError("apiserver profile windows: none given")
    return windows


def serves_profiles(transport: Transport) -> bool:
    """Whether the apiserver answers ``/debug/pprof/`` (it does not without ``--profiling``)."""
    try:
        answer = transport.request(
            "GET", PPROF_INDEX, query=[], body=None, headers={"Accept": "text/html"}, timeout=(5.0, 30.0),
            stream=False,
        )
    except Exception:
        return False
    return answer.status == 200


@dataclass(frozen=True)
class Captured:
    """One window's outcome: the file written, or why there is none."""

    window: Window
    path: Path | None
    error: str | None = None


class ApiserverProfiler:
    """Profiles the apiserver over ``windows`` of one run; files are ``<out_dir>/apiserver-<label>-<window>.pprof``."""

    def __init__(self, transport: Transport, out_dir: Path, label: str, windows: list[Window]) -> None:
        self._transport = transport
        self._out_dir = out_dir
        self._label = label
        self._windows = windows
        self._ended = threading.Event()
        self._captured: list[Captured] = []
        self._thread: threading.Thread | None = None

    def start(self, started: float) -> None:
        """Begin timing the windows from ``started`` (``time.monotonic()`` of the first create)."""
        self._out_dir.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._run, args=(started,), name="apiserver-profiler", daemon=True)
        self._thread.start()

    def finish(self) -> list[Captured]:
        """The run has ended: windows not begun are skipped; one under way is waited for."""
        self._ended.set()
        if self._thread is not None:
            longest = max(w.seconds for w in self._windows)
            self._thread.join(longest + ANSWER_GRACE_S)
        return list(self._captured)

    def _run(self, started: float) -> None:
        for window in self._windows:
            if self._ended.wait(max(0.0, started + window.start_s - time.monotonic())):
                self._captured.append(Captured(window, None, "the run ended before this window"))
                continue
            self._captured.append(self._capture(window))

    def _capture(self, window: Window) -> Captured:
        try:
            answer = self._transport.request(
                "GET", PPROF_PROFILE, query=[("seconds", str(window.seconds))], body=None,
                headers={"Accept": "application/octet-stream"},
                timeout=(5.0, window.seconds + ANSWER_GRACE_S), stream=False,
            )
        except Exception as err:  # a figure, not the run: report and go on
            return Captured(window, None, f"profile request failed: {err}")
        if answer.status != 200:
            reason = NOT_SERVED if answer.status == 404 else f"HTTP {answer.status}"
            return Captured(window, None, reason)
        path = self._out_dir / f"apiserver-{self._label}-{window.label}.pprof"
        path.write_bytes(answer.data)
        return Captured(window, path)
