"""Webhook latency and throughput under steady load, against a local gunicorn over TLS.

    python -m bench.webhook_load [--rate 200] [--seconds 20] [--repeat 3] [--against /tmp/wh-old]

Starts ``pykueue-webhook`` on a loopback port with a throw-away certificate (``--cert-management
external``, no cluster needed), then for each call kind:

* **steady**: an open-loop generator sends ``--rate`` requests per second for ``--seconds``; latency
  is measured from each request's *scheduled* send time, so a server that falls behind shows up
  in the figures instead of silently slowing the generator down;
* **max**: ``--connections`` closed-loop clients send as fast as answers come back, giving the
  ceiling in requests per second.

The client behaves like the apiserver's webhook client: HTTP/1.1 keep-alive connections kept in
an idle pool and reused most-recently-used first, opened (TLS handshake included) before any
measurement, so the figures are the steady state of a warm connection pool, not a handshake per
request. Alongside the client's view the benchmark reads the server's own latency histogram
(``/metrics``) before and after each run: the share of requests the handler answered within 5 and
10 ms says whether a slow tail was spent in our code or around it (TLS, gunicorn, scheduling).

``--repeat N`` runs every phase N times and prints the medians. ``--against DIR`` also starts the
webhook from another checkout (``git worktree add /tmp/wh-old <commit>``) and alternates the two
servers run by run, so an old/new comparison sees the same machine load; the last line is a JSON
summary.

Calls: *validating* = a ClusterQueue with concurrent admission, explicit options and fallback
rules (schema + every semantic rule); *mutating* = a ClusterQueue create (finalizer patch). Job
hooks read the cluster (LocalQueues, namespaces) and are not part of this cluster-free benchmark.
Traffic goes to 127.0.0.1 only and every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import select
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.procstats import sample
from hack.localcluster.processes import stop_child
from pykueue.tls.certs import generate_bundle

VALIDATE_PATH = "/validate-kueue-x-k8s-io-v1beta2-clusterqueue"  # registered path; reads v1beta1 too
MUTATE_PATH = "/mutate-kueue-x-k8s-io-v1beta2-clusterqueue"
REPO = Path(__file__).resolve().parents[1]
# Threads that may hold a request in flight in the open-loop run; far more than 200 req/s at a few
# milliseconds each needs, so the generator itself never queues requests behind one another.
STEADY_THREADS = 32
SATURATION_BODIES = 1000


def cluster_queue() -> dict[str, Any]:
    flavors = ["reservation", "on-demand", "spot"]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "bench"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {"name": f, "resources": [{"name": "cpu", "nominalQuota": "64"},
                                                  {"name": "memory", "nominalQuota": "256Gi"}]}
                        for f in flavors
                    ],
                }
            ],
            "concurrentAdmission": {
                "onSuccess": "RemoveBelowTarget",
                "removeBelowTargetConfig": {"targetResourceFlavor": "on-demand"},
                "explicitOptions": [
                    {"name": "res", "allowedResourceFlavors": ["reservation"]},
                    {"name": "cheap", "allowedResourceFlavors": ["on-demand", "spot"], "createDelaySeconds": 60},
                ],
            },
            "flavorFungibility": {
                "fallbackStrategy": {
                    "failurePolicy": "RetryAllFlavors",
                    "rules": [{"name": "spot", "trigger": "TimeoutForPodsReadyExceeded", "timeout": "10m"},
                              {"name": "*", "trigger": "AdmissionCheckRejected"}],
                }
            },
        },
    }


def review_body() -> bytes:
    obj = cluster_queue()
    return json.dumps({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "kueue.x-k8s.io", "version": "v1beta1", "kind": "ClusterQueue"},
            "resource": {"group": "kueue.x-k8s.io", "version": "v1beta1", "resource": "clusterqueues"},
            "operation": "CREATE",
            "name": "bench",
            "userInfo": {"username": "bench"},
            "object": obj,
            "oldObject": None,
        },
    }).encode()


class ConnectionPool:
    """Keep-alive HTTPS connections shared by every sending thread, as the apiserver keeps them.

    An idle connection is reused most-recently-used first (Go's transport does the same); a new
    one is opened only when every connection is busy, and a connection that fails is dropped.
    """

    def __init__(self, port: int, ca: bytes) -> None:
        self.port = port
        self.context = ssl.create_default_context(cadata=ca.decode()) if ca else ssl.create_default_context()
        self._idle: list[http.client.HTTPSConnection] = []
        self._lock = threading.Lock()
        self.opened = 0

    def _connect(self) -> http.client.HTTPSConnection:
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=10)
        connection.connect()
        with self._lock:
            self.opened += 1
        return connection

    @staticmethod
    def _closed_by_server(connection: http.client.HTTPSConnection) -> bool:
        """An idle HTTP/1.1 connection that is readable was closed by the server (gunicorn drops
        connections idle for its keep-alive timeout). Go's transport notices this at once, from
        the reader it keeps on every connection, and never sends on such a connection."""
        sock = connection.sock
        return sock is None or bool(select.select([sock], [], [], 0)[0])

    def _take_idle(self) -> http.client.HTTPSConnection | None:
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None or not self._closed_by_server(connection):
                return connection
            connection.close()

    @contextmanager
    def connection(self) -> Iterator[http.client.HTTPSConnection]:
        connection = self._take_idle()
        if connection is None:
            connection = self._connect()
        try:
            yield connection
        except BaseException:
            connection.close()
            raise
        with self._lock:
            self._idle.append(connection)

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        with self.connection() as connection:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.read()

    def post(self, path: str, body: bytes) -> int:
        return self.request("POST", path, body)[0]

    def warm(self, count: int) -> None:
        """Open ``count`` connections (handshakes done) and leave them idle in the pool.

        Each gets one request at once: a gthread worker holds a thread for a new connection
        until its first request arrives, so opening many silent ones would block the server.
        """
        connections = []
        for _ in range(count):
            connection = self._connect()
            connection.request("GET", "/healthz")
            connection.getresponse().read()
            connections.append(connection)
        with self._lock:
            self._idle.extend(connections)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


def percentile(ordered: list[float], fraction: float) -> float:
    """The nearest-rank percentile of an ascending list (NaN when empty)."""
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@dataclass
class ServerShare:
    """What the server's own histogram saw during one run: requests and how many within 5/10 ms."""

    requests: int = 0
    within_5ms: int = 0
    within_10ms: int = 0

    def text(self) -> str:
        if not self.requests:
            return "server: n/a"
        return (f"server<=5ms={self.within_5ms / self.requests * 100:6.2f}% "
                f"server<=10ms={self.within_10ms / self.requests * 100:6.2f}%")


@dataclass
class Result:
    name: str
    sent: int
    errors: int
    seconds: float
    latencies: list[float]
    server: ServerShare = field(default_factory=ServerShare)
    load_average: float = 0.0
    # Open loop only: how late each request left the generator (thread wake-up, pool), which is
    # part of its latency but not the server's doing.
    lateness: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # the first few error reasons
    cpu_seconds: float = 0.0  # the webhook's processes (master and workers), user + system

    @property
    def cpu_ms_per_request(self) -> float:
        return self.cpu_seconds / self.sent * 1000 if self.sent else float("nan")

    @property
    def rate(self) -> float:
        return self.sent / self.seconds if self.seconds > 0 else 0.0

    def pct_ms(self, fraction: float) -> float:
        return percentile(sorted(self.latencies), fraction) * 1000

    def line(self) -> str:
        ordered = sorted(self.latencies)
        mean = statistics.fmean(ordered) * 1000 if ordered else 0.0
        return (f"{self.name:<22} requests={self.sent:>6} errors={self.errors:>3} "
                f"rate={self.rate:8.1f}/s p50={percentile(ordered, 0.50) * 1000:7.2f}ms "
                f"p99={percentile(ordered, 0.99) * 1000:7.2f}ms "
                f"max={max(ordered, default=0) * 1000:7.2f}ms mean={mean:7.2f}ms "
                f"cpu={self.cpu_ms_per_request:5.2f}ms/req {self.server.text()} load={self.load_average:.1f}"
                + (f" late_p99={percentile(sorted(self.lateness), 0.99) * 1000:.2f}ms" if self.lateness else "")
                + (f" failures={self.failures}" if self.failures else ""))


def _send(pool: ConnectionPool, path: str, body: bytes) -> str | None:
    """Post one review; the reason it failed, or None."""
    try:
        status = pool.post(path, body)
    except (OSError, http.client.HTTPException) as err:
        return f"{type(err).__name__}: {err}"[:160]
    return None if status == 200 else f"HTTP {status}"


def steady(pool: ConnectionPool, executor: ThreadPoolExecutor, path: str, rate: float, seconds: float,
           name: str) -> Result:
    total = int(rate * seconds)
    # Built beforehand, as an apiserver has its review ready: the generator's own JSON work would
    # otherwise delay sends and count as latency.
    bodies = [review_body() for _ in range(total)]
    latencies: list[float] = []
    lateness: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    start = time.perf_counter() + 0.2

    def one(index: int) -> None:
        scheduled = start + index / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        sent = time.perf_counter()
        failure = _send(pool, path, bodies[index])
        elapsed = time.perf_counter() - scheduled
        with lock:
            latencies.append(elapsed)
            lateness.append(sent - scheduled)
            if failure is not None:
                failures.append(failure)

    list(executor.map(one, range(total)))
    return Result(name, total, len(failures), time.perf_counter() - start, latencies, lateness=lateness,
                  failures=failures[:3])


def saturate(pool: ConnectionPool, path: str, connections: int, seconds: float, name: str) -> Result:
    bodies = [review_body() for _ in range(SATURATION_BODIES)]  # reused in turn; the server ignores uids
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()

    def loop(offset: int) -> None:
        index = offset
        while time.perf_counter() < deadline:
            began = time.perf_counter()
            failure = _send(pool, path, bodies[index % len(bodies)])
            index += connections
            with lock:
                latencies.append(time.perf_counter() - began)
                if failure is not None:
                    failures.append(failure)

    threads = [threading.Thread(target=loop, args=(offset,)) for offset in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return Result(name, len(latencies), len(failures), time.perf_counter() - started, latencies,
                  failures=failures[:3])


_BUCKET = re.compile(
    r'^pykueue_webhook_request_duration_seconds_bucket\{(?P<labels>[^}]*)\}\s+(?P<value>[0-9.e+]+)$'
)


def histogram_counts(exposition: str, path: str) -> dict[float, float]:
    """Cumulative bucket counts (upper bound in seconds -> requests) of ``path``, all outcomes summed."""
    counts: dict[float, float] = {}
    for line in exposition.splitlines():
        match = _BUCKET.match(line.strip())
        if not match:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match["labels"]))
        if labels.get("path") != path:
            continue
        bound = float("inf") if labels.get("le") == "+Inf" else float(labels.get("le", "nan"))
        counts[bound] = counts.get(bound, 0.0) + float(match["value"])
    return counts


