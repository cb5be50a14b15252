"""The README's first command, `make demo`, does what the README promises.

It runs the real `make demo` on a cluster of its own (the session's cluster name plus `-demo`, so
the suite's cluster and a developer's `make demo` cluster are never touched): the local control
plane comes up, pykueue's webhook and controller start, jobs beyond quota wait with no pods, and
every job is admitted and finishes; then a Job waits for a ProvisioningRequest answered by the
simulated autoscaler and runs on the nodes it adds. `make cluster-down` then stops only what the
demo started.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _make(target: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", target],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.needs_local_cluster
def test_make_demo_queues_jobs_admits_them_and_they_finish(cluster) -> None:
    """`make demo` brings up a local cluster of its own from the pinned control-plane binaries; a run against
    another cluster (kind) is not meant to build and start those."""
    env = {**os.environ, "PYKUEUE_CLUSTER_NAME": f"{cluster.name}-demo"}
    env.pop("PYKUEUE_KUBECONFIG", None)
    try:
        demo = _make("demo", env, timeout=600)
        output = demo.stdout + demo.stderr
        assert demo.returncode == 0, output[-4000:]
        # Jobs beyond the quota were shown waiting with no pods (delayed pod creation) ...
        assert re.search(r"job-\d+-\S+\s+pending\s+0 pods; ", demo.stdout), demo.stdout[-4000:]
        # ... admitted ones ran on a flavor's simulated nodes ...
        assert re.search(r"ADMITTED\s+flavor (on-demand|spot); pods on kwok-", demo.stdout), demo.stdout[-4000:]
        # ... and all of them finished without more running at once than the quota allows.
        finished = re.search(r"All (\d+) Jobs finished in \d+s; at most (\d+) were admitted", demo.stdout)
        assert finished, demo.stdout[-4000:]
        assert int(finished.group(1)) >= 4
        assert 1 <= int(finished.group(2)) <= 2
        # The second act: the Job waits for its ProvisioningRequest (ETA shown), nodes appear, the
        # pods run there, and the Job finishes.
        assert re.search(r"check demo-capacity: Pending\s+simulated: ETA", demo.stdout), demo.stdout[-4000:]
        assert re.search(r"check demo-capacity: Ready", demo.stdout), demo.stdout[-4000:]
        assert re.search(r"pods: \S+@sim-", demo.stdout), demo.stdout[-4000:]
        assert "The Job finished on the autoscaled nodes" in demo.stdout, demo.stdout[-4000:]
    finally:
        down = _make("cluster-down", env, timeout=180)
    assert down.returncode == 0, down.stdout + down.stderr
    assert "stopped" in down.stdout
