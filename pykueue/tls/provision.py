"""Keep serving certificates in a Secret, on disk, and in what publishes their CA (``caBundle``).

The webhook's gunicorn master (never its workers) and the controller's visibility server run
:meth:`CertProvisioner.sync` once before serving — a server cannot serve without files — and
then every ``interval`` seconds; the webhook syncs its webhook configurations
(``webhook.configurations``), the controller its APIServices (``controller.visibility.apiservice``).

Several replicas share one Secret, so every step is written to be raced:

* creating: whoever creates the Secret first wins; a replica that gets ``AlreadyExists`` reads the
  winner's certificates and uses those. The Helm chart creates the Secret *empty* (so uninstall
  removes it); filling an empty Secret is an update with the read ``resourceVersion``, and the loser
  of that race gets ``Conflict`` and, again, reads the winner's;
* rotating (when 2/3 of the lifetime has passed, when the names no longer match, or when the Secret's
  contents are unusable): the same optimistic update, so exactly one new bundle wins;
* the CA is published before the files on disk switch to a certificate it signed;
* the files on disk always follow the Secret, so a replica that lost a race, or that did not rotate
  itself, still serves what the others serve; workers reload them without a restart
  (:mod:`webhook.tls`);
* ``caBundle`` holds the current CA and still-valid previous ones (:func:`merge_ca_bundle`) so a
  replica still serving the old certificate keeps working until it picks up the new files.
"""

from __future__ import annotations

import base64
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from pykueue.kube import resources as r
from pykueue.kube.client import KubeClient
from pykueue.kube.errors import AlreadyExists, Conflict
from pykueue.tls.certs import (
    DEFAULT_VALIDITY,
    ROTATE_AT_FRACTION,
    TLS_CERT_KEY,
    TLS_KEY_KEY,
    CertBundle,
    covers_names,
    generate_bundle,
    rotation_due,
)

log = logging.getLogger("pykueue.tls")

ROTATION_ANNOTATION = "pykueue.dev/rotated-at"


class ConfigurationSync(Protocol):
    """Publishes a CA certificate where the apiserver reads it (a ``caBundle``)."""

    def sync(self, ca_cert: bytes) -> None: ...


def decode_secret_data(secret: dict[str, Any] | None) -> dict[str, bytes]:
    data = (secret or {}).get("data") or {}
    decoded: dict[str, bytes] = {}
    for key, value in data.items():
        try:
            decoded[key] = base64.b64decode(value)
        except (ValueError, TypeError):
            continue
    return decoded


def encode_secret_data(bundle: CertBundle) -> dict[str, str]:
    return {key: base64.b64encode(value).decode() for key, value in bundle.to_secret_data().items()}


def write_atomically(path: Path, content: bytes, mode: int = 0o600) -> None:
    """Replace ``path`` in one rename, so a reader sees the old or the new file, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class CertFiles:
    directory: Path

    @property
    def certfile(self) -> Path:
        return self.directory / TLS_CERT_KEY

    @property
    def keyfile(self) -> Path:
        return self.directory / TLS_KEY_KEY

    def read(self) -> tuple[bytes, bytes] | None:
        try:
            return self.certfile.read_bytes(), self.keyfile.read_bytes()
        except OSError:
            return None

    def write(self, bundle: CertBundle) -> bool:
        """Write the serving pair if it differs; True when the files changed.

        The key goes first: a worker that reloads between the two renames sees a key that does
        not match the old certificate, fails to load, and keeps its previous context (webhook.tls).
        """
        if self.read() == (bundle.cert, bundle.key):
            return False
        write_atomically(self.keyfile, bundle.key)
        write_atomically(self.certfile, bundle.cert, mode=0o644)
        return True


class CertProvisioner:
    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str,
        secret_name: str,
        files: CertFiles,
        dns_names: Sequence[str],
        ip_addresses: Sequence[str] = (),
        configurations: ConfigurationSync | None = None,
        validity: timedelta = DEFAULT_VALIDITY,
        rotate_fraction: float = ROTATE_AT_FRACTION,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.secret_name = secret_name
        self.files = files
        self.dns_names = list(dns_names)
        self.ip_addresses = list(ip_addresses)
        self.configurations = configurations
        self.validity = validity
        self.rotate_fraction = rotate_fraction
        self.clock = clock
        self.rotations = 0

    def _usable(self, bundle: CertBundle | None) -> bool:
        return (
            bundle is not None
            and covers_names(bundle, self.dns_names, self.ip_addresses)
            and not rotation_due(bundle, self.clock(), self.rotate_fraction)
        )

    def _new_bundle(self) -> CertBundle:
        return generate_bundle(
            dns_names=self.dns_names, ip_addresses=self.ip_addresses, validity=self.validity, now=self.clock()
        )

    def _secret_body(self, bundle: CertBundle, base: dict[str, Any] | None) -> dict[str, Any]:
        secret = dict(base or {})
        metadata = dict(secret.get("metadata") or {})
        metadata.setdefault("name", self.secret_name)
        metadata.setdefault("namespace", self.namespace)
        metadata["annotations"] = {**(metadata.get("annotations") or {}), ROTATION_ANNOTATION: self.clock().isoformat()}
        secret.update({"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": encode_secret_data(bundle)})
        secret.setdefault("type", "Opaque")
        return secret

    def ensure_secret(self) -> CertBundle:
        """The bundle every replica agrees on: the Secret's if usable, else a new one that won the race."""
        for _ in range(5):
            secret = self.client.get(r.SECRETS, self.secret_name, self.namespace)
            current = CertBundle.from_secret_data(decode_secret_data(secret))
            if self._usable(current):
                assert current is not None
                return current
            fresh = self._new_bundle()
            try:
                if secret is None:
                    self.client.create(r.SECRETS, self._secret_body(fresh, None), self.namespace)
                else:
                    self.client.replace(r.SECRETS, self._secret_body(fresh, secret))
            except (AlreadyExists, Conflict):
                log.info("another replica wrote the certificate Secret first; using its certificates")
                continue
            self.rotations += 1
            log.info(
                "issued a new serving certificate",
                extra={"secret": f"{self.namespace}/{self.secret_name}", "rotated": current is not None},
            )
            return fresh
        raise RuntimeError(f"could not agree on certificates in Secret {self.namespace}/{self.secret_name}")

    def sync(self) -> CertBundle:
        """Agree on the Secret's bundle, publish its CA, then serve its certificate.

        The CA is published *before* the files are switched: the workers load new files on their
        next connection, and a certificate of a CA the apiserver does not trust yet would fail
        every request it answers (``failurePolicy: Fail``) until the ``caBundle`` caught up.
        """
        bundle = self.ensure_secret()
        if self.configurations is not None:
            self.configurations.sync(bundle.ca_cert)
        if self.files.write(bundle):
            log.info("wrote the serving certificate", extra={"dir": str(self.files.directory)})
        return bundle

    def run(self, stop: threading.Event, interval: float) -> None:
        """Re-sync every ``interval`` seconds until ``stop`` is set; failures are logged and retried."""
        while not stop.wait(interval):
            try:
                self.sync()
            except Exception:
                log.exception("certificate sync failed; retrying")
