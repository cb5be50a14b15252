"""E2E suite setup: every test here is marked `e2e` and gets the shared fixtures.

Each area adds its own fixture module under tests/e2e/fixtures/ and appends it to
`pytest_plugins` below (one line per module).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = [
    "tests.e2e.fixtures.cluster",
    "tests.e2e.fixtures.webhook",
    "tests.e2e.fixtures.controller",
    "tests.e2e.fixtures.invariants",
    "tests.e2e.fixtures.multikueue",
    "tests.e2e.fixtures.visibility",
    "tests.e2e.fixtures.jobs",
]

_E2E_DIR = Path(__file__).parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs_local_cluster: controls the local cluster's processes (restarts or compacts the control "
        "plane, or restarts the controller or webhook on another Configuration), so it needs the local "
        "cluster (runs there; skipped, with the reason, when PYKUEUE_KUBECONFIG points elsewhere)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    external = os.environ.get("PYKUEUE_KUBECONFIG")
    # Only an explicitly chosen external cluster skips these; the default local run executes them.
    needs_local = pytest.mark.skip(
        reason=f"needs control over the local cluster's processes (apiserver restart, etcd compaction, "
        f"restarting the controller or webhook on another Configuration), which the external cluster "
        f"PYKUEUE_KUBECONFIG={external} does not give; unset it to run on a local cluster"
    )
    for item in items:
        if _E2E_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)
            if external and item.get_closest_marker("needs_local_cluster") is not None:
                item.add_marker(needs_local)
