"""Run Kueue's own manager out of cluster, as the scheduler baseline's ``kueue@<version>`` variant.

Kueue's scheduler performance test runs its manager beside a bare apiserver and creates
Workloads directly, with no webhook in the path; this does the same against our local cluster:

* the binary is ``sigs.k8s.io/kueue/cmd/kueue`` at the pinned version, built from the Go module
  proxy once and cached like the control-plane binaries (``hack/build-binaries.sh kueue``,
  ``make kueue``), next to that version's published CRDs (:func:`kueue_artifacts`);
* while Kueue's CRDs are in place the driver speaks the version they store
  (:func:`stored_version`), so a release that stores v1beta2 (v0.15 and later) needs no
  conversion webhook either;
* its Configuration (:func:`configuration`) sets the same client rate as the pykueue variant it
  is compared with, leader election off, internal certificate management off, the batch/Job
  integration only, and its webhook server on a self-signed serving pair; no webhook
  configuration is registered, so the apiserver never calls it;
* its on-demand visibility API server (beta, on by default in v0.14 and v0.19) is switched off with its
  feature gate: with internal certificates off it would need a serving pair at another fixed
  path (``/visibility``), and nothing in the benchmark asks it (no APIService is registered);
* with internal certificates off, v0.14 (and v0.19) insists on a metrics serving pair at the fixed path
  ``/etc/kueue/metrics/certs``. Rather than write under ``/etc``, the manager is started in a
  mount namespace of its own (``unshare --mount``) in which ``/etc`` is an overlay whose upper
  layer lives in the run's work directory; the pair is copied there and nothing outside the
  process's namespace changes. That needs ``CAP_SYS_ADMIN`` (root in a container is enough);
  without it the start fails with the reason.

Kueue's ``/metrics`` is served over TLS behind authentication (controller-runtime's
``filters.WithAuthenticationAndAuthorization``: a bearer token checked with a TokenReview, then a
SubjectAccessReview for ``get`` on the ``/metrics`` path). The baseline does not read it (its
``api_requests`` is ``None``); the cold start does (:mod:`bench.controller_cold_start`), with a
token from :class:`MetricsReader`, a ServiceAccount granted that path alone, and verifies the page
against the run's own serving certificate. CPU and RSS come from ``/proc``.

For the cold start the manager logs at ``info``: controller-runtime logs ``Starting EventSource``
for each of a controller's watches and ``Starting workers`` once its caches have synced, which
is how :func:`sync_milestones` times Kueue's informers (Kueue has no metric for it).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import json
import os
import shlex
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from prometheus_client.parser import text_string_to_metric_families

from pykueue.kube.errors import AlreadyExists, NotFound
from pykueue.kube.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CUSTOM_RESOURCE_DEFINITIONS,
    SERVICE_ACCOUNTS,
)

from .controller_process import REPO_ROOT, LocalProcess, SyncMilestones, _free_port

READY_TIMEOUT_S = 120.0
METRICS_CERT_DIR = "/etc/kueue/metrics/certs"  # fixed in cmd/kueue/main.go (v0.14 and v0.19)
# The name Kueue's Workload reconciler logs under: v0.14's log lines carry the controller's name
# (pkg/controller/core/workload_controller.go, SetupWithManager); v0.19's carry no controller
# key, only the reconciler's logger name.
WORKLOAD_CONTROLLER = "workload_controller"
WORKLOAD_RECONCILER_LOGGER = "workload-reconciler"


def cache_root() -> Path:
    return Path(os.environ.get("PYKUEUE_CACHE") or Path.home() / ".cache" / "pykueue")


def kueue_artifacts(version: str, *, build: bool = True) -> tuple[Path, Path]:
    """The cached manager binary and CRD directory of Kueue ``version``, built on first use by
    ``hack/build-binaries.sh kueue`` (which needs Go and the module proxy once)."""
    binary = cache_root() / "bin" / f"kueue-{version}" / "kueue"
    crds = cache_root() / f"kueue-{version}" / "crds"
    if build and not (binary.is_file() and any(crds.glob("*.yaml"))):
        env = dict(os.environ, KUEUE_BUILD_VERSIONS=version)
        done = subprocess.run(
            [str(REPO_ROOT / "hack" / "build-binaries.sh"), "kueue"], env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"building Kueue {version} failed:\n{done.stderr[-2000:]}")
    if not binary.is_file():
        raise RuntimeError(f"Kueue {version}'s manager is not in the cache ({binary})")
    if not any(crds.glob("*.yaml")):
        raise RuntimeError(f"Kueue {version}'s CRDs are not in the cache ({crds})")
    return binary, crds


def stored_version(crd_dir: Path) -> str:
    """The ``kueue.x-k8s.io`` version Kueue's CRDs in ``crd_dir`` store (its Workload definition's
    ``storage: true`` version): v1beta1 up to v0.14, v1beta2 from v0.15.

    The benchmark's client speaks that version on the wire while Kueue's CRDs are in place. They
    carry no conversion settings (Kueue's kustomize overlays add its webhook, which these runs do
    not serve), so a request in the other version would be stored with only its ``apiVersion``
    changed; in the stored one, nothing is converted at all."""
    path = crd_dir / "kueue.x-k8s.io_workloads.yaml"
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise RuntimeError(f"cannot read Kueue's Workload CRD {path}: {err}") from None
    versions = (doc.get("spec") or {}).get("versions") if isinstance(doc, dict) else None
    stored = [v.get("name") for v in versions or [] if isinstance(v, dict) and v.get("storage")]
    if len(stored) != 1 or not isinstance(stored[0], str):
        raise RuntimeError(f"Kueue's Workload CRD {path} names no single storage version ({stored})")
    return stored[0]


def require_mount_namespace(unshare: str = "unshare") -> None:
    """Refuse early, in one line that says what and how to fix, when this process cannot give
    Kueue's manager a mount namespace of its own (no ``unshare``, or no ``CAP_SYS_ADMIN``)."""
    fix = (
        "the kueue@ variant starts Kueue's manager in a private mount namespace (its metrics pair must "
        f"be at {METRICS_CERT_DIR}); run as root or with CAP_SYS_ADMIN (e.g. docker run --cap-add SYS_ADMIN)"
    )
    try:
        done = subprocess.run([unshare, "--mount", "true"], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise RuntimeError(f"`{unshare}` (util-linux) is not installed: {fix}") from None
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"`{unshare} --mount true` did not return within 30 s: {fix}") from None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise RuntimeError(f"cannot create a mount namespace ({reason}): {fix}")


