"""Run ``pykueue-controller`` as a local process for a benchmark, optionally under py-spy.

Kueue's runner starts minimalkueue as a subprocess with a fixed client QPS/burst, records its
CPU and memory, and stops it when the run is over; this does the same for our controller. Logs
go to a file (at WARNING, as Kueue logs at Error in its runs) so logging does not dominate the
measured CPU. With ``source_tree`` set, the controller is another checkout's (e.g. a git
worktree of an older commit): it runs as ``python -m controller.main`` with that tree as its
working directory and first on ``PYTHONPATH``, under this same interpreter and venv, so its
``controller`` and ``pykueue`` packages shadow this tree's editable install and two versions can
be compared side by side in one benchmark run. With ``config`` set, that Configuration
document is written to the work directory and passed as ``--config``. With ``profile_to`` set, ``py-spy record`` samples the controller's threads for
the whole run and writes collapsed stacks that :mod:`bench.profile_summary` turns into a list
of hot spots.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from hack.localcluster.processes import stop_child

from .procstats import ProcSample, sample

REPO_ROOT = Path(__file__).resolve().parents[1]
READY_TIMEOUT_S = 120.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def check_source_tree(path: Path) -> Path:
    """``path`` resolved, when it is a source tree this benchmark can start a controller from;
    else a ValueError naming what is missing."""
    resolved = path.expanduser().resolve()
    if not resolved.is_dir():
        raise ValueError(f"--controller-src {path}: not a directory")
    for needed in ("controller/main.py", "pykueue/__init__.py"):
        if not (resolved / needed).is_file():
            raise ValueError(f"--controller-src {path}: {needed} is missing (expected a checkout of this project)")
    return resolved


def controller_environment(source_tree: Path | None, base: dict[str, str] | None = None) -> dict[str, str]:
    """The controller's environment: ``base`` (default: ours) with ``source_tree`` first on
    ``PYTHONPATH`` when one is given."""
    env = dict(os.environ if base is None else base)
    if source_tree is not None:
        rest = env.get("PYTHONPATH")
        env["PYTHONPATH"] = str(source_tree) + (os.pathsep + rest if rest else "")
    return env


def py_spy_path() -> str | None:
    """The py-spy executable next to this interpreter, else on PATH (None when not installed)."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


@dataclass(frozen=True)
class SyncMilestones:
    """Wall-clock times (``time.time()``) at which a controller's log said its caches had synced;
    None: not logged (yet), or the controller says it elsewhere (pykueue: ``/metrics``, ``/readyz``)."""

    workloads_synced: float | None  # the Workload reconciler's caches synced
    all_synced: float | None  # every controller that started watching has synced its caches


class LocalProcess:
    """What the baseline reads of any admission controller it runs as a local process (pykueue's
    or Kueue's): its pid, CPU and memory samples, liveness, its log's tail and its ``/readyz``.
    Subclasses set ``process``, ``log_path`` and ``health_port`` when they start."""

    process: subprocess.Popen[bytes] | None
    log_path: Path
    health_port: int

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def sample(self) -> ProcSample | None:
        return sample(self.pid) if self.pid is not None else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _terminate(self) -> None:
        """SIGTERM, then SIGKILL to the process group after 30 s."""
        if self.process is not None:
            stop_child(self.process)

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def _wait_ready(self, what: str, timeout: float = READY_TIMEOUT_S, *, stop_if_exited: bool = False) -> None:
        """Poll ``/readyz`` until it answers 200; raise, naming ``what``, if the process exits
        first (stopping it too when ``stop_if_exited``) or ``timeout`` seconds pass (then it is
        stopped)."""
        assert self.process is not None, "launch() first"
        deadline = time.monotonic() + timeout
        while not self._ready():
            if self.process.poll() is not None:
                if stop_if_exited:
                    self.stop()
                raise RuntimeError(f"{what} exited during start-up:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{what} was not ready within {timeout:.0f}s:\n{self.log_tail()}")
            time.sleep(0.3)

    def stop(self) -> None:
        self._terminate()

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False


