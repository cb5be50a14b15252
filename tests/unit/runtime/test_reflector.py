"""Reflector on a scripted list/watch source: paging, events, bookmarks, 410, disconnects, stalls."""

from __future__ import annotations

import threading
import time

import pytest
from prometheus_client import REGISTRY

from controller.runtime.reflector import Notification, Reflector
from controller.runtime.store import Store
from pykueue.kube.backoff import Backoff
from pykueue.kube.errors import ConnectionFailed, Gone, ServerError, error_from_status
from pykueue.kube.resources import CONFIG_MAPS
from pykueue.kube.transport import StreamTimeout
from tests.unit.runtime.scripted_source import (
    Block,
    ScriptedSource,
    bookmark,
    cm,
    event,
    expired,
    page,
)


def restarts(reason: str) -> float:
    value = REGISTRY.get_sample_value(
        "pykueue_reflector_watch_restarts_total", {"resource": "configmaps", "reason": reason}
    )
    return value or 0.0


def run(source: ScriptedSource, **kw) -> tuple[Reflector, Store, list[Notification]]:
    """Run a reflector until its watch script is exhausted."""
    store = Store()
    notes: list[Notification] = []
    reflector = Reflector(
        source, CONFIG_MAPS, store, notes.append, backoff=Backoff(0.001, 0.002), page_size=2, **kw
    )
    source.on_exhausted = reflector.stop
    thread = threading.Thread(target=reflector.run)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive(), "reflector did not stop"
    return reflector, store, notes


def names(store: Store) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in store.list()}


def test_paginated_list_then_watch_events_update_store_and_notify() -> None:
    source = ScriptedSource(
        lists=[page([cm("a", "1"), cm("b", "2")], "10", "tok"), page([cm("c", "3")], "10")],
        watches=[[event("ADDED", cm("d", "11")), event("MODIFIED", cm("a", "12")), event("DELETED", cm("b", "13"))]],
    )
    reflector, store, notes = run(source)
    assert [(c.limit, c.continue_token) for c in source.list_calls] == [(2, None), (2, "tok")]
    assert source.watch_calls[0].resource_version == "10"
    assert source.watch_calls[0].allow_bookmarks
    assert 300 <= source.watch_calls[0].timeout_seconds <= 600
    assert names(store) == {"a": "12", "c": "3", "d": "11"}
    assert [(n.type, n.obj["metadata"]["name"]) for n in notes] == [
        ("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c"),
        ("ADDED", "d"), ("MODIFIED", "a"), ("DELETED", "b"),
    ]
    assert notes[4].old["metadata"]["resourceVersion"] == "1"
    assert reflector.has_synced()
    assert source.watch_calls[1].resource_version == "13", "rewatch resumes after the last event"


def test_bookmarks_advance_the_resume_resource_version() -> None:
    source = ScriptedSource(
        lists=[page([cm("a", "1")], "10")],
        watches=[[bookmark("50"), bookmark("77")]],  # then the server closes the watch normally
    )
    before = restarts("timeout")
    _, _, notes = run(source)
    assert source.watch_calls[1].resource_version == "77"
    assert len(notes) == 1, "bookmarks are not object changes"
    assert len(source.list_calls) == 1, "a normal close re-watches, it does not relist"
    assert restarts("timeout") >= before + 1


def test_expired_error_event_relists_and_emits_deletes_for_vanished_objects() -> None:
    source = ScriptedSource(
        lists=[page([cm("a", "1"), cm("gone", "2")], "10"), page([cm("a", "30"), cm("new", "31")], "90")],
        watches=[[expired()]],
    )
    before = restarts("expired")
    _, store, notes = run(source)
    assert names(store) == {"a": "30", "new": "31"}
    after_relist = [(n.type, n.obj["metadata"]["name"], n.tombstone) for n in notes[2:]]
    assert ("DELETED", "gone", True) in after_relist
    assert ("MODIFIED", "a", False) in after_relist
    assert ("ADDED", "new", False) in after_relist
    assert source.watch_calls[1].resource_version == "90", "watch resumes from the relist"
    assert restarts("expired") == before + 1


def test_http_410_on_watch_open_relists() -> None:
    source = ScriptedSource(
        lists=[page([cm("a", "1")], "10"), page([], "95")],
        watches=[Gone(410, "Expired", "too old")],
    )
    _, store, notes = run(source)
    assert len(source.list_calls) == 2
    assert store.list() == []
    assert notes[-1].type == "DELETED" and notes[-1].tombstone


