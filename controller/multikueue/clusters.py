"""A client per MultiKueueCluster, its ``Active`` condition, and reconnection with backoff.

Each MultiKueueCluster names a kubeconfig: a Secret in the controller's namespace (key
``kubeconfig``) or a file path. A pass of :class:`ClusterController` reads it, refuses it when
it could reach beyond the worker (:mod:`.kubeconfig`), builds a client when the kubeconfig is
new or changed (a rotated Secret replaces the client), and probes the worker. The outcome is
the ``Active`` condition with Kueue's reasons (``Active``/``Connected``, ``BadConfig``,
``ClientConnectionFailed``; Kueue's ``multikueuecluster.go``) and an Event when it flips.

A connected worker is probed again every ``probe_interval`` so a worker that stops answering
turns inactive within seconds; an unreachable one is retried after an exponential backoff
(:func:`retry_delay`). A connected worker's client is also watched (:mod:`.watches`): the
watches start on every new or rebuilt client and stop when the worker turns inactive.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import Gauge

from controller.runtime.events import EventSink
from controller.runtime.informer import FuncHandler, Informer
from controller.runtime.workers import Workers
from controller.runtime.workqueue import WorkQueue
from controller.workload.status_plan import EventSpec
from pykueue.api import constants as C
from pykueue.api.conditions import Condition, find_condition, set_condition
from pykueue.kube import resources as R
from pykueue.kube.client import KubeClient
from pykueue.kube.errors import ApiError, NotFound

from .kubeconfig import KubeconfigRefused, validated
from .watches import RemoteWatches

log = logging.getLogger(__name__)

REASON_ACTIVE = "Active"
MESSAGE_CONNECTED = "Connected"
REASON_BAD_CONFIG = "BadConfig"
REASON_CONNECTION_FAILED = "ClientConnectionFailed"

CLUSTER_ACTIVE = Gauge(
    "pykueue_multikueue_cluster_active", "1 when the MultiKueueCluster is Active, else 0.", ["cluster"]
)

ClientFactory = Callable[[dict[str, Any]], KubeClient]


def retry_delay(failures: int, base: float = 1.0, cap: float = 60.0) -> float:
    """Seconds before the next connection attempt after ``failures`` failed ones in a row."""
    if failures <= 0:
        return base
    return float(min(cap, base * (2 ** min(failures - 1, 16))))


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a pass concluded about one worker: the ``Active`` condition's status, reason, message."""

    active: bool
    reason: str
    message: str


def active_condition_changed(conditions: list[Condition], verdict: Verdict, generation: int) -> bool:
    """Apply ``verdict`` to ``conditions`` in place; True when the status must be written."""
    return set_condition(
        conditions, C.COND_ACTIVE, verdict.active, verdict.reason, verdict.message, observed_generation=generation
    )


@dataclass
class Remote:
    """One worker's client, and the kubeconfig fingerprint it was built from."""

    name: str
    client: KubeClient
    fingerprint: str
    active: bool = False
    failures: int = 0


