"""Webhook latency and throughput under steady load (SPEC §12), against a local gunicorn over TLS.

    python -m bench.webhook_load [--rate 200] [--seconds 20] [--workers 2] [--scale 1.0]

Starts ``pykueue-webhook`` on a loopback port with a throw-away certificate (``--cert-management
external``, no cluster needed), then for each call kind:

* **steady**: an open-loop generator sends ``--rate`` requests per second for ``--seconds``; latency
  is measured from each request's *scheduled* send time, so a server that falls behind shows up
  in the figures instead of silently slowing the generator down;
* **max**: ``--connections`` closed-loop clients send as fast as answers come back, giving the
  ceiling in requests per second.

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
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webhook.certs import generate_bundle

VALIDATE_PATH = "/validate-kueue-x-k8s-io-v1beta1-clusterqueue"
MUTATE_PATH = "/mutate-kueue-x-k8s-io-v1beta1-clusterqueue"
REPO = Path(__file__).resolve().parents[1]


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


class Client:
    """One keep-alive HTTPS connection per thread."""

    def __init__(self, port: int, ca: bytes) -> None:
        self.port = port
        self.context = ssl.create_default_context(cadata=ca.decode())
        self.local = threading.local()

    def post(self, path: str, body: bytes) -> int:
        connection = getattr(self.local, "connection", None)
        if connection is None:
            connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=10)
            self.local.connection = connection
        try:
            connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            return response.status
        except (OSError, http.client.HTTPException):
            connection.close()
            self.local.connection = None
            raise


@dataclass
class Result:
    name: str
    sent: int
    errors: int
    seconds: float
    latencies: list[float]

    def line(self) -> str:
        ordered = sorted(self.latencies)
        def pct(p: float) -> float:
            return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000 if ordered else float("nan")
        return (f"{self.name:<22} requests={self.sent:>6} errors={self.errors:>3} "
                f"rate={self.sent / self.seconds:8.1f}/s p50={pct(0.50):7.2f}ms p99={pct(0.99):7.2f}ms "
                f"max={max(ordered, default=0) * 1000:7.2f}ms mean={statistics.fmean(ordered) * 1000 if ordered else 0:7.2f}ms")


def steady(client: Client, path: str, rate: float, seconds: float, name: str) -> Result:
    total = int(rate * seconds)
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    start = time.perf_counter() + 0.2

    def one(index: int) -> None:
        nonlocal errors
        scheduled = start + index / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        try:
            ok = client.post(path, review_body()) == 200
        except (OSError, http.client.HTTPException):
            ok = False
        elapsed = time.perf_counter() - scheduled
        with lock:
            latencies.append(elapsed)
            errors += 0 if ok else 1

    with ThreadPoolExecutor(max_workers=32) as pool:
        list(pool.map(one, range(total)))
    return Result(name, total, errors, time.perf_counter() - start, latencies)


def saturate(client: Client, path: str, connections: int, seconds: float, name: str) -> Result:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()

    def loop() -> None:
        nonlocal errors
        while time.perf_counter() < deadline:
            began = time.perf_counter()
            try:
                ok = client.post(path, review_body()) == 200
            except (OSError, http.client.HTTPException):
                ok = False
            with lock:
                latencies.append(time.perf_counter() - began)
                errors += 0 if ok else 1

    threads = [threading.Thread(target=loop) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return Result(name, len(latencies), errors, time.perf_counter() - started, latencies)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(workdir: Path, workers: int) -> tuple[subprocess.Popen[bytes], int, bytes]:
    bundle = generate_bundle(dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    (workdir / "tls.crt").write_bytes(bundle.cert)
    (workdir / "tls.key").write_bytes(bundle.key)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "webhook.main", "--cert-management", "external", "--cert-dir", str(workdir),
         "--bind", "127.0.0.1", "--port", str(port), "--workers", str(workers), "--log-format", "text"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=(workdir / "webhook.log").open("wb"), start_new_session=True,
    )
    client = Client(port, bundle.ca_cert)
    deadline = time.monotonic() + 30
    while True:
        try:
            if client.post(VALIDATE_PATH, review_body()) == 200:
                return process, port, bundle.ca_cert
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"webhook did not start:\n{(workdir / 'webhook.log').read_text()}")
        time.sleep(0.2)


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=200.0, help="steady requests per second")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each steady run")
    parser.add_argument("--max-seconds", type=float, default=10.0, help="length of each saturation run")
    parser.add_argument("--connections", type=int, default=8, help="closed-loop clients in the saturation run")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply run lengths (make bench uses 0.05)")
    args = parser.parse_args(argv)
    seconds, max_seconds = max(1.0, args.seconds * args.scale), max(1.0, args.max_seconds * args.scale)
    with tempfile.TemporaryDirectory(prefix="pykueue-webhook-bench-") as tmp:
        process, port, ca = start_server(Path(tmp), args.workers)
        try:
            client = Client(port, ca)
            # Each worker builds its schema validators on first use; measure the steady state.
            saturate(client, VALIDATE_PATH, args.connections, 2.0, "warm-up")
            saturate(client, MUTATE_PATH, args.connections, 1.0, "warm-up")
            print(f"pykueue webhook benchmark: gunicorn gthread, {args.workers} workers x 4 threads, TLS, "
                  f"{os.cpu_count()} CPUs, body {len(review_body())} bytes")
            runs: list[Callable[[], Result]] = [
                lambda: steady(client, VALIDATE_PATH, args.rate, seconds, f"validate @{args.rate:.0f}/s"),
                lambda: steady(client, MUTATE_PATH, args.rate, seconds, f"mutate @{args.rate:.0f}/s"),
                lambda: saturate(client, VALIDATE_PATH, args.connections, max_seconds, "validate max"),
                lambda: saturate(client, MUTATE_PATH, args.connections, max_seconds, "mutate max"),
            ]
            for run in runs:
                print(run().line(), flush=True)
        finally:
            stop_server(process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
