"""Certificates: generation, rotation timing, CA bundles, the Secret race, files, and TLS reloading."""

from __future__ import annotations

import base64
import socket
import ssl
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pykueue.kube import resources as r
from pykueue.tls.certs import (
    CertBundle,
    covers_names,
    generate_bundle,
    load_cert,
    merge_ca_bundle,
    rotation_due,
    service_dns_names,
    split_pem_certificates,
)
from tests.unit.webhook.fakes import FakeKube
from webhook.certprovision import CertFiles, CertProvisioner, decode_secret_data, encode_secret_data
from webhook.configurations import LocalConfigurations, ServiceConfigurations, local_configurations
from webhook.tls import ReloadingContext

NOW = datetime(2026, 1, 1, tzinfo=UTC)
NAMES = service_dns_names("pykueue-webhook-service", "pykueue-system")


def test_serving_certificate_is_signed_by_the_ca_and_names_the_service() -> None:
    bundle = generate_bundle(dns_names=NAMES, ip_addresses=["127.0.0.1"], now=NOW)
    cert, ca = load_cert(bundle.cert), load_cert(bundle.ca_cert)
    cert.verify_directly_issued_by(ca)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == NAMES
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert covers_names(bundle, NAMES[:2], ["127.0.0.1"])
    assert not covers_names(bundle, ["other.svc"], [])


def test_rotation_is_due_at_two_thirds_of_the_lifetime() -> None:
    bundle = generate_bundle(dns_names=NAMES, validity=timedelta(days=90), now=NOW)
    assert not rotation_due(bundle, NOW + timedelta(days=59))
    assert rotation_due(bundle, NOW + timedelta(days=60, minutes=5))


def test_ca_bundle_keeps_previous_valid_cas_first_current() -> None:
    old = generate_bundle(dns_names=NAMES, now=NOW)
    expired = generate_bundle(dns_names=NAMES, validity=timedelta(days=1), now=NOW - timedelta(days=10))
    new = generate_bundle(dns_names=NAMES, now=NOW)
    merged = merge_ca_bundle(new.ca_cert, old.ca_cert + expired.ca_cert + new.ca_cert, now=NOW)
    assert split_pem_certificates(merged) == [new.ca_cert, old.ca_cert]


def test_secret_round_trip_and_garbage() -> None:
    bundle = generate_bundle(dns_names=NAMES, now=NOW)
    secret = {"data": encode_secret_data(bundle)}
    assert CertBundle.from_secret_data(decode_secret_data(secret)) == bundle
    assert CertBundle.from_secret_data({"tls.crt": b"junk", "tls.key": b"x", "ca.crt": b"y", "ca.key": b"z"}) is None
    assert CertBundle.from_secret_data({}) is None


def provisioner(kube: FakeKube, tmp_path: Path, **kw: object) -> CertProvisioner:
    return CertProvisioner(
        kube, namespace="pykueue-system", secret_name="cert", files=CertFiles(tmp_path / "certs"),
        dns_names=NAMES, **kw,  # type: ignore[arg-type]
    )


def test_creates_secret_and_files(tmp_path: Path) -> None:
    kube = FakeKube()
    bundle = provisioner(kube, tmp_path).sync()
    stored = kube.get(r.SECRETS, "cert", "pykueue-system")
    assert CertBundle.from_secret_data(decode_secret_data(stored)) == bundle
    assert (tmp_path / "certs" / "tls.crt").read_bytes() == bundle.cert
    assert (tmp_path / "certs" / "tls.key").read_bytes() == bundle.key


def test_loser_of_the_create_race_uses_the_winners_certificate(tmp_path: Path) -> None:
    kube = FakeKube()
    winner = provisioner(kube, tmp_path / "a")
    loser = provisioner(kube, tmp_path / "b")
    winners: list[CertBundle] = []
    kube.before_write = lambda: winners.append(winner.sync())  # the other replica writes first
    assert loser.sync() == winners[0]
    assert loser.rotations == 0
    assert (tmp_path / "b" / "certs" / "tls.crt").read_bytes() == winners[0].cert


