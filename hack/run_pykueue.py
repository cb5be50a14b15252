"""Run pykueue's two programs as local processes next to a local cluster (for ``make demo``).

The webhook is served at a local HTTPS URL the apiserver calls (``--local-url``), and the
controller runs without leader election; both log into the cluster's state directory and are
recorded by PID there, so ``python -m hack.run_pykueue stop`` (run by ``make cluster-down``)
stops exactly these processes and nothing else on the machine. Starting again while they run is
a no-op.

    python -m hack.run_pykueue start|stop|status [--name CLUSTER]
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
import urllib.request
from pathlib import Path

from hack.localcluster import ComponentFailedError, LocalCluster, LocalClusterError, default_cluster_name
from hack.localcluster import processes as proc

REPO_ROOT = Path(__file__).resolve().parents[1]
WEBHOOK_NAMESPACE = "pykueue-system"
READY_TIMEOUT = 120.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _state_dir(cluster: LocalCluster) -> Path:
    return cluster.layout.root / "pykueue"


def _spec(cluster: LocalCluster, name: str, argv: list[str]) -> proc.ProcessSpec:
    state = _state_dir(cluster)
    return proc.ProcessSpec(
        name=name,
        argv=(sys.executable, *argv),
        marker=cluster.kubeconfig,  # every argv names this cluster's kubeconfig
        log_path=state / f"{name}.log",
        pid_path=state / f"{name}.pid",
    )


def _saved_argv(cluster: LocalCluster, name: str) -> list[str]:
    path = _state_dir(cluster) / f"{name}.argv.json"
    try:
        return list(json.loads(path.read_text()))
    except (OSError, ValueError):
        return ["-m", f"{name}.main", "--kubeconfig", cluster.kubeconfig]


def webhook_spec(cluster: LocalCluster, port: int, username: str) -> proc.ProcessSpec:
    return _spec(
        cluster,
        "webhook",
        [
            "-m", "webhook.main",
            "--kubeconfig", cluster.kubeconfig,
            "--local-url", f"https://127.0.0.1:{port}",
            "--bind", "127.0.0.1",
            "--port", str(port),
            "--workers", "2",
            "--namespace", WEBHOOK_NAMESPACE,
            "--cert-dir", str(_state_dir(cluster) / "certs"),
            "--controller-username", username,
            "--log-format", "text",
        ],
    )  # fmt: skip


def controller_spec(cluster: LocalCluster, health_port: int, metrics_port: int) -> proc.ProcessSpec:
    return _spec(
        cluster,
        "controller",
        [
            "-m", "controller.main",
            "--kubeconfig", cluster.kubeconfig,
            "--no-leader-elect",
            "--health-addr", f"127.0.0.1:{health_port}",
            "--metrics-addr", f"127.0.0.1:{metrics_port}",
            "--log-format", "text",
            "--qps", "50", "--burst", "100",
        ],
    )  # fmt: skip


def _wait(what: str, probe: object, spec: proc.ProcessSpec) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if proc.running_pid(spec) is None:
            raise ComponentFailedError(
                f"{what} exited; last log lines:\n" + "\n".join(proc.tail(spec.log_path, 20))
            )
        if probe():  # type: ignore[operator]
            return
        time.sleep(0.5)
    raise ComponentFailedError(f"{what} not ready after {READY_TIMEOUT:.0f}s; see {spec.log_path}")


def _webhook_called(cluster: LocalCluster) -> bool:
    """A server-side dry run of a ResourceFlavor comes back with the finalizer only the webhook adds."""
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "probe"}}
    result = cluster.kubectl(
        "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(flavor), check=False
    )
    if result.returncode != 0:
        return False
    return "kueue.x-k8s.io/resource-in-use" in (json.loads(result.stdout)["metadata"].get("finalizers") or [])


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _record(cluster: LocalCluster, spec: proc.ProcessSpec) -> None:
    (_state_dir(cluster) / f"{spec.name}.argv.json").write_text(json.dumps(list(spec.argv[1:])))


def start(cluster: LocalCluster) -> None:
    """Start the webhook, then the controller, unless they already run; wait until both serve."""
    _state_dir(cluster).mkdir(parents=True, exist_ok=True)
    existing_webhook = _spec(cluster, "webhook", _saved_argv(cluster, "webhook"))
    if proc.running_pid(existing_webhook) is None:
        username = cluster.kubectl(
            "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"
        ).stdout.strip()
        spec = webhook_spec(cluster, _free_port(), username)
        proc.start(spec)
        _record(cluster, spec)
        _wait("the webhook", lambda: _webhook_called(cluster), spec)
    existing_controller = _spec(cluster, "controller", _saved_argv(cluster, "controller"))
    if proc.running_pid(existing_controller) is None:
        health = _free_port()
        spec = controller_spec(cluster, health, _free_port())
        proc.start(spec)
        _record(cluster, spec)
        _wait("the controller", lambda: _http_ok(f"http://127.0.0.1:{health}/readyz"), spec)


def stop(cluster: LocalCluster) -> list[str]:
    """Stop the controller, then the webhook (only the processes recorded for this cluster)."""
    stopped = []
    for name in ("controller", "webhook"):
        if proc.stop(_spec(cluster, name, _saved_argv(cluster, name))):
            stopped.append(name)
    if stopped:
        # The apiserver would otherwise keep calling a webhook that is gone.
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            name = f"pykueue-{kind.removesuffix('webhookconfiguration')}-webhook-configuration"
            cluster.kubectl("delete", kind, name, "--ignore-not-found", check=False)
    return stopped


def status(cluster: LocalCluster) -> dict[str, int | None]:
    return {
        name: proc.running_pid(_spec(cluster, name, _saved_argv(cluster, name)))
        for name in ("webhook", "controller")
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hack.run_pykueue", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("start", "stop", "status"))
    parser.add_argument(
        "--name", default=None, help="cluster name (default: $PYKUEUE_CLUSTER_NAME or pykueue)"
    )
    args = parser.parse_args(argv)
    try:
        return _run(args.action, LocalCluster(args.name or default_cluster_name()))
    except LocalClusterError as err:  # a person can act on it: the message, not a traceback
        print(f"run_pykueue: {err}", file=sys.stderr)
        return 1


def _run(action: str, cluster: LocalCluster) -> int:
    if action == "start":
        start(cluster)
        print(
            f"pykueue running for cluster {cluster.name!r}: {status(cluster)} (logs in {_state_dir(cluster)})"
        )
    elif action == "stop":
        stopped = stop(cluster)
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
    else:
        print(json.dumps(status(cluster)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
