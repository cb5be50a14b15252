"""Kueue's manager as a baseline variant: its Configuration, the /etc overlay that gives it the
metrics pair v0.14 insists on, and the CRD swap around its runs (fake API, no cluster)."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from bench.kueue_process import (
    METRICS_CERT_DIR,
    WORKLOAD_CONTROLLER,
    WORKLOAD_RECONCILER_LOGGER,
    CrdSwap,
    KueueProcess,
    MetricsReader,
    configuration,
    kueue_requests_by_method,
    require_mount_namespace,
    stored_version,
    sync_milestones,
    write_serving_pair,
)
from pykueue.kube.errors import AlreadyExists
from pykueue.kube.resources import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, SERVICE_ACCOUNTS
from tests.kueue_oracle import kueue_crd_dir


def test_configuration_has_the_variants_client_rate_and_nothing_in_cluster() -> None:
    config = yaml.safe_load(
        configuration(qps=50, burst=100, health_port=1, metrics_port=2, webhook_port=3, cert_dir=Path("/c"))
    )
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta1" and config["kind"] == "Configuration"
    assert config["clientConnection"] == {"qps": 50, "burst": 100}
    assert config["internalCertManagement"] == {"enable": False}
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["webhook"] == {"host": "127.0.0.1", "port": 3, "certDir": "/c"}
    assert config["health"]["healthProbeBindAddress"] == "127.0.0.1:1"
    assert config["integrations"]["frameworks"] == ["batch/job"]
    # Its visibility server would need a serving pair at a fixed path too; nothing asks it.
    assert config["featureGates"] == {"VisibilityOnDemand": False}


def test_the_serving_pair_is_self_signed_for_localhost(tmp_path: Path) -> None:
    write_serving_pair(tmp_path)
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    assert cert.issuer == cert.subject
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    assert (tmp_path / "tls.key").stat().st_mode & 0o077 == 0


def test_the_manager_starts_in_its_own_mount_namespace_with_etc_overlaid(tmp_path: Path) -> None:
    process = KueueProcess("/kc", version="v0.14.8", qps=50, burst=100, workdir=tmp_path, label="0")
    command = process.command(Path("/cache/kueue"))
    assert command[:4] == ["unshare", "--mount", "sh", "-c"]
    script = command[4]
    assert "mount --make-rprivate /" in script
    assert f"upperdir={tmp_path}/kueue-0/etc-overlay/upper" in script and script.count(" /etc") >= 1
    assert f"mkdir -p {METRICS_CERT_DIR}" in script
    assert script.rstrip().split(" && ")[-1].startswith("exec /cache/kueue --config=")
    assert not Path("/etc/kueue").exists(), "nothing is written under the real /etc"


class FakeCrds:
    """An in-memory CRD API with resourceVersions and instant Established."""

    def __init__(self, live: dict[str, dict[str, Any]]) -> None:
        self.objects = {name: copy.deepcopy(obj) for name, obj in live.items()}
        self.version = 10
        self.deleted: list[str] = []

    def _stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        stored = (self.objects.get(obj["metadata"]["name"], {}).get("status") or {}).get("storedVersions")
        obj["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
        if stored:
            obj["status"]["storedVersions"] = stored
        return obj

    def get(self, res: Any, name: str) -> dict[str, Any] | None:
        """None for a missing object, as KubeClient.get answers."""
        return copy.deepcopy(self.objects[name]) if name in self.objects else None

    def create(self, res: Any, obj: dict[str, Any]) -> dict[str, Any]:
        self.objects[obj["metadata"]["name"]] = self._stamp(copy.deepcopy(obj))
        return obj

    def replace(self, res: Any, obj: dict[str, Any]) -> dict[str, Any]:
        name = obj["metadata"]["name"]
        assert obj["metadata"]["resourceVersion"] == self.objects[name]["metadata"]["resourceVersion"]
        # The apiserver's rule: every version in status.storedVersions stays in spec.versions.
        names = {v["name"] for v in obj["spec"].get("versions") or [] if isinstance(v, dict)}
        for stored in (self.objects[name].get("status") or {}).get("storedVersions") or []:
            if stored not in names:
                raise ValueError(f"status.storedVersions[{stored}]: must appear in spec.versions")
        self.objects[name] = self._stamp(copy.deepcopy(obj))
        return obj

    def delete(self, res: Any, name: str) -> None:
        self.deleted.append(name)
        self.objects.pop(name)


def _crd(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name, "resourceVersion": "1"}, "spec": spec}


def test_the_swap_installs_kueues_crds_and_restores_the_live_ones_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bench.kueue_process.time.sleep", lambda _s: None)
    v1beta1 = {"name": "v1beta1", "served": True, "storage": False, "schema": {"ours": 1}}
    v1beta2 = {"name": "v1beta2", "served": True, "storage": True, "schema": {"ours": 2}}
    ours = {"versions": [v1beta1, v1beta2], "conversion": {"strategy": "Webhook", "url": "https://live"}}
    live = _crd("clusterqueues.kueue.x-k8s.io", ours)
    live["status"] = {"storedVersions": ["v1beta1", "v1beta2"]}
    api = FakeCrds({"clusterqueues.kueue.x-k8s.io": live})
    kueue_v1beta1 = {"name": "v1beta1", "served": True, "storage": True, "schema": {"kueue": 1}}
    kueue_cq = {"versions": [kueue_v1beta1]}
    (tmp_path / "cq.yaml").write_text(yaml.safe_dump(_crd("clusterqueues.kueue.x-k8s.io", kueue_cq)))
    (tmp_path / "topologies.yaml").write_text(yaml.safe_dump(_crd("topologies.kueue.x-k8s.io", {"versions": []})))
    swap = CrdSwap(api, tmp_path)
    swap.install()
    # No conversion stanza of ours left; the stored v1beta2 stays defined (the apiserver refuses
    # to drop a stored version) but is neither served nor stored.
    assert api.objects["clusterqueues.kueue.x-k8s.io"]["spec"] == {
        "versions": [kueue_v1beta1, {**v1beta2, "served": False, "storage": False}]
    }
    assert "topologies.kueue.x-k8s.io" in api.objects
    swap.restore()
    assert api.objects["clusterqueues.kueue.x-k8s.io"]["spec"] == ours
    assert api.deleted == ["topologies.kueue.x-k8s.io"], "what only Kueue defines goes again"


def test_without_a_mount_namespace_the_variant_is_refused_in_one_line_saying_how_to_fix(tmp_path: Path) -> None:
    denied = tmp_path / "unshare"
    denied.write_text("#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n")
    denied.chmod(0o755)
    with pytest.raises(RuntimeError) as err:
        require_mount_namespace(str(denied))
    message = str(err.value)
    assert "\n" not in message
    assert "Operation not permitted" in message and "CAP_SYS_ADMIN" in message and "root" in message
    with pytest.raises(RuntimeError, match=r"not installed.*CAP_SYS_ADMIN"):
        require_mount_namespace(str(tmp_path / "missing"))


def _log(controller: str, message: str, ts: str) -> str:
    return json.dumps({"level": "info", "ts": ts, "msg": message, "controller": controller})


def test_sync_times_come_from_controller_runtimes_starting_workers_lines() -> None:
    lines = [
        "not json at all",
        json.dumps({"level": "info", "ts": "2026-11-26T11:00:00Z", "msg": "Starting manager"}),
        _log(WORKLOAD_CONTROLLER, "Starting EventSource", "2026-11-26T11:00:00.5Z"),
        _log("clusterqueue_controller", "Starting EventSource", "2026-11-26T11:00:00.6Z"),
        _log(WORKLOAD_CONTROLLER, "Starting Controller", "2026-11-26T11:00:03.25Z"),
        _log(WORKLOAD_CONTROLLER, "Starting workers", "2026-11-26T11:00:03.250000001Z"),
    ]
    base = dt.datetime(2026, 11, 26, 11, 0, tzinfo=dt.UTC).timestamp()
    partial = sync_milestones(lines)
    assert partial.workloads_synced == pytest.approx(base + 3.25)
    assert partial.all_synced is None, "the ClusterQueue reconciler has not synced yet"
    done = sync_milestones([*lines, _log("clusterqueue_controller", "Starting workers", "2026-11-26T11:00:04.123456789Z")])
    assert done.all_synced == pytest.approx(base + 4.123456)
    assert sync_milestones([]).workloads_synced is None


def _logger_line(logger: str, message: str, ts: str) -> str:
    return json.dumps({"level": "info", "ts": ts, "logger": logger, "msg": message, "replica-role": "standalone"})


def test_v0_19_lines_name_the_reconciler_by_its_logger() -> None:
    # Kueue v0.19.2's manager logs "Starting workers" with the reconciler's logger name and no
    # controller key (seen in its log on a local cluster, 2026-11-27).
    lines = [
        _logger_line(WORKLOAD_RECONCILER_LOGGER, "Starting EventSource", "2026-11-27T15:50:20.082013984Z"),
        _logger_line("clusterqueue-reconciler", "Starting EventSource", "2026-11-27T15:50:20.09Z"),
        _logger_line(WORKLOAD_RECONCILER_LOGGER, "Starting workers", "2026-11-27T15:50:21.5Z"),
        _logger_line("clusterqueue-reconciler", "Starting workers", "2026-11-27T15:50:21.75Z"),
        json.dumps({"level": "info", "ts": "2026-11-27T15:50:22Z", "logger": "setup", "msg": "Starting manager"}),
    ]
    base = dt.datetime(2026, 11, 27, 15, 50, 20, tzinfo=dt.UTC).timestamp()
    milestones = sync_milestones(lines)
    assert milestones.workloads_synced == pytest.approx(base + 1.5)
    assert milestones.all_synced == pytest.approx(base + 1.75)


def test_kueues_requests_are_summed_by_method_over_codes_and_hosts() -> None:
    page = """# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 30
