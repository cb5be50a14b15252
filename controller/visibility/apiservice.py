"""Publish the visibility server's CA in the ``caBundle`` of its APIServices.

The chart (or, on the local cluster, the e2e fixture) creates ``v1beta1.visibility.kueue.x-k8s.io``
and ``v1beta2.visibility.kueue.x-k8s.io`` pointing at the visibility Service; the controller only
patches ``spec.caBundle`` (the current CA first, still-valid previous ones after, as for the
webhook: ``pykueue.tls.certs.merge_ca_bundle``), so the apiserver verifies the server it proxies
to instead of skipping verification as Kueue's manifests do (``insecureSkipTLSVerify``).
"""

from __future__ import annotations

import base64
import logging
from typing import Any

from pykueue.kube import resources as r
from pykueue.tls.certs import merge_ca_bundle

from .api import GROUP, VERSIONS

log = logging.getLogger(__name__)

API_SERVICE_NAMES = tuple(f"{version}.{GROUP}" for version in VERSIONS)


class ApiServiceSync:
    def __init__(self, client: Any, names: tuple[str, ...] = API_SERVICE_NAMES) -> None:
        self._client = client
        self._names = names

    def sync(self, ca_cert: bytes) -> None:
        for name in self._names:
            api_service = self._client.get(r.API_SERVICES, name)
            if api_service is None:
                log.warning("APIService not found; install it to serve the visibility API", extra={"apiService": name})
                continue
            spec = api_service.get("spec") or {}
            try:
                existing = base64.b64decode(spec.get("caBundle") or "")
            except ValueError:
                existing = b""
            bundle = merge_ca_bundle(ca_cert, existing)
            if bundle == existing and not spec.get("insecureSkipTLSVerify"):
                continue
            patch = {
                "metadata": {"resourceVersion": api_service["metadata"]["resourceVersion"]},
                "spec": {"caBundle": base64.b64encode(bundle).decode(), "insecureSkipTLSVerify": None},
            }
            self._client.patch(r.API_SERVICES, name, patch)
            log.info("published the visibility CA", extra={"apiService": name})
