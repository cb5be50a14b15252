"""E2E suite setup: every test here is marked `e2e` and gets the shared fixtures.

Each area adds its own fixture module under tests/e2e/fixtures/ and appends it to
`pytest_plugins` below (one line per module).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = [
    "tests.e2e.fixtures.cluster",
    "tests.e2e.fixtures.webhook",
    "tests.e2e.fixtures.controller",
    "tests.e2e.fixtures.invariants",
]

_E2E_DIR = Path(__file__).parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs_local_cluster: restarts or compacts the control plane, so it needs the local cluster "
        "(deselect with -m 'not needs_local_cluster' when PYKUEUE_KUBECONFIG points elsewhere)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _E2E_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)
