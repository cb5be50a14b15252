"""Kueue's own kubectl plugin (``kueuectl``, built from sigs.k8s.io/kueue/cmd/kueuectl by
``make kueuectl``) used against pykueue: create, list, stop/resume, and the pending positions it
reads from the visibility API.

Both pins of hack/versions.env run the same story: ``KUEUECTL_V1BETA1_VERSION`` (v0.14.8, the
last release whose clients speak ``kueue.x-k8s.io/v1beta1`` and ``visibility.kueue.x-k8s.io/v1beta1``)
and ``KUEUECTL_VERSION`` (v0.19.2, Kueue's current release, which speaks ``v1beta2`` in every
command: its Kueue objects pass pykueue's conversion webhook, its positions come from the
visibility ``v1beta2`` API; see docs/design/visibility.md).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hack.localcluster.binaries import cache_root, read_versions
from tests.e2e.helpers.kueue import KueueApi, is_admitted, submit, unique
from tests.e2e.helpers.wait import wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.kueue_binaries


@pytest.fixture(scope="module", params=["KUEUECTL_V1BETA1_VERSION", "KUEUECTL_VERSION"])
def kueuectl(cluster: Any, request: pytest.FixtureRequest) -> Any:
    version = read_versions()[request.param]
    binary = cache_root() / "bin" / f"kubectl-kueue-{version}" / "kueuectl"
    if not binary.exists():
        subprocess.run([str(REPO_ROOT / "hack" / "build-binaries.sh"), "kueuectl"], check=True, timeout=1800)
    assert binary.exists(), f"kueuectl {version} was not built; run `make kueuectl`"

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([str(binary), "--kubeconfig", cluster.kubeconfig, *args],
                                capture_output=True, text=True, timeout=60)
        if check:
            assert result.returncode == 0, f"kueuectl {' '.join(args)}: {result.stderr}"
        return result

    return run


def _table(output: str) -> list[dict[str, str]]:
    """kubectl-style table text -> rows keyed by the header cells. Cells are cut at the header's
    column starts (an empty cell, like the position of an admitted workload, is just spaces)."""
    lines = [line for line in output.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0]
    starts = [m.start() for m in re.finditer(r"(?:^|(?<=\s{2}))\S", header)]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    names = [header[a:b].strip() for a, b in bounds]
    return [{name: line[a:b].strip() for name, (a, b) in zip(names, bounds, strict=True)} for line in lines[1:]]


def test_kueuectl_create_list_stop_resume_and_positions(
    kueuectl: Any, visibility: Any, kueue: KueueApi, namespace: str, cluster: Any
) -> None:
    flavor, cq = unique("flavor"), unique("cq")
    kueuectl("create", "resourceflavor", flavor)
    kueuectl("create", "clusterqueue", cq, "--nominal-quota", f"{flavor}:cpu=1")
    kueue.created += [("ClusterQueue", cq), ("ResourceFlavor", flavor)]
    kueuectl("create", "localqueue", "lq", "-n", namespace, "-c", cq)
    assert kueue.get("ClusterQueue", cq)["spec"]["resourceGroups"][0]["flavors"][0]["name"] == flavor

    rows = _table(kueuectl("list", "clusterqueue").stdout)
    assert any(row["NAME"] == cq for row in rows), rows
    rows = _table(kueuectl("list", "localqueue", "-n", namespace).stdout)
    assert [(row["NAME"], row["CLUSTERQUEUE"]) for row in rows] == [("lq", cq)], rows

    submit(kueue, namespace, "first")
    wait_for(lambda: is_admitted(kueue.workload(namespace, "first")), timeout=30, message="first admitted")
    submit(kueue, namespace, "second")
    submit(kueue, namespace, "third")

    def positions() -> dict[str, str]:
        listed = _table(kueuectl("list", "workload", "-n", namespace).stdout)
        return {row["NAME"]: row["POSITION IN QUEUE"] for row in listed}

    wait_for(lambda: positions() == {"first": "", "second": "0", "third": "1"}, timeout=30,
             message="kueuectl shows the pending positions from the visibility API")
    pending = _table(kueuectl("list", "workload", "-n", namespace, "--status", "pending").stdout)
    assert sorted(row["NAME"] for row in pending) == ["second", "third"]

    kueuectl("stop", "workload", "second", "-n", namespace)
    wait_for(lambda: kueue.workload(namespace, "second")["spec"].get("active") is False, timeout=30,
             message="stop workload deactivates it")
    wait_for(lambda: positions().get("third") == "0", timeout=30, message="third moves up")
    kueuectl("resume", "workload", "second", "-n", namespace)
    wait_for(lambda: kueue.workload(namespace, "second")["spec"].get("active") is not False, timeout=30,
             message="resume workload activates it again")

    kueuectl("stop", "clusterqueue", cq)
    assert kueue.get("ClusterQueue", cq)["spec"]["stopPolicy"] == "HoldAndDrain"
    wait_for(lambda: not is_admitted(kueue.workload(namespace, "first")), timeout=30,
             message="a HoldAndDrain stop evicts what was admitted")
    kueuectl("resume", "clusterqueue", cq)
    assert kueue.get("ClusterQueue", cq)["spec"].get("stopPolicy", "None") == "None"

    kueuectl("stop", "localqueue", "lq", "-n", namespace, "--keep-already-running")
    assert kueue.get("LocalQueue", "lq", namespace)["spec"]["stopPolicy"] == "Hold"
    kueuectl("resume", "localqueue", "lq", "-n", namespace)
    assert kueue.get("LocalQueue", "lq", namespace)["spec"].get("stopPolicy", "None") == "None"
    wait_for(lambda: sum(is_admitted(kueue.workload(namespace, n)) for n in ("first", "second", "third")) == 1,
             timeout=30, message="admission resumes after resume (one workload fits)")