class Registry:
    """The clients of all known workers, shared by the cluster and workload controllers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._remotes: dict[str, Remote] = {}

    def get(self, name: str) -> Remote | None:
        with self._lock:
            return self._remotes.get(name)

    def put(self, remote: Remote) -> Remote | None:
        with self._lock:
            old = self._remotes.get(remote.name)
            self._remotes[remote.name] = remote
            return old

    def drop(self, name: str) -> Remote | None:
        with self._lock:
            return self._remotes.pop(name, None)

    def active_client(self, name: str) -> KubeClient | None:
        with self._lock:
            remote = self._remotes.get(name)
            return remote.client if remote is not None and remote.active else None

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._remotes)


def fingerprint(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


class ClusterController:
    """Keeps :class:`Registry` and each MultiKueueCluster's ``Active`` condition current."""

    name = "multikueue-cluster-controller"

    def __init__(
        self,
        client: Any,
        clusters: Informer,
        registry: Registry,
        *,
        namespace: str,
        events: EventSink,
        client_factory: ClientFactory = KubeClient.from_kubeconfig_dict,
        probe_interval: float = 5.0,
        retry_cap: float = 60.0,
        watches: RemoteWatches | None = None,
    ) -> None:
        self._client = client
        self.clusters = clusters
        self.registry = registry
        self._namespace = namespace
        self._events = events
        self._factory = client_factory
        self._probe_interval = probe_interval
        self._retry_cap = retry_cap
        self._watches = watches
        self.queue: WorkQueue[str] = WorkQueue("multikueue-cluster")
        self._runner = Workers(self.queue, self.reconcile, name=self.name, count=2)

    # --- wiring ------------------------------------------------------------------------------------

    def register_handlers(self) -> None:
        def enqueue(obj: dict[str, Any]) -> None:
            self.queue.add(str((obj.get("metadata") or {}).get("name") or ""))

        self.clusters.add_handler(
            FuncHandler(add=enqueue, update=lambda old, new: enqueue(new) if _spec_changed(old, new) else None,
                        delete=enqueue)
        )  # fmt: skip

    def start(self) -> None:
        self._runner.start()

    def stop(self) -> None:
        self._runner.stop()
        for name in self.registry.names():
            remote = self.registry.drop(name)
            if remote is not None:
                remote.client.close()
        if self._watches is not None:
            self._watches.stop()

    def process_one(self, key: str) -> None:
        self._runner.process_one(key)

    # --- one pass -----------------------------------------------------------------------------------

    def _read_kubeconfig(self, cluster: dict[str, Any]) -> bytes:
        ref = (cluster.get("spec") or {}).get("kubeConfig") or {}
        location = str(ref.get("location") or "")
        # Kueue's CRD does not require a non-empty location (nor a kubeConfig at all, with
        # clusterProfileRef beside it), so an empty one reaches us; it names nothing to read.
        if not location:
            raise KubeconfigRefused("spec.kubeConfig.location is empty; pykueue reads kubeconfigs only")
        if ref.get("locationType", "Secret") == "Path":
            try:
                return Path(location).read_bytes()
            except OSError as err:
                raise KubeconfigRefused(f"cannot read the kubeconfig file {location}: {err.strerror}") from None
        try:
            secret = self._client.get(R.SECRETS, location, self._namespace)
        except ApiError as err:
            raise KubeconfigRefused(f"cannot read Secret {self._namespace}/{location}: {err}") from None
        if secret is None:
            raise KubeconfigRefused(f"Secret {self._namespace}/{location} not found")
        data = (secret.get("data") or {}).get(C.MULTIKUEUE_KUBECONFIG_SECRET_KEY)
        if not data:
            raise KubeconfigRefused(
                f"Secret {self._namespace}/{location} has no {C.MULTIKUEUE_KUBECONFIG_SECRET_KEY!r} key"
            )
        return base64.b64decode(data)

    def _connect(self, name: str, raw: bytes) -> Remote:
        """The worker's client, rebuilt when the kubeconfig changed since it was built."""
        print_ = fingerprint(raw)
        remote = self.registry.get(name)
        if remote is not None and remote.fingerprint == print_:
            return remote
        document = validated(raw)
        fresh = Remote(name, self._factory(document), print_, failures=remote.failures if remote else 0)
        old = self.registry.put(fresh)
        if old is not None:
            log.info("kubeconfig changed; client rebuilt", extra={"multiKueueCluster": name})
            old.client.close()
        return fresh

    def reconcile(self, name: str) -> float | None:
        cluster = self.clusters.store.get(name)
        if cluster is None:
            self._unwatch(name)
            gone = self.registry.drop(name)
            if gone is not None:
                gone.client.close()
            with contextlib.suppress(KeyError):
                CLUSTER_ACTIVE.remove(name)
            return None
        try:
            raw = self._read_kubeconfig(cluster)
            remote = self._connect(name, raw)
        except KubeconfigRefused as err:
            self._unwatch(name)
            dropped = self.registry.drop(name)
            if dropped is not None:
                dropped.client.close()
            self._record(cluster, Verdict(False, REASON_BAD_CONFIG, str(err)))
            return None  # a Secret or spec change brings the cluster back
        try:
            remote.client.list(R.WORKLOADS, limit=1)
        except Exception as err:  # any failure to reach the worker means inactive
            remote.active = False
            remote.failures += 1
            self._unwatch(name)
            self._record(cluster, Verdict(False, REASON_CONNECTION_FAILED, _short(err)))
            return retry_delay(remote.failures, cap=self._retry_cap)
        remote.active = True
        remote.failures = 0
        if self._watches is not None:
            self._watches.connected(name, remote.client)  # a rebuilt client gets new watches
        self._record(cluster, Verdict(True, REASON_ACTIVE, MESSAGE_CONNECTED))
        return self._probe_interval

    def _unwatch(self, name: str) -> None:
        if self._watches is not None:
            self._watches.disconnected(name)

    def _record(self, cluster: dict[str, Any], verdict: Verdict) -> None:
        meta = cluster.get("metadata") or {}
        name = str(meta.get("name"))
        CLUSTER_ACTIVE.labels(name).set(1 if verdict.active else 0)
        conditions: list[Condition] = [dict(c) for c in (cluster.get("status") or {}).get("conditions") or []]  # type: ignore[misc]
        before = find_condition(conditions, C.COND_ACTIVE)
        was_active = before is not None and before.get("status") == "True"
        if not active_condition_changed(conditions, verdict, int(meta.get("generation") or 0)):
            return
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": {"conditions": conditions}}
        try:
            self._client.patch_status(R.MULTIKUEUE_CLUSTERS, name, patch)
        except NotFound:
            return
        if verdict.active != was_active or before is None:
            involved = {**cluster, "apiVersion": f"{R.GROUP}/{R.VERSION}", "kind": "MultiKueueCluster"}
            type_ = "Normal" if verdict.active else "Warning"
            self._events.emit(involved, EventSpec(type_, verdict.reason, verdict.message))
        log.info(
            "multikueue cluster condition",
            extra={"multiKueueCluster": name, "active": verdict.active, "reason": verdict.reason},
        )


def _spec_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return (old.get("metadata") or {}).get("generation") != (new.get("metadata") or {}).get("generation")


def _short(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return text if len(text) <= 256 else text[:253] + "..."
