"""The cold-start benchmark's objects, its reading of the controller's /metrics and its milestones."""

from __future__ import annotations

import json

import pytest

from bench import controller_cold_start
from bench.baseline_shape import LOCAL_QUEUE_NAME, Names, cluster_queue, local_queue
from bench.controller_cold_start import (
    WORKLOAD_RESOURCE,
    Batch,
    ControllerState,
    choose_controller,
    format_medians,
    format_summary,
    planned_workload,
    queue_shape,
    read_state,
    start_medians,
    summarise,
    watch_start,
)
from bench.controller_process import SyncMilestones
from bench.procstats import ProcSample
from pykueue.api.quantity import parse_quantity

NAMES = Names("abc123")


def test_no_workload_fits_any_cluster_queue() -> None:
    shape = queue_shape(4)
    assert shape.cluster_queues == 4
    queues = [cluster_queue(shape, NAMES, index) for index in range(4)]
    assert {cq["spec"]["cohort"] for cq in queues} == {NAMES.cohort(0)}
    for cq in queues:
        (quota,) = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        assert (quota["nominalQuota"], quota["borrowingLimit"]) == ("0", "0")
    requests = planned_workload(NAMES, 4, 0)["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]
    assert parse_quantity(requests["requests"]["cpu"], "cpu") == 1000


def test_workloads_are_spread_round_robin_over_the_queues_namespaces() -> None:
    objs = [planned_workload(NAMES, 10, index) for index in range(25)]
    keys = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs}
    assert len(keys) == 25
    per_namespace = {NAMES.namespace(i): sum(ns == NAMES.namespace(i) for ns, _ in keys) for i in range(10)}
    assert per_namespace == {NAMES.namespace(i): 3 if i < 5 else 2 for i in range(10)}
    assert {o["spec"]["queueName"] for o in objs} == {LOCAL_QUEUE_NAME}
    # Each namespace's LocalQueue points at the ClusterQueue of the same index.
    assert local_queue(NAMES, 7)["metadata"]["namespace"] == objs[7]["metadata"]["namespace"]
    assert local_queue(NAMES, 7)["spec"]["clusterQueue"] == NAMES.cluster_queue(7)


PAGE = f"""# HELP pykueue_informer_synced 1 once synced
# TYPE pykueue_informer_synced gauge
pykueue_informer_synced{{resource="{WORKLOAD_RESOURCE}"}} 1.0
pykueue_informer_synced{{resource="clusterqueues.kueue.x-k8s.io"}} 0.0
# HELP pykueue_informer_cached_objects Objects
# TYPE pykueue_informer_cached_objects gauge
pykueue_informer_cached_objects{{resource="{WORKLOAD_RESOURCE}"}} 5003.0
pykueue_informer_cached_objects{{resource="clusterqueues.kueue.x-k8s.io"}} 12.0
# HELP kueue_pending_workloads Pending
# TYPE kueue_pending_workloads gauge
kueue_pending_workloads{{cluster_queue="q-a",status="active"}} 10.0
kueue_pending_workloads{{cluster_queue="q-a",status="inadmissible"}} 2490.0
kueue_pending_workloads{{cluster_queue="q-b",status="inadmissible"}} 2500.0
kueue_pending_workloads{{cluster_queue="other",status="active"}} 3.0
# HELP pykueue_reflector_list_duration_seconds List time
# TYPE pykueue_reflector_list_duration_seconds histogram
pykueue_reflector_list_duration_seconds_bucket{{le="+Inf",resource="{WORKLOAD_RESOURCE}"}} 1.0
pykueue_reflector_list_duration_seconds_count{{resource="{WORKLOAD_RESOURCE}"}} 1.0
pykueue_reflector_list_duration_seconds_sum{{resource="{WORKLOAD_RESOURCE}"}} 2.5
"""


def test_state_counts_pending_of_this_runs_queues_only() -> None:
    assert read_state(PAGE, {"q-a", "q-b"}) == ControllerState(
        workloads_synced=True, workloads_cached=5003, pending=5000, workloads_list_seconds=2.5
    )


