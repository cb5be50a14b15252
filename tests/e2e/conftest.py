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
    config.addinivalue_line(
        "markers",
        "kueue_binaries: runs Kueue's own manager or kubectl plugin, which are built from the Go module "
        "proxy into the binaries cache on first use (`make kueue`, `make kueuectl`); these tests run last, "
        "so that on a machine with nothing cached CI's background build of them overlaps the rest of the suite",
    )
    config.addinivalue_line(
        "markers",
        "both_versions: runs twice, its KueueApi speaking kueue.x-k8s.io v1beta1 and then v1beta2 (through "
        "the conversion webhook); the suite's cheap v1beta2 subset (docs/design/api-versions.md). With "
        "PYKUEUE_E2E_KUEUE_VERSION set, it runs once, in that version, like every other test",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``both_versions`` tests get the ``kueue`` fixture once per wire version, in one session (one
    cluster): ``test_x[v1beta1]`` and ``test_x[v1beta2]``."""
    if (
        metafunc.definition.get_closest_marker("both_versions") is not None
        and "kueue" in metafunc.fixturenames
        and not os.environ.get("PYKUEUE_E2E_KUEUE_VERSION")
    ):
        metafunc.parametrize("kueue", ["v1beta1", "v1beta2"], indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    external = os.environ.get("PYKUEUE_KUBECONFIG")
    # Only an explicitly chosen external cluster skips these; the default local run executes them.
    needs_local = pytest.mark.skip(
        reason=f"needs control over the local cluster's processes (apiserver restart, etcd compaction, "
        f"restarting the controller or webhook on another Configuration), which the external cluster "
        f"PYKUEUE_KUBECONFIG={external} does not give; unset it to run on a local cluster"
    )
    # Stable: the suite's order otherwise stays as collected.
    items.sort(key=lambda item: item.get_closest_marker("kueue_binaries") is not None)
    for item in items:
        if _E2E_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)
            if external and item.get_closest_marker("needs_local_cluster") is not None:
                item.add_marker(needs_local)
