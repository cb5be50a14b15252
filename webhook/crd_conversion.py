"""Point the Kueue CRDs' conversion webhook at this program and keep its ``caBundle`` current.

The generated CRDs (manifests/crds, the chart's crds/) carry ``conversion.strategy: Webhook`` with
the default release's Service and no CA, since neither is known when they are written. The
webhook fills both in next to the webhook configurations' ``caBundle`` (:mod:`webhook.configurations`),
from the same certificate sync (:mod:`webhook.certprovision`):

* in a cluster, ``clientConfig.service`` names this program's own Service, namespace and port;
* locally (``--local-url``), ``clientConfig.url`` is ``<local url>/convert``.

The CA bundle is merged with the one already there (:func:`pykueue.tls.certs.merge_ca_bundle`) so a
rotation never leaves the apiserver with no CA it trusts. A CRD that is missing or whose
conversion strategy someone set to ``None`` is logged and left alone: v1beta1 keeps working, only
v1beta2 is unavailable (docs/design/api-versions.md).
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pykueue.api.constants import GROUP
from pykueue.api.schema import KINDS
from pykueue.kube import resources as r
from pykueue.kube.client import KubeClient
from pykueue.kube.errors import Conflict, NotFound
from pykueue.tls.certs import merge_ca_bundle
from webhook.conversion import CONVERSION_PATH

log = logging.getLogger("pykueue.webhook.crd_conversion")

CRD_NAMES = tuple(sorted(info.crd_name for info in KINDS.values() if info.group == GROUP))
REVIEW_VERSIONS = ["v1"]


def service_client_config(name: str, namespace: str, port: int) -> dict[str, Any]:
    return {"service": {"name": name, "namespace": namespace, "path": CONVERSION_PATH, "port": port}}


def url_client_config(base_url: str) -> dict[str, Any]:
    return {"url": base_url.rstrip("/") + CONVERSION_PATH}


def _existing_bundle(crd: dict[str, Any]) -> bytes:
    encoded = (((crd.get("spec") or {}).get("conversion") or {}).get("webhook") or {}).get("clientConfig", {}).get("caBundle")
    try:
        return base64.b64decode(encoded) if isinstance(encoded, str) else b""
    except ValueError:
        return b""


def desired_conversion(client_config: dict[str, Any], bundle: bytes) -> dict[str, Any]:
    return {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": REVIEW_VERSIONS,
            "clientConfig": {**client_config, "caBundle": base64.b64encode(bundle).decode()},
        },
    }


class CrdConversion:
    """A :class:`webhook.configurations.ConfigurationSync` for the CRDs' ``spec.conversion``."""

    def __init__(self, client: KubeClient, client_config: dict[str, Any], names: tuple[str, ...] = CRD_NAMES) -> None:
        self.client = client
        self.client_config = client_config
        self.names = names

    def sync(self, ca_cert: bytes) -> None:
        for name in self.names:
            for _ in range(5):
                crd = self.client.get(r.CUSTOM_RESOURCE_DEFINITIONS, name)
                if crd is None:
                    log.warning("CRD not found; its conversion webhook is not configured", extra={"crd": name})
                    break
                conversion = (crd.get("spec") or {}).get("conversion") or {}
                if conversion.get("strategy") != "Webhook":
                    log.warning("CRD conversion strategy is not Webhook; v1beta2 is not converted", extra={"crd": name})
                    break
                desired = desired_conversion(self.client_config, merge_ca_bundle(ca_cert, _existing_bundle(crd)))
                if conversion == desired:
                    break
                # clientConfig is replaced whole: a merge patch would keep a stale service beside a url.
                client_config = desired["webhook"]["clientConfig"]
                other = "url" if "service" in client_config else "service"
                webhook = {**desired["webhook"], "clientConfig": {**client_config, other: None}}
                patch = {
                    "metadata": {"resourceVersion": crd["metadata"]["resourceVersion"]},
                    "spec": {"conversion": {**desired, "webhook": webhook}},
                }
                try:
                    self.client.patch(r.CUSTOM_RESOURCE_DEFINITIONS, name, patch)
                    log.info("configured the CRD's conversion webhook", extra={"crd": name})
                    break
                except (Conflict, NotFound):
                    continue


class Syncs:
    """Several syncs run in order from the one certificate sync."""

    def __init__(self, *syncs: Any) -> None:
        self.syncs = syncs

    def sync(self, ca_cert: bytes) -> None:
        for sync in self.syncs:
            sync.sync(ca_cert)


class MountedCaSync:
    """cert-manager mode (``--cert-management=external``): keep the CRDs' conversion webhook
    pointed at this program, trusting the CA cert-manager writes next to the serving pair.

    The chart's CRDs live in its ``crds/`` directory, which Helm installs verbatim: they cannot
    carry a release-specific ``cert-manager.io/inject-ca-from`` annotation, as the webhook
    configurations do. So the webhook does what the injector would: it reads ``ca.crt`` from the
    mounted Secret (cert-manager fills it for self-signed and CA issuers) and runs the same
    :class:`CrdConversion` sync the self-provisioned mode runs, again whenever the file changes
    (cert-manager rewrites the mounted Secret on renewal; the previous CA is kept in the bundle
    by the merge). An issuer that writes no ``ca.crt`` (ACME) leaves v1beta2 unconverted: logged
    once, and docs/install.md says how to set the bundle by hand.
    """

    def __init__(self, make_sync: Callable[[], Any], ca_file: Path) -> None:
        # The client is built on first use, on the sync's thread: serving admission never waits
        # for, or fails on, the API (a webhook run without a kubeconfig still serves).
        self._make_sync = make_sync
        self._sync: Any = None
        self.ca_file = ca_file
        self._applied: bytes | None = None
        self._warned = False

    def run_once(self) -> bool:
        """Sync if the CA changed since the last successful sync; True when the CRDs trust it."""
        try:
            ca = self.ca_file.read_bytes()
        except OSError:
            ca = b""
        if not ca.strip():
            if not self._warned:
                log.warning("no CA in the mounted certificate Secret; the CRDs' conversion webhook is not "
                            "configured and v1beta2 is not served", extra={"file": str(self.ca_file)})
                self._warned = True
            return False
        if ca != self._applied:
            if self._sync is None:
                self._sync = self._make_sync()
            self._sync.sync(ca)
            self._applied = ca
        return True

    def run(self, stop: threading.Event, interval: float) -> None:
        while True:
            try:
                self.run_once()
            except Exception:
                log.exception("could not configure the CRDs' conversion webhook; retrying")
            if stop.wait(interval):
                return