def test_state_before_anything_synced() -> None:
    assert read_state("", {"q-a"}) == ControllerState(False, 0, 0, None)


class FakeController:
    """Answers like a starting controller: /metrics from the second poll, ready from the third,
    every workload pending from the fourth (or never, or exits)."""

    ready_means_informers_synced = True

    def __init__(self, pages: list[str | None], *, exits_after: int | None = None) -> None:
        self.pages = pages
        self.polls = 0
        self.exits_after = exits_after
        self.launched = False
        self.profiling: list[str] = []

    def launch(self) -> None:
        self.launched = True

    def alive(self) -> bool:
        return self.exits_after is None or self.polls < self.exits_after

    def ready(self) -> bool:
        return self.polls >= 2

    def metrics_text(self, timeout: float = 5.0) -> str | None:
        page = self.pages[min(self.polls, len(self.pages) - 1)]
        self.polls += 1
        return page

    def sample(self) -> ProcSample:
        return ProcSample(cpu_seconds=12.5, rss_mib=300.0, peak_rss_mib=320.0)

    def start_profiler(self) -> bool:
        self.profiling.append("start")
        return False

    def stop_profiler(self) -> None:
        self.profiling.append("stop")

    def log_tail(self, lines: int = 40) -> str:
        return "boom"

    def sync_milestones(self) -> SyncMilestones:
        return SyncMilestones(None, None)

    def requests_by_verb(self, metrics_text: str) -> dict[str, int]:
        return {"LIST": 12, "WATCH": 12}


def _page(synced: int, pending: int) -> str:
    return (f'pykueue_informer_synced{{resource="{WORKLOAD_RESOURCE}"}} {synced}\n'
            f'kueue_pending_workloads{{cluster_queue="q",status="inadmissible"}} {pending}\n')


def test_milestones_in_order_and_figures_at_the_moment_all_are_pending() -> None:
    fake = FakeController([None, _page(0, 0), _page(1, 0), _page(1, 4000), _page(1, 5000)])
    startup = watch_start(fake, 5000, {"q"}, poll_s=0.0, timeout_s=30)  # type: ignore[arg-type]
    assert fake.launched and fake.profiling == ["start", "stop"]
    assert startup.metrics_up_s is not None and startup.workloads_synced_s is not None
    assert startup.ready_s is not None and startup.all_pending_s is not None
    assert startup.metrics_up_s <= startup.workloads_synced_s <= startup.all_pending_s
    assert startup.ready_s <= startup.all_pending_s
    assert startup.state is not None and startup.state.pending == 5000
    assert startup.at_all_pending == ProcSample(12.5, 300.0, 320.0)
    result = summarise("abc123", 5000, 10, Batch(done=5000, errors=0, seconds=40.0), startup)
    assert (result["workloads"], result["pending_in_engine"]) == (5000, 5000)
    assert (result["rss_mib"], result["peak_rss_mib"], result["cpu_s"]) == (300.0, 320.0, 12.5)
    assert result["cpu_ms_per_workload"] == 2.5
    assert (result["rss_mib_at_ready"], result["cpu_s_at_ready"]) == (300.0, 12.5)
    assert result["seconds_to_readyz"] == result["seconds_to_ready"], "pykueue's /readyz is its informers' sync"
    assert result["controller"] == "pykueue" and result["controller_requests_by_verb"] == {"LIST": 12, "WATCH": 12}
    assert "engine holds all pending" in format_summary(result)


class FakeKueue(FakeController):
    """Kueue's manager as the cold start sees it: /readyz at once (its webhook server), no
    pykueue metrics, its syncs in its log (the second log read shows the Workload reconciler
    synced, the third every controller)."""

    ready_means_informers_synced = False

    def __init__(self, pages: list[str | None], launched: float) -> None:
        super().__init__(pages)
        self.launched = False
        self.log_reads = 0
        self.at = launched

    def ready(self) -> bool:
        return True

    def sync_milestones(self) -> SyncMilestones:
        self.log_reads += 1
        workloads = self.at + 3.0 if self.log_reads >= 2 else None
        return SyncMilestones(workloads, self.at + 5.0 if self.log_reads >= 3 else None)


