"""``needs_local_cluster`` e2e tests run on the default local cluster and are skipped, with a
reason, only when ``PYKUEUE_KUBECONFIG`` points the suite at an external cluster.

The collection hook of ``tests/e2e/conftest.py`` is called on stand-in items, so this needs no
cluster and no nested pytest run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e import conftest as e2e_conftest

E2E_TEST = Path(e2e_conftest.__file__).parent / "test_informers.py"


class StandInItem:
    """The part of ``pytest.Item`` the hook uses: its path and its markers."""

    def __init__(self, path: Path, *marker_names: str) -> None:
        self.path = path
        self.marker_names = list(marker_names)
        self.added: list[Any] = []

    def add_marker(self, marker: Any) -> None:
        self.added.append(marker.mark)
        self.marker_names.append(marker.mark.name)

    def get_closest_marker(self, name: str) -> Any:
        return name if name in self.marker_names else None

    def skip_reasons(self) -> list[str]:
        return [mark.kwargs["reason"] for mark in self.added if mark.name == "skip"]


def collect(*items: StandInItem) -> None:
    e2e_conftest.pytest_collection_modifyitems(config=None, items=list(items))  # type: ignore[arg-type]


def test_local_run_keeps_needs_local_cluster_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYKUEUE_KUBECONFIG", raising=False)
    item = StandInItem(E2E_TEST, "needs_local_cluster")
    collect(item)
    assert item.get_closest_marker("e2e") is not None
    assert item.skip_reasons() == []


def test_external_cluster_skips_them_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYKUEUE_KUBECONFIG", "/clusters/kind.yaml")
    marked, plain = StandInItem(E2E_TEST, "needs_local_cluster"), StandInItem(E2E_TEST)
    collect(marked, plain)
    [reason] = marked.skip_reasons()
    assert "PYKUEUE_KUBECONFIG=/clusters/kind.yaml" in reason and "apiserver restart" in reason
    assert plain.skip_reasons() == [], "only marked tests are skipped"