def server_share(before: dict[float, float], after: dict[float, float]) -> ServerShare:
    """Requests the server answered between two scrapes, and how many within 5 and 10 ms."""
    def delta(bound: float) -> int:
        return int(after.get(bound, 0.0) - before.get(bound, 0.0))

    return ServerShare(requests=delta(float("inf")), within_5ms=delta(0.005), within_10ms=delta(0.01))


@dataclass
class Server:
    """One running webhook (a checkout of pykueue) and the client pool that talks to it."""

    label: str
    process: subprocess.Popen[bytes]
    pool: ConnectionPool
    log_path: Path

    def scrape(self, path: str) -> dict[float, float]:
        status, payload = self.pool.request("GET", "/metrics")
        return histogram_counts(payload.decode(), path) if status == 200 else {}

    def cpu_seconds(self) -> float:
        """CPU the webhook has used so far: the gunicorn master and its live workers.

        CPU time is what our code costs whatever else the machine runs, so it is the steadier
        figure for comparing two versions on a shared machine; latency is what users see.
        """
        pids = [self.process.pid]
        try:
            with open(f"/proc/{self.process.pid}/task/{self.process.pid}/children", encoding="ascii") as fh:
                pids += [int(pid) for pid in fh.read().split()]
        except OSError:
            pass
        samples = [sample(pid) for pid in pids]
        return sum(s.cpu_seconds for s in samples if s is not None)

    def measure(self, path: str, run: Callable[[], Result]) -> Result:
        before, cpu_before = self.scrape(path), self.cpu_seconds()
        result = run()
        result.cpu_seconds = self.cpu_seconds() - cpu_before
        result.server = server_share(before, self.scrape(path))
        result.load_average = os.getloadavg()[0]
        return result


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(workdir: Path, tree: Path, label: str, workers: int, threads: int,
                 extra_args: list[str]) -> Server:
    """Start the webhook of checkout ``tree`` on a free loopback port; return once it answers."""
    workdir.mkdir(parents=True, exist_ok=True)
    bundle = generate_bundle(dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    (workdir / "tls.crt").write_bytes(bundle.cert)
    (workdir / "tls.key").write_bytes(bundle.key)
    port = free_port()
    log_path = workdir / "webhook.log"
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    process = subprocess.Popen(
        [sys.executable, "-m", "webhook.main", "--cert-management", "external", "--cert-dir", str(workdir),
         "--bind", "127.0.0.1", "--port", str(port), "--workers", str(workers), "--threads", str(threads),
         "--log-format", "text", *extra_args],
        cwd=tree, env=environment, stdout=subprocess.DEVNULL, stderr=log_path.open("wb"), start_new_session=True,
    )
    pool = ConnectionPool(port, bundle.ca_cert)
    deadline = time.monotonic() + 30
    while True:
        try:
            if pool.post(VALIDATE_PATH, review_body()) == 200:
                return Server(label, process, pool, log_path)
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            stop_server(process)
            raise SystemExit(f"webhook ({label}) did not start:\n{log_path.read_text()}")
        time.sleep(0.2)


def stop_server(process: subprocess.Popen[bytes]) -> None:
    stop_child(process, timeout=20)


PHASES = ("validate", "mutate", "validate max", "mutate max")


def phase_runs(server: Server, executor: ThreadPoolExecutor, args: argparse.Namespace, seconds: float,
               max_seconds: float) -> list[tuple[str, Callable[[], Result]]]:
    suffix = f" [{server.label}]" if args.against else ""
    pool = server.pool
    return [
        (VALIDATE_PATH, lambda: steady(pool, executor, VALIDATE_PATH, args.rate, seconds,
                                       f"validate @{args.rate:.0f}/s{suffix}")),
        (MUTATE_PATH, lambda: steady(pool, executor, MUTATE_PATH, args.rate, seconds,
                                     f"mutate @{args.rate:.0f}/s{suffix}")),
        (VALIDATE_PATH, lambda: saturate(pool, VALIDATE_PATH, args.connections, max_seconds,
                                         f"validate max{suffix}")),
        (MUTATE_PATH, lambda: saturate(pool, MUTATE_PATH, args.connections, max_seconds, f"mutate max{suffix}")),
    ]


def summarise(results: dict[str, dict[str, list[Result]]]) -> list[dict[str, Any]]:
    """Per server and phase: the medians over the repeats of p50, p99, rate and the server share."""
    rows = []
    for label, phases in results.items():
        for phase, runs in phases.items():
            served = sum(r.server.requests for r in runs)
            rows.append({
                "server": label,
                "phase": phase,
                "runs": len(runs),
                "p50_ms": [round(r.pct_ms(0.50), 2) for r in runs],
                "p99_ms": [round(r.pct_ms(0.99), 2) for r in runs],
                "rate_per_s": [round(r.rate, 1) for r in runs],
                "median_p50_ms": round(statistics.median(r.pct_ms(0.50) for r in runs), 2),
                "median_p99_ms": round(statistics.median(r.pct_ms(0.99) for r in runs), 2),
                "median_rate_per_s": round(statistics.median(r.rate for r in runs), 1),
                "median_cpu_ms_per_request": round(statistics.median(r.cpu_ms_per_request for r in runs), 3),
                "errors": sum(r.errors for r in runs),
                "server_within_10ms_pct": round(sum(r.server.within_10ms for r in runs) / served * 100, 2)
                if served else None,
                "load_average": [round(r.load_average, 1) for r in runs],
            })
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"\nmedians of {rows[0]['runs']} run(s):")
    print(f"{'phase':<14} {'server':<8} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8} {'cpu ms/req':>10} {'errors':>6}  "
          "p99 of each run")
    for phase in PHASES:
        for row in (r for r in rows if r["phase"] == phase):
            print(f"{phase:<14} {row['server']:<8} {row['median_p50_ms']:8.2f} {row['median_p99_ms']:8.2f} "
                  f"{row['median_rate_per_s']:8.1f} {row['median_cpu_ms_per_request']:10.3f} {row['errors']:6d}  "
                  f"{row['p99_ms']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rate", type=float, default=200.0, help="steady requests per second")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each steady run")
    parser.add_argument("--max-seconds", type=float, default=10.0, help="length of each saturation run")
    parser.add_argument("--connections", type=int, default=8, help="closed-loop clients in the saturation run")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--repeat", type=int, default=1, help="runs of every phase; medians are printed")
    parser.add_argument("--against", type=Path, help="another checkout to compare with, run alternately")
    parser.add_argument("--server-arg", action="append", default=[],
                        help="extra pykueue-webhook flag for this checkout's server (repeatable)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply run lengths (make bench uses 0.05)")
    args = parser.parse_args(argv)
    seconds, max_seconds = max(1.0, args.seconds * args.scale), max(1.0, args.max_seconds * args.scale)
    trees = [("new", REPO, list(args.server_arg))]
    if args.against:
        trees.insert(0, ("old", args.against.resolve(), []))
    servers: list[Server] = []
    results: dict[str, dict[str, list[Result]]] = {label: {p: [] for p in PHASES} for label, _, _ in trees}
    with tempfile.TemporaryDirectory(prefix="pykueue-webhook-bench-") as tmp, \
            ThreadPoolExecutor(max_workers=STEADY_THREADS) as executor:
        try:
            for label, tree, extra in trees:
                server = start_server(Path(tmp) / label, tree, label, args.workers, args.threads, extra)
                servers.append(server)
                # Each worker builds its validators at start; the warm-up also fills the pool with
                # connections whose handshakes are done, as an apiserver's would be.
                server.pool.warm(args.connections)
                saturate(server.pool, VALIDATE_PATH, args.connections, 2.0, "warm-up")
                saturate(server.pool, MUTATE_PATH, args.connections, 1.0, "warm-up")
            print(f"pykueue webhook benchmark: gunicorn gthread, {args.workers} workers x {args.threads} threads, "
                  f"TLS, keep-alive pool, {os.cpu_count()} CPUs, body {len(review_body())} bytes, "
                  f"servers {', '.join(f'{label}={tree}' for label, tree, _ in trees)}", flush=True)
            for repeat in range(args.repeat):
                # Alternate which server goes first so neither always meets the same moment of load.
                order = servers if repeat % 2 == 0 else servers[::-1]
                for server in order:
                    # gunicorn closes a keep-alive connection idle for 30 s (the other server's turn
                    # is longer): start each turn with fresh, already-handshaken connections.
                    server.pool.close()
                    server.pool.warm(args.connections)
                    for phase, (path, run) in zip(PHASES, phase_runs(server, executor, args, seconds, max_seconds),
                                                  strict=True):
                        result = server.measure(path, run)
                        results[server.label][phase].append(result)
                        print(result.line(), flush=True)
            handshakes = {server.label: server.pool.opened for server in servers}
        finally:
            for server in servers:
                server.pool.close()
                stop_server(server.process)
    rows = summarise(results)
    print_table(rows)
    print(json.dumps({"benchmark": "webhook_load", "rate": args.rate, "seconds": seconds,
                      "workers": args.workers, "threads": args.threads, "connections_opened": handshakes,
                      "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
