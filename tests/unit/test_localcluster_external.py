"""An existing cluster (PYKUEUE_KUBECONFIG) offers API access, refuses control-plane surgery, and
gets simulated nodes only when a kwok plays them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hack.localcluster import ExistingCluster, PrerequisiteError, UnsupportedOperationError
from hack.localcluster.components import KWOK_NODE_ANNOTATION
from hack.localcluster.errors import ComponentFailedError
from hack.localcluster.nodes import SIMULATED_NODE_LABEL

Obj = dict[str, Any]


@pytest.fixture
def existing(tmp_path: Path) -> ExistingCluster:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    return ExistingCluster(kubeconfig)


class FakeKubectl:
    """Stands in for ExistingCluster.kubectl: a kwok Deployment, nodes, and what was applied."""

    def __init__(self, *, deployment: Obj | None = None, nodes: list[Obj] | None = None) -> None:
        self.deployment = deployment
        self.nodes = list(nodes or [])
        self.kwok_plays_applied_nodes = True
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, *args: str, check: bool = True, input: str | None = None, **_: Any) -> Any:
        self.calls.append(args)
        if args[:2] == ("get", "deployment"):
            if self.deployment is None:
                return self._done(
                    1, stderr='Error from server (NotFound): deployments "kwok-controller" not found'
                )
            return self._done(0, json.dumps(self.deployment))
        if args[:2] == ("get", "nodes"):
            items = self.nodes
            if "-l" in args:
                key, _, value = args[args.index("-l") + 1].partition("=")
                items = [n for n in items if n["metadata"]["labels"].get(key) == value]
            return self._done(0, json.dumps({"items": items}))
        if args[0] == "apply":
            assert input is not None
            for item in json.loads(input)["items"]:
                if self.kwok_plays_applied_nodes:
                    item["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
                self.nodes.append(item)
            return self._done(0)
        if args[0] == "delete":
            return self._done(0)
        raise AssertionError(f"unexpected kubectl {args}")

    @staticmethod
    def _done(code: int, stdout: str = "", stderr: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(["kubectl"], code, stdout, stderr)


def ready_kwok_node(name: str) -> Obj:
    return {
        "metadata": {"name": name, "labels": {}, "annotations": {KWOK_NODE_ANNOTATION: "fake"}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def use(existing: ExistingCluster, fake: FakeKubectl, monkeypatch: pytest.MonkeyPatch) -> FakeKubectl:
    monkeypatch.setattr(existing, "kubectl", fake)
    return fake


def test_a_missing_kubeconfig_is_reported_with_the_variable_to_check(tmp_path: Path) -> None:
    with pytest.raises(
        PrerequisiteError, match=r"kubeconfig .*/nope does not exist \(check PYKUEUE_KUBECONFIG\)"
    ):
        ExistingCluster(tmp_path / "nope")


@pytest.mark.parametrize(
    "operation",
    [lambda c: c.restart_apiserver(), lambda c: c.compact_etcd()],
    ids=["restart_apiserver", "compact_etcd"],
)
def test_control_plane_operations_explain_why_they_cannot_run(existing: ExistingCluster, operation) -> None:
    with pytest.raises(UnsupportedOperationError) as err:
        operation(existing)
    message = str(err.value)
    assert "needs the local cluster" in message
    assert existing.kubeconfig in message
    assert "unset PYKUEUE_KUBECONFIG" in message


def test_without_kwok_create_nodes_says_how_to_install_it(
    existing: ExistingCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real node without kwok's annotation, Ready: not a sign of kwok.
    real = ready_kwok_node("kind-worker")
    real["metadata"]["annotations"] = {}
    fake = use(existing, FakeKubectl(nodes=[real]), monkeypatch)
    assert existing.kwok_provider() is None
    with pytest.raises(PrerequisiteError) as err:
        existing.create_nodes("extra", 1)
    message = str(err.value)
    assert "needs kwok" in message and existing.kubeconfig in message
    assert "hack/e2e-deploy.sh install-kwok" in message
    assert not any(call[0] == "apply" for call in fake.calls), "nothing is created"


def test_an_available_kwok_deployment_is_found(
    existing: ExistingCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(existing, FakeKubectl(deployment={"status": {"availableReplicas": 1}}), monkeypatch)
    assert existing.kwok_provider() == "deployment kube-system/kwok-controller"


def test_an_unavailable_kwok_deployment_is_not_enough(
    existing: ExistingCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(existing, FakeKubectl(deployment={"status": {"replicas": 1}}), monkeypatch)
    assert existing.kwok_provider() is None


def test_a_ready_kwok_node_shows_a_kwok_outside_the_cluster(
    existing: ExistingCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(existing, FakeKubectl(nodes=[ready_kwok_node("kwok-spot-0")]), monkeypatch)
    assert existing.kwok_provider() == "a kwok outside the cluster (it keeps node kwok-spot-0 Ready)"


def test_with_kwok_create_nodes_applies_kwok_nodes_and_waits_until_ready(
    existing: ExistingCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = use(existing, FakeKubectl(deployment={"status": {"availableReplicas": 1}}), monkeypatch)
    names = existing.create_nodes("pool", 2, labels={"flavor": "x"}, capacity={"cpu": "4"})
    assert names == ["pool-0", "pool-1"]
    created = {n["metadata"]["name"]: n for n in fake.nodes}
    assert set(created) == {"pool-0", "pool-1"}
    for node in created.values():
        assert node["metadata"]["annotations"] == {KWOK_NODE_ANNOTATION: "fake"}
        assert node["metadata"]["labels"][SIMULATED_NODE_LABEL] == "pool"
        assert node["metadata"]["labels"]["flavor"] == "x"
        assert node["status"]["capacity"]["cpu"] == "4"
    existing.create_nodes("more", 1)
    assert sum(call[:2] == ("get", "deployment") for call in fake.calls) == 1, "kwok is looked for once"


def test_nodes_kwok_never_makes_ready_fail_with_their_names(
    existing: ExistingCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = use(existing, FakeKubectl(deployment={"status": {"availableReplicas": 1}}), monkeypatch)
    fake.kwok_plays_applied_nodes = False
    with pytest.raises(ComponentFailedError, match=r"\['stuck-0'\] did not become Ready within 0s"):
        existing.create_nodes("stuck", 1, timeout=0)


def test_delete_nodes_deletes_by_prefix_label_even_without_kwok(
    existing: ExistingCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = use(existing, FakeKubectl(), monkeypatch)
    existing.delete_nodes("pool")
    assert fake.calls == [("delete", "nodes", "-l", f"{SIMULATED_NODE_LABEL}=pool", "--wait=false")]


def test_up_and_down_leave_an_existing_cluster_alone(existing: ExistingCluster) -> None:
    assert existing.up() is existing
    assert existing.down() == []