def test_disconnect_mid_stream_reconnects_from_last_rv_without_relisting() -> None:
    source = ScriptedSource(
        lists=[page([], "10")],
        watches=[[event("ADDED", cm("a", "11")), ConnectionFailed("reset by peer")], ServerError(503, "x", "y")],
    )
    before = restarts("disconnected")
    _, store, _ = run(source)
    assert [c.resource_version for c in source.watch_calls] == ["10", "11", "11"]
    assert len(source.list_calls) == 1
    assert names(store) == {"a": "11"}
    assert restarts("disconnected") == before + 1


def test_stalled_stream_is_restarted_from_last_rv() -> None:
    source = ScriptedSource(
        lists=[page([], "10")],
        watches=[[event("ADDED", cm("a", "11")), StreamTimeout("no bytes for 90s")]],
    )
    before = restarts("stalled")
    run(source, read_timeout=90)
    assert source.watch_calls[0].read_timeout == 90
    assert [c.resource_version for c in source.watch_calls] == ["10", "11"]
    assert restarts("stalled") == before + 1


def test_too_large_resource_version_relists() -> None:
    too_large = error_from_status(
        {"code": 504, "reason": "Timeout", "message": "Too large resource version: 99, current: 50",
         "details": {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]}}
    )
    source = ScriptedSource(lists=[page([cm("a", "1")], "99"), page([cm("a", "1")], "50")], watches=[too_large])
    run(source)
    assert len(source.list_calls) == 2
    assert source.watch_calls[-1].resource_version == "50"


def test_list_failures_are_retried_with_backoff() -> None:
    source = ScriptedSource(
        lists=[ConnectionFailed("refused"), ServerError(500, "InternalError", "etcd"), page([cm("a", "1")], "10")],
        watches=[],
    )
    reflector, store, _ = run(source)
    assert len(source.list_calls) == 3
    assert reflector.has_synced() and names(store) == {"a": "1"}


def test_expired_continue_token_falls_back_to_one_unpaginated_list() -> None:
    source = ScriptedSource(
        lists=[page([cm("a", "1"), cm("b", "2")], "10", "tok"), Gone(410, "Expired", "continue expired"),
               page([cm("a", "1"), cm("b", "2"), cm("c", "3")], "12")],
        watches=[],
    )
    _, store, _ = run(source)
    assert [c.limit for c in source.list_calls] == [2, 2, None]
    assert sorted(names(store)) == ["a", "b", "c"]


def test_cached_objects_are_trimmed_and_typed() -> None:
    noisy = cm("a", "1")
    noisy["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    noisy["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{...}", "keep": "me"}
    source = ScriptedSource(lists=[page([noisy], "10")], watches=[])
    _, store, _ = run(source, transform=lambda o: {**o, "data": None})
    cached = store.get("ns/a")
    assert cached is not None
    assert "managedFields" not in cached["metadata"]
    assert cached["metadata"]["annotations"] == {"keep": "me"}
    assert cached["apiVersion"] == "v1" and cached["kind"] == "ConfigMap"
    assert cached["data"] is None, "the resource's own transform ran"


def test_recreated_object_is_reported_as_delete_then_add() -> None:
    source = ScriptedSource(
        lists=[page([cm("a", "1", uid="first")], "10")],
        watches=[[event("MODIFIED", cm("a", "20", uid="second"))]],
    )
    _, _, notes = run(source)
    assert [(n.type, n.obj["metadata"]["uid"]) for n in notes[1:]] == [("DELETED", "first"), ("ADDED", "second")]


def test_stop_unblocks_a_silent_watch_promptly() -> None:
    source = ScriptedSource(lists=[page([], "10")], watches=[[Block()]])
    store = Store()
    reflector = Reflector(source, CONFIG_MAPS, store, lambda n: None, backoff=Backoff(0.001, 0.002))
    thread = threading.Thread(target=reflector.run)
    thread.start()
    assert reflector.wait_for_sync(5)
    deadline = time.monotonic() + 5
    while not source.opened and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    reflector.stop()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert time.monotonic() - started < 2
    assert source.opened[0].closed.is_set()


@pytest.mark.parametrize("bad", [{"type": "ADDED"}, {"type": "ADDED", "object": "nope"}])
def test_malformed_event_is_a_disconnect_not_a_crash(bad: dict) -> None:
    source = ScriptedSource(lists=[page([], "10")], watches=[[bad]])
    run(source)
    assert len(source.watch_calls) == 2, "the reflector re-watched after the bad event"
