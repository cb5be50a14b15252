"""CI smoke runs of the cluster benchmarks at a tiny scale against the session cluster.

They check that each benchmark completes and prints its figures and JSON summary; timings are
never asserted (a shared 2-core machine makes them meaningless as a gate). The scheduler
baseline uses the session's controller (``--controller-pid``, or ``--external-controller`` when
the chart runs it) so two controllers never admit the same workloads; its Kueue variant and the
controller cold start (which needs a cluster where no controller runs while its workloads are
created) run on local clusters of their own for the same reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import baseline, informer_sync
from bench.baseline_shape import RUN_LABEL
from hack.localcluster import LocalCluster
from hack.localcluster.binaries import read_versions
from pykueue.kube.client import KubeClient
from pykueue.kube.resources import (
    CLUSTER_QUEUES,
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CUSTOM_RESOURCE_DEFINITIONS,
    NAMESPACES,
    RESOURCE_FLAVORS,
    SERVICE_ACCOUNTS,
    WORKLOADS,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def _summary(out: str) -> dict[str, Any]:
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.timeout(420)
def test_scheduler_baseline_smoke(
    cluster: Any, webhook: Any, controller: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the webhook in the path too, as in the rest of the suite (it sees every create and
    the driver's Finished patches)."""
    if controller.installed:
        target = ["--external-controller"]
    else:
        assert controller.process is not None
        target = ["--controller-pid", str(controller.process.pid)]
    # Requests in flight at most what the session's webhook serves at once (2 workers x 4 threads):
    # the driver's default of 64 is for a bench cluster of its own. Here every create and Finished
    # patch goes through the session webhook, and on a loaded 2-core machine 64 at once made the
    # apiserver time out webhook calls (10 s) and left the webhook draining abandoned requests for
    # the tests that come next. A smoke run checks that the benchmark completes, not its rate.
    in_flight = ["--create-concurrency", "8", "--finish-concurrency", "8"]
    code = baseline.main(
        ["--scale", "0.003", "--kubeconfig", cluster.kubeconfig, "--timeout", "300", *in_flight, *target]
    )
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    for figure in (
        "wall time",
        "ClusterQueue utilisation, Kueue's definition",
        "ClusterQueue utilisation, workload time",
        "mean time to admission small",
        "controller CPU",
        "driver: Finished patch sent -> answered",
    ):
        assert figure in out
    summary = _summary(out)
    (run,) = summary["runs"]
    assert run["completed"] and run["workloads"] == run["finished"] == 30 * 3  # one per class and queue
    assert set(run["classes"]) == {"small", "medium", "large"}
    assert all(c["admitted"] == c["workloads"] == 30 for c in run["classes"].values())
    assert run["wall_s"] is not None and run["cq_utilisation_pct"] is not None
    # Kueue's definition, from the run's 30 ClusterQueues' status events, and the recorder saw
    # every queue go idle.
    (cq_class,) = run["cq_classes_kueue"].values()
    assert cq_class["cluster_queues"] == 30 and cq_class["nominal_quota_mcpu"] == 30 * 20_000
    assert run["cq_recording_complete"] is True
    # Whether any status write caught usage is up to timing, not to the recorder: pykueue writes a
    # ClusterQueue's status at most once a second from a shared budget, and these workloads hold
    # quota for 0.2-1 s, so a run can show no usage at all (CI saw it on kind). What holds either
    # way: an event that showed usage also showed the workload reserving, so the recording went on
    # to a later event of that queue and the usage counts in the integral.
    assert (cq_class["max_usage_mcpu"] > 0) == (cq_class["cpu_used_mcpu_s"] > 0)
    assert cq_class["average_usage_mcpu"] == pytest.approx(
        cq_class["cpu_used_mcpu_s"] / cq_class["window_s"], rel=0.01, abs=0.1
    )
    # At this scale the percentage can round to 0.0: check it is the one the integral gives.
    assert run["cq_utilisation_kueue_pct"] == pytest.approx(
        100 * cq_class["average_usage_mcpu"] / cq_class["nominal_quota_mcpu"], abs=0.1
    )
    if isinstance(cluster, LocalCluster):
        # Its apiserver's and etcd's cost is measured and printed (a kind cluster's are not visible).
        assert set(run["control_plane"]) == {"apiserver", "etcd"}
        assert all(p["cpu_s"] > 0 and p["peak_rss_mib"] > 0 for p in run["control_plane"].values())
        assert "apiserver CPU / peak RSS" in out
    # Every workload finished: some window has a median hold (turnaround is None where no
    # workload of the finished one's class was waiting in its queue).
    rows = run["timeline"]["rows"]
    assert any(row["hold_s"] is not None for row in rows) and all("turnaround_s" in row for row in rows)
    assert all(c["mean_time_to_admission_from_watch_s"] is not None for c in run["classes"].values())
    # Every Finished patch was answered and then watched: both halves of its round trip are known.
    trips = run["finish_round_trip"]
    assert trips["finish_request_p50_s"] is not None and trips["finish_answered_to_seen_p50_s"] is not None
    if not controller.installed:
        assert run["controller"]["cpu_s"] is not None and run["controller"]["peak_rss_mib"] > 0
    assert summary["anchor_kueue"]["wall_s"] == pytest.approx(351.1)
    _assert_admission_writes_counted(run, out)


