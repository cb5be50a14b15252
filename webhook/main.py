"""``pykueue-webhook``: provision certificates, then serve the admission endpoints with gunicorn.

Start-up order matters: the apiserver must be able to verify the certificate before it is told
where to call, and gunicorn cannot start its TLS listener without files. So the master first makes
sure the Secret holds a usable certificate, writes the files, injects the CA into the webhook
configurations (creating them in local mode), and only then starts serving; from then on a thread
in the master re-syncs every ``--cert-check-interval`` seconds (rotation, other replicas' writes).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from pykueue.observability.logging import setup_logging

if TYPE_CHECKING:
    from pykueue.api.config import Configuration
    from webhook.server import ServerOptions

log = logging.getLogger("pykueue.webhook")

DEFAULT_NAMESPACE = "pykueue-system"
DEFAULT_CONTROLLER_USERNAME = "system:serviceaccount:pykueue-system:pykueue-controller"


@dataclass(frozen=True)
class Settings:
    """The command line resolved against the Configuration file (see :func:`parse_args`)."""

    config: str | None
    configuration: Configuration
    kubeconfig: str | None
    bind: str
    port: int
    workers: int
    threads: int
    keepalive_linger: float
    namespace: str
    cert_dir: Path
    cert_secret: str
    service_name: str
    service_port: int
    cert_management: str
    local_url: str | None
    controller_username: str
    cert_validity: timedelta
    cert_check_interval: float
    resource_in_use_finalizers: bool
    log_format: str
    max_body_bytes: int


def parse_args(argv: list[str] | None = None) -> Settings:
    from webhook.worker import DEFAULT_LINGER_SECONDS

    parser = argparse.ArgumentParser(prog="pykueue-webhook", description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="the Configuration file both programs read (manageJobsWithoutQueueName, "
                        "webhook, internalCertManagement, ...)")
    parser.add_argument("--kubeconfig", help="kubeconfig path (default: in-cluster, then ~/.kube/config)")
    parser.add_argument("--bind", default=None, help="listen address (default: the Configuration's webhook.host, "
                        "else 0.0.0.0)")
    parser.add_argument("--port", type=int, default=None, help="listen port (default: the Configuration's "
                        "webhook.port, else 9443)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--keepalive-linger", type=float, default=DEFAULT_LINGER_SECONDS,
                        help="seconds a request thread waits on its kept-alive connection for the next request "
                        "before handing it back to the poller (0: never; see webhook/worker.py)")
    parser.add_argument("--namespace", default=os.environ.get("POD_NAMESPACE") or DEFAULT_NAMESPACE)
    parser.add_argument("--cert-dir", default=None, help="where the serving certificate's files are (default: the "
                        "Configuration's webhook.certDir, else /tmp/k8s-webhook-server/serving-certs)")
    parser.add_argument("--cert-secret", default=None, help="Secret of the self-provisioned certificates (default: "
                        "the Configuration's internalCertManagement.webhookSecretName)")
    parser.add_argument("--service-name", default=None, help="Service the certificate is issued for (default: the "
                        "Configuration's internalCertManagement.webhookServiceName)")
    parser.add_argument("--service-port", type=int, default=443, help="port of that Service, which the CRDs' "
                        "conversion webhook is pointed at")
    parser.add_argument("--cert-management", choices=("internal", "external"), default=None,
                        help="internal: provision and rotate certificates; external: serve the files in --cert-dir "
                        "(cert-manager), reloading them when they change (default: internal when the "
                        "Configuration's internalCertManagement.enable is true, as it is by default)")
    parser.add_argument("--local-url", help="the apiserver calls this https://127.0.0.1:PORT URL; the webhook "
                        "writes its own webhook configurations (deleted again on exit)")
    parser.add_argument("--controller-username", default=DEFAULT_CONTROLLER_USERNAME,
                        help="the only user allowed to write Parent/ResourceFlavorOption workloads")
    parser.add_argument("--cert-validity", type=float, default=365 * 24 * 3600.0,
                        help="lifetime of issued certificates in seconds (rotated at 2/3 of it)")
    parser.add_argument("--cert-check-interval", type=float, default=60.0,
                        help="seconds between certificate checks (rotation, other replicas' writes)")
    parser.add_argument("--resource-in-use-finalizers", action=argparse.BooleanOptionalAction, default=True,
                        help="add kueue.x-k8s.io/resource-in-use to new ClusterQueues and ResourceFlavors")
    parser.add_argument("--log-format", choices=("json", "text"), default="json")
    parser.add_argument("--max-body-bytes", type=int, default=8 * 1024 * 1024)
    args = parser.parse_args(argv)
    if args.local_url and urlparse(args.local_url).scheme != "https":
        parser.error("--local-url must be an https:// URL")
    if args.workers < 1 or args.threads < 1:
        parser.error("--workers and --threads must be at least 1")
    if not 0 <= args.keepalive_linger <= 1:
        parser.error("--keepalive-linger must be between 0 and 1 second")
    # A flag that is given wins; otherwise the Configuration's field (Kueue's default without it).
    configuration = load_configuration(args.config)
    certs, server = configuration.internal_cert_management, configuration.webhook
    cert_management = args.cert_management or ("internal" if certs.enable else "external")
    return Settings(
        config=args.config,
        configuration=configuration,
        kubeconfig=args.kubeconfig,
        bind=args.bind if args.bind is not None else (server.host or "0.0.0.0"),
        port=args.port if args.port is not None else server.port,
        workers=args.workers,
        threads=args.threads,
        keepalive_linger=args.keepalive_linger,
        namespace=args.namespace,
        cert_dir=Path(args.cert_dir if args.cert_dir is not None else server.cert_dir),
        cert_secret=args.cert_secret if args.cert_secret is not None else certs.webhook_secret_name,
        service_name=args.service_name if args.service_name is not None else certs.webhook_service_name,
        service_port=args.service_port,
        cert_management=cert_management,
        local_url=args.local_url,
        controller_username=args.controller_username,
        cert_validity=timedelta(seconds=args.cert_validity),
        cert_check_interval=args.cert_check_interval,
        resource_in_use_finalizers=args.resource_in_use_finalizers,
        log_format=args.log_format,
        max_body_bytes=args.max_body_bytes,
    )


def load_configuration(path: str | None) -> Configuration:
    """The Configuration file (Kueue's defaults without one); a bad or refused field stops the
    program with a one-line message naming it, before anything is served."""
    from pykueue.api.config import ConfigError, load_config, require_supported

    try:
        return require_supported(load_config(path), path)
    except ConfigError as err:
        raise SystemExit(f"pykueue-webhook: {err}") from None


def job_policy_from_config(settings: Settings) -> Any:
    """manageJobsWithoutQueueName and its namespace selector, from the Configuration.

    Without ``--config`` Kueue's defaults apply, with this program's namespace excluded.
    """
    from pykueue.api.config import default_namespace_selector
    from webhook.jobs import JobPolicy

    config = settings.configuration
    if not settings.config:
        return JobPolicy(False, default_namespace_selector(settings.namespace))
    return JobPolicy(config.manage_jobs_without_queue_name, config.managed_jobs_namespace_selector)


def _kube_client(settings: Settings) -> Any:
    """The master's client (certificates): patient, with the default retries and timeouts."""
    from pykueue.kube.client import KubeClient

    return KubeClient.from_config(settings.kubeconfig, qps=20.0, burst=40, user_agent="pykueue-webhook")


def _request_path_client(settings: Settings) -> Any:
    """A worker's client for reads made while the apiserver waits on us (10 s webhook timeout).

    One retry and short socket timeouts, so a struggling apiserver yields a clear denial well
    within the webhook timeout instead of a timed-out call.
    """
    from pykueue.kube.client import KubeClient

    base = KubeClient.from_config(settings.kubeconfig, user_agent="pykueue-webhook")
    return KubeClient(base.transport, qps=50.0, burst=100, max_retries=1, timeout=(2.0, 4.0))


def _ensure_namespace(client: Any, namespace: str) -> None:
    """Local mode only: the Secret needs its namespace, which a bare local cluster lacks."""
    from pykueue.kube import resources as r
    from pykueue.kube.errors import AlreadyExists

    if client.get(r.NAMESPACES, namespace) is None:
        with contextlib.suppress(AlreadyExists):
            client.create(r.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})


