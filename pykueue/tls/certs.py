"""Self-provisioned serving certificates (the webhook's, the visibility API's): a CA and a serving certificate made with ``cryptography``.

The apiserver only calls a webhook over TLS it can verify, so without cert-manager pykueue acts as
its own small CA (as Kueue's internal cert management does): it creates a CA, signs a serving
certificate for the Service's DNS names (or ``127.0.0.1`` when the apiserver calls a local URL),
keeps both in a Secret and publishes the CA in the webhook configurations' ``caBundle``.

This module is the pure part — generating, parsing and judging certificates, and merging CA
bundles; :mod:`pykueue.tls.provision` stores them and keeps them fresh.

Keys are ECDSA P-256: as strong as RSA-3072 for this use, and generated in microseconds, which
keeps start-up and rotation cheap on a 2-core machine.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERT_KEY = "ca.crt"
CA_KEY_KEY = "ca.key"
TLS_CERT_KEY = "tls.crt"
TLS_KEY_KEY = "tls.key"
SECRET_KEYS = (CA_CERT_KEY, CA_KEY_KEY, TLS_CERT_KEY, TLS_KEY_KEY)

DEFAULT_VALIDITY = timedelta(days=365)
# Rotate once this fraction of the lifetime has passed: with a one-year certificate that leaves four
# months for every replica and the apiserver to pick up the new one.
ROTATE_AT_FRACTION = 2 / 3
# Tolerate clocks that disagree a little between the webhook and the apiserver.
BACKDATE = timedelta(minutes=5)
# Previous CAs kept in caBundle beside the current one, so connections made with a certificate
# signed by the old CA still verify while replicas pick up the new files.
MAX_PREVIOUS_CAS = 2


@dataclass(frozen=True)
class CertBundle:
    """PEM bytes of the CA and of the serving certificate it signed."""

    ca_cert: bytes
    ca_key: bytes
    cert: bytes
    key: bytes

    def to_secret_data(self) -> dict[str, bytes]:
        return {CA_CERT_KEY: self.ca_cert, CA_KEY_KEY: self.ca_key, TLS_CERT_KEY: self.cert, TLS_KEY_KEY: self.key}

    @classmethod
    def from_secret_data(cls, data: dict[str, bytes]) -> CertBundle | None:
        """The bundle in a Secret's (decoded) data, or None when it is missing or unreadable."""
        if not all(data.get(key) for key in SECRET_KEYS):
            return None
        bundle = cls(data[CA_CERT_KEY], data[CA_KEY_KEY], data[TLS_CERT_KEY], data[TLS_KEY_KEY])
        try:
            load_cert(bundle.ca_cert)
            load_cert(bundle.cert)
            serialization.load_pem_private_key(bundle.key, password=None)
        except ValueError:
            return None
        return bundle


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _subject_alt_names(dns_names: Sequence[str], ip_addresses: Sequence[str]) -> x509.SubjectAlternativeName:
    entries: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    entries += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    return x509.SubjectAlternativeName(entries)


def generate_bundle(
    *,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str] = (),
    validity: timedelta = DEFAULT_VALIDITY,
    now: datetime | None = None,
) -> CertBundle:
    """A fresh CA and a serving certificate for ``dns_names``/``ip_addresses``, both valid ``validity``."""
    if not dns_names and not ip_addresses:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    now = now or datetime.now(UTC)
    not_before, not_after = now - BACKDATE, now + validity
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"pykueue-webhook-ca@{int(now.timestamp())}")
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    common_name = dns_names[0] if dns_names else ip_addresses[0]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(_subject_alt_names(dns_names, ip_addresses), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return CertBundle(
        ca_cert=ca_cert.public_bytes(serialization.Encoding.PEM),
        ca_key=_key_pem(ca_key),
        cert=cert.public_bytes(serialization.Encoding.PEM),
        key=_key_pem(key),
    )


def load_cert(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def rotation_due(bundle: CertBundle, now: datetime | None = None, fraction: float = ROTATE_AT_FRACTION) -> bool:
    """True once ``fraction`` of the serving certificate's (or the CA's) lifetime has passed."""
    now = now or datetime.now(UTC)
    for pem in (bundle.cert, bundle.ca_cert):
        cert = load_cert(pem)
        start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
        if now >= start + (end - start) * fraction:
            return True
    return False


def covers_names(bundle: CertBundle, dns_names: Sequence[str], ip_addresses: Sequence[str]) -> bool:
    """Whether the serving certificate names every required DNS name and IP address."""
    try:
        sans = load_cert(bundle.cert).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    have_dns = set(sans.get_values_for_type(x509.DNSName))
    have_ips = {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    return set(dns_names) <= have_dns and {str(ipaddress.ip_address(ip)) for ip in ip_addresses} <= have_ips


def service_dns_names(service: str, namespace: str) -> list[str]:
    """The names the apiserver may use for a Service-backed webhook."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def split_pem_certificates(bundle: bytes) -> list[bytes]:
    marker = b"-----END CERTIFICATE-----"
    parts = []
    for chunk in bundle.split(marker):
        start = chunk.find(b"-----BEGIN CERTIFICATE-----")
        if start >= 0:
            parts.append(chunk[start:] + marker + b"\n")
    return parts


def merge_ca_bundle(current_ca: bytes, existing_bundle: bytes, now: datetime | None = None) -> bytes:
    """``current_ca`` first, then up to :data:`MAX_PREVIOUS_CAS` still-valid CAs from ``existing_bundle``.

    Keeping the previous CA during a rotation matters because replicas do not switch files at the
    same instant: until each has loaded the new certificate, the apiserver must trust both.
    """
    now = now or datetime.now(UTC)
    current_fingerprint = load_cert(current_ca).fingerprint(hashes.SHA256())
    kept: list[bytes] = []
    seen = {current_fingerprint}
    for pem in split_pem_certificates(existing_bundle):
        try:
            cert = load_cert(pem)
        except ValueError:
            continue
        fingerprint = cert.fingerprint(hashes.SHA256())
        if fingerprint in seen or cert.not_valid_after_utc <= now:
            continue
        seen.add(fingerprint)
        kept.append(pem)
    return b"".join([split_pem_certificates(current_ca)[0], *kept[:MAX_PREVIOUS_CAS]])
