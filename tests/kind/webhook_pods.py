"""The chart's webhook replicas as pods of the kind cluster: who is Ready, what each one serves,
and a stream of requests through the apiserver, for tests/kind/test_webhook_replicas.py.

Each replica is reached directly through ``kubectl port-forward`` to its pod (the apiserver only
ever picks one behind the Service), with TLS verified against the CA in the certificate Secret and
the Service's DNS name, as the apiserver verifies it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import socket
import ssl
import subprocess
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from kubernetes import client, config

from tests.kind.kube import KUBECONFIG, NAMESPACE, get, kubectl, kubectl_binary

WEBHOOK_PORT = 9443
SECRET = "pykueue-webhook-server-cert"
SERVICE = "pykueue-webhook-service"
DEPLOYMENT = "pykueue-webhook"
BUDGET = "pykueue-webhook"
COMPONENT = "app.kubernetes.io/component=webhook"
CONFIGURATIONS = (
    ("mutatingwebhookconfiguration", "pykueue-mutating-webhook-configuration"),
    ("validatingwebhookconfiguration", "pykueue-validating-webhook-configuration"),
)


def api_client() -> client.ApiClient:
    return config.new_client_from_config(config_file=KUBECONFIG)


def ready_pods() -> list[str]:
    """The webhook pods that are Ready and not on their way out."""
    pods = get("pods", "-n", NAMESPACE, "-l", COMPONENT)["items"]
    return sorted(
        pod["metadata"]["name"]
        for pod in pods
        if not pod["metadata"].get("deletionTimestamp")
        and any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", []))
    )


def secret_ca() -> bytes:
    """The CA certificate (PEM) in the Secret; empty while the Secret holds none."""
    data = get("secret", SECRET, "-n", NAMESPACE).get("data") or {}
    return base64.b64decode(data.get("ca.crt", ""))


def published_bundles() -> list[bytes]:
    """Every caBundle of both webhook configurations (PEM)."""
    bundles = []
    for kind, name in CONFIGURATIONS:
        for hook in get(kind, name)["webhooks"]:
            bundles.append(base64.b64decode(hook["clientConfig"].get("caBundle", "")))
    return bundles


def service_dns_name() -> str:
    return f"{SERVICE}.{NAMESPACE}.svc"


@contextlib.contextmanager
def port_forward(pod: str) -> Iterator[int]:
    """A local port forwarded to the pod's webhook port, for the duration of the block."""
    process = subprocess.Popen(
        [kubectl_binary(), "--kubeconfig", KUBECONFIG, "port-forward", "-n", NAMESPACE,
         f"pod/{pod}", f":{WEBHOOK_PORT}", "--address=127.0.0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"127\.0\.0\.1:(\d+) ->", line)
        if not match:
            process.kill()
            raise AssertionError(f"kubectl port-forward to {pod}: {line!r} {process.stderr.read() if process.stderr else ''}")
        yield int(match.group(1))
    finally:
        process.terminate()
        process.wait(timeout=10)


def verifying_context(ca_pem: bytes) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca_pem.decode())


def served_certificate(port: int) -> x509.Certificate:
    """The certificate the pod behind ``port`` presents (not verified: the caller judges it)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=service_dns_name()) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def signed_by(cert: x509.Certificate, ca_pem: bytes) -> bool:
    """True when ``ca_pem``'s key signed ``cert`` (the webhook's CAs are ECDSA P-256)."""
    ca = x509.load_pem_x509_certificate(ca_pem)
    public_key = ca.public_key()
    if cert.issuer != ca.subject or not isinstance(public_key, ec.EllipticCurvePublicKey):
        return False
    try:
        assert cert.signature_hash_algorithm is not None
        public_key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))
    except Exception:
        return False
    return True


def job(namespace: str, name: str, queue: str = "main") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{
            "name": "c", "image": "pykueue-local/busybox:static", "command": ["true"],
            "resources": {"requests": {"cpu": "10m"}}}]}}},
    }  # fmt: skip


def review_job_creation(port: int, ca_pem: bytes, namespace: str) -> dict[str, Any]:
    """POST an AdmissionReview of a queued Job's creation to the replica behind ``port``."""
    obj = job(namespace, f"direct-{uuid.uuid4().hex[:6]}")
    review = {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "batch", "version": "v1", "kind": "Job"},
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "namespace": namespace, "name": obj["metadata"]["name"], "operation": "CREATE",
            "userInfo": {"username": "kind-test"}, "object": obj, "dryRun": True,
        },
    }  # fmt: skip
    context = verifying_context(ca_pem)
    # Verified as the apiserver does: the Service's DNS name, against the Secret's CA.
    https = urllib.request.HTTPSHandler(context=context)
    opener = urllib.request.build_opener(https)
    request = urllib.request.Request(
        f"https://{service_dns_name()}:{port}/mutate-batch-v1-job",
        data=json.dumps(review).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    # Resolve the Service's name to the forwarded local port without touching /etc/hosts.
    with _resolving(service_dns_name(), "127.0.0.1"), opener.open(request, timeout=15) as response:
        answer: dict[str, Any] = json.loads(response.read())
    return answer["response"]


@contextlib.contextmanager
def _resolving(name: str, address: str) -> Iterator[None]:
    original = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        return original(address if host == name else host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo
    try:
        yield
    finally:
        socket.getaddrinfo = original


@dataclass
class RequestStream:
    """Threads that keep creating Jobs through the apiserver (server-side dry run), so every
    request passes the mutating and validating webhooks; each outcome is recorded."""

    namespace: str
    threads: int = 3
    succeeded: int = 0
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _workers: list[threading.Thread] = field(default_factory=list)

    def _run(self) -> None:
        batch = client.BatchV1Api(api_client())
        while not self._stop.is_set():
            body = job(self.namespace, f"stream-{uuid.uuid4().hex[:8]}")
            try:
                created = batch.create_namespaced_job(self.namespace, cast(Any, body), dry_run="All")
                # The mutating webhook answered: a queued Job is created suspended.
                suspend = created.spec.suspend if created.spec else None
                outcome = None if suspend is True else f"not suspended: {suspend!r}"
            except client.ApiException as err:
                outcome = f"{err.status}: {err.body}"
            except Exception as err:  # the connection to the apiserver itself
                outcome = f"{type(err).__name__}: {err}"
            with self._lock:
                if outcome is None:
                    self.succeeded += 1
                else:
                    self.failures.append(f"{time.strftime('%H:%M:%S')} {outcome}")
            time.sleep(0.05)

    def __enter__(self) -> RequestStream:
        for index in range(self.threads):
            worker = threading.Thread(target=self._run, name=f"stream-{index}", daemon=True)
            worker.start()
            self._workers.append(worker)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for worker in self._workers:
            worker.join(timeout=30)

    def count(self) -> int:
        with self._lock:
            return self.succeeded + len(self.failures)


def wait_until(predicate: Callable[[], Any], timeout: float, message: str, interval: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except AssertionError as err:
            last = err
        if last and not isinstance(last, AssertionError):
            return last
        time.sleep(interval)
    raise AssertionError(f"{message} (after {timeout:.0f}s; last: {last!r})")


def restore_replicas(count: int = 2) -> None:
    """Wait until the Deployment is back to ``count`` Ready replicas, for the tests after this one."""
    kubectl("rollout", "status", "deployment", DEPLOYMENT, "-n", NAMESPACE, "--timeout=180s", check=False)
    wait_until(lambda: len(ready_pods()) == count, 180, f"the webhook never had {count} Ready replicas again")