def test_empty_secret_made_by_the_chart_is_filled_in(tmp_path: Path) -> None:
    kube = FakeKube()
    kube.create(r.SECRETS, {"metadata": {"name": "cert", "namespace": "pykueue-system"}, "type": "Opaque"})
    bundle = provisioner(kube, tmp_path).sync()
    assert CertBundle.from_secret_data(decode_secret_data(kube.get(r.SECRETS, "cert", "pykueue-system"))) == bundle


def test_rotates_when_due_and_every_replica_follows(tmp_path: Path) -> None:
    kube = FakeKube()
    clock = [NOW]
    first = provisioner(kube, tmp_path / "a", validity=timedelta(days=30), clock=lambda: clock[0])
    second = provisioner(kube, tmp_path / "b", validity=timedelta(days=30), clock=lambda: clock[0])
    original = first.sync()
    assert second.sync() == original
    clock[0] = NOW + timedelta(days=21)
    rotated = second.sync()
    assert rotated != original and second.rotations == 1
    assert first.sync() == rotated and first.rotations == 1  # its first issue only; it followed the rotation
    assert (tmp_path / "a" / "certs" / "tls.crt").read_bytes() == rotated.cert


def test_a_new_ca_is_published_before_the_files_switch_to_its_certificate(tmp_path: Path) -> None:
    """A replica that serves a certificate of a CA the apiserver does not trust yet fails requests."""
    kube = FakeKube()
    files = CertFiles(tmp_path / "certs")
    on_disk_when_published: list[bytes | None] = []

    class Recording:
        def sync(self, ca_cert: bytes) -> None:
            current = files.read()
            on_disk_when_published.append(current[0] if current else None)

    replica = provisioner(kube, tmp_path, configurations=Recording())
    first = replica.sync()
    kube.replace(r.SECRETS, {**kube.get(r.SECRETS, "cert", "pykueue-system"), "data": {}})  # forced rotation
    second = replica.sync()
    assert second.ca_cert != first.ca_cert
    # Each CA was published while the files still held the previous certificate (none at first).
    assert on_disk_when_published == [None, first.cert]
    assert files.read() == (second.cert, second.key)


