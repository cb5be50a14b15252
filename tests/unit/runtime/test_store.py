"""Store: keys, indexes, replace-style relists, read-only views, mutation detection."""

from __future__ import annotations

import pytest

from controller.runtime.store import (
    MutationDetected,
    Store,
    label_index,
    object_key,
    owner_uid_index,
    split_key,
)


def obj(name: str, ns: str | None = "ns", rv: str = "1", uid: str | None = None, labels=None, owners=()) -> dict:
    meta: dict = {"name": name, "resourceVersion": rv, "uid": uid or f"uid-{name}"}
    if ns:
        meta["namespace"] = ns
    if labels:
        meta["labels"] = labels
    if owners:
        meta["ownerReferences"] = [{"uid": o} for o in owners]
    return {"metadata": meta}


def test_keys_for_namespaced_and_cluster_scoped_objects() -> None:
    assert object_key(obj("a")) == "ns/a"
    assert object_key(obj("cq", ns=None)) == "cq"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("cq") == (None, "cq")


def test_indexes_follow_updates_and_deletes() -> None:
    store = Store({"queue": label_index("q"), "owner": owner_uid_index})
    store.upsert(obj("a", labels={"q": "lq1"}, owners=["job-1"]))
    store.upsert(obj("b", ns="other", labels={"q": "lq1"}))
    assert store.index_keys("queue", "lq1") == ["ns/a", "other/b"]
    assert [o["metadata"]["name"] for o in store.by_index("namespace", "other")] == ["b"]
    assert store.index_keys("owner", "job-1") == ["ns/a"]

    store.upsert(obj("a", rv="2", labels={"q": "lq2"}))
    assert store.index_keys("queue", "lq1") == ["other/b"]
    assert store.index_keys("queue", "lq2") == ["ns/a"]
    assert store.index_keys("owner", "job-1") == []

    store.delete("other/b")
    assert store.index_keys("queue", "lq1") == []
    assert store.by_index("namespace", "other") == []


def test_unknown_index_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="no index named 'nope'"):
        Store().by_index("nope", "x")


def test_add_indexer_covers_existing_objects() -> None:
    store = Store()
    store.upsert(obj("a", labels={"q": "x"}))
    store.add_indexer("queue", label_index("q"))
    assert store.index_keys("queue", "x") == ["ns/a"]


def test_replace_reports_adds_updates_and_vanished_objects() -> None:
    store = Store()
    store.upsert(obj("stays", rv="1"))
    store.upsert(obj("changes", rv="1"))
    store.upsert(obj("vanishes", rv="1"))
    changes = store.replace([obj("stays", rv="1"), obj("changes", rv="5"), obj("new", rv="6")])
    by_key = {c.key: c for c in changes}
    assert set(by_key) == {"ns/changes", "ns/new", "ns/vanishes"}
    assert by_key["ns/vanishes"].new is None and by_key["ns/vanishes"].old["metadata"]["name"] == "vanishes"
    assert by_key["ns/new"].old is None
    assert by_key["ns/changes"].old["metadata"]["resourceVersion"] == "1"
    assert sorted(store.keys()) == ["ns/changes", "ns/new", "ns/stays"]


def test_replace_reports_recreated_object_with_same_rv_but_new_uid() -> None:
    store = Store()
    store.upsert(obj("a", rv="1", uid="old"))
    changes = store.replace([obj("a", rv="1", uid="new")])
    assert len(changes) == 1 and changes[0].old["metadata"]["uid"] == "old"


def test_reader_has_no_write_methods() -> None:
    store = Store()
    store.upsert(obj("a"))
    reader = store.reader()
    assert reader.get("ns/a") is not None and len(reader) == 1
    assert not hasattr(reader, "upsert") and not hasattr(reader, "delete")


def test_mutation_detector_catches_in_place_edits() -> None:
    store = Store(detect_mutations=True)
    store.upsert(obj("a"))
    store.check_mutations()
    store.get("ns/a")["metadata"]["labels"] = {"oops": "1"}
    with pytest.raises(MutationDetected, match="ns/a"):
        store.check_mutations()
