"""LocalCluster: bring a real, single-host Kubernetes control plane up and down.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler run as local processes on free
loopback ports, with their own PKI and RBAC identities; kwok simulates the nodes and the pods on
them. Everything a cluster owns lives in its state directory (see layout.py), so several named
clusters can run side by side and `down()` can stop exactly the processes `up()` started.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import logging
import os
import shutil
import ssl
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

from . import components, processes
from .binaries import REPO_ROOT, BinarySet, cache_root, ensure_binaries
from .errors import ComponentFailedError, KubectlError, LocalClusterError
from .https import get_status, post_json, tls_context
from .kubeconfig import build_kubeconfig, write_kubeconfig
from .layout import COMPONENTS, ClusterLayout, Ports, validate_cluster_name
from .nodes import DEFAULT_NODE_POOLS, SIMULATED_NODE_LABEL, apply_node_list
from .pki import ADMIN, APISERVER_ETCD_CLIENT, CONTROLLER_MANAGER, KWOK, SCHEDULER, generate_pki
from .ports import LOOPBACK, parse_port, pick_free_ports, require_free
from .processes import ProcessSpec

log = logging.getLogger("localcluster")

DEFAULT_CLUSTER_NAME = "pykueue"
KWOK_STAGES = Path(__file__).with_name("kwok-stages.yaml")
MANIFEST_DIRS = ("manifests/crds", "manifests/test")
APISERVER_PORT_ENV = "PYKUEUE_APISERVER_PORT"
START_TIMEOUT = 90.0

T = TypeVar("T")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode("ascii")


def default_cluster_name() -> str:
    return os.environ.get("PYKUEUE_CLUSTER_NAME") or DEFAULT_CLUSTER_NAME


class LocalCluster:
    """One named local cluster; see the module docstring.

    Methods other areas rely on: `up`, `down`, `kubeconfig`, `kubectl`, `restart_apiserver`,
    `stop_apiserver`/`start_apiserver`, `compact_etcd`, `create_nodes`, `delete_nodes`.
    """

    def __init__(self, name: str | None = None, *, state_root: Path | None = None) -> None:
        self.name = validate_cluster_name(name or default_cluster_name())
        self.layout = ClusterLayout((state_root or cache_root() / "clusters") / self.name)
        self._binaries: BinarySet | None = None

    # ------------------------------------------------------------------ public API

    @property
    def kubeconfig(self) -> str:
        """Path of the admin kubeconfig (system:masters)."""
        return str(self.layout.kubeconfig)

    @property
    def ports(self) -> Ports | None:
        return self.layout.load_ports()

    @property
    def server(self) -> str:
        ports = self._require_ports()
        return f"https://{LOOPBACK}:{ports.apiserver}"

    def up(self, *, default_nodes: bool = True) -> LocalCluster:
        """Start the cluster, or reuse it when this name is already running and healthy.

        A half-running cluster (some process died) is stopped and started fresh.
        """
        started = time.monotonic()
        self._binaries = ensure_binaries()
        with self._exclusive():
            if self.is_healthy():
                log.info("cluster %r is already running; reusing it", self.name)
            else:
                self._down_locked()
                ports = self._choose_ports()  # before anything starts: a taken pinned port fails cleanly
                try:
                    self._start_fresh(ports, default_nodes=default_nodes)
                except BaseException:
                    log.info(
                        "bring-up failed; stopping what was started (logs stay in %s)", self.layout.logs_dir
                    )
                    self._stop_processes()
                    raise
            self.apply_manifests()
        log.info(
            "cluster %r ready in %.1fs; kubeconfig: %s",
            self.name,
            time.monotonic() - started,
            self.kubeconfig,
        )
        return self

    def down(self) -> list[str]:
        """Stop the processes this cluster started (verified by PID); return their names."""
        with self._exclusive():
            return self._down_locked()

    def _down_locked(self) -> list[str]:
        stopped = self._stop_processes()
        shutil.rmtree(self.layout.etcd_data, ignore_errors=True)
        if stopped:
            log.info("stopped %s", ", ".join(stopped))
        return stopped

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Serialise up/down of one cluster name across processes (two test sessions, a CLI)."""
        lock_path = self.layout.root.parent / f".{self.name}.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with lock_path.open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def status(self) -> dict[str, Any]:
        """Which processes run (with PIDs), the ports, and whether the apiserver is ready."""
        specs = self._saved_specs()
        running = {name: processes.running_pid(spec) for name, spec in specs.items()}
        ports = self.layout.load_ports()
        return {
            "name": self.name,
            "state_dir": str(self.layout.root),
            "kubeconfig": self.kubeconfig if self.layout.kubeconfig.exists() else None,
            "ports": ports.__dict__ if ports else None,
            "processes": {name: running.get(name) for name in COMPONENTS},
            "apiserver_ready": bool(ports)
            and all(running.get(n) for n in COMPONENTS)
            and self._apiserver_ready(),
        }

    def is_healthy(self) -> bool:
        specs = self._saved_specs()
        if set(specs) != set(COMPONENTS) or self.layout.load_ports() is None:
            return False
        if not all(processes.running_pid(spec) for spec in specs.values()):
            return False
        return self._apiserver_ready()

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None, timeout: float | None = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this cluster; with `check`, a failure raises KubectlError."""
        # A discovery cache per cluster: ports are reused by later clusters with other CRDs.
        cmd = [
            str(self._kubectl_binary()),
            "--kubeconfig",
            self.kubeconfig,
            "--cache-dir",
            str(self.layout.root / "kubectl-cache"),
            *args,
        ]
        result = subprocess.run(
            cmd, capture_output=True, text=True, input=input, timeout=timeout, check=False
        )
        if check and result.returncode != 0:
            raise KubectlError(result.returncode, cmd, result.stdout, result.stderr)
        return result

    def restart_apiserver(self, *, timeout: float = START_TIMEOUT) -> None:
        """Stop and start kube-apiserver on the same port: every open watch is cut.

        The apiserver gets one second to exit after SIGTERM and is then killed: with clients
        still connected it lingers in shutdown, and the callers want a restart (closer to a
        crash), not a tidy drain.

        It returns once the cluster has recovered, not just the apiserver: the controller
        manager's informers reconnect with client-go's backoff (and relist after a compaction),
        and until they do a new namespace gets no `default` ServiceAccount, so pods cannot be
        created in it. A probe namespace must get its ServiceAccount before this returns.
        """
        spec = self._saved_specs()["kube-apiserver"]
        processes.stop(spec, timeout=1.0)
        pid = processes.start(spec)
        self._wait_apiserver(pid, spec, timeout)
        self._wait_controllers_recovered(timeout)

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver only (etcd and the rest keep running): the cluster is unreachable
        until :meth:`start_apiserver`. MultiKueue tests use it to lose a worker."""
        processes.stop(self._saved_specs()["kube-apiserver"], timeout=1.0)

    def start_apiserver(self, *, timeout: float = START_TIMEOUT) -> None:
        """Start the kube-apiserver stopped by :meth:`stop_apiserver` again, on the same port."""
        spec = self._saved_specs()["kube-apiserver"]
        pid = processes.start(spec)
        self._wait_apiserver(pid, spec, timeout)
        self._wait_controllers_recovered(timeout)

    def _wait_controllers_recovered(self, timeout: float) -> None:
        """A fresh namespace gets its `default` ServiceAccount: the controller manager caught up."""
        probe_namespace = f"localcluster-recovery-probe-{os.getpid()}-{time.monotonic_ns()}"

        def has_service_account() -> bool:
            found = self.kubectl(
                "get", "serviceaccount", "default", "-n", probe_namespace, "-o", "name", check=False
            )
            return found.returncode == 0

        self.kubectl("create", "namespace", probe_namespace)
        try:
            self._poll(
                f"the default ServiceAccount in {probe_namespace} (controller manager recovered)",
                has_service_account,
                timeout=timeout,
                interval=0.3,
            )
        finally:
            self.kubectl("delete", "namespace", probe_namespace, "--wait=false", check=False)

    def compact_etcd(self) -> int:
        """Compact etcd to its current revision, make the apiserver see it, and return the revision.

        Compacting etcd alone is invisible to clients: the apiserver's watch cache keeps serving
        the compacted history from memory. So after compacting, the apiserver is restarted and
        rebuilds its cache from the compacted store; open watches are cut, and resuming them
        (or continuing a paginated list) from a resourceVersion before the compaction fails with
        410 Gone. A marker key outside /registry is written first so that every Kubernetes
        object's resourceVersion is strictly older than the compaction point.
        """
        ports = self._require_ports()
        pki = self.layout.pki
        context = tls_context(
            pki.ca_cert, pki.client_cert(APISERVER_ETCD_CLIENT), pki.client_key(APISERVER_ETCD_CLIENT)
        )
        base = f"https://{LOOPBACK}:{ports.etcd_client}"
        marker = {"key": _b64("/pykueue-localcluster/compaction-marker"), "value": _b64(str(time.time()))}
        revision = int(post_json(f"{base}/v3/kv/put", marker, context)["header"]["revision"])
        post_json(f"{base}/v3/kv/compaction", {"revision": revision, "physical": True}, context)
        self.restart_apiserver()
        return revision

    def etcd_value(self, key: str) -> bytes | None:
        """The bytes etcd holds at ``key`` (``/registry/...``), or ``None``: what the apiserver
        stored, in the version it stored it in (custom resources are stored as JSON)."""
        ports = self._require_ports()
        pki = self.layout.pki
        context = tls_context(
            pki.ca_cert, pki.client_cert(APISERVER_ETCD_CLIENT), pki.client_key(APISERVER_ETCD_CLIENT)
        )
        found = post_json(f"https://{LOOPBACK}:{ports.etcd_client}/v3/kv/range", {"key": _b64(key)}, context)
        kvs = found.get("kvs") or []
        return base64.b64decode(kvs[0]["value"]) if kvs else None

    def create_nodes(
        self,
        prefix: str,
        count: int,
        labels: Mapping[str, str] | None = None,
        capacity: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, str]] = (),
        *,
        wait: bool = True,
        timeout: float = 60.0,
    ) -> list[str]:
        """Create `count` kwok-managed nodes `<prefix>-<i>` and (by default) wait until Ready."""
        names = apply_node_list(self.kubectl, prefix, count, labels=labels, capacity=capacity, taints=taints)
        if names and wait:
            self._wait_nodes_ready(prefix, names, timeout)
        return names

    def delete_nodes(self, prefix: str) -> None:
        """Delete every simulated node created with `prefix`."""
        self.kubectl("delete", "nodes", "-l", f"{SIMULATED_NODE_LABEL}={prefix}", "--wait=false")

    def apply_manifests(self, repo_root: Path = REPO_ROOT) -> list[Path]:
        """Apply manifests/crds/*.yaml (waiting for Established) and then manifests/test/*.yaml."""
        applied: list[Path] = []
        for directory in MANIFEST_DIRS:
            files = sorted((repo_root / directory).glob("*.yaml"))
            if not files:
                continue
            file_args = [arg for f in files for arg in ("-f", str(f))]
            if directory.endswith("crds"):
                documents = self._keep_live_conversion([yaml.safe_load(f.read_text()) for f in files])
                self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(documents))
            else:
                self.kubectl("apply", "--server-side", "--force-conflicts", *file_args)
            if directory.endswith("crds"):
                self.kubectl("wait", "--for=condition=Established", "--timeout=60s", *file_args)
            applied += files
        if applied:
            log.info("applied %d manifest file(s)", len(applied))
        return applied

    def _keep_live_conversion(self, crds: list[dict[str, Any]]) -> dict[str, Any]:
        """The CRDs to apply, each keeping the conversion webhook a running pykueue webhook configured.

        The committed CRDs name the default install's Service; the local webhook rewrites that to
        its own URL and CA bundle (webhook/crd_conversion.py). Re-applying the committed stanza over
        it would leave both a url and a service (two field managers), which the apiserver rejects,
        so a CRD that exists keeps its live ``spec.conversion``.
        """
        live: dict[str, Any] = {}
        listed = self.kubectl("get", "crd", "-o", "json", check=False)
        if listed.returncode == 0:
            live = {item["metadata"]["name"]: item for item in json.loads(listed.stdout).get("items", [])}
        for doc in crds:
            current = live.get(doc["metadata"]["name"], {}).get("spec", {}).get("conversion")
            if current and current.get("strategy") == "Webhook" and doc["spec"].get("conversion"):
                doc["spec"]["conversion"] = current
        return {"apiVersion": "v1", "kind": "List", "items": crds}

    # ------------------------------------------------------------------ bring-up

    def _start_fresh(self, ports: Ports, *, default_nodes: bool) -> None:
        binaries = self._binaries or ensure_binaries()
        self._reset_state_dir()
        self.layout.save_ports(ports)
        generate_pki(self.layout.pki.root)
        self._write_kubeconfigs(ports)
        shutil.copyfile(KWOK_STAGES, self.layout.kwok_config)

        specs = {
            "etcd": components.etcd(self.layout, ports, binaries, self.name),
            "kube-apiserver": components.kube_apiserver(self.layout, ports, binaries),
            "kube-controller-manager": components.kube_controller_manager(self.layout, ports, binaries),
            "kube-scheduler": components.kube_scheduler(self.layout, ports, binaries),
            "kwok": components.kwok(self.layout, ports, binaries),
        }
        self._save_specs(specs)

        self._timed("etcd", lambda: self._wait_etcd(processes.start(specs["etcd"]), specs["etcd"], ports))
        apiserver = specs["kube-apiserver"]
        self._timed("kube-apiserver", lambda: self._wait_apiserver(processes.start(apiserver), apiserver))
        pids = {
            name: processes.start(specs[name])
            for name in ("kube-controller-manager", "kube-scheduler", "kwok")
        }
        self._timed(
            "kube-controller-manager",
            lambda: self._wait_default_service_account(
                pids["kube-controller-manager"], specs["kube-controller-manager"]
            ),
        )
        if default_nodes:

            def create_default_nodes() -> None:
                for prefix, count, labels in DEFAULT_NODE_POOLS:
                    self.create_nodes(prefix, count, labels, wait=False)
                for prefix, count, _ in DEFAULT_NODE_POOLS:
                    self._wait_nodes_ready(
                        prefix,
                        [f"{prefix}-{i}" for i in range(count)],
                        60.0,
                        watch=(pids["kwok"], specs["kwok"]),
                    )

            self._timed("simulated nodes", create_default_nodes)
        self._check_alive(pids["kube-scheduler"], specs["kube-scheduler"])

    def _reset_state_dir(self) -> None:
        """Start from an empty state directory, keeping the last run's logs as `previous-logs/`."""
        root = self.layout.root
        kept_logs = root.parent / f".{self.name}.previous-logs"
        shutil.rmtree(kept_logs, ignore_errors=True)
        if self.layout.logs_dir.is_dir():
            self.layout.logs_dir.rename(kept_logs)
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        if kept_logs.is_dir():
            kept_logs.rename(root / "previous-logs")

    def _choose_ports(self) -> Ports:
        free = pick_free_ports(6)
        pinned = os.environ.get(APISERVER_PORT_ENV)
        apiserver = free[2]
        if pinned:
            apiserver = parse_port(pinned, APISERVER_PORT_ENV)
            require_free([(f"${APISERVER_PORT_ENV}", apiserver)])
        return Ports(
            etcd_client=free[0],
            etcd_peer=free[1],
            apiserver=apiserver,
            controller_manager=free[3],
            scheduler=free[4],
            kwok=free[5],
        )

    def _write_kubeconfigs(self, ports: Ports) -> None:
        pki = self.layout.pki
        server = f"https://{LOOPBACK}:{ports.apiserver}"
        cluster = f"pykueue-{self.name}"
        write_kubeconfig(
            self.layout.kubeconfig,
            build_kubeconfig(
                cluster_name=cluster,
                server=server,
                ca_cert=pki.ca_cert,
                client_cert=pki.client_cert(ADMIN),
                client_key=pki.client_key(ADMIN),
                user=ADMIN.user,
            ),
        )
        for component, identity in (
            ("kube-controller-manager", CONTROLLER_MANAGER),
            ("kube-scheduler", SCHEDULER),
            ("kwok", KWOK),
        ):
            write_kubeconfig(
                self.layout.component_kubeconfig(component),
                build_kubeconfig(
                    cluster_name=cluster,
                    server=server,
                    ca_cert=pki.ca_cert,
                    client_cert=pki.client_cert(identity),
                    client_key=pki.client_key(identity),
                    user=identity.user,
                ),
            )

    # ------------------------------------------------------------------ waiting

    def _timed(self, what: str, step: Callable[[], None]) -> None:
        began = time.monotonic()
        step()
        log.info("%s ready (%.1fs)", what, time.monotonic() - began)

    def _poll(
        self,
        what: str,
        probe: Callable[[], T | None],
        *,
        timeout: float,
        watch: tuple[int, ProcessSpec] | None = None,
        interval: float = 0.1,
    ) -> T:
        """Call `probe` until it returns a value; fail fast if the watched process exits."""
        deadline = time.monotonic() + timeout
        while True:
            if watch is not None:
                self._check_alive(*watch)
            value = probe()
            if value is not None and value is not False:
                return value
            if time.monotonic() > deadline:
                hint = f"; see {watch[1].log_path}" if watch else ""
                raise ComponentFailedError(f"timed out after {timeout:.0f}s waiting for {what}{hint}")
            time.sleep(interval)

    def _check_alive(self, pid: int, spec: ProcessSpec) -> None:
        if processes.exited(pid):
            last = " | ".join(line.strip() for line in processes.tail(spec.log_path, 2))
            raise ComponentFailedError(
                f"{spec.name} exited during start-up: {last[-400:]} (full log: {spec.log_path})"
            )

    def _wait_etcd(self, pid: int, spec: ProcessSpec, ports: Ports) -> None:
        pki = self.layout.pki
        context = tls_context(
            pki.ca_cert, pki.client_cert(APISERVER_ETCD_CLIENT), pki.client_key(APISERVER_ETCD_CLIENT)
        )
        url = f"https://{LOOPBACK}:{ports.etcd_client}/health"
        self._poll(
            "etcd /health",
            lambda: get_status(url, context)[0] == 200,
            timeout=START_TIMEOUT,
            watch=(pid, spec),
        )

    def _admin_context(self) -> ssl.SSLContext:
        pki = self.layout.pki
        return tls_context(pki.ca_cert, pki.client_cert(ADMIN), pki.client_key(ADMIN))

    def _apiserver_ready(self) -> bool:
        ports = self.layout.load_ports()
        if ports is None or not self.layout.pki.ca_cert.exists():
            return False
        try:
            context = self._admin_context()
        except (OSError, ssl.SSLError):
            return False
        return get_status(f"https://{LOOPBACK}:{ports.apiserver}/readyz", context)[0] == 200

    def _wait_apiserver(self, pid: int, spec: ProcessSpec, timeout: float = START_TIMEOUT) -> None:
        self._poll(
            "kube-apiserver /readyz", self._apiserver_ready, timeout=timeout, watch=(pid, spec), interval=0.2
        )

    def _wait_default_service_account(self, pid: int, spec: ProcessSpec) -> None:
        """The controller manager works once it has given `default` its ServiceAccount."""

        def probe() -> bool:
            return (
                self.kubectl(
                    "get", "serviceaccount", "default", "-n", "default", "-o", "name", check=False
                ).returncode
                == 0
            )

        self._poll(
            "the default ServiceAccount (kube-controller-manager)",
            probe,
            timeout=START_TIMEOUT,
            watch=(pid, spec),
            interval=0.3,
        )

    def _wait_nodes_ready(
        self, prefix: str, names: Iterable[str], timeout: float, watch: tuple[int, ProcessSpec] | None = None
    ) -> None:
        wanted = set(names)

        def probe() -> bool:
            result = self.kubectl(
                "get", "nodes", "-l", f"{SIMULATED_NODE_LABEL}={prefix}", "-o", "json", check=False
            )
            if result.returncode != 0:
                return False
            ready = {
                item["metadata"]["name"]
                for item in json.loads(result.stdout)["items"]
                if any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in item.get("status", {}).get("conditions", [])
                )
            }
            return wanted <= ready

        self._poll(
            f"nodes {sorted(wanted)} to be Ready (kwok)", probe, timeout=timeout, watch=watch, interval=0.3
        )

    # ------------------------------------------------------------------ process records

    def _save_specs(self, specs: Mapping[str, ProcessSpec]) -> None:
        record = {name: list(spec.argv) for name, spec in specs.items()}
        (self.layout.root / "processes.json").write_text(json.dumps(record, indent=2))

    def _saved_specs(self) -> dict[str, ProcessSpec]:
        """The specs recorded at the last bring-up (so down() works even if pins changed since)."""
        try:
            record = json.loads((self.layout.root / "processes.json").read_text())
        except (OSError, ValueError):
            return {}
        return {
            name: ProcessSpec(
                name=name,
                argv=tuple(argv),
                marker=str(self.layout.root),
                log_path=self.layout.log_file(name),
                pid_path=self.layout.pid_file(name),
            )
            for name, argv in record.items()
        }

    def _stop_processes(self) -> list[str]:
        stopped = []
        # Reverse start order: clients before the apiserver, the apiserver before etcd.
        for name, spec in reversed(list(self._saved_specs().items())):
            if processes.stop(spec):
                stopped.append(name)
        return stopped

    def _require_ports(self) -> Ports:
        ports = self.layout.load_ports()
        if ports is None:
            raise LocalClusterError(
                f"cluster {self.name!r} has never been brought up (no {self.layout.ports_file})"
            )
        return ports

    def _kubectl_binary(self) -> Path:
        if self._binaries is None:
            self._binaries = ensure_binaries(build=False)
        return self._binaries["kubectl"]
