"""Informer: handlers run off the watch thread, late handlers get a replay, failures are contained."""

from __future__ import annotations

import gc
import threading
import time

import pytest
from prometheus_client import REGISTRY

from controller.runtime.informer import FuncHandler, Informer, InformerSet, enqueue_keys
from controller.runtime.store import label_index
from controller.runtime.workqueue import WorkQueue
from pykueue.kube.resources import CONFIG_MAPS, SECRETS, Resource
from tests.unit.runtime.scripted_source import Block, Gate, ScriptedSource, cm, event, page


def wait_until(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return False


def test_slow_handler_does_not_block_the_watch() -> None:
    release = threading.Event()
    seen: list[str] = []
    source = ScriptedSource(
        lists=[page([cm("a", "1")], "10")],
        watches=[[event("ADDED", cm(f"n{i}", str(11 + i))) for i in range(50)] + [Block()]],
    )
    informer = Informer(source, CONFIG_MAPS)
    informer.add_handler(FuncHandler(add=lambda o: (release.wait(10), seen.append(o["metadata"]["name"]))))
    informer.start()
    try:
        assert wait_until(lambda: len(informer.store) == 51), "store must advance while the handler is stuck"
        assert seen == []
        release.set()
        assert wait_until(lambda: len(seen) == 51)
        assert seen[0] == "a" and seen[-1] == "n49", "notifications keep their order"
    finally:
        release.set()
        informer.stop()


def test_slow_handler_does_not_delay_other_handlers() -> None:
    release = threading.Event()
    fast: list[str] = []
    source = ScriptedSource(
        lists=[page([cm("a", "1")], "10")],
        watches=[[event("ADDED", cm("b", "11")), Block()]],
    )
    informer = Informer(source, CONFIG_MAPS)
    informer.add_handler(FuncHandler(add=lambda _o: release.wait(10)), own_thread=True)
    informer.add_handler(FuncHandler(add=lambda o: fast.append(o["metadata"]["name"])))
    informer.start()
    try:
        assert wait_until(lambda: fast == ["a", "b"]), "a handler on its own thread holds up nobody else"
    finally:
        release.set()
        informer.stop()


def test_handler_added_after_start_gets_current_objects_then_changes() -> None:
    source = ScriptedSource(
        lists=[page([cm("a", "1"), cm("b", "2")], "10")],
        watches=[[Block()]],
    )
    informer = Informer(source, CONFIG_MAPS)
    informer.start()
    try:
        assert informer.wait_for_sync(5)
        added: list[str] = []
        informer.add_handler(FuncHandler(add=lambda o: added.append(o["metadata"]["name"])))
        assert wait_until(lambda: sorted(added) == ["a", "b"])
    finally:
        informer.stop()


def test_handlers_share_one_delivery_thread_and_a_late_one_alone_gets_the_replay() -> None:
    gate = Gate()
    source = ScriptedSource(
        lists=[page([cm("a", "1"), cm("b", "2")], "10")],
        watches=[[gate, event("MODIFIED", cm("a", "11")), Block()]],
    )
    informer = Informer(source, CONFIG_MAPS)
    early: list[tuple[str, str, str]] = []
    late: list[tuple[str, str, str]] = []

    def recorder(into: list[tuple[str, str, str]]) -> FuncHandler:
        def note(kind: str, obj: dict) -> None:
            into.append((kind, obj["metadata"]["name"], threading.current_thread().name))

        return FuncHandler(add=lambda o: note("add", o), update=lambda _o, n: note("update", n))

    informer.add_handler(recorder(early))
    informer.start()
    try:
        assert informer.wait_for_sync(5)
        assert wait_until(lambda: len(early) == 2)
        informer.add_handler(recorder(late))
        gate.opened.set()
        assert wait_until(lambda: len(early) == 3 and len(late) == 3)
        assert [(k, n) for k, n, _ in early] == [("add", "a"), ("add", "b"), ("update", "a")], (
            "the late handler's replay of the cache goes to it alone"
        )
        assert [(k, n) for k, n, _ in late] == [("add", "a"), ("add", "b"), ("update", "a")]
        assert len({thread for _, _, thread in early + late}) == 1, "both were called on one thread"
    finally:
        gate.opened.set()
        informer.stop()


def test_handler_exception_is_contained() -> None:
    calls: list[str] = []

    def explode(obj: dict) -> None:
        calls.append(obj["metadata"]["name"])
        raise RuntimeError("handler bug")

    source = ScriptedSource(lists=[page([cm("a", "1")], "10")], watches=[[event("ADDED", cm("b", "2")), Block()]])
    informer = Informer(source, CONFIG_MAPS)
    informer.add_handler(FuncHandler(add=explode))
    neighbour: list[str] = []
    informer.add_handler(FuncHandler(add=lambda o: neighbour.append(o["metadata"]["name"])))
    informer.start()
    try:
        assert wait_until(lambda: calls == ["a", "b"])
        assert wait_until(lambda: neighbour == ["a", "b"]), "a handler sharing the thread still hears every change"
        assert informer.alive()
    finally:
        informer.stop()


def test_enqueue_keys_feeds_a_work_queue_and_indexers_answer_queries() -> None:
    labelled = cm("a", "1")
    labelled["metadata"]["labels"] = {"q": "lq"}
    source = ScriptedSource(lists=[page([labelled, cm("b", "2")], "10")], watches=[[event("DELETED", cm("b", "3")), Block()]])
    informer = Informer(source, CONFIG_MAPS, indexers={"queue": label_index("q")})
    work: WorkQueue[str] = WorkQueue("test-informer")
    informer.add_handler(enqueue_keys(work))
    informer.start()
    try:
        assert wait_until(lambda: len(informer.store) == 1)
        assert [o["metadata"]["name"] for o in informer.store.by_index("queue", "lq")] == ["a"]
        got = set()
        while (key := work.get(timeout=0.5)) is not None:
            got.add(key)
            work.done(key)
        assert got == {"ns/a", "ns/b"}
    finally:
        informer.stop()


def test_resync_redelivers_cached_objects_as_updates() -> None:
    updates: list[tuple[str, bool]] = []
    source = ScriptedSource(lists=[page([cm("a", "1")], "10")], watches=[[Block()]])
    informer = Informer(source, CONFIG_MAPS, resync_period=0.05)
    informer.add_handler(FuncHandler(update=lambda old, new: updates.append((new["metadata"]["name"], old is new))), resync=True)
    informer.start()
    try:
        assert wait_until(lambda: len(updates) >= 2)
        assert updates[0] == ("a", True)
    finally:
        informer.stop()


def test_informer_set_shares_informers_and_reports_sync() -> None:
    source = ScriptedSource(lists=[page([], "1"), page([], "2")], watches=[[Block()], [Block()]])
    informers = InformerSet(source)
    first = informers.get(CONFIG_MAPS)
    assert informers.get(CONFIG_MAPS) is first
    informers.get(SECRETS)
    assert not informers.has_synced()
    informers.start()
    try:
        assert informers.wait_for_sync(timeout=5)
        assert informers.has_synced() and informers.alive()
    finally:
        informers.stop()


def test_informer_set_merges_indexers_and_refuses_conflicting_options() -> None:
    source = ScriptedSource(lists=[], watches=[])
    informers = InformerSet(source)
    first = informers.get(CONFIG_MAPS, transform=None, indexers={"queue": label_index("q")})
    second = informers.get(CONFIG_MAPS, indexers={"owner": label_index("o")})
    assert second is first
    assert first.has_index("queue") and first.has_index("owner")
    with pytest.raises(ValueError, match="already exists with other resync_period"):
        informers.get(CONFIG_MAPS, resync_period=30)


def _gauge(name: str, resource: str) -> float | None:
    return REGISTRY.get_sample_value(name, {"resource": resource})


def test_cache_size_and_handler_backlog_gauges_are_read_when_scraped() -> None:
    # A resource no other test watches, so the gauges hold only what this test starts.
    scraped = Resource("test.pykueue.dev", "v1", "scrapedthings", "ScrapedThing", True)
    label = str(scraped)
    release = threading.Event()
    first = Informer(
        ScriptedSource(lists=[page([cm("a", "1"), cm("b", "2")], "10")], watches=[[Block()]]), scraped
    )
    second = Informer(
        ScriptedSource(lists=[page([cm("c", "3")], "10")], watches=[[event("ADDED", cm("d", "11")), Block()]]),
        scraped,
        namespace="other",
    )
    first.add_handler(FuncHandler(add=lambda _o: release.wait(10)))
    first.start()
    second.start()
    try:
        assert wait_until(lambda: _gauge("pykueue_informer_cached_objects", label) == 4.0), (
            "two informers of one resource add up, the watch event included"
        )
        # The stuck handler took "a" and waits; "b" is still queued for it.
        assert wait_until(lambda: _gauge("pykueue_informer_handler_queue_depth", label) == 1.0)
        release.set()
        assert wait_until(lambda: _gauge("pykueue_informer_handler_queue_depth", label) == 0.0)
    finally:
        release.set()
        first.stop()
        second.stop()
    del first
    # A stopped thread may hold its store for a moment after its last step; collect until it lets go.
    assert wait_until(lambda: gc.collect() >= 0 and _gauge("pykueue_informer_cached_objects", label) == 2.0), (
        "a discarded informer drops out of the sum"
    )
