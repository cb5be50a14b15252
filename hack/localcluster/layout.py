"""Where one local cluster keeps its state, and the ports it was given.

Everything of a cluster named N lives in ``~/.cache/pykueue/clusters/N/``::

    kubeconfig              admin kubeconfig (the one users and tests use)
    kubeconfigs/*.kubeconfig one per component, each with its own identity
    pki/                    CA, serving certificates, client certificates, service-account key
    pids/*.pid              PIDs of the processes this cluster started
    logs/*.log              one log per process
    etcd-data/              etcd's data directory
    kwok.yaml               kwok's stages (node and pod lifecycle)
    ports.json              the loopback ports chosen at the last bring-up
    processes.json          the command line of each process (what down() verifies against)
    kubectl-cache/          kubectl's discovery cache for this cluster
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import PrerequisiteError
from .pki import PkiPaths

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
_VALID_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$")


def validate_cluster_name(name: str) -> str:
    """Cluster names become directory names and appear in certificates: keep them DNS-like."""
    if not _VALID_NAME.match(name):
        raise PrerequisiteError(
            f"cluster name {name!r} is invalid: use 1-40 lower-case letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return name


@dataclass(frozen=True)
class Ports:
    """The loopback ports of one cluster's processes."""

    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kwok: int

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Ports:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class ClusterLayout:
    """Paths inside one cluster's state directory."""

    root: Path

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    def component_kubeconfig(self, component: str) -> Path:
        return self.root / "kubeconfigs" / f"{component}.kubeconfig"

    @property
    def pki(self) -> PkiPaths:
        return PkiPaths(self.root / "pki")

    def pid_file(self, component: str) -> Path:
        return self.root / "pids" / f"{component}.pid"

    def log_file(self, component: str) -> Path:
        return self.root / "logs" / f"{component}.log"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd-data"

    @property
    def kwok_config(self) -> Path:
        return self.root / "kwok.yaml"

    @property
    def ports_file(self) -> Path:
        return self.root / "ports.json"

    def load_ports(self) -> Ports | None:
        try:
            return Ports.from_json(self.ports_file.read_text())
        except (OSError, ValueError, TypeError):
            return None

    def save_ports(self, ports: Ports) -> None:
        self.ports_file.write_text(ports.to_json())