def write_serving_pair(directory: Path) -> None:
    """A self-signed ``tls.crt``/``tls.key`` for 127.0.0.1 (what the webhook and metrics servers
    load; nobody verifies them in these runs)."""
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kueue-bench")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    (directory / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path = directory / "tls.key"
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    key_path.chmod(0o600)


def configuration(*, qps: float, burst: int, health_port: int, metrics_port: int, webhook_port: int,
                  cert_dir: Path) -> str:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta1) for an out-of-cluster run."""
    return f"""apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:{health_port}
metrics:
  bindAddress: 127.0.0.1:{metrics_port}
webhook:
  host: 127.0.0.1
  port: {webhook_port}
  certDir: {cert_dir}
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
clientConnection:
  qps: {qps:g}
  burst: {burst}
manageJobsWithoutQueueName: false
featureGates:
  VisibilityOnDemand: false
integrations:
  frameworks:
  - batch/job
"""


class MetricsReader:
    """A ServiceAccount allowed ``get`` on the ``/metrics`` path and nothing else, and a token for
    it: what Kueue's metrics server asks of a scraper (see the module docstring). ``grant``
    creates the three objects (kept if they exist) and requests a token; ``revoke`` deletes them,
    so a shared cluster keeps no account of the benchmark's."""

    def __init__(self, client: Any, name: str, namespace: str = "default", token_seconds: int = 7200) -> None:
        self._client = client
        self.name = name
        self.namespace = namespace
        self.token_seconds = token_seconds

    def objects(self) -> list[tuple[Any, dict[str, Any]]]:
        meta = {"name": self.name, "labels": {"app.kubernetes.io/managed-by": "pykueue-bench"}}
        return [
            (SERVICE_ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                "metadata": {**meta, "namespace": self.namespace}}),
            (CLUSTER_ROLES, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta,
                             "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}),
            (CLUSTER_ROLE_BINDINGS, {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": self.name},
                "subjects": [{"kind": "ServiceAccount", "name": self.name, "namespace": self.namespace}],
            }),
        ]

    def grant(self) -> str:
        for res, obj in self.objects():
            with contextlib.suppress(AlreadyExists):
                self._client.create(res, obj)
        answer = self._client.create_subresource(
            SERVICE_ACCOUNTS, self.name, "token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
             "spec": {"expirationSeconds": self.token_seconds}},
            self.namespace,
        )
        token = (answer.get("status") or {}).get("token")
        if not token:
            raise RuntimeError(f"the TokenRequest for ServiceAccount {self.namespace}/{self.name} returned no token")
        return str(token)

    def revoke(self) -> None:
        for res, obj in reversed(self.objects()):
            with contextlib.suppress(NotFound):
                self._client.delete(res, obj["metadata"]["name"], obj["metadata"].get("namespace"))


