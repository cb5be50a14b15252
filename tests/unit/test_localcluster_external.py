"""An existing cluster (PYKUEUE_KUBECONFIG) offers API access and refuses control-plane surgery."""

from __future__ import annotations

from pathlib import Path

import pytest

from hack.localcluster import ExistingCluster, PrerequisiteError, UnsupportedOperationError


@pytest.fixture
def existing(tmp_path: Path) -> ExistingCluster:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    return ExistingCluster(kubeconfig)


def test_a_missing_kubeconfig_is_reported_with_the_variable_to_check(tmp_path: Path) -> None:
    with pytest.raises(
        PrerequisiteError, match=r"kubeconfig .*/nope does not exist \(check PYKUEUE_KUBECONFIG\)"
    ):
        ExistingCluster(tmp_path / "nope")


@pytest.mark.parametrize(
    "operation",
    [
        lambda c: c.restart_apiserver(),
        lambda c: c.compact_etcd(),
        lambda c: c.create_nodes("extra", 1),
        lambda c: c.delete_nodes("extra"),
    ],
    ids=["restart_apiserver", "compact_etcd", "create_nodes", "delete_nodes"],
)
def test_control_plane_operations_explain_why_they_cannot_run(existing: ExistingCluster, operation) -> None:
    with pytest.raises(UnsupportedOperationError) as err:
        operation(existing)
    message = str(err.value)
    assert "needs the local cluster" in message
    assert existing.kubeconfig in message
    assert "unset PYKUEUE_KUBECONFIG" in message


def test_up_and_down_leave_an_existing_cluster_alone(existing: ExistingCluster) -> None:
    assert existing.up() is existing
    assert existing.down() == []
