"""``pykueue-controller``: the controller process's entry point.

Parses the command line, loads the Configuration, builds the one API client, and runs a
:class:`controller.runtime.manager.Controller` until SIGTERM (exit 0) or until leadership is lost
(exit 1, so the process restarts clean).

Controller areas plug in through **setup modules**: each module named in :data:`SETUP_MODULES`
that exists must define ``setup(ctrl: Controller) -> None``, which asks ``ctrl.informer(...)``
for shared informers and ``ctrl.register(...)``s its leader-only components. An area whose setup
module does not exist yet is skipped with a log line; an error *inside* a setup module fails the
start, because a half-wired controller must not run.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import socket
import sys
import threading
import uuid
from collections.abc import Sequence
from typing import Any

from controller.runtime.leaderelection import ElectionConfig
from controller.runtime.manager import Controller
from controller.runtime.signals import install_shutdown_handlers
from pykueue.api import durations
from pykueue.kube import resources as R
from pykueue.kube.client import KubeClient
from pykueue.observability.logging import setup_logging

log = logging.getLogger("pykueue.controller")

COMPONENT = "pykueue-controller"
DEFAULT_NAMESPACE = "pykueue-system"
DEFAULT_LEASE_NAME = "pykueue-controller-leader"

# Imported in this order; each defines setup(ctrl). Later areas append their module here.
SETUP_MODULES: tuple[str, ...] = ("controller.core.setup", "controller.jobs.setup", "controller.concurrentadmission.setup")

# Informers every controller needs; started even before any area plugs in, so readiness means
# "the Kueue objects are cached".
BASE_RESOURCES = (R.CLUSTER_QUEUES, R.LOCAL_QUEUES, R.WORKLOADS, R.RESOURCE_FLAVORS)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pykueue-controller", description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="Configuration file (config.kueue.x-k8s.io/v1beta1); defaults apply without it")
    parser.add_argument("--kubeconfig", help="kubeconfig path (default: in-cluster, else $KUBECONFIG/~/.kube/config)")
    parser.add_argument(
        "--namespace",
        default=os.environ.get("POD_NAMESPACE") or DEFAULT_NAMESPACE,
        help="namespace of the leader-election Lease (default: $POD_NAMESPACE or pykueue-system)",
    )
    parser.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="campaign for the Lease before admitting (default: the Configuration's leaderElection.leaderElect, else on)",
    )
    parser.add_argument("--health-addr", default="0.0.0.0:8081", help="/healthz and /readyz address ('0' disables)")
    parser.add_argument("--metrics-addr", default="0.0.0.0:8080", help="/metrics address ('0' disables)")
    parser.add_argument("--log-format", choices=("json", "text"), default="json")
    parser.add_argument("--log-level", default=os.environ.get("PYKUEUE_LOG_LEVEL", "INFO"))
    parser.add_argument("--qps", type=float, default=50.0, help="client-side API request rate")
    parser.add_argument("--burst", type=int, default=100, help="client-side API request burst")
    parser.add_argument("--identity", default=None, help="leader-election identity (default: hostname_<random>)")
    return parser


# --- Configuration --------------------------------------------------------------------------------

def parse_duration(value: Any, field: str) -> float:
    """Seconds from a number or a Go duration string (``15s``, ``1m30s``) as Kueue writes them."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        try:
            seconds = durations.parse_duration(value)
        except ValueError:
            raise ValueError(f"{field}: invalid duration {value!r} (use e.g. \"15s\")") from None
    if seconds <= 0:
        raise ValueError(f"{field}: must be positive, got {value!r}")
    return seconds


def _field(obj: Any, *names: str) -> Any:
    """Read a field from a dataclass or a dict under any of its spellings (snake or camel case)."""
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if not isinstance(obj, dict) and hasattr(obj, name):
            return getattr(obj, name)
    return None


def load_configuration(path: str | None) -> Any:
    """The Configuration via ``pykueue.api.config.load_config`` (None if that module is absent)."""
    try:
        config_module = importlib.import_module("pykueue.api.config")
    except ModuleNotFoundError as exc:
        if exc.name != "pykueue.api.config":
            raise
        if path:
            raise SystemExit(f"--config {path}: this build cannot read Configuration files") from exc
        return None
    return config_module.load_config(path)


def election_config(config: Any, args: argparse.Namespace, identity: str) -> ElectionConfig | None:
    """Leader-election settings: flags win, then the Configuration's ``leaderElection``, then
    client-go's defaults (15 s lease, 10 s renew deadline, 2 s retry)."""
    section = _field(config, "leader_election", "leaderElection") if config is not None else None
    enabled = args.leader_elect
    if enabled is None:
        configured = _field(section, "leader_elect", "leaderElect") if section is not None else None
        enabled = True if configured is None else bool(configured)
    if not enabled:
        return None

    def duration(camel: str, default: float) -> float:
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()
        # pykueue.api.config spells these ``lease_duration_seconds`` (floats); Kueue's YAML
        # spells them ``leaseDuration: 15s``. Accept both so neither silently falls back.
        value = _field(section, f"{snake}_seconds", snake, camel) if section is not None else None
        return default if value is None else parse_duration(value, f"leaderElection.{camel}")

    name = (_field(section, "resource_name", "resourceName") if section is not None else None) or DEFAULT_LEASE_NAME
    namespace = (
        _field(section, "resource_namespace", "resourceNamespace") if section is not None else None
    ) or args.namespace
    return ElectionConfig(
        lease_name=str(name),
        lease_namespace=str(namespace),
        identity=identity,
        lease_duration=duration("leaseDuration", 15.0),
        renew_deadline=duration("renewDeadline", 10.0),
        retry_period=duration("retryPeriod", 2.0),
    )


def default_identity() -> str:
    """``hostname_<uuid>`` like client-go, so two processes on one host never share an identity."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def run_setup_modules(ctrl: Controller, modules: Sequence[str] = SETUP_MODULES) -> list[str]:
    """Import each setup module and call its ``setup(ctrl)``; returns the modules that ran."""
    ran = []
    for module_name in modules:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if missing != module_name and not module_name.startswith(f"{missing}."):
                raise  # the module exists but one of its imports is missing: that is a bug
            log.info("no setup module; skipping", extra={"setup_module": module_name})
            continue
        module.setup(ctrl)
        ran.append(module_name)
    return ran


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(COMPONENT, args.log_format, args.log_level)
    try:
        config = load_configuration(args.config)
        identity = args.identity or default_identity()
        election = election_config(config, args, identity)
    except ValueError as exc:  # pykueue.api.config.ConfigError is a ValueError naming the field
        log.error("invalid configuration", extra={"error": str(exc)})
        return 2
    client = KubeClient.from_config(args.kubeconfig, qps=args.qps, burst=args.burst, user_agent=COMPONENT)
    ctrl = Controller(
        client,
        identity=identity,
        election=election,
        health_addr=args.health_addr,
        metrics_addr=args.metrics_addr,
        config=config,
    )
    for resource in BASE_RESOURCES:
        ctrl.informer(resource)
    modules = run_setup_modules(ctrl)
    stop = threading.Event()
    install_shutdown_handlers(stop)
    log.info(
        "starting",
        extra={
            "identity": identity,
            "leaderElection": election is not None,
            "lease": f"{election.lease_namespace}/{election.lease_name}" if election else None,
            "setup": modules,
        },
    )
    status = ctrl.run(stop)
    client.close()
    log.info("stopped", extra={"status": status})
    return status


if __name__ == "__main__":
    sys.exit(main())