rest_client_requests_total{code="404",host="127.0.0.1:6443",method="GET"} 2
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 5
"""
    assert kueue_requests_by_method(page) == {"GET": 32, "PATCH": 5}


class FakeRbac:
    def __init__(self) -> None:
        self.created: list[tuple[str, dict[str, Any]]] = []
        self.deleted: list[tuple[str, str, str | None]] = []
        self.token_requests: list[tuple[str, str, dict[str, Any], str | None]] = []

    def create(self, res: Any, obj: dict[str, Any]) -> dict[str, Any]:
        if res == CLUSTER_ROLES and any(r == res.plural for r, _ in self.created):
            raise AlreadyExists(409, "AlreadyExists", "exists")
        self.created.append((res.plural, obj))
        return obj

    def create_subresource(self, res: Any, name: str, sub: str, obj: dict[str, Any], ns: str | None) -> dict[str, Any]:
        self.token_requests.append((res.plural, name, obj, ns))
        return {"status": {"token": "the-token"}}

    def delete(self, res: Any, name: str, namespace: str | None = None) -> bool:
        self.deleted.append((res.plural, name, namespace))
        return True


def test_the_metrics_reader_may_get_metrics_only_and_leaves_nothing_behind() -> None:
    api = FakeRbac()
    reader = MetricsReader(api, "reader-abc", token_seconds=900)
    assert reader.grant() == "the-token"
    kinds = {plural: obj for plural, obj in api.created}
    assert set(kinds) == {SERVICE_ACCOUNTS.plural, CLUSTER_ROLES.plural, CLUSTER_ROLE_BINDINGS.plural}
    assert kinds[CLUSTER_ROLES.plural]["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    binding = kinds[CLUSTER_ROLE_BINDINGS.plural]
    assert binding["roleRef"]["name"] == "reader-abc"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "reader-abc", "namespace": "default"}]
    ((plural, name, request, ns),) = api.token_requests
    assert (plural, name, ns) == ("serviceaccounts", "reader-abc", "default")
    assert request["kind"] == "TokenRequest" and request["spec"] == {"expirationSeconds": 900}
    assert reader.grant() == "the-token", "objects left by an earlier grant are reused"
    reader.revoke()
    assert [d[0] for d in api.deleted] == ["clusterrolebindings", "clusterroles", "serviceaccounts"]
    assert api.deleted[-1] == ("serviceaccounts", "reader-abc", "default")


def test_kueues_metrics_need_a_token_and_are_not_read_without_one(tmp_path: Path) -> None:
    process = KueueProcess("/kc", version="v0.14.8", qps=50, burst=100, workdir=tmp_path, label="0")
    process.metrics_port = 1
    assert process.metrics_text() is None
    assert process.ready_means_informers_synced is False


def test_kueues_metrics_are_read_over_tls_with_the_token_and_the_runs_own_certificate(tmp_path: Path) -> None:
    """A stand-in for Kueue's metrics server: TLS on the run's self-signed pair, 401 without the
    bearer token, the page with it."""
    import http.server
    import ssl
    import threading

    process = KueueProcess("/kc", version="v0.14.8", qps=50, burst=100, workdir=tmp_path, label="0",
                           metrics_token="s3cret")
    certs = process.workdir / "certs"
    write_serving_pair(certs)
    seen: list[str | None] = []

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization"))
            ok = self.path == "/metrics" and self.headers.get("Authorization") == "Bearer s3cret"
            self.send_response(200 if ok else 401)
            self.end_headers()
            if ok:
                self.wfile.write(b'kueue_pending_workloads{cluster_queue="q",status="active"} 3\n')

        def log_message(self, *_: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Metrics)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs / "tls.crt", certs / "tls.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        process.metrics_port = server.server_address[1]
        assert process.metrics_text() == 'kueue_pending_workloads{cluster_queue="q",status="active"} 3\n'
        process.metrics_token = "wrong"
        assert process.metrics_text() is None, "a refused token reads as no page"
    finally:
        server.shutdown()
        server.server_close()
    assert seen == ["Bearer s3cret", "Bearer wrong"]


def _workload_crd(directory: Path, storage: dict[str, bool]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    versions = [{"name": name, "served": True, "storage": stored} for name, stored in storage.items()]
    (directory / "kueue.x-k8s.io_workloads.yaml").write_text(
        yaml.safe_dump(_crd("workloads.kueue.x-k8s.io", {"versions": versions}))
    )
    return directory


def test_the_driver_speaks_the_version_kueues_crds_store(tmp_path: Path) -> None:
    # v0.14 serves and stores v1beta1 alone; from v0.15 both are served and v1beta2 stored.
    assert stored_version(_workload_crd(tmp_path / "v0.14", {"v1beta1": True})) == "v1beta1"
    assert stored_version(_workload_crd(tmp_path / "v0.19", {"v1beta1": False, "v1beta2": True})) == "v1beta2"
    # Kueue's published CRDs of the release the parity test pins (fetched by `make kueue-crds`).
    assert stored_version(kueue_crd_dir()) == "v1beta2"


def test_crds_without_one_storage_version_are_refused_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"cannot read Kueue's Workload CRD .*workloads.yaml"):
        stored_version(tmp_path)
    both = _workload_crd(tmp_path / "both", {"v1beta1": True, "v1beta2": True})
    with pytest.raises(RuntimeError, match=r"names no single storage version \(\['v1beta1', 'v1beta2'\]\)"):
        stored_version(both)