def _kueue_page(pending: int) -> str:
    return (f'kueue_pending_workloads{{cluster_queue="q",status="inadmissible"}} {pending}\n'
            'rest_client_requests_total{code="200",host="h",method="GET"} 7\n')


def test_kueues_syncs_come_from_its_log_and_its_readyz_is_timed_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    import time as real_time

    launched = real_time.time()
    monkeypatch.setattr(controller_cold_start.time, "time", lambda: launched)
    fake = FakeKueue([None, _kueue_page(0), _kueue_page(40), _kueue_page(50)], launched)
    startup = watch_start(fake, 50, {"q"}, poll_s=0.0, timeout_s=30)  # type: ignore[arg-type]
    assert startup.readyz_s is not None and startup.readyz_s < 1.0, "seen on the first poll"
    assert startup.workloads_synced_s == pytest.approx(3.0) and startup.ready_s == pytest.approx(5.0)
    assert startup.at_ready == ProcSample(12.5, 300.0, 320.0)
    assert startup.requests_by_verb == {"LIST": 12, "WATCH": 12}
    result = summarise("abc123", 50, 10, Batch(done=50, errors=0, seconds=1.0), startup,
                       controller="kueue@v0.14.8", qps=50.0, burst=100)
    assert (result["controller"], result["qps"], result["burst"]) == ("kueue@v0.14.8", 50.0, 100)
    assert result["workloads_list_seconds"] is None and result["workloads_cached"] is None
    assert result["pending_in_engine"] == 50
    printed = format_summary(result)
    assert "kueue@v0.14.8 at QPS 50 / burst 100" in printed
    assert "(its list: n/a)" in printed


