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
import socket
import sys
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from controller.runtime.events import EventBroadcaster, senders_for_qps
from controller.runtime.health import parse_address
from controller.runtime.leaderelection import ElectionConfig
from controller.runtime.manager import Controller
from controller.runtime.signals import install_shutdown_handlers
from controller.visibility.setup import VisibilityOptions
from pykueue.api.config import Configuration, load_config, require_supported
from pykueue.kube import resources as R
from pykueue.kube.client import KubeClient
from pykueue.observability.logging import setup_logging

log = logging.getLogger("pykueue.controller")

COMPONENT = "pykueue-controller"
DEFAULT_NAMESPACE = "pykueue-system"
# A Configuration (or flag) that is invalid or asks for what pykueue lacks: like a missing
# prerequisite, restarting will not help, so it is not the 1 of a lost lease.
EXIT_BAD_CONFIGURATION = 2

# Imported in this order; each defines setup(ctrl). Later areas append their module here.
SETUP_MODULES: tuple[str, ...] = (
    "controller.core.setup",
    "controller.jobs.setup",
    "controller.concurrentadmission.setup",
    "controller.provisioning.setup",
    "controller.multikueue.setup",
    "controller.visibility.setup",
)

# Informers every controller needs; started even before any area plugs in, so readiness means
# "the Kueue objects are cached".
BASE_RESOURCES = (R.CLUSTER_QUEUES, R.LOCAL_QUEUES, R.WORKLOADS, R.RESOURCE_FLAVORS)


def _non_negative_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must not be negative, got {text!r}")
    return value


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
    parser.add_argument(
        "--health-addr",
        default=None,
        help="/healthz and /readyz address ('0' disables; default: the Configuration's "
        "health.healthProbeBindAddress, else :8081)",
    )
    parser.add_argument(
        "--metrics-addr",
        default=None,
        help="/metrics address ('0' disables; default: the Configuration's metrics.bindAddress, else :8080)",
    )
    parser.add_argument("--log-format", choices=("json", "text"), default="json")
    parser.add_argument("--log-level", default=os.environ.get("PYKUEUE_LOG_LEVEL", "INFO"))
    parser.add_argument(
        "--qps",
        type=float,
        default=None,
        help="client-side API request rate (default: the Configuration's clientConnection.qps, else 20)",
    )
    parser.add_argument(
        "--burst",
        type=int,
        default=None,
        help="client-side API request burst (default: the Configuration's clientConnection.burst, else 30)",
    )
    parser.add_argument("--identity", default=None, help="leader-election identity (default: hostname_<random>)")
    parser.add_argument(
        "--visibility-addr",
        default="0",
        help="serve Kueue's visibility API (an aggregated API) over TLS on host:port ('0', the default, disables; "
        "the chart sets :8082)",
    )
    parser.add_argument(
        "--visibility-service",
        default="pykueue-visibility",
        help="the Service the visibility APIServices point at (in --namespace); names the serving certificate",
    )
    parser.add_argument("--visibility-cert-dir", default="", help="where the visibility serving certificate is written")
    parser.add_argument(
        "--visibility-cert-sync-seconds",
        type=float,
        default=60.0,
        help="how often the visibility certificate, its caBundle and the front proxy's CA are re-checked",
    )
    parser.add_argument(
        "--visibility-secret",
        default="pykueue-visibility-cert",
        help="the Secret (in --namespace) holding the visibility CA and serving certificate, shared by replicas",
    )
    parser.add_argument(
        "--multikueue-incremental-round-seconds",
        type=float,
        default=None,
        help="how long a round of the Incremental MultiKueue dispatcher lasts before more workers are "
        "nominated (default 300, Kueue's fixed 5 minutes; shorter rounds are for tests and demos)",
    )
    parser.add_argument(
        "--preemption-grace-seconds",
        type=_non_negative_seconds,
        default=None,
        help="a workload admitted less than this long ago is not preempted yet; its preemptor waits "
        "(default 4; 0 preempts at once, as Kueue; docs/design/engine.md, 'Preemption grace')",
    )
    return parser


def tuning_overrides(args: argparse.Namespace) -> dict[str, float]:
    """The tuning flags given on the command line, under the ``ctrl.shared`` keys the setup
    modules read (a module falls back to its own default for a key that is absent)."""
    given = {
        "preemption-grace-seconds": args.preemption_grace_seconds,  # controller.core.setup
        "multikueue-incremental-round-seconds": args.multikueue_incremental_round_seconds,  # controller.multikueue
    }
    return {key: value for key, value in given.items() if value is not None}


