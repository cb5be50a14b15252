"""`LocalCluster.down()` stops the processes its own bring-up recorded, and nothing else.

Two clusters share one state root, as `make demo`'s ``pykueue`` and the e2e suite's
``pykueue-e2e`` do on a developer's machine, and their names are chosen so that one state
directory is a prefix of the other. Their "components" are sleeping Python processes started the
way bring-up starts them (``processes.start``, PID saved, state directory on the command line)
and recorded in ``processes.json``, so no Kubernetes binary is needed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hack.localcluster import LocalCluster, processes
from hack.localcluster.processes import ProcessSpec

PYTHON = sys.executable
SLEEP = "import time; time.sleep(60)"
COMPONENTS = ("etcd", "kwok")


def _bring_up(cluster: LocalCluster) -> dict[str, int]:
    """Start stand-in components for `cluster` and record them as bring-up does; return their PIDs."""
    root = cluster.layout.root
    argvs = {name: [PYTHON, "-c", SLEEP, f"--data-dir={root}/{name}-data"] for name in COMPONENTS}
    root.mkdir(parents=True)
    (root / "processes.json").write_text(json.dumps(argvs))
    cluster.layout.etcd_data.mkdir()
    return {
        name: processes.start(
            ProcessSpec(
                name=name,
                argv=tuple(argv),
                marker=str(root),
                log_path=cluster.layout.log_file(name),
                pid_path=cluster.layout.pid_file(name),
            )
        )
        for name, argv in argvs.items()
    }


@pytest.fixture
def two_clusters(tmp_path: Path) -> Iterator[tuple[LocalCluster, LocalCluster]]:
    ours = LocalCluster("demo", state_root=tmp_path / "clusters")
    theirs = LocalCluster("demo-e2e", state_root=tmp_path / "clusters")
    try:
        yield ours, theirs
    finally:
        ours.down()
        theirs.down()


def test_down_stops_its_own_processes_and_leaves_the_other_clusters_running(
    two_clusters: tuple[LocalCluster, LocalCluster],
) -> None:
    ours, theirs = two_clusters
    our_pids, their_pids = _bring_up(ours), _bring_up(theirs)
    stranger = subprocess.Popen([PYTHON, "-c", SLEEP])  # same binary, no state directory at all
    try:
        assert sorted(ours.down()) == sorted(COMPONENTS)
        assert all(processes.exited(pid) for pid in our_pids.values())
        assert not any(ours.layout.pid_file(name).exists() for name in COMPONENTS)
        assert not ours.layout.etcd_data.exists()

        assert not any(processes.exited(pid) for pid in their_pids.values())
        assert theirs.layout.etcd_data.is_dir()
        assert stranger.poll() is None
        assert ours.down() == [], "a second down finds nothing of its own to stop"
    finally:
        stranger.kill()
        stranger.wait()


def test_a_recycled_pid_in_our_pid_file_is_not_stopped(
    two_clusters: tuple[LocalCluster, LocalCluster],
) -> None:
    """Our saved PID now belongs to the other cluster's etcd (same binary): down leaves it alone."""
    ours, theirs = two_clusters
    _bring_up(ours)
    their_pids = _bring_up(theirs)
    assert ours.down()
    ours.layout.pid_file("etcd").write_text(f"{their_pids['etcd']}\n")
    assert ours.down() == []
    assert not processes.exited(their_pids["etcd"])