class ControllerProcess(LocalProcess):
    """One controller process with a given client rate limit; see the module docstring."""

    ready_means_informers_synced = True  # the manager's informers-synced readiness check

    def __init__(
        self,
        kubeconfig: str,
        *,
        qps: float,
        burst: int,
        workdir: Path,
        label: str,
        profile_to: Path | None = None,
        profile_mode: str = "cpu",
        log_level: str = "WARNING",
        source_tree: Path | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.qps = qps
        self.burst = burst
        self.workdir = workdir
        self.label = label
        self.profile_to = profile_to
        self.profile_mode = profile_mode
        self.log_level = log_level
        self.source_tree = source_tree
        self.config = config
        self.config_path = workdir / f"controller-{label}-config.yaml" if config is not None else None
        self.log_path = workdir / f"controller-{label}.log"
        self.health_port = 0
        self.metrics_port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.profiler: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Launch the controller and wait until it is ready (its informers synced)."""
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Start the process and return at once, before it is ready: a cold-start benchmark
        times the way to readiness itself (:mod:`bench.controller_cold_start`)."""
        self.health_port, self.metrics_port = _free_port(), _free_port()
        command = [
            sys.executable,
            "-m",
            "controller.main",
            "--kubeconfig",
            self.kubeconfig,
            "--no-leader-elect",
            "--health-addr",
            f"127.0.0.1:{self.health_port}",
            "--metrics-addr",
            f"127.0.0.1:{self.metrics_port}",
            "--log-format",
            "json",
            "--log-level",
            self.log_level,
            "--qps",
            str(self.qps),
            "--burst",
            str(self.burst),
        ]
        if self.config_path is not None:
            self.config_path.write_text(yaml.safe_dump(self.config, sort_keys=False))
            command += ["--config", str(self.config_path)]
        with self.log_path.open("wb") as log_file:
            self.process = subprocess.Popen(
                command,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.source_tree or REPO_ROOT,
                env=controller_environment(self.source_tree),
            )

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Poll ``/readyz`` until it answers 200; stop the process and raise if it exits or
        ``timeout`` seconds pass first."""
        self._wait_ready("the controller", timeout)

    def ready(self) -> bool:
        """``/readyz`` answers 200 now (every informer completed its first list)."""
        return self._ready()

    def start_profiler(self) -> bool:
        """Attach py-spy to the running controller (False when py-spy is not installed)."""
        spy = py_spy_path()
        if self.profile_to is None or self.pid is None or spy is None:
            return False
        self.profile_to.parent.mkdir(parents=True, exist_ok=True)
        # cpu: only the thread holding the GIL (where Python CPU goes); wall: every thread, idle
        # or not, rooted at its thread name (where each thread's time goes, waits included).
        mode = ["--gil"] if self.profile_mode == "cpu" else ["--idle", "--threads"]
        self.profiler = subprocess.Popen(
            [spy, "record", "--pid", str(self.pid), "--format", "raw", "--rate", "50", *mode,
             "--output", str(self.profile_to)],
            stdout=subprocess.DEVNULL,
            stderr=(self.workdir / f"py-spy-{self.label}.log").open("wb"),
            start_new_session=True,
        )
        return True

    def stop_profiler(self) -> None:
        """py-spy writes its output when it receives SIGINT."""
        if self.profiler is not None:
            stop_child(self.profiler, sig=signal.SIGINT)

    def stop(self) -> None:
        self.stop_profiler()
        self._terminate()

    def sync_milestones(self) -> SyncMilestones:
        """Nothing from the log: pykueue reports its syncs on ``/metrics`` and ``/readyz``."""
        return SyncMilestones(None, None)

    def requests_by_verb(self, metrics_text: str) -> dict[str, int]:
        return dict(client_request_figures(metrics_text)["requests_by_verb"])

    def api_requests(self) -> dict[str, Any] | None:
        """The controller's API client counters from ``/metrics`` (None when unreachable):
        requests by verb and the total time requests waited for the client-side rate limiter."""
        text = self.metrics_text()
        return client_request_figures(text) if text is not None else None

    def metrics_text(self, timeout: float = 5.0) -> str | None:
        """The controller's ``/metrics`` page, or None while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=timeout) as response:
                return str(response.read().decode())
        except OSError:
            return None


def client_request_figures(metrics_text: str) -> dict[str, Any]:
    """``pykueue_rest_client_*`` figures from a Prometheus text page: requests per verb and per
    status code, mean latency per verb, and the seconds spent waiting for the rate limiter; and
    the Event recorder's ``pykueue_events_*`` counters (sent by write, aggregated by how, dropped
    by reason; a controller older than a counter has none of its entries) and its queue
    (:func:`event_queue_figures`)."""
    by_verb: dict[str, int] = {}
    codes: dict[str, int] = {}
    latency_sum: dict[str, float] = {}
    latency_count: dict[str, float] = {}
    limiter_wait = 0.0
    events: dict[str, dict[str, int]] = {"sent": {}, "aggregated": {}, "dropped": {}}
    wait_buckets: list[tuple[float, float]] = []
    gauges: dict[str, float] = {}
    event_metrics = {
        "pykueue_events_sent_total": ("sent", "write"),
        "pykueue_events_aggregated_total": ("aggregated", "how"),
        "pykueue_events_dropped_total": ("dropped", "reason"),
    }
    for family in text_string_to_metric_families(metrics_text):
        for metric in family.samples:
            if metric.name in event_metrics:
                figure, label = event_metrics[metric.name]
                events[figure][metric.labels.get(label, "?")] = int(metric.value)
            elif metric.name == "pykueue_events_queue_wait_seconds_bucket":
                wait_buckets.append((float(metric.labels.get("le", "+Inf")), metric.value))
            elif metric.name in _EVENT_QUEUE_GAUGES:
                gauges[_EVENT_QUEUE_GAUGES[metric.name]] = metric.value
            elif metric.name == "pykueue_rest_client_requests_total":
                verb, code = metric.labels.get("verb", "?"), metric.labels.get("code", "?")
                by_verb[verb] = by_verb.get(verb, 0) + int(metric.value)
                codes[code] = codes.get(code, 0) + int(metric.value)
            elif metric.name == "pykueue_rest_client_rate_limiter_duration_seconds_sum":
                limiter_wait += metric.value
            elif metric.name == "pykueue_rest_client_request_duration_seconds_sum":
                verb = metric.labels.get("verb", "?")
                latency_sum[verb] = latency_sum.get(verb, 0.0) + metric.value
            elif metric.name == "pykueue_rest_client_request_duration_seconds_count":
                verb = metric.labels.get("verb", "?")
                latency_count[verb] = latency_count.get(verb, 0.0) + metric.value
    return {
        "requests_by_verb": dict(sorted(by_verb.items())),
        "requests_by_code": dict(sorted(codes.items())),
        "total": sum(by_verb.values()),
        "rate_limiter_wait_s": round(limiter_wait, 1),
        "mean_latency_ms_by_verb": {
            verb: round(1000 * latency_sum[verb] / count, 1)
            for verb, count in sorted(latency_count.items())
            if count and verb in latency_sum and verb != "WATCH"
        },
        "events": {figure: dict(sorted(values.items())) for figure, values in events.items()},
        "event_queue": event_queue_figures(wait_buckets, gauges),
    }


# The Event queue's gauges by the name its figures give them.
_EVENT_QUEUE_GAUGES = {
    "pykueue_events_queue_wait_max_seconds": "wait_max_s",
    "pykueue_events_waiting": "waiting_at_end",
    "pykueue_events_oldest_waiting_seconds": "oldest_waiting_at_end_s",
    "pykueue_events_waiting_peak": "waiting_peak",
}


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus's ``histogram_quantile``: the ``q`` quantile of cumulative ``(le, count)``
    buckets, interpolated linearly inside the bucket it falls in (the highest finite bound when
    it falls in ``+Inf``); ``None`` without observations."""
    ordered = sorted(buckets)
    if not ordered or ordered[-1][1] <= 0:
        return None
    rank = q * ordered[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in ordered:
        if count >= rank:
            if bound == float("inf"):
                return lower_bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = bound, count
    return lower_bound


def event_queue_figures(wait_buckets: list[tuple[float, float]], gauges: dict[str, float]) -> dict[str, Any]:
    """How late Events left and how full their waiting room got: queue wait p50/p99 (from the
    ``pykueue_events_queue_wait_seconds`` buckets, so within a bucket's width; never above the
    measured maximum), its maximum, the Events taken by a sender, those still waiting when read
    and how long the oldest of them has waited, and the most that waited at once. Empty for a
    controller without these metrics."""
    if not wait_buckets and not gauges:
        return {}
    longest = gauges.get("wait_max_s")

    def quantile(q: float) -> float | None:
        value = histogram_quantile(q, wait_buckets)
        if value is not None and longest is not None:
            value = min(value, longest)
        return None if value is None else round(value, 2)

    return {
        "taken": int(max((count for _, count in wait_buckets), default=0)),
        "wait_p50_s": quantile(0.5),
        "wait_p99_s": quantile(0.99),
        "wait_max_s": None if longest is None else round(longest, 2),
        "waiting_at_end": int(gauges["waiting_at_end"]) if "waiting_at_end" in gauges else None,
        "oldest_waiting_at_end_s": round(gauges["oldest_waiting_at_end_s"], 2)
        if "oldest_waiting_at_end_s" in gauges
        else None,
        "waiting_peak": int(gauges["waiting_peak"]) if "waiting_peak" in gauges else None,
    }