def test_local_configurations_are_written_with_both_cas_after_rotation(tmp_path: Path) -> None:
    kube = FakeKube()
    sync = LocalConfigurations(kube, "https://127.0.0.1:9443", own_namespace="pykueue-system",
                               manage_jobs_without_queue_name=False)
    first = generate_bundle(dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    second = generate_bundle(dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    sync.sync(first.ca_cert)
    writes = kube.version
    sync.sync(first.ca_cert)
    assert kube.version == writes  # nothing changed: no write
    sync.sync(second.ca_cert)
    for resource, name in ((r.MUTATING_WEBHOOK_CONFIGURATIONS, "pykueue-mutating-webhook-configuration"),
                           (r.VALIDATING_WEBHOOK_CONFIGURATIONS, "pykueue-validating-webhook-configuration")):
        configuration = kube.get(resource, name)
        assert configuration is not None
        for hook in configuration["webhooks"]:
            assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:9443/")
            assert split_pem_certificates(base64.b64decode(hook["clientConfig"]["caBundle"])) == [
                second.ca_cert, first.ca_cert]
    sync.delete()
    assert kube.store == {}


def test_local_job_hooks_skip_system_namespaces_and_unlabelled_jobs() -> None:
    ca = generate_bundle(dns_names=["localhost"]).ca_cert
    (_, mutating), (_, validating) = local_configurations(
        "https://127.0.0.1:1", ca, own_namespace="pykueue-system", manage_jobs_without_queue_name=False)
    job_validating = next(h for h in validating["webhooks"] if h["name"] == "vjob.kb.io")
    assert job_validating["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system", "pykueue-system"]
    assert job_validating["objectSelector"]["matchExpressions"][0]["key"] == "kueue.x-k8s.io/queue-name"
    assert "objectSelector" not in next(h for h in mutating["webhooks"] if h["name"] == "mjob.kb.io")
    workload = next(h for h in validating["webhooks"] if h["name"] == "vworkload.kb.io")
    assert workload["rules"][0]["resources"] == ["workloads", "workloads/status"]


def test_service_configurations_get_ca_bundle_patched(tmp_path: Path) -> None:
    kube = FakeKube()
    for resource, name in ((r.MUTATING_WEBHOOK_CONFIGURATIONS, "pykueue-mutating-webhook-configuration"),
                           (r.VALIDATING_WEBHOOK_CONFIGURATIONS, "pykueue-validating-webhook-configuration")):
        kube.create(resource, {"metadata": {"name": name}, "webhooks": [
            {"name": "a.kb.io", "clientConfig": {"service": {"name": "svc"}}},
            {"name": "b.kb.io", "clientConfig": {"service": {"name": "svc"}}}]})
    ca = generate_bundle(dns_names=NAMES).ca_cert
    ServiceConfigurations(kube).sync(ca)
    configuration = kube.get(r.MUTATING_WEBHOOK_CONFIGURATIONS, "pykueue-mutating-webhook-configuration")
    assert configuration is not None
    assert {base64.b64decode(h["clientConfig"]["caBundle"]) for h in configuration["webhooks"]} == {ca}
    patches_before = len(kube.patches)
    ServiceConfigurations(kube).sync(ca)
    assert len(kube.patches) == patches_before  # nothing to change: no write


# --- TLS ------------------------------------------------------------------------------------------

def _serve_once(context_source: ReloadingContext) -> tuple[int, threading.Thread]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]

    def loop() -> None:
        with server:
            for _ in range(2):
                conn, _ = server.accept()
                try:
                    with context_source.context().wrap_socket(conn, server_side=True) as tls:
                        tls.recv(1)
                except (ssl.SSLError, OSError):
                    pass

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return port, thread


def _peer_cert(port: int, ca: bytes) -> bytes:
    context = ssl.create_default_context(cadata=ca.decode())
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="localhost") as tls:
        der = tls.getpeercert(binary_form=True)
        tls.send(b"x")
        assert der is not None
        return der


def test_new_certificate_files_are_served_without_restart(tmp_path: Path) -> None:
    files = CertFiles(tmp_path)
    first = generate_bundle(dns_names=["localhost"])
    files.write(first)
    reloading = ReloadingContext(str(files.certfile), str(files.keyfile))
    port, thread = _serve_once(reloading)
    assert _peer_cert(port, first.ca_cert) == load_cert(first.cert).public_bytes(serialization.Encoding.DER)
    second = generate_bundle(dns_names=["localhost"])
    assert files.write(second)
    assert _peer_cert(port, second.ca_cert) == load_cert(second.cert).public_bytes(serialization.Encoding.DER)
    thread.join(timeout=5)
    assert reloading.loads == 2
    # Checked on the server's own context: a TLS 1.1 client cannot show it, because this
    # machine's OpenSSL refuses TLS 1.1 on the client side (and at its default security level)
    # whatever the server would accept.
    assert reloading.context().minimum_version == ssl.TLSVersion.TLSv1_2


def test_half_written_files_keep_the_previous_context(tmp_path: Path) -> None:
    files = CertFiles(tmp_path)
    files.write(generate_bundle(dns_names=["localhost"]))
    reloading = ReloadingContext(str(files.certfile), str(files.keyfile))
    before = reloading.context()
    files.keyfile.write_bytes(generate_bundle(dns_names=["localhost"]).key)  # key of another certificate
    assert reloading.context() is before