def kueue_requests_by_method(metrics_text: str) -> dict[str, int]:
    """Kueue's API requests by HTTP method, from controller-runtime's ``rest_client_requests_total``
    (client-go's counter; watches are GETs there, unlike pykueue's ``WATCH`` verb)."""
    by_method: dict[str, int] = {}
    for family in text_string_to_metric_families(metrics_text):
        for metric in family.samples:
            if metric.name == "rest_client_requests_total":
                method = metric.labels.get("method", "?")
                by_method[method] = by_method.get(method, 0) + int(metric.value)
    return dict(sorted(by_method.items()))


def _log_time(stamp: Any) -> float | None:
    """zap's RFC 3339 time with nanoseconds (``2026-11-26T11:30:00.123456789Z``) as epoch
    seconds; an epoch number as itself."""
    if isinstance(stamp, int | float):
        return float(stamp)
    if not isinstance(stamp, str):
        return None
    head, dot, rest = stamp.partition(".")
    if dot:  # Python parses at most microseconds: keep six digits, then the zone
        digits = len(rest) - len(rest.lstrip("0123456789"))
        stamp = f"{head}.{rest[:min(digits, 6)]}{rest[digits:]}"
    try:
        return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def sync_milestones(log_lines: list[str]) -> SyncMilestones:
    """When the Workload reconciler and every controller had synced, from controller-runtime's
    JSON log lines at ``info`` (``Starting EventSource`` before a controller's watches sync,
    ``Starting workers`` after), a controller named by the line's ``controller`` key (v0.14) or,
    without one, its ``logger`` (v0.19); lines that are not JSON are skipped."""
    watching: set[str] = set()
    synced: dict[str, float] = {}
    for line in log_lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        name, message = entry.get("controller") or entry.get("logger"), entry.get("msg")
        if not isinstance(name, str):
            continue
        if message == "Starting EventSource":
            watching.add(name)
        elif message == "Starting workers":
            at = _log_time(entry.get("ts"))
            if at is not None:
                synced.setdefault(name, at)
    everything = max(synced.values()) if synced and watching <= synced.keys() else None
    workloads = synced.get(WORKLOAD_CONTROLLER, synced.get(WORKLOAD_RECONCILER_LOGGER))
    return SyncMilestones(workloads, everything)


