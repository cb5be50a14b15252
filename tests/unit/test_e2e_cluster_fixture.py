"""The e2e suite's session `cluster` fixture: a given kubeconfig, else its own local cluster.

The fixture function is driven directly, as pytest would (set-up to the yield, then tear-down),
with stand-ins for LocalCluster and ExistingCluster that record what was asked of them, so the
choice, the tear-down and the one-line failure are checked without a cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hack.localcluster import PrerequisiteError
from tests.e2e.fixtures import cluster as fixture_module

GO_MISSING = "Go is not installed but is needed to build the cluster binaries once; install Go 1.26 or newer"


class FakeLocalCluster:
    made: list[FakeLocalCluster] = []
    fail_with: Exception | None = None

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[str] = []
        FakeLocalCluster.made.append(self)

    def up(self) -> FakeLocalCluster:
        self.calls.append("up")
        if FakeLocalCluster.fail_with is not None:
            raise FakeLocalCluster.fail_with
        return self

    def down(self) -> list[str]:
        self.calls.append("down")
        return []


class FakeExistingCluster:
    def __init__(self, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig


@pytest.fixture(autouse=True)
def fakes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for variable in ("PYKUEUE_KUBECONFIG", "PYKUEUE_CLUSTER_NAME", "PYKUEUE_KEEP_CLUSTER"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(fixture_module, "LocalCluster", FakeLocalCluster)
    monkeypatch.setattr(fixture_module, "ExistingCluster", FakeExistingCluster)
    monkeypatch.setattr(fixture_module, "_bring_up_report", [])
    FakeLocalCluster.made, FakeLocalCluster.fail_with = [], None
    yield


def _session() -> Iterator[Any]:
    """The fixture's generator, as pytest runs it for a session."""
    session: Callable[[], Iterator[Any]] = fixture_module.cluster.__wrapped__  # type: ignore[attr-defined]
    return session()


def _run_session() -> Any:
    session = _session()
    cluster = next(session)
    with pytest.raises(StopIteration):
        next(session)
    return cluster


def test_without_a_kubeconfig_it_brings_up_its_own_cluster_and_tears_it_down() -> None:
    cluster = _run_session()
    assert isinstance(cluster, FakeLocalCluster)
    assert cluster.name == fixture_module.E2E_CLUSTER_NAME == "pykueue-e2e"
    assert cluster.calls == ["up", "down"]
    (report,) = fixture_module._bring_up_report
    assert report.startswith("local cluster 'pykueue-e2e' ready in ")


def test_the_cluster_name_and_keeping_it_are_the_developers_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYKUEUE_CLUSTER_NAME", "accept")
    monkeypatch.setenv("PYKUEUE_KEEP_CLUSTER", "1")
    cluster = _run_session()
    assert (cluster.name, cluster.calls) == ("accept", ["up"])


def test_a_given_kubeconfig_is_used_and_nothing_is_started_or_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYKUEUE_KUBECONFIG", "/somewhere/kubeconfig")
    cluster = _run_session()
    assert isinstance(cluster, FakeExistingCluster)
    assert cluster.kubeconfig == "/somewhere/kubeconfig"
    assert FakeLocalCluster.made == []


def test_a_missing_prerequisite_fails_the_session_with_its_message_and_no_traceback() -> None:
    FakeLocalCluster.fail_with = PrerequisiteError(GO_MISSING)
    with pytest.raises(pytest.fail.Exception) as failed:
        next(_session())
    assert failed.value.msg == f"could not bring up the local cluster: {GO_MISSING}"
    assert failed.value.pytrace is False
    (cluster,) = FakeLocalCluster.made
    assert cluster.calls == ["up"]
