"""Wire the visibility API into the controller process (``controller.main`` SETUP_MODULES).

Off unless ``--visibility-addr`` is given (the chart sets ``:8082``, Kueue's port). Every replica
serves — the apiserver's availability check must succeed wherever the Service points — but only
the leader holds queues; a non-leader answers 503 with a message saying so
(docs/design/visibility.md). The server, its certificate sync and the refresh of the front
proxy's trust settings run on daemon threads for the life of the process.
"""

from __future__ import annotations

import logging
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from controller.runtime.manager import Controller
from pykueue.kube import resources as r
from pykueue.tls.certs import service_dns_names
from pykueue.tls.provision import CertFiles, CertProvisioner

from .apiservice import ApiServiceSync
from .auth import (
    AUTHENTICATION_CONFIGMAP,
    Authenticator,
    Authorizer,
    RequestHeaderConfig,
    load_requestheader_config,
)
from .server import ServingContext, VisibilityServer
from .service import VisibilityService

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class VisibilityOptions:
    address: str = ""  # host:port; "" or "0" = off
    namespace: str = "pykueue-system"  # of the Service and the certificate Secret
    service: str = "pykueue-visibility"
    cert_dir: str = ""
    secret: str = "pykueue-visibility-cert"
    sync_seconds: float = 60.0  # certificate, caBundle and front-proxy CA re-check period


class _TrustSettings:
    """The front proxy's settings, re-read every sync so a rotated front-proxy CA is picked up."""

    def __init__(self, client: object) -> None:
        self._client = client
        self.current: RequestHeaderConfig | None = None

    def refresh(self) -> None:
        namespace, name = AUTHENTICATION_CONFIGMAP
        self.current = load_requestheader_config(self._client.get(r.CONFIG_MAPS, name, namespace))  # type: ignore[attr-defined]


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "0.0.0.0", int(port)


def setup(ctrl: Controller) -> None:
    options = ctrl.shared.get("visibility-options")
    if not isinstance(options, VisibilityOptions) or options.address in ("", "0"):
        log.info("visibility API off (no --visibility-addr)")
        return
    reads = ctrl.shared.get("engine-reads")
    if reads is None:
        raise RuntimeError("the visibility API needs the core scheduler (controller.core.setup) first")
    workloads = ctrl.informer(r.WORKLOADS)
    cert_dir = Path(options.cert_dir or tempfile.mkdtemp(prefix="pykueue-visibility-"))
    provisioner = CertProvisioner(
        ctrl.client,
        namespace=options.namespace,
        secret_name=options.secret,
        files=CertFiles(cert_dir),
        dns_names=service_dns_names(options.service, options.namespace),
        configurations=ApiServiceSync(ctrl.client),
    )
    trust = _TrustSettings(ctrl.client)
    # On a MultiKueue manager, explain adds what the dispatch loop last saw of the workers.
    dispatch = ctrl.shared.get("multikueue-dispatch-states")
    service = VisibilityService(reads, Authorizer(ctrl.client), workloads.store.get,
                                dispatch.get if dispatch is not None else None,
                                ctrl.shared.get("admission-blocked-by"))  # fmt: skip

    def run() -> None:
        while True:  # certificates first: the server cannot start without files
            try:
                provisioner.sync()
                trust.refresh()
                break
            except Exception:
                log.exception("visibility certificate sync failed; retrying")
                threading.Event().wait(5)
        files = provisioner.files
        context = ServingContext(str(files.certfile), str(files.keyfile), lambda: trust.current.client_ca if trust.current else None)
        server = VisibilityServer(_split(options.address), context, service, Authenticator(ctrl.client), lambda: trust.current)
        threading.Thread(target=server.serve_forever, name="visibility-server", daemon=True).start()
        log.info("visibility API serving", extra={"address": options.address, "frontProxy": trust.current is not None})
        while True:
            threading.Event().wait(options.sync_seconds)
            try:
                provisioner.sync()
                trust.refresh()
            except Exception:
                log.exception("visibility certificate sync failed; retrying")

    threading.Thread(target=run, name="visibility", daemon=True).start()