def _wait_for_files(certfile: Path, keyfile: Path, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not (certfile.exists() and keyfile.exists()):
        if time.monotonic() > deadline:
            raise SystemExit(f"certificate files {certfile} and {keyfile} did not appear within {timeout:.0f}s")
        time.sleep(1.0)


def _sync_with_retries(provisioner: Any, attempts: int = 30) -> None:
    for attempt in range(1, attempts + 1):
        try:
            provisioner.sync()
            return
        except Exception:
            if attempt == attempts:
                raise
            log.exception("initial certificate sync failed; retrying", extra={"attempt": attempt})
            time.sleep(min(2.0 * attempt, 10.0))


def main(argv: list[str] | None = None) -> int:
    settings = parse_args(argv)
    setup_logging("webhook", settings.log_format)  # type: ignore[arg-type]
    # prometheus_client picks its multiprocess mode when first imported, so set it before anything
    # imports webhook.metrics.
    metrics_dir: str | None = None
    if settings.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        metrics_dir = tempfile.mkdtemp(prefix="pykueue-webhook-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir

    from pykueue.tls.certs import service_dns_names
    from webhook.certprovision import CertFiles, CertProvisioner
    from webhook.configurations import LocalConfigurations, ServiceConfigurations
    from webhook.crd_conversion import (
        CrdConversion,
        MountedCaSync,
        Syncs,
        service_client_config,
        url_client_config,
    )
    from webhook.server import WebhookServer

    job_policy = job_policy_from_config(settings)
    files = CertFiles(settings.cert_dir)
    stop = threading.Event()
    local: LocalConfigurations | None = None
    provisioner: CertProvisioner | None = None
    mounted: MountedCaSync | None = None

    if settings.cert_management == "internal":
        client = _kube_client(settings)
        if settings.local_url:
            host = urlparse(settings.local_url).hostname or "127.0.0.1"
            dns_names, ips = (["localhost"], [host]) if host[0].isdigit() else ([host], [])
            _ensure_namespace(client, settings.namespace)
            local = LocalConfigurations(
                client, settings.local_url, own_namespace=settings.namespace,
                manage_jobs_without_queue_name=job_policy.manage_jobs_without_queue_name,
            )
            configurations: Any = Syncs(local, CrdConversion(client, url_client_config(settings.local_url)))
        else:
            dns_names, ips = service_dns_names(settings.service_name, settings.namespace), []
            configurations = Syncs(
                ServiceConfigurations(client),
                CrdConversion(client, service_client_config(settings.service_name, settings.namespace, settings.service_port)),
            )
        provisioner = CertProvisioner(
            client, namespace=settings.namespace, secret_name=settings.cert_secret, files=files,
            dns_names=dns_names, ip_addresses=ips, configurations=configurations, validity=settings.cert_validity,
        )
        _sync_with_retries(provisioner)
    else:
        _wait_for_files(files.certfile, files.keyfile)
        if not settings.local_url:
            mounted = MountedCaSync(
                lambda: CrdConversion(
                    _kube_client(settings),
                    service_client_config(settings.service_name, settings.namespace, settings.service_port),
                ),
                files.directory / "ca.crt",
            )

    def on_ready() -> None:
        if provisioner is not None:
            threading.Thread(
                target=provisioner.run, args=(stop, settings.cert_check_interval), name="cert-sync", daemon=True
            ).start()
        if mounted is not None:
            threading.Thread(
                target=mounted.run, args=(stop, settings.cert_check_interval), name="crd-ca-sync", daemon=True
            ).start()
        log.info("serving admission webhooks", extra={"bind": f"{settings.bind}:{settings.port}"})

    def on_exit() -> None:
        stop.set()
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
        if local is not None:
            try:
                local.delete()
            except Exception:
                log.exception("could not delete the local webhook configurations")

    options = server_options(settings, files.certfile, files.keyfile, on_ready=on_ready, on_exit=on_exit)
    WebhookServer(functools.partial(build_app, settings, job_policy), options).run()
    return 0


def server_options(
    settings: Settings,
    certfile: Path,
    keyfile: Path,
    *,
    on_ready: Callable[[], None] | None = None,
    on_exit: Callable[[], None] | None = None,
) -> ServerOptions:
    """gunicorn's settings from the command line (listener, worker layout, keep-alive linger)."""
    from webhook.server import ServerOptions

    return ServerOptions(
        bind=f"{settings.bind}:{settings.port}",
        certfile=str(certfile),
        keyfile=str(keyfile),
        workers=settings.workers,
        threads=settings.threads,
        linger_seconds=settings.keepalive_linger,
        on_ready=on_ready,
        on_exit=on_exit,
    )


def build_app(settings: Settings, job_policy: Any) -> Any:
    """The Flask app of one worker (called after gunicorn forks it)."""
    from pykueue.api.validation import schema_errors
    from webhook.app import create_app
    from webhook.cluster_state import KubeClusterState
    from webhook.handlers import KUEUE_GROUP, WebhookContext, build_endpoints
    from webhook.registry import HOOKS

    setup_logging("webhook", settings.log_format)  # type: ignore[arg-type]
    for hook in HOOKS:  # compile each kind's schema validators now, not on the first user request
        if hook.group == KUEUE_GROUP:
            for version in hook.versions:
                schema_errors(hook.kind, {}, version=version)
    state = KubeClusterState(functools.partial(_request_path_client, settings))
    context = WebhookContext(
        state=state,
        job_policy=job_policy,
        controller_username=settings.controller_username,
        # The apiserver has already pruned unknown fields before calling us.
        schema_errors=functools.partial(schema_errors, unknown_fields=False),
        add_finalizers=settings.resource_in_use_finalizers,
    )
    certfile = settings.cert_dir / "tls.crt"
    return create_app(build_endpoints(context), max_body_bytes=settings.max_body_bytes, ready=certfile.exists)


if __name__ == "__main__":
    sys.exit(main())