# --- Configuration --------------------------------------------------------------------------------
#
# A setting that has both a flag and a Configuration field is resolved the same way everywhere:
# the flag when it is given, else the Configuration's field (Kueue's default when the file does
# not set it). docs/design/runtime.md tables the fields and their flags.


def load_configuration(path: str | None) -> Configuration:
    """The Configuration at ``path`` (Kueue's defaults without one), refusing what pykueue cannot
    honour; a :class:`ConfigError` (a ValueError) names the bad or refused field."""
    return require_supported(load_config(path), path)


def election_config(config: Configuration, args: argparse.Namespace, identity: str) -> ElectionConfig | None:
    """Leader-election settings: ``--leader-elect`` wins over ``leaderElection.leaderElect``; the
    Lease's name, namespace and timings come from ``leaderElection`` (client-go's 15 s / 10 s / 2 s
    by default), and the namespace falls back to ``--namespace``."""
    section = config.leader_election
    enabled = section.leader_elect if args.leader_elect is None else bool(args.leader_elect)
    if not enabled:
        return None
    return ElectionConfig(
        lease_name=section.resource_name,
        lease_namespace=section.resource_namespace or args.namespace,
        identity=identity,
        lease_duration=section.lease_duration,
        renew_deadline=section.renew_deadline,
        retry_period=section.retry_period,
    )


@dataclass(frozen=True)
class ClientLimits:
    """The API client's token bucket (Kueue: ``clientConnection``)."""

    qps: float
    burst: int


def client_limits(config: Configuration, args: argparse.Namespace) -> ClientLimits:
    """``--qps``/``--burst`` when given, else ``clientConnection.qps``/``burst`` (20/30 by default)."""
    connection = config.client_connection
    return ClientLimits(
        qps=connection.qps if args.qps is None else args.qps,
        burst=connection.burst if args.burst is None else args.burst,
    )


@dataclass(frozen=True)
class Listeners:
    """Where ``/healthz``+``/readyz`` and ``/metrics`` listen (``"0"`` disables one)."""

    health: str
    metrics: str


def listeners(config: Configuration, args: argparse.Namespace) -> Listeners:
    """``--health-addr``/``--metrics-addr`` when given, else ``health.healthProbeBindAddress`` and
    ``metrics.bindAddress`` (``:8081`` and ``:8080`` by default); a bad address names its source."""
    chosen = Listeners(
        health=config.health_probe_bind_address if args.health_addr is None else args.health_addr,
        metrics=config.metrics_bind_address if args.metrics_addr is None else args.metrics_addr,
    )
    for address, given, flag, field_path in (
        (chosen.health, args.health_addr, "--health-addr", "health.healthProbeBindAddress"),
        (chosen.metrics, args.metrics_addr, "--metrics-addr", "metrics.bindAddress"),
    ):
        if address in ("0", ""):
            continue
        try:
            parse_address(address)
        except ValueError as exc:
            raise ValueError(f"{field_path if given is None else flag}: {exc}") from None
    return chosen


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
        limits = client_limits(config, args)
        addresses = listeners(config, args)
    except ValueError as exc:  # ConfigError is a ValueError; every message names its field or flag
        log.error("invalid configuration", extra={"error": str(exc)})
        return EXIT_BAD_CONFIGURATION
    client = KubeClient.from_config(args.kubeconfig, qps=limits.qps, burst=limits.burst, user_agent=COMPONENT)
    ctrl = Controller(
        client,
        identity=identity,
        election=election,
        health_addr=addresses.health,
        metrics_addr=addresses.metrics,
        config=config,
        # One Event pipeline for every controller, inside the one client budget as Kueue's
        # (clientConnection.qps bounds every request) but behind the writes that admit
        # workloads, with senders enough to spend what those leave over.
        event_broadcaster=EventBroadcaster(client.with_spare_budget(), senders=senders_for_qps(limits.qps)),
    )
    for resource in BASE_RESOURCES:
        ctrl.informer(resource)
    ctrl.shared["visibility-options"] = VisibilityOptions(
        args.visibility_addr, args.namespace, args.visibility_service, args.visibility_cert_dir, args.visibility_secret,
        args.visibility_cert_sync_seconds,
    )
    ctrl.shared.update(tuning_overrides(args))
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
