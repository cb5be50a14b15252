"""Command lines of the control-plane processes: loopback only, and recognisable by `down()`."""

from __future__ import annotations

from pathlib import Path

import pytest

from hack.localcluster import components
from hack.localcluster.binaries import CLUSTER_BINARIES, BinarySet
from hack.localcluster.layout import ClusterLayout, Ports
from hack.localcluster.processes import ProcessSpec, names_path

PORTS = Ports(
    etcd_client=20001, etcd_peer=20002, apiserver=20003, controller_manager=20004, scheduler=20005, kwok=20006
)


@pytest.fixture
def specs(tmp_path: Path) -> dict[str, ProcessSpec]:
    layout = ClusterLayout(tmp_path / "clusters" / "unit")
    binaries = BinarySet({name: tmp_path / "bin" / name for name in CLUSTER_BINARIES})
    return {
        "etcd": components.etcd(layout, PORTS, binaries, "unit"),
        "kube-apiserver": components.kube_apiserver(layout, PORTS, binaries),
        "kube-controller-manager": components.kube_controller_manager(layout, PORTS, binaries),
        "kube-scheduler": components.kube_scheduler(layout, PORTS, binaries),
        "kwok": components.kwok(layout, PORTS, binaries),
    }


def _flags(spec: ProcessSpec) -> dict[str, str]:
    return dict(arg.removeprefix("--").partition("=")[::2] for arg in spec.argv[1:])


def test_every_command_line_names_the_cluster_state_dir(specs: dict[str, ProcessSpec]) -> None:
    # down() only stops a PID whose command line contains this marker; a process without it
    # could never be stopped again.
    for name, spec in specs.items():
        assert any(names_path(arg, spec.marker) for arg in spec.argv), name


def test_everything_listens_on_loopback_only(specs: dict[str, ProcessSpec]) -> None:
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        assert _flags(specs[name])["bind-address"] == "127.0.0.1", name
    etcd = _flags(specs["etcd"])
    assert etcd["listen-client-urls"] == "https://127.0.0.1:20001"
    assert etcd["listen-peer-urls"] == "http://127.0.0.1:20002"
    assert _flags(specs["kwok"])["server-address"] == "127.0.0.1:20006"


def test_apiserver_uses_rbac_a_service_account_issuer_and_perf_inflight_limits(
    specs: dict[str, ProcessSpec],
) -> None:
    flags = _flags(specs["kube-apiserver"])
    assert flags["authorization-mode"] == "Node,RBAC"
    assert flags["anonymous-auth"] == "false"
    assert flags["service-account-issuer"] == components.SERVICE_ACCOUNT_ISSUER
    assert flags["max-requests-inflight"] == "5000"
    assert flags["max-mutating-requests-inflight"] == "2500"
    assert flags["etcd-servers"] == "https://127.0.0.1:20001"


def test_controllers_run_without_leader_election(specs: dict[str, ProcessSpec]) -> None:
    for name in ("kube-controller-manager", "kube-scheduler"):
        assert _flags(specs[name])["leader-elect"] == "false", name
    assert _flags(specs["kube-controller-manager"])["use-service-account-credentials"] == "true"


def test_kwok_manages_only_annotated_nodes(specs: dict[str, ProcessSpec]) -> None:
    flags = _flags(specs["kwok"])
    assert flags["manage-all-nodes"] == "false"
    assert flags["manage-nodes-with-annotation-selector"] == "kwok.x-k8s.io/node=fake"


def test_kwok_renews_node_leases(specs: dict[str, ProcessSpec]) -> None:
    # Without leases the node-lifecycle controller marks every simulated node NotReady after 50s.
    assert int(_flags(specs["kwok"])["node-lease-duration-seconds"]) > 0


def test_apiserver_profiling_is_off_unless_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layout = ClusterLayout(tmp_path / "clusters" / "unit")
    binaries = BinarySet({name: tmp_path / "bin" / name for name in CLUSTER_BINARIES})
    monkeypatch.delenv(components.APISERVER_PROFILING_ENV, raising=False)
    assert _flags(components.kube_apiserver(layout, PORTS, binaries))["profiling"] == "false"
    monkeypatch.setenv(components.APISERVER_PROFILING_ENV, "yes")
    assert _flags(components.kube_apiserver(layout, PORTS, binaries))["profiling"] == "false"
    monkeypatch.setenv(components.APISERVER_PROFILING_ENV, "1")
    assert _flags(components.kube_apiserver(layout, PORTS, binaries))["profiling"] == "true"