class KueueProcess(LocalProcess):
    """Kueue's manager as a local process; the interface of :class:`bench.controller_process.ControllerProcess`
    that the baseline uses (start, pid, alive, stop, log_tail, api_requests, profiler no-ops) and,
    with ``metrics_token``, what the cold start reads (``launch``, ``ready``, ``metrics_text``)."""

    ready_means_informers_synced = False  # Kueue's /readyz: its webhook server listens

    def __init__(self, kubeconfig: str, *, version: str, qps: float, burst: int, workdir: Path, label: str,
                 log_level: str = "error", metrics_token: str | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.version = version
        self.qps = qps
        self.burst = burst
        self.workdir = workdir / f"kueue-{label}"
        self.label = label
        self.log_level = log_level
        self.log_path = workdir / f"kueue-{label}.log"
        self.health_port = 0
        self.metrics_port = 0
        self.metrics_token = metrics_token
        self.launched_at: float | None = None  # time.time() at launch, for the log's timestamps
        self.process: subprocess.Popen[bytes] | None = None

    def command(self, binary: Path) -> list[str]:
        """``unshare --mount`` around a shell that overlays ``/etc`` in the new namespace, puts the
        metrics pair at Kueue's fixed path there and execs the manager (see the module docstring)."""
        overlay = self.workdir / "etc-overlay"
        for part in ("upper", "work"):
            (overlay / part).mkdir(parents=True, exist_ok=True)
        certs = self.workdir / "certs"
        config = self.workdir / "config.yaml"
        script = " && ".join(
            [
                "mount --make-rprivate /",
                f"mount -t overlay overlay -o lowerdir=/etc,upperdir={shlex.quote(str(overlay / 'upper'))},"
                f"workdir={shlex.quote(str(overlay / 'work'))} /etc",
                f"mkdir -p {METRICS_CERT_DIR}",
                f"cp {shlex.quote(str(certs / 'tls.crt'))} {shlex.quote(str(certs / 'tls.key'))} {METRICS_CERT_DIR}/",
                f"exec {shlex.quote(str(binary))} --config={shlex.quote(str(config))} "
                f"--zap-log-level={shlex.quote(self.log_level)}",
            ]
        )
        return ["unshare", "--mount", "sh", "-c", script]

    def launch(self) -> None:
        """Start the manager and return at once (:meth:`start` also waits for ``/readyz``)."""
        binary, _ = kueue_artifacts(self.version)
        self.workdir.mkdir(parents=True, exist_ok=True)
        write_serving_pair(self.workdir / "certs")
        self.health_port = _free_port()
        self.metrics_port = _free_port()
        (self.workdir / "config.yaml").write_text(
            configuration(
                qps=self.qps, burst=self.burst, health_port=self.health_port, metrics_port=self.metrics_port,
                webhook_port=_free_port(), cert_dir=self.workdir / "certs",
            )
        )
        env = dict(os.environ, KUBECONFIG=self.kubeconfig)
        self.launched_at = time.time()
        with self.log_path.open("wb") as log_file:
            self.process = subprocess.Popen(
                self.command(binary), stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True, env=env
            )

    def start(self) -> None:
        self.launch()
        self._wait_ready("Kueue")

    def start_profiler(self) -> bool:
        return False  # py-spy profiles Python; Kueue is Go

    def stop_profiler(self) -> None:
        return None

    def api_requests(self) -> dict[str, Any] | None:
        return None  # Kueue's /metrics needs TLS and an authorised token; see the module docstring

    def ready(self) -> bool:
        """``/readyz`` answers 200 (for Kueue: its webhook server listens; not a sync)."""
        return self._ready()

    def metrics_text(self, timeout: float = 5.0) -> str | None:
        """Kueue's ``/metrics`` page over TLS with the reader's token, the server checked against
        the run's own serving certificate (None while it does not answer, or without a token)."""
        if self.metrics_token is None or not self.metrics_port:
            return None
        context = ssl.create_default_context(cafile=str(self.workdir / "certs" / "tls.crt"))
        request = urllib.request.Request(
            f"https://127.0.0.1:{self.metrics_port}/metrics", headers={"Authorization": f"Bearer {self.metrics_token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
                return str(response.read().decode())
        except OSError:
            return None

    def sync_milestones(self) -> SyncMilestones:
        """Its caches' sync times so far, from its log (needs ``log_level="info"``)."""
        if not self.log_path.exists():
            return SyncMilestones(None, None)
        return sync_milestones(self.log_path.read_text(errors="replace").splitlines())

    def requests_by_verb(self, metrics_text: str) -> dict[str, int]:
        return kueue_requests_by_method(metrics_text)

    def stop(self) -> None:
        self._terminate()


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def keeping_stored_versions(spec: dict[str, Any], live: dict[str, Any]) -> dict[str, Any]:
    """``spec`` plus, unserved and not stored, each version of the ``live`` definition that its
    ``status.storedVersions`` lists and ``spec`` lacks (the apiserver refuses to drop those)."""
    names = {v.get("name") for v in spec.get("versions") or []}
    stored = set((live.get("status") or {}).get("storedVersions") or [])
    kept = [
        {**v, "served": False, "storage": False}
        for v in (live.get("spec") or {}).get("versions") or []
        if v.get("name") in stored and v.get("name") not in names
    ]
    return {**spec, "versions": [*(spec.get("versions") or []), *kept]} if kept else spec


class CrdSwap:
    """Installs Kueue's CRDs for one run and puts the cluster's own back afterwards.

    Both sets define the same ``kueue.x-k8s.io`` resources (Kueue v0.14 serves and stores only
    v1beta1, which ours serve too), so a run's objects are created under Kueue's schema by the
    same driver. The apiserver refuses a definition that drops a version its
    ``status.storedVersions`` lists (ours store v1beta2), so such a version stays in the swapped
    definition, neither served nor stored: nothing of it is reachable during the run. The live
    definitions are saved before the swap and restored as they were (a running pykueue webhook's
    conversion settings included); definitions only Kueue has are deleted again. Call
    :meth:`restore` only once the run's objects are gone.
    """

    def __init__(self, client: Any, crd_dir: Path, timeout_s: float = 60.0) -> None:
        self._client = client
        self._res = CUSTOM_RESOURCE_DEFINITIONS
        self._timeout_s = timeout_s
        self._wanted = [yaml.safe_load(path.read_text()) for path in sorted(crd_dir.glob("*.yaml"))]
        self._saved: dict[str, dict[str, Any]] = {}
        self._added: list[str] = []

    def install(self) -> None:
        for doc in self._wanted:
            name = doc["metadata"]["name"]
            live = self._client.get(self._res, name)  # None when it does not exist
            if live is None:
                self._client.create(self._res, doc)
                self._added.append(name)
                continue
            self._saved[name] = live
            self._put(name, keeping_stored_versions(doc["spec"], live))
        self._wait([d["metadata"]["name"] for d in self._wanted])

    def restore(self) -> None:
        for name, live in self._saved.items():
            self._put(name, live["spec"])
        for name in self._added:
            with contextlib.suppress(NotFound):
                self._client.delete(self._res, name)
        self._wait(list(self._saved))

    def _put(self, name: str, spec: dict[str, Any]) -> None:
        current = self._client.get(self._res, name)
        if current is None:
            raise RuntimeError(f"CRD {name} disappeared during the swap")
        self._client.replace(
            self._res,
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {
                    "name": name,
                    "resourceVersion": current["metadata"]["resourceVersion"],
                    "labels": current["metadata"].get("labels") or {},
                    "annotations": current["metadata"].get("annotations") or {},
                },
                "spec": spec,
            },
        )

    def _wait(self, names: list[str]) -> None:
        deadline = time.monotonic() + self._timeout_s
        pending = set(names)
        while pending:
            pending = {n for n in pending if not _established(self._client.get(self._res, n) or {})}
            if not pending:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"CRDs not Established within {self._timeout_s:.0f}s: {sorted(pending)}")
            time.sleep(0.3)
        time.sleep(1.0)  # the apiserver's handlers switch to the new definitions asynchronously
