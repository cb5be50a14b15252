"""Certificates and keys for the local control plane, made with `cryptography`.

A real control plane authenticates every component by client certificate and authorises it by
the identity in that certificate (CN = user, O = groups). Giving each component its own
``system:`` identity means the bootstrap RBAC roles of Kubernetes apply to it unchanged, so a
permission bug in the local cluster looks the same as it would on a real cluster.

The two CAs sign with RSA-2048 keys (kubeadm's default key type) and every leaf has an ECDSA
P-256 key. The apiserver checks a client certificate's signature against the CA on every
request it serves, and an RSA signature is the cheaper check: in the scheduler baseline those
checks took 3.6-7.5 % of the apiserver's CPU with an ECDSA CA and 1.5-3.8 % with an RSA one
(docs/performance.md, "Five runs on one fresh cluster"). Leaf keys take microseconds to
generate, an RSA key tens of milliseconds, so a fresh bring-up stays in the range of seconds.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# The ClusterIP of the `kubernetes` Service: the first address of the service range the
# apiserver is started with. It must be in the serving certificate like on any cluster.
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
KUBERNETES_SERVICE_IP = "10.96.0.1"

APISERVER_DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
APISERVER_IPS = ("127.0.0.1", KUBERNETES_SERVICE_IP)

CERT_VALIDITY = dt.timedelta(days=365)
CA_KEY_BITS = 2048

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class ClientIdentity:
    """Who a client certificate authenticates as: CN is the user name, O the groups."""

    file_stem: str
    user: str
    groups: tuple[str, ...] = ()


# The identities the local cluster hands out. kwok gets system:masters because it plays every
# kubelet at once (it writes status of any node and pod, and leases), which no single bootstrap
# role covers.
ADMIN = ClientIdentity("admin", "kubernetes-admin", ("system:masters",))
CONTROLLER_MANAGER = ClientIdentity("kube-controller-manager", "system:kube-controller-manager")
SCHEDULER = ClientIdentity("kube-scheduler", "system:kube-scheduler")
KWOK = ClientIdentity("kwok", "kwok-controller", ("system:masters",))
APISERVER_ETCD_CLIENT = ClientIdentity("apiserver-etcd-client", "kube-apiserver-etcd-client")
CLIENT_IDENTITIES = (ADMIN, CONTROLLER_MANAGER, SCHEDULER, KWOK, APISERVER_ETCD_CLIENT)

# The aggregation layer's front proxy (as kubeadm sets it up): the apiserver forwards a request for
# an aggregated API (pykueue's visibility API) with a client certificate issued by a CA of its own,
# and an aggregated server trusts the X-Remote-User/-Group headers only from a client presenting
# a certificate of that CA with this name.
FRONT_PROXY_CLIENT = "front-proxy-client"


@dataclass(frozen=True)
class PkiPaths:
    """Where each piece of key material lives inside a cluster's ``pki/`` directory."""

    root: Path

    @property
    def ca_cert(self) -> Path:
        return self.root / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.root / "ca.key"

    @property
    def apiserver_cert(self) -> Path:
        return self.root / "apiserver.crt"

    @property
    def apiserver_key(self) -> Path:
        return self.root / "apiserver.key"

    @property
    def etcd_cert(self) -> Path:
        return self.root / "etcd-server.crt"

    @property
    def etcd_key(self) -> Path:
        return self.root / "etcd-server.key"

    @property
    def service_account_key(self) -> Path:
        return self.root / "sa.key"

    @property
    def service_account_pub(self) -> Path:
        return self.root / "sa.pub"

    @property
    def front_proxy_ca_cert(self) -> Path:
        return self.root / "front-proxy-ca.crt"

    @property
    def front_proxy_client_cert(self) -> Path:
        return self.root / "front-proxy-client.crt"

    @property
    def front_proxy_client_key(self) -> Path:
        return self.root / "front-proxy-client.key"

    def client_cert(self, identity: ClientIdentity) -> Path:
        return self.root / f"{identity.file_stem}.crt"

    def client_key(self, identity: ClientIdentity) -> Path:
        return self.root / f"{identity.file_stem}.key"


@dataclass
class CertificateAuthority:
    """A self-signed CA that signs every other certificate of one local cluster."""

    key: rsa.RSAPrivateKey
    cert: x509.Certificate
    # Leaf certificates share the CA's start time so a whole set is valid from the same moment.
    valid_from: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))

    @classmethod
    def create(cls, common_name: str) -> CertificateAuthority:
        key = rsa.generate_private_key(public_exponent=65537, key_size=CA_KEY_BITS)
        now = dt.datetime.now(dt.UTC)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + CERT_VALIDITY * 10)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(key=key, cert=cert, valid_from=now)

    def issue(
        self,
        common_name: str,
        *,
        organizations: tuple[str, ...] = (),
        dns_names: tuple[str, ...] = (),
        ip_addresses: tuple[str, ...] = (),
        server: bool = False,
        client: bool = False,
    ) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        """Issue a leaf certificate; `server` and `client` choose its extended key usages."""
        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
        attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        usages = []
        if server:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attributes))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self.valid_from - dt.timedelta(minutes=5))
            .not_valid_after(self.valid_from + CERT_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False
            )
        )
        sans: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
        sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return key, builder.sign(self.key, hashes.SHA256())


def key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _write(path: Path, data: bytes, *, private: bool) -> None:
    path.write_bytes(data)
    path.chmod(0o600 if private else 0o644)


def generate_pki(root: Path) -> PkiPaths:
    """Write a complete, fresh set of key material for one cluster under `root`."""
    paths = PkiPaths(root)
    root.mkdir(parents=True, exist_ok=True)
    ca = CertificateAuthority.create("pykueue-local-ca")
    _write(paths.ca_cert, cert_pem(ca.cert), private=False)
    _write(paths.ca_key, key_pem(ca.key), private=True)

    key, cert = ca.issue(
        "kube-apiserver", dns_names=APISERVER_DNS_NAMES, ip_addresses=APISERVER_IPS, server=True
    )
    _write(paths.apiserver_cert, cert_pem(cert), private=False)
    _write(paths.apiserver_key, key_pem(key), private=True)

    # etcd's HTTP/JSON gateway (used by compact_etcd) dials etcd's own gRPC port presenting the
    # server certificate, so like kubeadm's etcd server certificate it is also a client certificate.
    key, cert = ca.issue(
        "etcd-server", dns_names=("localhost",), ip_addresses=("127.0.0.1",), server=True, client=True
    )
    _write(paths.etcd_cert, cert_pem(cert), private=False)
    _write(paths.etcd_key, key_pem(key), private=True)

    for identity in CLIENT_IDENTITIES:
        key, cert = ca.issue(identity.user, organizations=identity.groups, client=True)
        _write(paths.client_cert(identity), cert_pem(cert), private=False)
        _write(paths.client_key(identity), key_pem(key), private=True)

    front_proxy_ca = CertificateAuthority.create("pykueue-local-front-proxy-ca")
    _write(paths.front_proxy_ca_cert, cert_pem(front_proxy_ca.cert), private=False)
    key, cert = front_proxy_ca.issue(FRONT_PROXY_CLIENT, client=True)
    _write(paths.front_proxy_client_cert, cert_pem(cert), private=False)
    _write(paths.front_proxy_client_key, key_pem(key), private=True)

    sa_key = ec.generate_private_key(ec.SECP256R1())
    _write(paths.service_account_key, key_pem(sa_key), private=True)
    _write(
        paths.service_account_pub,
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
        private=False,
    )
    return paths