def _assert_admission_writes_counted(run: dict[str, Any], out: str) -> None:
    """The apiserver counted at least one status write per admitted workload that the driver did
    not send (the controller's reservations; the driver's Finished patches are taken out)."""
    writes = run["apiserver_writes"]
    assert writes is not None, "the apiserver's /metrics was not read"
    assert sum(n for label, n in writes.items() if label.endswith(" workloads/status")) >= run["workloads"], writes
    assert "controller writes, apiserver-counted [4]" in out


@pytest.mark.timeout(300)
def test_informer_sync_smoke(cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert informer_sync.main(["--scale", "0.005", "--kubeconfig", cluster.kubeconfig]) == 0
    out = capsys.readouterr().out
    assert "initial list + sync" in out
    result = _summary(out)
    assert result["objects"] == 50
    assert result["list_sync_seconds"] >= 0


_PINS = read_versions()
# The default of bench.crd_create_rate and the release before Kueue stored v1beta2.
KUEUE_VERSION = _PINS["KUEUE_BENCH_VERSION"]
# Both pins `make kueue` builds: the last to store v1beta1, and a current one (v1beta2 stored,
# the driver speaking it: bench.kueue_process.stored_version).
KUEUE_VERSIONS = [KUEUE_VERSION, _PINS["KUEUE_BENCH_V1BETA2_VERSION"]]


@pytest.mark.kueue_binaries
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("version", KUEUE_VERSIONS)
def test_kueue_variant_completes_and_prints_the_same_figures(tmp_path: Path, version: str) -> None:
    """``--variants kueue@<version>``: Kueue's own manager (built into the binaries cache by
    ``make kueue``, or here on first use; CI builds it in the background while the suite's other
    tests run, hence the ``kueue_binaries`` mark that runs this last) runs
    the same tiny load on a local cluster of its own, where no pykueue controller or webhook
    competes for the workloads, with the driver completing evictions as Kueue's runner does.
    Completion and the printed figures only, never a timing. Needs CAP_SYS_ADMIN (CI runs as
    root); without it the benchmark refuses in one line and this fails with that line.

    The run also profiles the apiserver over its first two seconds (``--apiserver-profile``): the
    cluster it brings up serves ``/debug/pprof`` for that, and the file is the apiserver's answer,
    a gzipped profile."""
    name = f"{os.environ.get('PYKUEUE_CLUSTER_NAME') or 'pykueue-e2e'}-kueue{version.replace('.', '')}"
    env = {k: v for k, v in os.environ.items() if k != "PYKUEUE_KUBECONFIG"}
    env["PYKUEUE_CLUSTER_NAME"] = name
    profiles = tmp_path / "apiserver-profiles"
    done = subprocess.run(
        [sys.executable, "-m", "bench.baseline", "--scale", "0.003", "--timeout", "300",
         "--variants", f"kueue@{version}", "--json", str(tmp_path / "summary.json"),
         "--apiserver-profile", str(profiles), "--apiserver-profile-windows", "0-2"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1400,
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    for figure in (
        "wall time",
        "ClusterQueue utilisation, Kueue's definition",
        "ClusterQueue utilisation, workload time",
        "mean time to admission small",
        "mean time to admission large",
        "controller CPU",
        "controller peak RSS",
    ):
        assert figure in done.stdout, figure
    summary = json.loads((tmp_path / "summary.json").read_text())
    (run,) = summary["runs"]
    assert run["variant"] == f"kueue@{version}"
    assert run["controller_source"] == {"kueue": version}
    assert run["completed"] and run["workloads"] == run["finished"] == 30 * 3
    assert all(c["admitted"] == c["workloads"] == 30 for c in run["classes"].values())
    assert all(c["mean_time_to_admission_from_watch_s"] is not None for c in run["classes"].values())
    assert run["controller"]["cpu_s"] is not None and run["controller"]["peak_rss_mib"] > 0
    assert run["driver"]["evictions_completed"] is not None and run["driver"]["errors"] == 0
    assert run["driver"]["evictions_resynced"] is not None
    assert summary["medians"][f"kueue@{version}"]["runs"] == 1
    _assert_admission_writes_counted(run, done.stdout)
    profile = profiles / f"apiserver-kueue-{version}-0-0-2s.pprof"
    assert run["apiserver_profiles"] == {"0-2s": str(profile)}
    assert f"apiserver profile 0-2s: {profile}" in done.stdout
    assert profile.read_bytes()[:2] == b"\x1f\x8b"  # pprof's gzipped protobuf


@pytest.mark.timeout(900)
def test_floor_variant_admits_everything_and_prints_the_same_figures(tmp_path: Path) -> None:
    """``--variants floor``: no controller but ``bench.floor_admitter``, which admits each workload
    as soon as it is watched, on a local cluster of its own (it would race the session controller
    for the workloads). It completes, every workload is admitted once and none is evicted, its
    process's CPU is measured as a controller's is, and the apiserver counted its status writes."""
    name = f"{os.environ.get('PYKUEUE_CLUSTER_NAME') or 'pykueue-e2e'}-floor"
    env = {k: v for k, v in os.environ.items() if k != "PYKUEUE_KUBECONFIG"}
    env["PYKUEUE_CLUSTER_NAME"] = name
    done = subprocess.run(
        [sys.executable, "-m", "bench.baseline", "--scale", "0.003", "--timeout", "300",
         "--variants", "floor", "--json", str(tmp_path / "summary.json")],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=840,
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    for figure in ("wall time", "mean time to admission large", "controller CPU", "controller peak RSS"):
        assert figure in done.stdout, figure
    (run,) = json.loads((tmp_path / "summary.json").read_text())["runs"]
    assert run["variant"] == "floor" and run["controller_source"] == {"floor": "bench.floor_admitter"}
    assert run["completed"] and run["workloads"] == run["finished"] == 30 * 3
    assert all(c["admitted"] == c["workloads"] == 30 for c in run["classes"].values())
    assert all(c["evicted_transitions"] == 0 and c["evictions"] == 0 for c in run["classes"].values())
    assert run["controller"]["cpu_s"] is not None and run["controller"]["peak_rss_mib"] > 0
    assert run["driver"]["errors"] == 0
    _assert_admission_writes_counted(run, done.stdout)


@contextlib.contextmanager
def _cold_start(tmp_path: Path, suffix: str, *options: str) -> Iterator[tuple[dict[str, Any], str, KubeClient]]:
    """``bench.controller_cold_start`` against 200 pending workloads on a local cluster of its own
    (brought up here, so that the program reuses it and cleans up as it does on a shared
    cluster). Checks what every run must show — it completed, its JSON is what it printed, the
    engine (or Kueue's queue manager) held exactly the workloads created, and none of the run's
    objects is left — and yields the summary, the printed text and a client for more checks."""
    from hack.localcluster import LocalCluster

    cluster = LocalCluster(f"{os.environ.get('PYKUEUE_CLUSTER_NAME') or 'pykueue-e2e'}-{suffix}")
    cluster.up()
    try:
        env = {k: v for k, v in os.environ.items() if k != "PYKUEUE_KUBECONFIG"}
        done = subprocess.run(
            [sys.executable, "-m", "bench.controller_cold_start", "--count", "200", "--timeout", "300",
             *options, "--kubeconfig", cluster.kubeconfig, "--json", str(tmp_path / "summary.json")],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=840,
        )
        assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
        for figure in ("launch -> every informer synced", "launch -> engine holds all pending", "controller RSS"):
            assert figure in done.stdout, figure
        result = json.loads((tmp_path / "summary.json").read_text())
        assert result == _summary(done.stdout)
        assert result["workloads"] == result["pending_in_engine"] == 200 and result["create_errors"] == 0
        assert result["rss_mib"] > 0 and result["cpu_s"] > 0
        assert "deleted 200 workloads" in done.stdout
        client = KubeClient.from_config(cluster.kubeconfig)
        try:
            selector = f"{RUN_LABEL}={result['run_id']}"
            for res in (WORKLOADS, NAMESPACES, CLUSTER_QUEUES, RESOURCE_FLAVORS):
                assert client.list(res, label_selector=selector).get("items") == [], res
            yield result, done.stdout, client
        finally:
            client.close()
    finally:
        cluster.down()


@pytest.mark.timeout(900)
def test_controller_cold_start_smoke(tmp_path: Path) -> None:
    """200 pending workloads, then a controller process started against them: it completes, the
    engine it reports holds exactly the workloads created, and it deletes what it created (figures
    printed, never judged)."""
    with _cold_start(tmp_path, "cold") as (result, _stdout, _client):
        assert result["workloads_cached"] >= 200


@pytest.mark.kueue_binaries
@pytest.mark.timeout(900)
@pytest.mark.parametrize("version", KUEUE_VERSIONS)
def test_kueue_cold_start_smoke(tmp_path: Path, version: str) -> None:
    """``--controller kueue@<version>``: Kueue's manager started against 200 pending workloads
    created after its CRDs replaced the cluster's. It completes, its queue manager reports
    exactly the workloads created, its informers' syncs are read from its log, and the run leaves
    nothing behind: its objects, the metrics reader's account and Kueue's CRDs (the cluster's own
    definitions, storing v1beta2, are back). Figures printed, never judged."""
    suffix = f"kcold{version.replace('.', '')}"
    with _cold_start(tmp_path, suffix, "--controller", f"kueue@{version}") as (result, stdout, client):
        for figure in ("launch -> /readyz answers", f"kueue@{version} at QPS 50 / burst 100"):
            assert figure in stdout, figure
        assert result["controller"] == f"kueue@{version}" and (result["qps"], result["burst"]) == (50, 100)
        for milestone in ("seconds_to_metrics", "seconds_to_readyz", "seconds_to_workloads_synced",
                          "seconds_to_ready", "seconds_to_all_pending"):
            assert result[milestone] is not None, milestone
        assert result["workloads_list_seconds"] is None and result["workloads_cached"] is None  # pykueue's only
        assert result["rss_mib_at_ready"] > 0
        reader = f"pykueue-bench-metrics-{result['run_id']}"
        for res, namespace in ((SERVICE_ACCOUNTS, "default"), (CLUSTER_ROLES, None), (CLUSTER_ROLE_BINDINGS, None)):
            assert client.get(res, reader, namespace) is None, res
        crd = client.get(CUSTOM_RESOURCE_DEFINITIONS, str(WORKLOADS))
        assert crd is not None
        assert [v["name"] for v in crd["spec"]["versions"] if v.get("storage")] == ["v1beta2"]


@pytest.mark.kueue_binaries
@pytest.mark.timeout(600)
def test_crd_create_rate_smoke(tmp_path: Path) -> None:
    """``bench.crd_create_rate``: the same Workloads created under the cluster's CRDs and under
    Kueue's, on a local cluster of its own (no controller or webhook there). Both rounds create
    every Workload without an error, the JSON is what it printed, nothing of the run is left and
    the cluster's own Workload definition (storing v1beta2) is back. Figures never judged."""
    from hack.localcluster import LocalCluster

    cluster = LocalCluster(f"{os.environ.get('PYKUEUE_CLUSTER_NAME') or 'pykueue-e2e'}-crdrate")
    cluster.up()
    try:
        env = {k: v for k, v in os.environ.items() if k != "PYKUEUE_KUBECONFIG"}
        done = subprocess.run(
            [sys.executable, "-m", "bench.crd_create_rate", "--count", "60", "--repeat", "1",
             "--kubeconfig", cluster.kubeconfig, "--json", str(tmp_path / "summary.json")],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=540,
        )
        assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
        result = json.loads((tmp_path / "summary.json").read_text())
        assert result == _summary(done.stdout)
        assert [r["crds"] for r in result["rounds"]] == ["pykueue", f"kueue@{KUEUE_VERSION}"]
        assert all(r["created"] == 60 and r["errors"] == 0 and r["creates_per_s"] > 0 for r in result["rounds"])
        assert "median creates/s: pykueue" in done.stdout
        client = KubeClient.from_config(cluster.kubeconfig)
        try:
            assert client.list(WORKLOADS).get("items") == []
            crd = client.get(CUSTOM_RESOURCE_DEFINITIONS, str(WORKLOADS))
            assert crd is not None
            storage = [v["name"] for v in crd["spec"]["versions"] if v.get("storage")]
            assert storage == ["v1beta2"]
        finally:
            client.close()
    finally:
        cluster.down()