def test_the_controller_is_pykueue_or_a_kueue_release_and_anything_else_is_refused_by_flag() -> None:
    assert choose_controller("pykueue") is None
    kueue = choose_controller("kueue@v0.14.8:unthrottled")
    assert kueue is not None and kueue.kueue_version == "v0.14.8" and kueue.qps == 100_000.0
    with pytest.raises(ValueError, match=r"--controller kueue: expected pykueue or kueue@<version>"):
        choose_controller("kueue")
    with pytest.raises(ValueError, match=r"--controller kueue@0\.14: expected kueue@vMAJOR"):
        choose_controller("kueue@0.14")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--controller", "minikueue"], "--controller minikueue: expected pykueue or kueue@"),
        (["--controller", "kueue@v0.14.8:warp"], "unknown rate limit 'warp'"),
        (["--controller", "kueue@v0.14.8", "--profile", "/tmp/x"], "--profile: py-spy profiles pykueue's"),
        (["--controller", "kueue@v0.14.8", "--starts", "2"], "--controller-src/--starts: only for pykueue's"),
        (["--starts", "0"], "--starts: at least 1"),
        (["--starts", "2", "--profile", "/tmp/x"], "--profile: one start only"),
        (["--controller-src", "old=/tmp"], "--controller-src /tmp: controller/main.py is missing"),
        (["--controller-src", "this=."], "labels must differ from each other and from 'this'"),
    ],
)
def test_bad_controller_choices_are_refused_before_touching_a_cluster(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert controller_cold_start.main(["--kubeconfig", "/nonexistent", *argv]) == 2
    assert message in capsys.readouterr().err


def test_the_printed_summary_of_a_json_round_trip_is_the_same() -> None:
    startup = watch_start(FakeController([_page(1, 5)]), 5, {"q"}, poll_s=0.0, timeout_s=30)  # type: ignore[arg-type]
    result = summarise("abc123", 5, 1, Batch(done=5, errors=0, seconds=1.0), startup)
    assert format_summary(json.loads(json.dumps(result))) == format_summary(result)


def test_a_controller_that_exits_during_start_up_is_reported_with_its_log() -> None:
    fake = FakeController([None, _page(0, 0)], exits_after=2)
    with pytest.raises(RuntimeError, match="exited during start-up:\nboom"):
        watch_start(fake, 10, {"q"}, poll_s=0.0, timeout_s=30)  # type: ignore[arg-type]


def test_an_engine_that_never_holds_them_all_times_out() -> None:
    fake = FakeController([_page(1, 9)])
    with pytest.raises(RuntimeError, match="did not hold 10 pending workloads"):
        watch_start(fake, 10, {"q"}, poll_s=0.01, timeout_s=0.1)  # type: ignore[arg-type]


def test_kueues_last_sync_logged_after_every_workload_is_pending_is_still_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its queue manager held all 50 at the second poll; the log shows every controller synced
    only on later reads (the CI machine's order under load): the figure is still taken."""
    import time as real_time

    launched = real_time.time()
    monkeypatch.setattr(controller_cold_start.time, "time", lambda: launched)
    monkeypatch.setattr(controller_cold_start.time, "sleep", lambda _s: None)
    fake = FakeKueue([_kueue_page(50)], launched)
    startup = watch_start(fake, 50, {"q"}, poll_s=0.0, timeout_s=30)  # type: ignore[arg-type]
    assert startup.all_pending_s is not None
    assert fake.log_reads >= 3, "read again after the engine held them all"
    assert startup.ready_s == pytest.approx(5.0)


def test_kueues_readyz_answering_after_every_workload_is_pending_is_still_timed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CI saw Kueue's queue manager hold all 200 before its webhook server (its /readyz)
    answered: the poll goes on within the grace and the figure is taken."""
    clock = iter(float(i) for i in range(10_000))
    monkeypatch.setattr(controller_cold_start.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(controller_cold_start.time, "sleep", lambda _s: None)
    fake = FakeKueue([_kueue_page(50)], 0.0)
    readyz_answers = iter([False, False, False, True])
    fake.ready = lambda: next(readyz_answers, True)  # type: ignore[method-assign]
    startup = watch_start(fake, 50, {"q"}, poll_s=0.0, timeout_s=100_000)  # type: ignore[arg-type]
    assert startup.all_pending_s is not None and startup.readyz_s is not None
    assert startup.readyz_s > startup.all_pending_s


def test_a_sync_never_logged_leaves_the_figure_empty_after_the_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(float(i) for i in range(10_000))
    monkeypatch.setattr(controller_cold_start.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(controller_cold_start.time, "sleep", lambda _s: None)
    fake = FakeKueue([_kueue_page(50)], 0.0)
    fake.sync_milestones = lambda: SyncMilestones(None, None)  # type: ignore[method-assign]
    startup = watch_start(fake, 50, {"q"}, poll_s=0.0, timeout_s=100_000)  # type: ignore[arg-type]
    assert startup.all_pending_s is not None and startup.ready_s is None


def test_starts_of_several_sources_report_medians_per_source_in_start_order() -> None:
    starts = [
        {"source": "this", "seconds_to_all_pending": 30.0, "cpu_s": 20.0, "peak_rss_mib": 500.0},
        {"source": "before", "seconds_to_all_pending": 40.0, "cpu_s": 28.0, "peak_rss_mib": 510.0},
        {"source": "this", "seconds_to_all_pending": 34.0, "cpu_s": 22.0, "peak_rss_mib": 502.0},
        {"source": "before", "seconds_to_all_pending": 36.0, "cpu_s": None, "peak_rss_mib": 520.0},
    ]
    medians = start_medians(starts)
    assert medians["this"]["starts"] == 2 and medians["before"]["starts"] == 2
    assert medians["this"]["seconds_to_all_pending"] == {"values": [30.0, 34.0], "median": 32.0}
    assert medians["before"]["cpu_s"] == {"values": [28.0, None], "median": 28.0}  # a missing figure is skipped
    assert medians["before"]["workloads_list_seconds"] == {"values": [None, None], "median": None}
    printed = format_medians(medians)
    assert "launch -> engine holds all pending" in printed and "32.0 s (30.0, 34.0)" in printed
    assert "its list" in printed and "n/a (n/a, n/a)" in printed
