"""Paged lists with one page of read-ahead.

A large initial list (50,000 Workloads is 100 pages of 500) costs the apiserver time to build
and send each page and this process time to decode and convert it. Fetched strictly one after
another, the two never overlap: the apiserver idles while the page is decoded, and the decoder
idles while the next page is built. Here the next page is requested as soon as the current
one's bytes have arrived, and decoded while it is fetched: the request needs only the
``continue`` token, which :func:`peek_list_metadata` reads from the end of the raw body without
decoding the items. The socket reads of the fetch release the GIL, so the two really overlap.

Only the token is taken on trust, and only until the page is decoded: if the decoded token
differs (a body laid out in a way the peek did not expect), the read-ahead is dropped and the
right page fetched, so a wrong peek costs one request, never a wrong list.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

log = logging.getLogger(__name__)

_METADATA_KEY = b'"metadata":'
_DECODER = json.JSONDecoder()

FetchPage = Callable[[str | None], bytes]
DecodePage = Callable[[bytes], dict[str, Any]]


def peek_list_metadata(raw: bytes) -> dict[str, Any] | None:
    """The list object's own ``metadata`` read from its raw JSON body, or None when it cannot
    be found cheaply.

    The apiserver writes a custom resource's list with its keys sorted (``apiVersion``,
    ``items``, ``kind``, ``metadata``), so the list's metadata is the last ``"metadata":`` of
    the body; a built-in type's list puts it first (``kind``, ``apiVersion``, ``metadata``,
    ``items``). Either is accepted only where it is a key of the top-level object.
    """
    last = raw.rfind(_METADATA_KEY)
    if last >= 0:
        found = _object_at(raw, last + len(_METADATA_KEY))
        if found is not None and raw[found[1] :].strip() == b"}":
            return found[0]
    first = raw.find(_METADATA_KEY)
    if first >= 0 and raw[:first].count(b"{") == 1 and raw.lstrip().startswith(b"{"):
        found = _object_at(raw, first + len(_METADATA_KEY))
        if found is not None:
            return found[0]
    return None


# A list's own metadata (resourceVersion, continue token, remaining count) is far smaller; reading
# no further keeps the peek of a built-in list (metadata first) from copying its whole body.
_METADATA_MAX_BYTES = 64 * 1024


def _object_at(raw: bytes, start: int) -> tuple[dict[str, Any], int] | None:
    """The JSON object starting at byte ``start`` (within :data:`_METADATA_MAX_BYTES`) and the
    byte offset just after it."""
    tail = raw[start : start + _METADATA_MAX_BYTES]
    try:
        text = tail.decode("utf-8", errors="ignore")  # the cut may split a character at the end
        value, end = _DECODER.raw_decode(text.lstrip())
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    skipped = len(text) - len(text.lstrip())
    consumed = len(text[: skipped + end].encode("utf-8"))
    return value, start + consumed


class _ReadAhead:
    """One fetch on a daemon thread: a process stopping mid-list does not wait for it."""

    def __init__(self, fetch: FetchPage, token: str) -> None:
        self._done = threading.Event()
        self._raw = b""
        self._error: BaseException | None = None
        threading.Thread(target=self._run, args=(fetch, token), name="list-read-ahead", daemon=True).start()

    def _run(self, fetch: FetchPage, token: str) -> None:
        try:
            self._raw = fetch(token)
        except BaseException as exc:  # handed to the consumer, raised where it waits
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> bytes:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._raw


def pages_with_read_ahead(fetch: FetchPage, decode: DecodePage) -> Iterator[dict[str, Any]]:
    """Yield decoded pages in order: ``fetch(token)`` returns a page's raw body (token None for
    the first), ``decode`` turns it into the page object. While a page is decoded (and while the
    caller handles it) the next one is fetched on a helper thread.

    Errors of a fetch raise from the iteration at the page they concern. Closing the iterator
    early (or an error) leaves a fetch under way to finish on its own and discards it.
    """
    raw = fetch(None)
    while True:
        peeked = peek_list_metadata(raw)
        guess = str(peeked.get("continue") or "") if peeked is not None else ""
        ahead = _ReadAhead(fetch, guess) if guess else None
        page = decode(raw)
        token = str((page.get("metadata") or {}).get("continue") or "")
        if ahead is not None and token != guess:
            log.debug("list read-ahead used a token the page does not carry; fetching again")
            ahead = None
        yield page
        if not token:
            return
        raw = ahead.result() if ahead is not None else fetch(token)
