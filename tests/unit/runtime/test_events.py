"""The process's Event pipeline: background senders in order, a bounded queue that folds repeats
and sheds the least useful Event when full (counted), a series count for identical repeats,
client-go's similar-message aggregation and its per-object spam filter."""

from __future__ import annotations

import threading
from typing import Any

from prometheus_client import REGISTRY

from controller.runtime.events import (
    COMBINED_PREFIX,
    MAX_MESSAGE,
    MAX_QUEUED,
    MAX_SENDERS,
    SENDERS,
    SPAM_BURST,
    EventBroadcaster,
    EventCorrelator,
    RecordingEvents,
    SpamFilter,
    senders_for_qps,
)
from controller.workload.status_plan import EventSpec
from pykueue.kube.client import KubeClient
from pykueue.kube.errors import NotFound
from pykueue.kube.resources import EVENTS, Resource
from tests.builders import WorkloadBuilder
from tests.unit.kube.fake_transport import ScriptedTransport, status


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class EventApi:
    """An in-memory Events API; each call blocks until ``gate`` is set."""

    def __init__(self, fail_reason: str | None = None) -> None:
        self.events: dict[str, dict[str, Any]] = {}
        self.sent: list[tuple[str, str, str, str]] = []  # (involved name, type, reason, message) per create
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.gate = threading.Event()
        self.hold_seconds = 5.0  # the longest a call waits for the gate
        self.fail_reason = fail_reason
        self.in_flight = 0
        self.most_in_flight = 0
        self.lock = threading.Lock()

    def _enter(self) -> None:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.gate.wait(self.hold_seconds)
        with self.lock:
            self.in_flight -= 1

    def create(self, res: Resource, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        assert res is EVENTS
        self._enter()
        if obj["reason"] == self.fail_reason:
            raise RuntimeError("bug")
        with self.lock:
            self.events[obj["metadata"]["name"]] = obj
            self.sent.append((obj["involvedObject"]["name"], obj["type"], obj["reason"], obj["message"]))
        return obj

    def patch(self, res: Resource, name: str, patch: Any, namespace: str | None = None, **kw: Any) -> dict[str, Any]:
        assert res is EVENTS
        self._enter()
        with self.lock:
            if name not in self.events:
                raise NotFound(404, "NotFound", name)
            self.events[name].update(patch)
            self.patches.append((name, patch))
            return self.events[name]


def _reasons(api: EventApi, name: str | None = None) -> list[str]:
    return [reason for sent_name, _, reason, _ in api.sent if name is None or sent_name == name]


# --- the broadcaster: background senders, bounded queue ----------------------------------------


def test_emit_returns_at_once_and_the_sender_keeps_the_order() -> None:
    api = EventApi()
    broadcaster = EventBroadcaster(api)
    recorder = broadcaster.recorder("pykueue-controller")
    wl = WorkloadBuilder("wl", "ns").obj()
    for reason in ("QuotaReserved", "Admitted", "Preempted"):
        recorder.emit(wl, EventSpec("Normal", reason, "x" * (MAX_MESSAGE + 10)))
    assert api.sent == [], "nothing is sent on the emitting thread"
    api.gate.set()
    assert broadcaster.flush(5)
    assert _reasons(api) == ["QuotaReserved", "Admitted", "Preempted"]
    assert all(len(message) == MAX_MESSAGE for *_, message in api.sent)
    assert {e["source"]["component"] for e in api.events.values()} == {"pykueue-controller"}


def test_a_full_queue_sheds_the_oldest_and_counts_instead_of_blocking() -> None:
    api = EventApi()
    broadcaster = EventBroadcaster(api, max_queued=2, senders=1)
    recorder = broadcaster.recorder()
    wl = WorkloadBuilder("wl", "ns").obj()
    for i in range(6):
        recorder.emit(wl, EventSpec("Normal", f"R{i}", "m"))
    # one may be in the sender's hands already; the queue holds two more; the older are shed
    assert broadcaster.dropped in (3, 4)
    api.gate.set()
    assert broadcaster.flush(5)
    assert len(api.sent) + broadcaster.dropped == 6
    assert _reasons(api)[-2:] == ["R4", "R5"], "the newest Events are the ones kept"


def test_a_failing_send_does_not_stop_the_sender() -> None:
    api = EventApi(fail_reason="Broken")
    api.gate.set()
    broadcaster = EventBroadcaster(api)
    recorder = broadcaster.recorder()
    wl = WorkloadBuilder("wl", "ns").obj()
    recorder.emit(wl, EventSpec("Warning", "Broken", "m"))
    recorder.emit(wl, EventSpec("Normal", "Admitted", "m"))
    assert broadcaster.flush(5)
    assert _reasons(api) == ["Admitted"]


def test_senders_work_in_parallel_and_keep_each_objects_order() -> None:
    api = EventApi()
    broadcaster = EventBroadcaster(api, senders=4)
    recorder = broadcaster.recorder()
    names = [f"wl-{i}" for i in range(20)]
    for name in names:
        for reason in ("QuotaReserved", "Admitted"):
            recorder.emit(WorkloadBuilder(name, "ns").obj(), EventSpec("Normal", reason, "m"))

    def several_waiting() -> bool:
        with api.lock:
            return api.most_in_flight > 1

    deadline = threading.Event()
    for _ in range(100):
        if several_waiting():
            break
        deadline.wait(0.02)
    assert several_waiting(), "more than one event is in flight at once"
    api.gate.set()
    assert broadcaster.flush(5)
    for name in names:
        assert _reasons(api, name) == ["QuotaReserved", "Admitted"]


def test_recorders_of_several_components_share_one_broadcaster() -> None:
    api = EventApi()
    api.gate.set()
    broadcaster = EventBroadcaster(api)
    wl = WorkloadBuilder("wl", "ns").obj()
    broadcaster.recorder("pykueue-controller").emit(wl, EventSpec("Normal", "Admitted", "m"))
    broadcaster.recorder("pykueue-job-controller").emit(wl, EventSpec("Normal", "Started", "m"))
    assert broadcaster.flush(5)
    assert sorted(e["source"]["component"] for e in api.events.values()) == [
        "pykueue-controller",
        "pykueue-job-controller",
    ]


def test_shutdown_sends_what_is_queued_then_ignores_later_events() -> None:
    api = EventApi()
    broadcaster = EventBroadcaster(api, senders=1)
    recorder = broadcaster.recorder()
    wl = WorkloadBuilder("wl", "ns").obj()
    recorder.emit(wl, EventSpec("Normal", "Admitted", "m"))
    api.gate.set()
    assert broadcaster.shutdown(5)
    recorder.emit(wl, EventSpec("Normal", "Finished", "m"))
    assert broadcaster.flush(1)
    assert _reasons(api) == ["Admitted"]


def test_shutdown_of_an_unused_broadcaster_starts_nothing() -> None:
    broadcaster = EventBroadcaster(EventApi())
    assert broadcaster.shutdown(0.1)
    assert not any(t.name.startswith("event-sender") and t.is_alive() for t in broadcaster._threads)


# --- the queue under load: repeats fold, the least useful Event is shed ----------------------


def _sample(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _blocked_broadcaster(
    max_queued: int, wall_clock: FakeClock | None = None
) -> tuple[EventApi, EventBroadcaster]:
    """One sender, held inside its first write (of an Event about ``blocker``) until the test
    opens ``api.gate``: everything emitted afterwards waits in a queue of ``max_queued``."""
    api = EventApi()
    if wall_clock is None:
        broadcaster = EventBroadcaster(api, max_queued=max_queued, senders=1)
    else:
        broadcaster = EventBroadcaster(api, max_queued=max_queued, senders=1, wall_clock=wall_clock)
    broadcaster.recorder().emit(WorkloadBuilder("blocker", "ns").obj(), EventSpec("Normal", "Blocker", "m"))
    for _ in range(200):
        with api.lock:
            if api.in_flight:
                break
        threading.Event().wait(0.01)
    assert api.in_flight == 1
    return api, broadcaster


def test_identical_events_waiting_in_a_full_queue_fold_into_one_write_with_their_count() -> None:
    queued_before = _sample("pykueue_events_aggregated_total", {"how": "queued"})
    api, broadcaster = _blocked_broadcaster(max_queued=2)
    recorder = broadcaster.recorder()
    wl = WorkloadBuilder("wl", "ns").obj()
    other = WorkloadBuilder("other", "ns").obj()
    for _ in range(50):
        recorder.emit(wl, EventSpec("Warning", "Pending", "couldn't assign flavors"))
        recorder.emit(other, EventSpec("Normal", "QuotaReserved", "Quota reserved in ClusterQueue cq"))
    assert broadcaster.dropped == 0, "repeats take no room in the queue"
    assert broadcaster.aggregated == 98
    assert _sample("pykueue_events_aggregated_total", {"how": "queued"}) - queued_before == 98
    api.gate.set()
    assert broadcaster.flush(5)
    assert _reasons(api) == ["Blocker", "Pending", "QuotaReserved"], "one write each, in emit order"
    counts = {e["reason"]: e["count"] for e in api.events.values()}
    assert counts == {"Blocker": 1, "Pending": 50, "QuotaReserved": 50}


def test_a_full_queue_sheds_normal_events_before_warnings_and_counts_each_reason() -> None:
    def dropped(reason: str) -> float:
        return _sample("pykueue_events_dropped_total", {"reason": reason})

    before = {r: dropped(r) for r in ("queue_full_normal", "queue_full_warning")}
    api, broadcaster = _blocked_broadcaster(max_queued=2)
    recorder = broadcaster.recorder()
    for name, type_ in (("w1", "Warning"), ("n1", "Normal"), ("w2", "Warning")):
        recorder.emit(WorkloadBuilder(name, "ns").obj(), EventSpec(type_, "R", "m"))  # n1 is shed
    recorder.emit(WorkloadBuilder("n2", "ns").obj(), EventSpec("Normal", "R", "m"))  # only Warnings wait: n2 is
    recorder.emit(WorkloadBuilder("w3", "ns").obj(), EventSpec("Warning", "R", "m"))  # w1, the oldest, is
    assert broadcaster.dropped == 3
    assert dropped("queue_full_normal") - before["queue_full_normal"] == 2
    assert dropped("queue_full_warning") - before["queue_full_warning"] == 1
    api.gate.set()
    assert broadcaster.flush(5)
    assert [name for name, *_ in api.sent] == ["blocker", "w2", "w3"]


def test_a_full_queue_sheds_an_older_message_of_the_same_object_and_reason_first() -> None:
    before = _sample("pykueue_events_dropped_total", {"reason": "superseded"})
    api, broadcaster = _blocked_broadcaster(max_queued=2)
    recorder = broadcaster.recorder()
    wl = WorkloadBuilder("wl", "ns").obj()
    recorder.emit(wl, EventSpec("Normal", "Pending", "3 more cpu needed"))
    recorder.emit(WorkloadBuilder("old", "ns").obj(), EventSpec("Normal", "QuotaReserved", "m"))
    recorder.emit(wl, EventSpec("Normal", "Pending", "1 more cpu needed"))
    assert broadcaster.dropped == 1
    assert _sample("pykueue_events_dropped_total", {"reason": "superseded"}) - before == 1
    api.gate.set()
    assert broadcaster.flush(5)
    assert [(name, message) for name, _, _, message in api.sent[1:]] == [
        ("old", "m"),
        ("wl", "1 more cpu needed"),
    ], "the oldest Normal would have been the QuotaReserved; the superseded message goes instead"


def test_sent_events_are_counted_by_write() -> None:
    def sent(write: str) -> float:
        return _sample("pykueue_events_sent_total", {"write": write})

    before = (sent("create"), sent("patch"), _sample("pykueue_events_aggregated_total", {"how": "series"}))
    api = EventApi()
    api.gate.set()
    correlator = EventCorrelator(api)
    wl = WorkloadBuilder("wl", "ns").obj()
    correlator.write(wl, "Normal", "Admitted", "m", "c")
    correlator.write(wl, "Normal", "Admitted", "m", "c", repeats=4)
    assert [e["count"] for e in api.events.values()] == [5]
    assert sent("create") - before[0] == 1 and sent("patch") - before[1] == 1
    assert _sample("pykueue_events_aggregated_total", {"how": "series"}) - before[2] == 4


def test_the_default_waiting_room_holds_a_full_scale_burst_of_admissions_in_order() -> None:
    """15,000 admissions, two Events each, emitted while no sender gets through (the scheduler
    baseline at full scale admits faster than the Event budget drains): nothing is shed, and
    every Workload's QuotaReserved leaves before its Admitted."""
    api = EventApi()
    api.hold_seconds = 120.0  # no sender gets through while the burst is emitted, however slow the machine
    broadcaster = EventBroadcaster(api, max_queued=MAX_QUEUED, senders=senders_for_qps(50))
    recorder = broadcaster.recorder()
    admissions = 15_000
    for i in range(admissions):
        wl = WorkloadBuilder(f"wl-{i}", f"ns-{i % 30}").obj()
        recorder.emit(wl, EventSpec("Normal", "QuotaReserved", f"Quota reserved in ClusterQueue cq-{i % 30}"))
        recorder.emit(wl, EventSpec("Normal", "Admitted", f"Admitted by ClusterQueue cq-{i % 30}"))
    assert broadcaster.dropped == 0
    assert broadcaster.waiting_peak >= 2 * admissions - senders_for_qps(50), "all but those in flight waited"
    api.gate.set()
    assert broadcaster.flush(60)
    assert len(api.sent) == 2 * admissions and broadcaster.waiting == 0
    order: dict[str, list[str]] = {}
    for name, _, reason, _ in api.sent:
        order.setdefault(name, []).append(reason)
    assert all(reasons == ["QuotaReserved", "Admitted"] for reasons in order.values())


def test_an_event_is_stamped_when_emitted_not_when_sent_and_its_wait_is_measured() -> None:
    def wait_count() -> float:
        return _sample("pykueue_events_queue_wait_seconds_count", {})

    def waited_at_most(bound: str) -> float:
        return _sample("pykueue_events_queue_wait_seconds_bucket", {"le": bound})

    wall = FakeClock()
    wall.now = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    before = (wait_count(), waited_at_most("30.0"), waited_at_most("60.0"))
    api, broadcaster = _blocked_broadcaster(max_queued=4, wall_clock=wall)
    recorder = broadcaster.recorder()
    wl = WorkloadBuilder("wl", "ns").obj()
    recorder.emit(wl, EventSpec("Warning", "Pending", "no quota"))
    wall.now += 10
    recorder.emit(wl, EventSpec("Warning", "Pending", "no quota"))  # folded: one write, count 2
    assert broadcaster.waiting == 1 and broadcaster.waiting_peak == 1
    wall.now += 35  # the sender takes it 45 s after the first emit
    assert broadcaster.oldest_wait() == 45.0
    assert (REGISTRY.get_sample_value("pykueue_events_oldest_waiting_seconds") or 0.0) >= 45.0
    api.gate.set()
    assert broadcaster.flush(5)
    [pending] = [e for e in api.events.values() if e["reason"] == "Pending"]
    assert (pending["firstTimestamp"], pending["lastTimestamp"], pending["count"]) == (
        "2027-01-15T08:00:00Z",
        "2027-01-15T08:00:10Z",
        2,
    )
    assert broadcaster.waiting == 0 and broadcaster.oldest_wait() == 0.0
    assert broadcaster.longest_wait == 45.0
    assert wait_count() - before[0] == 2, "the blocker and the Pending Event"
    assert waited_at_most("30.0") - before[1] == 1 and waited_at_most("60.0") - before[2] == 2
    assert (REGISTRY.get_sample_value("pykueue_events_queue_wait_max_seconds") or 0.0) >= 45.0
    assert (REGISTRY.get_sample_value("pykueue_events_waiting_peak") or 0.0) >= 1


def test_a_series_bump_is_stamped_with_the_latest_emit() -> None:
    api = EventApi()
    api.gate.set()
    correlator = EventCorrelator(api)
    wl = WorkloadBuilder("wl", "ns").obj()
    correlator.write(wl, "Normal", "Admitted", "m", "c", first_emitted=1_800_000_000.0, last_emitted=1_800_000_000.0)
    correlator.write(wl, "Normal", "Admitted", "m", "c", 3, first_emitted=1_800_000_005.0, last_emitted=1_800_000_009.0)
    [event] = api.events.values()
    assert (event["firstTimestamp"], event["lastTimestamp"], event["count"]) == (
        "2027-01-15T08:00:00Z",
        "2027-01-15T08:00:09Z",
        4,
    )


def test_senders_are_enough_to_spend_the_event_clients_budget() -> None:
    assert senders_for_qps(50) == 20, "Kueue's QPS 50 at 400 ms per create"
    assert senders_for_qps(20) == 8 and senders_for_qps(5) == SENDERS, "never fewer than the default"
    assert senders_for_qps(0) == senders_for_qps(10_000) == MAX_SENDERS, "an unlimited client gets the most"


# --- similar messages: client-go's EventAggregator ------------------------------------------------


def test_the_tenth_distinct_message_for_one_object_and_reason_is_combined() -> None:
    api = EventApi()
    api.gate.set()
    clock = FakeClock()
    correlator = EventCorrelator(api, clock=clock)
    wl = WorkloadBuilder("wl", "ns").obj()
    for i in range(12):
        clock.now += 1
        correlator.write(wl, "Warning", "Pending", f"{i} more cpu needed", "c")
    correlator.write(wl, "Warning", "Other", "unrelated", "c")
    messages = [message for *_, message in api.sent]
    assert messages[:9] == [f"{i} more cpu needed" for i in range(9)]
    assert messages[9:] == [COMBINED_PREFIX + "9 more cpu needed", "unrelated"], "another reason is not combined"
    combined = next(e for e in api.events.values() if e["message"].startswith(COMBINED_PREFIX))
    assert combined["count"] == 3 and combined["message"] == COMBINED_PREFIX + "11 more cpu needed"


def test_similar_messages_start_afresh_after_ten_quiet_minutes() -> None:
    api = EventApi()
    api.gate.set()
    clock = FakeClock()
    correlator = EventCorrelator(api, clock=clock)
    wl = WorkloadBuilder("wl", "ns").obj()
    for i in range(9):
        correlator.write(wl, "Warning", "Pending", f"m{i}", "c")
    clock.now += 601
    correlator.write(wl, "Warning", "Pending", "m9", "c")
    assert not any(message.startswith(COMBINED_PREFIX) for *_, message in api.sent)


# --- aggregation: identical repeats become a count on one Event ---------------------------------


def test_identical_repeats_patch_the_count_and_a_different_message_is_a_new_event() -> None:
    api = EventApi()
    api.gate.set()
    correlator = EventCorrelator(api)
    wl = WorkloadBuilder("wl", "ns").obj()
    for _ in range(3):
        correlator.write(wl, "Warning", "Pending", "waiting for quota", "pykueue-controller")
    correlator.write(wl, "Warning", "Pending", "waiting for a flavor", "pykueue-controller")
    assert _reasons(api) == ["Pending", "Pending"], "two Events: one per distinct message"
    counts = sorted((e["message"], e["count"]) for e in api.events.values())
    assert counts == [("waiting for a flavor", 1), ("waiting for quota", 3)]
    assert [patch["count"] for _, patch in api.patches] == [2, 3]


def test_a_repeat_after_the_series_window_starts_a_new_event() -> None:
    api = EventApi()
    api.gate.set()
    clock = FakeClock()
    correlator = EventCorrelator(api, clock=clock, series_window_seconds=600)
    wl = WorkloadBuilder("wl", "ns").obj()
    correlator.write(wl, "Normal", "Admitted", "m", "c")
    clock.now += 601
    correlator.write(wl, "Normal", "Admitted", "m", "c")
    assert len(api.events) == 2 and api.patches == []


def test_repeated_event_bumps_count_instead_of_creating_through_the_client() -> None:
    involved = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u"}}
    transport = ScriptedTransport([{"metadata": {"name": "p.abc", "namespace": "ns"}, "count": 1}, {"count": 2}])
    correlator = EventCorrelator(KubeClient(transport, qps=0))
    correlator.write(involved, "Normal", "Started", "hello", "pykueue-controller")
    correlator.write(involved, "Normal", "Started", "hello", "pykueue-controller")
    assert [s.method for s in transport.sent] == ["POST", "PATCH"]
    assert transport.sent[0].body["involvedObject"]["uid"] == "u"
    assert transport.sent[0].body["source"]["component"] == "pykueue-controller"
    assert transport.sent[1].path.endswith("/namespaces/ns/events/p.abc")
    assert transport.sent[1].body["count"] == 2


def test_event_failure_is_swallowed() -> None:
    involved = {"kind": "ClusterQueue", "metadata": {"name": "cq"}}
    transport = ScriptedTransport([status(403, "Forbidden")])
    correlator = EventCorrelator(KubeClient(transport, qps=0))
    assert correlator.write(involved, "Warning", "X", "y", "c") is None
    assert transport.sent[0].path == "/api/v1/namespaces/default/events"


def test_repeat_of_an_expired_event_creates_a_new_one() -> None:
    involved = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u"}}
    transport = ScriptedTransport(
        [{"metadata": {"name": "p.1", "namespace": "ns"}}, status(404, "NotFound"), {"metadata": {"name": "p.2"}}]
    )
    correlator = EventCorrelator(KubeClient(transport, qps=0))
    correlator.write(involved, "Normal", "Started", "hello", "c")
    correlator.write(involved, "Normal", "Started", "hello", "c")  # the first Event was garbage collected
    assert [s.method for s in transport.sent] == ["POST", "PATCH", "POST"]
    assert transport.sent[2].body["count"] == 1


# --- the per source+object rate limit ------------------------------------------------------------


def test_spam_filter_allows_a_burst_of_25_per_object_then_one_per_five_minutes() -> None:
    clock = FakeClock()
    spam = SpamFilter(clock=clock)
    key = ("pykueue-controller", "kueue.x-k8s.io/v1beta1", "Workload", "ns", "wl", "u")
    assert all(spam.allow(key) for _ in range(SPAM_BURST))
    assert not spam.allow(key)
    assert spam.allow((*key[:-1], "other-uid")), "another object has its own bucket"
    assert spam.allow(("pykueue-job-controller", *key[1:])), "another source has its own bucket"
    clock.now += 299
    assert not spam.allow(key)
    clock.now += 2
    assert spam.allow(key)
    assert not spam.allow(key)


def test_events_beyond_the_burst_for_one_object_are_dropped_and_counted() -> None:
    def dropped_by_spam() -> float:
        return REGISTRY.get_sample_value("pykueue_events_dropped_total", {"reason": "spam"}) or 0.0

    before = dropped_by_spam()
    api = EventApi()
    api.gate.set()
    clock = FakeClock()
    correlator = EventCorrelator(api, clock=clock)
    noisy = WorkloadBuilder("noisy", "ns").obj()
    quiet = WorkloadBuilder("quiet", "ns").obj()
    for i in range(SPAM_BURST + 5):
        correlator.write(noisy, "Normal", f"R{i}", "m", "c")
    correlator.write(quiet, "Normal", "Admitted", "m", "c")
    assert len(_reasons(api, "noisy")) == SPAM_BURST
    assert _reasons(api, "quiet") == ["Admitted"]
    assert correlator.filtered == 5 and dropped_by_spam() - before == 5
    clock.now += 300
    correlator.write(noisy, "Normal", "Later", "m", "c")
    assert _reasons(api, "noisy")[-1] == "Later"


def test_repeats_count_against_the_rate_limit_too() -> None:
    api = EventApi()
    api.gate.set()
    correlator = EventCorrelator(api, spam_burst=3)
    wl = WorkloadBuilder("wl", "ns").obj()
    for _ in range(5):
        correlator.write(wl, "Warning", "Pending", "same", "c")
    [event] = api.events.values()
    assert event["count"] == 3, "as client-go: the filter runs before the series count"


# --- the in-memory recorder for unit tests -------------------------------------------------------


def test_recording_events_keeps_what_would_have_been_sent_truncated() -> None:
    events = RecordingEvents()
    events.emit(WorkloadBuilder("wl", "ns").obj(), EventSpec("Normal", "Admitted", "y" * (MAX_MESSAGE + 1)))
    assert events.reasons("ns/wl") == ["Admitted"] and events.reasons("ns/other") == []
    assert len(events.events[0][3]) == MAX_MESSAGE


def test_a_waiting_event_keeps_only_its_objects_reference() -> None:
    api, broadcaster = _blocked_broadcaster(max_queued=4)
    wl = WorkloadBuilder("wl", "ns").obj()
    wl["metadata"]["uid"] = "u-1"
    broadcaster.recorder().emit(wl, EventSpec("Normal", "QuotaReserved", "m"))
    (waiting,) = broadcaster._queues[0]._normal.values()
    assert waiting.involved == {
        "apiVersion": wl["apiVersion"],
        "kind": "Workload",
        "metadata": {k: v for k, v in wl["metadata"].items() if k in ("name", "namespace", "uid", "resourceVersion")},
    }
    api.gate.set()
    assert broadcaster.flush(5)
    created = [e for e in api.events.values() if e["reason"] == "QuotaReserved"]
    assert created[0]["involvedObject"]["uid"] == "u-1" and created[0]["involvedObject"]["kind"] == "Workload"
