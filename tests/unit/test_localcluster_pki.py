"""PKI of the local cluster: who each certificate says it is, and that the CA vouches for it."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from hack.localcluster import pki


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> pki.PkiPaths:
    return pki.generate_pki(tmp_path_factory.mktemp("pki"))


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _eku(cert: x509.Certificate) -> set[x509.ObjectIdentifier]:
    return set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)


def test_ca_is_a_self_signed_ca(paths: pki.PkiPaths) -> None:
    ca = _cert(paths.ca_cert)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    ca.verify_directly_issued_by(ca)


def test_cas_sign_with_rsa_and_leaves_have_ecdsa_keys(paths: pki.PkiPaths) -> None:
    # The apiserver checks the CA's signature on a client certificate on every request: RSA
    # signatures are the cheaper check. Leaf keys stay quick to generate.
    for ca_path in (paths.ca_cert, paths.front_proxy_ca_cert):
        ca_key = _cert(ca_path).public_key()
        assert isinstance(ca_key, rsa.RSAPublicKey) and ca_key.key_size == pki.CA_KEY_BITS, ca_path.name
    for leaf in (paths.apiserver_cert, paths.client_cert(pki.ADMIN), paths.front_proxy_client_cert):
        cert = _cert(leaf)
        assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey), leaf.name
        assert cert.signature_algorithm_oid == x509.SignatureAlgorithmOID.RSA_WITH_SHA256, leaf.name


def test_apiserver_serving_cert_covers_loopback_and_service_names(paths: pki.PkiPaths) -> None:
    cert = _cert(paths.apiserver_cert)
    cert.verify_directly_issued_by(_cert(paths.ca_cert))
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"localhost", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"} <= set(
        sans.get_values_for_type(x509.DNSName)
    )
    assert {ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address(pki.KUBERNETES_SERVICE_IP)} <= set(
        sans.get_values_for_type(x509.IPAddress)
    )
    assert _eku(cert) == {ExtendedKeyUsageOID.SERVER_AUTH}


@pytest.mark.parametrize(
    ("identity", "user", "groups"),
    [
        (pki.ADMIN, "kubernetes-admin", ["system:masters"]),
        (pki.CONTROLLER_MANAGER, "system:kube-controller-manager", []),
        (pki.SCHEDULER, "system:kube-scheduler", []),
    ],
)
def test_client_certs_carry_their_component_identity(
    paths: pki.PkiPaths, identity: pki.ClientIdentity, user: str, groups: list[str]
) -> None:
    cert = _cert(paths.client_cert(identity))
    cert.verify_directly_issued_by(_cert(paths.ca_cert))
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)] == [user]
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == groups
    assert _eku(cert) == {ExtendedKeyUsageOID.CLIENT_AUTH}


def test_each_key_matches_its_certificate(paths: pki.PkiPaths) -> None:
    for cert_path, key_path in [
        (paths.apiserver_cert, paths.apiserver_key),
        (paths.etcd_cert, paths.etcd_key),
        (paths.client_cert(pki.ADMIN), paths.client_key(pki.ADMIN)),
    ]:
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        assert key.public_key() == _cert(cert_path).public_key(), cert_path.name


def test_service_account_public_key_belongs_to_the_signing_key(paths: pki.PkiPaths) -> None:
    signing = serialization.load_pem_private_key(paths.service_account_key.read_bytes(), password=None)
    public = serialization.load_pem_public_key(paths.service_account_pub.read_bytes())
    assert signing.public_key() == public


def test_private_keys_are_readable_by_owner_only(paths: pki.PkiPaths) -> None:
    for key_path in [
        paths.ca_key,
        paths.apiserver_key,
        paths.service_account_key,
        paths.client_key(pki.ADMIN),
    ]:
        assert stat.S_IMODE(key_path.stat().st_mode) == 0o600, key_path.name


def test_every_cluster_gets_its_own_ca(tmp_path: Path, paths: pki.PkiPaths) -> None:
    other = pki.generate_pki(tmp_path / "other")
    ours, theirs = _cert(paths.ca_cert), _cert(other.ca_cert)
    assert ours.public_key() != theirs.public_key()
    with pytest.raises(InvalidSignature):
        _cert(other.client_cert(pki.ADMIN)).verify_directly_issued_by(ours)
