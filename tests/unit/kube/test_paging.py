"""Paged lists with read-ahead: the continue token peeked from the raw body, and the pages'
order, errors and early close (pykueue/kube/paging.py)."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from pykueue.kube.errors import Gone
from pykueue.kube.paging import pages_with_read_ahead, peek_list_metadata


def custom_resource_list(names: list[str], token: str = "", rv: str = "9") -> bytes:
    """As the apiserver writes a custom resource's list: keys sorted, the list's metadata last."""
    meta: dict[str, Any] = {"resourceVersion": rv}
    if token:
        meta["continue"] = token
    body = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "items": [{"metadata": {"name": n, "annotations": {"note": '"metadata":{"continue":"fake"}'}}} for n in names],
        "kind": "WorkloadList",
        "metadata": meta,
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def built_in_list(names: list[str], token: str = "") -> bytes:
    """As the apiserver writes a built-in type's list: kind, apiVersion, metadata, items."""
    meta = {"resourceVersion": "3", **({"continue": token} if token else {})}
    body = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": meta, "items": [{"metadata": {"name": n}} for n in names]}
    return json.dumps(body, ensure_ascii=False).encode()


def test_the_list_metadata_is_read_from_either_end_of_the_body() -> None:
    assert peek_list_metadata(custom_resource_list(["a", "b"], token="t1")) == {"continue": "t1", "resourceVersion": "9"}
    assert peek_list_metadata(custom_resource_list(["a"]) + b"\n") == {"resourceVersion": "9"}
    assert peek_list_metadata(built_in_list(["a", "b"], token="t2")) == {"continue": "t2", "resourceVersion": "3"}
    assert peek_list_metadata(built_in_list([])) == {"resourceVersion": "3"}
    # Ünïcode before the metadata: offsets are bytes, not characters.
    assert peek_list_metadata(custom_resource_list(["ü" * 10], token="t3")) == {"continue": "t3", "resourceVersion": "9"}


@pytest.mark.parametrize(
    "raw",
    [
        b'{"items":[{"metadata":{"name":"a"}}]}',  # no list metadata: an item's is not taken for it
        b'{"items":[{"metadata":{"name":"a"}}],"metadata":{"continue":',  # cut short
        b'{"items":[],"metadata":"x"}',
        b"",
        b"[]",
    ],
)
def test_no_list_metadata_is_guessed_where_there_is_none(raw: bytes) -> None:
    assert peek_list_metadata(raw) is None


def _decode(raw: bytes) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(raw)
    return decoded


def test_the_next_page_is_fetched_while_the_current_one_is_decoded() -> None:
    bodies = {None: custom_resource_list(["a"], "t1"), "t1": custom_resource_list(["b"], "t2"), "t2": custom_resource_list(["c"])}
    fetched: list[str | None] = []
    second_asked = threading.Event()
    overlapped: list[bool] = []

    def fetch(token: str | None) -> bytes:
        fetched.append(token)
        if token == "t1":
            second_asked.set()
        return bodies[token]

    def decode(raw: bytes) -> dict[str, Any]:
        page = _decode(raw)
        if page["items"][0]["metadata"]["name"] == "a":
            overlapped.append(second_asked.wait(5))
        return page

    pages = list(pages_with_read_ahead(fetch, decode))
    assert [p["items"][0]["metadata"]["name"] for p in pages] == ["a", "b", "c"]
    assert fetched == [None, "t1", "t2"]
    assert overlapped == [True], "page 2 was requested before page 1 was decoded"


def test_a_peeked_token_the_page_does_not_carry_is_dropped_and_the_right_page_fetched() -> None:
    """A body whose layout fools the peek costs a request, never a wrong page."""
    misleading = custom_resource_list(["a"], "wrong")
    bodies = {None: misleading, "wrong": custom_resource_list(["x"]), "right": custom_resource_list(["b"])}

    def decode(raw: bytes) -> dict[str, Any]:
        page = _decode(raw)
        if raw is misleading:
            page["metadata"]["continue"] = "right"
        return page

    fetched: list[str | None] = []

    def fetch(token: str | None) -> bytes:
        fetched.append(token)
        return bodies[token]

    pages = list(pages_with_read_ahead(fetch, decode))
    assert [p["items"][0]["metadata"]["name"] for p in pages] == ["a", "b"]
    assert fetched[0] is None and "right" in fetched  # "wrong" too, unless cancelled before it started


def test_an_error_of_a_read_ahead_fetch_raises_at_the_page_it_concerns() -> None:
    def fetch(token: str | None) -> bytes:
        if token == "t1":
            raise Gone(410, "Expired", "the continue token expired")
        return custom_resource_list(["a"], "t1")

    pages = pages_with_read_ahead(fetch, _decode)
    assert next(pages)["items"][0]["metadata"]["name"] == "a"
    with pytest.raises(Gone):
        next(pages)


def test_closing_early_asks_for_nothing_more() -> None:
    fetched: list[str | None] = []

    def fetch(token: str | None) -> bytes:
        fetched.append(token)
        return custom_resource_list([f"p{len(fetched)}"], f"t{len(fetched)}")

    pages = pages_with_read_ahead(fetch, _decode)
    next(pages)
    pages.close()
    assert fetched[0] is None and len(fetched) <= 2, "at most the read-ahead of the page taken"


@pytest.mark.parametrize("padding", ["", "x"])
def test_a_large_built_in_list_is_peeked_without_reading_all_of_it(padding: str) -> None:
    """The peek reads a bounded window after the metadata key; that the window may end inside
    a two-byte character (one of the two paddings puts the cut there) does not hide the
    metadata."""
    raw = built_in_list([padding + "ü" * 50_000], token="t9")
    assert len(raw) > 100_000
    assert peek_list_metadata(raw) == {"continue": "t9", "resourceVersion": "3"}
