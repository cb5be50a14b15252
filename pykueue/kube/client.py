"""KubeClient: the one place pykueue talks to the Kubernetes API.

Objects go in and come out as plain JSON dicts, exactly as the apiserver serves them, so the same
client handles built-in kinds and CRDs (see :mod:`pykueue.kube.resources`). The client owns the
cross-cutting policy every caller would otherwise re-implement:

* a QPS/burst token bucket, so a burst of reconciles cannot flood the apiserver;
* retries with jittered backoff on 429 (honouring ``Retry-After``), 5xx and connection errors;
* one credential reload on 401, because service-account tokens and kubeconfig credentials rotate;
* typed errors (:mod:`pykueue.kube.errors`) so a 409 surfaces as :class:`Conflict` and the caller
  re-reads instead of overwriting somebody else's write.

It is thread-safe: the controller shares one instance between reflectors and workers.
"""

from __future__ import annotations

import builtins
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Literal

from pykueue.kube import metrics, wirejson
from pykueue.kube.backoff import Backoff, Clock, Sleep, TokenBucket
from pykueue.kube.errors import (
    ApiError,
    Conflict,
    ConnectionFailed,
    NotFound,
    ServerError,
    TooManyRequests,
    Unauthorized,
    error_from_response,
)
from pykueue.kube.paging import pages_with_read_ahead
from pykueue.kube.resources import Resource
from pykueue.kube.transport import (
    ApiClientTransport,
    HttpResponse,
    RawStream,
    Timeout,
    Transport,
    configuration_factory,
    kubeconfig_dict_factory,
)
from pykueue.kube.versions import KueueWire

log = logging.getLogger(__name__)

PatchType = Literal["merge", "json", "strategic", "apply"]

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}

# Connect fast, but give the apiserver (and the admission webhooks it calls) time to answer.
DEFAULT_TIMEOUT: tuple[float, float] = (10.0, 60.0)
# A Retry-After longer than this is capped: the caller's own deadline matters more.
MAX_RETRY_AFTER = 30.0


class WatchStream(Iterator[dict[str, Any]]):
    """An open watch: iterate to get raw watch events, ``close()`` from any thread to stop.

    Events are the apiserver's JSON lines (``{"type": ..., "object": {...}}``), including
    ``BOOKMARK`` and ``ERROR`` events; interpreting them is the reflector's job. Iteration ends when
    the server closes the stream (its ``timeoutSeconds`` elapsed) or after :meth:`close`. A stall
    longer than the read timeout raises :class:`pykueue.kube.transport.StreamTimeout`; a broken
    connection raises :class:`ConnectionFailed`.
    """

    def __init__(
        self, raw: RawStream, transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    ) -> None:
        self._raw = raw
        self._transform = transform
        self._chunks = raw.chunks()
        self._buffer = b""
        self._lines: deque[bytes] = deque()
        self._closed = False

    def __iter__(self) -> WatchStream:
        return self

    def __next__(self) -> dict[str, Any]:
        while True:
            while self._lines:
                line = self._lines.popleft().strip()
                if not line:
                    continue
                try:
                    event = wirejson.loads(line)
                except ValueError as exc:
                    raise ConnectionFailed(f"watch stream sent a line that is not JSON: {line[:200]!r}") from exc
                if isinstance(event, dict):
                    return self._transform(event) if self._transform else event
                raise ConnectionFailed(f"watch stream sent a non-object event: {line[:200]!r}")
            if self._closed:
                raise StopIteration
            try:
                chunk = next(self._chunks)
            except StopIteration:
                self._closed = True
                if self._buffer.strip():
                    self._lines.append(self._buffer)
                    self._buffer = b""
                    continue
                raise
            parts = (self._buffer + chunk).split(b"\n")
            self._buffer = parts.pop()
            self._lines.extend(parts)

    def close(self) -> None:
        self._closed = True
        self._raw.close()


class KubeClient:
    """Thread-safe JSON client for any Kubernetes resource. Build with :meth:`from_config`."""

    def __init__(
        self,
        transport: Transport,
        *,
        qps: float = 50.0,
        burst: int = 100,
        max_retries: int = 5,
        retry_backoff: Backoff | None = None,
        sleep: Sleep = time.sleep,
        clock: Clock = time.monotonic,
        timeout: Timeout = DEFAULT_TIMEOUT,
        kueue_wire: KueueWire | None = None,
    ) -> None:
        self._transport = transport
        # Kueue kinds travel in the storage version and are converted here (pykueue/kube/versions.py).
        self._wire = kueue_wire or KueueWire()
        self._bucket = TokenBucket(qps, burst, clock=clock, sleep=sleep)
        # How a request gets its token: at once when one is free, else in turn; a client made by
        # with_spare_budget takes only spare ones.
        self._acquire: Callable[[], float] = self._bucket.acquire
        self._max_retries = max_retries
        self._retry_backoff_factory: Callable[[], Backoff] = (
            (lambda: retry_backoff) if retry_backoff is not None else (lambda: Backoff(0.2, 5.0, 2.0))
        )
        self._sleep = sleep
        self._timeout = timeout

    @classmethod
    def from_config(
        cls,
        kubeconfig: str | None = None,
        *,
        qps: float = 50.0,
        burst: int = 100,
        user_agent: str = "pykueue",
    ) -> KubeClient:
        """Client for a kubeconfig path, else in-cluster credentials, else the default kubeconfig."""
        transport = ApiClientTransport(configuration_factory(kubeconfig), user_agent=user_agent)
        return cls(transport, qps=qps, burst=burst)

    @classmethod
    def from_kubeconfig_dict(
        cls,
        document: dict[str, Any],
        *,
        qps: float = 20.0,
        burst: int = 40,
        max_retries: int = 1,
        timeout: Timeout = (5.0, 20.0),
        user_agent: str = "pykueue-multikueue",
    ) -> KubeClient:
        """Client for a kubeconfig held in memory (a remote cluster's). Short timeouts and one
        retry by default: an unreachable worker must be noticed in seconds, not minutes."""
        transport = ApiClientTransport(kubeconfig_dict_factory(document), user_agent=user_agent, pool_size=8)
        return cls(transport, qps=qps, burst=burst, max_retries=max_retries, timeout=timeout)

    def speaking(self, version: str) -> KubeClient:
        """A client on the same connections and rate limit that sends and reads Kueue kinds in
        ``version`` (the benchmark's Kueue variant: Kueue v0.14's CRDs serve only v1beta1)."""
        clone = self._clone()
        clone._wire = KueueWire(version)
        return clone

    def with_spare_budget(self) -> KubeClient:
        """A client on the same connections and the *same* QPS/burst budget whose requests take
        only the tokens the others leave over (:meth:`TokenBucket.acquire_spare`).

        For Events: Kueue's binary sets one rate limiter on the ``rest.Config`` all its clients
        are built from (``cmd/kueue/main.go``), so ``clientConnection.qps`` bounds its Events
        too; here they share it as well, but wait behind admissions and status writes instead
        of queueing among them.
        """
        clone = self._clone()
        clone._acquire = self._bucket.acquire_spare
        return clone

    def _clone(self) -> KubeClient:
        clone = KubeClient(
            self._transport,
            qps=self._bucket.qps,
            burst=self._bucket.burst,
            max_retries=self._max_retries,
            sleep=self._sleep,
            timeout=self._timeout,
            kueue_wire=self._wire,
        )
        clone._bucket = self._bucket
        clone._acquire = self._bucket.acquire
        clone._retry_backoff_factory = self._retry_backoff_factory
        return clone

    @property
    def transport(self) -> Transport:
        return self._transport

    def close(self) -> None:
        self._transport.close()

    # --- the request loop ---------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str | None = None,
        stream: bool = False,
        timeout: Timeout = None,
        max_retries: int | None = None,
    ) -> HttpResponse:
        retries_left = self._max_retries if max_retries is None else max_retries
        # Made at the first retry: a Backoff seeds its own random generator from the OS, a cost
        # every request would pay while almost none is ever retried.
        backoff: Backoff | None = None
        reloaded_credentials = False
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        while True:
            waited = self._acquire()
            metrics.RATE_LIMITER_WAIT.observe(waited)
            started = time.monotonic()
            try:
                response = self._transport.request(
                    method,
                    path,
                    query=query or [],
                    body=body,
                    headers=dict(headers),
                    timeout=timeout or self._timeout,
                    stream=stream,
                )
            except ConnectionFailed as exc:
                error: ApiError = exc
                metrics.REQUESTS.labels(method, "0").inc()
            else:
                metrics.REQUESTS.labels(method, str(response.status)).inc()
                metrics.REQUEST_DURATION.labels(method).observe(time.monotonic() - started)
                if response.status < 400:
                    return response
                error = error_from_response(response.status, response.data, response.headers.get("Retry-After"))

            if isinstance(error, Unauthorized) and not reloaded_credentials:
                # Rotated tokens/certificates: re-read them once, then retry straight away.
                reloaded_credentials = True
                metrics.RETRIES.labels("unauthorized").inc()
                log.info("credentials rejected; reloading them", extra={"path": path})
                self._transport.reload_credentials()
                continue
            if retries_left <= 0 or not isinstance(error, TooManyRequests | ServerError | ConnectionFailed):
                raise error
            retries_left -= 1
            if backoff is None:
                backoff = self._retry_backoff_factory()
            delay = backoff.next_delay()
            if error.retry_after is not None:
                delay = min(MAX_RETRY_AFTER, max(delay, error.retry_after))
            metrics.RETRIES.labels(type(error).__name__).inc()
            log.debug(
                "retrying request",
                extra={"method": method, "path": path, "status": error.status, "delay": round(delay, 3)},
            )
            self._sleep(delay)

    @staticmethod
    def _json(response: HttpResponse) -> dict[str, Any]:
        return _decode_body(response.data, response.status)

    @staticmethod
    def _namespace_of(res: Resource, obj: dict[str, Any], namespace: str | None) -> str | None:
        if not res.namespaced:
            return None
        found = namespace or (obj.get("metadata") or {}).get("namespace")
        if not found:
            raise ValueError(f"{res.kind} is namespaced: metadata.namespace is required")
        return str(found)

    # --- reads -------------------------------------------------------------------------------

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object, or ``None`` when it does not exist."""
        try:
            return self._wire.read(res, self._json(self._request("GET", self._wire.on_wire(res).path(namespace, name))))
        except NotFound:
            return None

    def get_subresource(
        self,
        res: Resource,
        name: str,
        subresource: str,
        namespace: str | None = None,
        query: builtins.list[tuple[str, str]] | None = None,
    ) -> dict[str, Any]:
        """GET a read-only subresource (e.g. the visibility API's ``pendingworkloads``); errors
        raise as typed ApiErrors (``NotFound``, ``Forbidden``, ...)."""
        wire = self._wire.on_wire(res)
        return self._wire.read(res, self._json(self._request("GET", wire.path(namespace, name, subresource), query=query)))

    def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> dict[str, Any]:
        """One page of the raw list object (``items``, ``metadata.resourceVersion``/``continue``).

        ``resource_version="0"`` lets the apiserver answer from its watch cache (cheap, possibly
        slightly stale); leaving it unset asks for a consistent read from etcd.
        """
        query = _list_query(label_selector, field_selector, limit, continue_token)
        if resource_version is not None:
            query.append(("resourceVersion", resource_version))
        page = self._json(self._request("GET", self._wire.on_wire(res).path(namespace), query=query))
        return self._wire.read_list(res, page)

    def list_pages(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every page of the raw list object in order, ``limit`` items each (all in one without
        it), following the ``continue`` tokens; each next page is fetched while the caller
        handles the current one (:func:`pykueue.kube.paging.pages_with_read_ahead`)."""
        path = self._wire.on_wire(res).path(namespace)

        def fetch(token: str | None) -> bytes:
            query = _list_query(label_selector, field_selector, limit, token)
            return self._request("GET", path, query=query).data

        def decode(raw: bytes) -> dict[str, Any]:
            return self._wire.read_list(res, _decode_body(raw, 200))

        return pages_with_read_ahead(fetch, decode)

    def list_all(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> tuple[builtins.list[dict[str, Any]], str]:
        """Every item (following ``continue`` tokens) and the list's resourceVersion."""
        items: builtins.list[dict[str, Any]] = []
        resource_version = ""
        for page in self.list_pages(
            res, namespace, label_selector=label_selector, field_selector=field_selector, limit=page_size
        ):
            items.extend(page.get("items") or [])
            resource_version = str((page.get("metadata") or {}).get("resourceVersion") or "")
        return items, resource_version

    def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        timeout_seconds: int,
        allow_bookmarks: bool = True,
        read_timeout: float,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> WatchStream:
        """Open a watch from ``resource_version``; see :class:`WatchStream`.

        ``timeout_seconds`` makes the server end the watch cleanly; ``read_timeout`` bounds the
        wait for the next bytes on the socket so a silently dropped connection cannot hang the
        caller forever (bookmarks arrive about once a minute on a quiet stream, so the read
        timeout should exceed that). Opening is not retried here: the reflector owns reconnects.
        """
        query: builtins.list[tuple[str, str]] = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(int(timeout_seconds))),
        ]
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        connect_timeout = self._timeout[0] if isinstance(self._timeout, tuple) else 10.0
        response = self._request(
            "GET",
            self._wire.on_wire(res).path(namespace),
            query=query,
            stream=True,
            timeout=(connect_timeout, read_timeout),
            max_retries=0,
        )
        if response.stream is None:
            raise ApiError(response.status, "BadResponse", "the apiserver did not stream the watch")
        if self._wire.converts(res):
            return WatchStream(response.stream, lambda event: self._wire.read_event(res, event))
        return WatchStream(response.stream)

    # --- writes ------------------------------------------------------------------------------

    def create(self, res: Resource, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        """Create ``obj``; :class:`AlreadyExists` when the name is taken."""
        ns = self._namespace_of(res, obj, namespace)
        body = self._wire.write(res, obj)
        created = self._json(self._request("POST", self._wire.on_wire(res).path(ns), body=body, content_type="application/json"))
        return self._wire.read(res, created)

    def create_subresource(
        self, res: Resource, name: str, subresource: str, obj: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        """POST ``obj`` to a subresource that creates something (a ServiceAccount's ``token``: a
        TokenRequest); the answer is the subresource's own object, returned as the server sent it."""
        path = self._wire.on_wire(res).path(namespace, name, subresource)
        return self._json(self._request("POST", path, body=obj, content_type="application/json"))

    def replace(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        """PUT the whole object; its ``metadata.resourceVersion`` makes this a compare-and-swap."""
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        if not name:
            raise ValueError(f"{res.kind}: metadata.name is required to replace an object")
        ns = self._namespace_of(res, obj, None)
        body = self._wire.write(res, obj)
        replaced = self._json(self._request("PUT", self._wire.on_wire(res).path(ns, name), body=body, content_type="application/json"))
        return self._wire.read(res, replaced)

    def patch(
        self,
        res: Resource,
        name: str,
        patch: dict[str, Any] | builtins.list[dict[str, Any]],
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str = "pykueue",
        force: bool = False,
    ) -> dict[str, Any]:
        """Patch one object (``subresource="status"`` for status). ``apply`` is server-side apply.

        For optimistic concurrency put ``metadata.resourceVersion`` in a merge patch: the
        apiserver then answers :class:`Conflict` if the object moved on since it was read.
        """
        if patch_type not in PATCH_CONTENT_TYPES:
            raise ValueError(f"patch_type must be one of {sorted(PATCH_CONTENT_TYPES)}, not {patch_type!r}")
        if patch_type == "json" and not isinstance(patch, list):
            raise ValueError("a JSON patch is a list of operations")
        if patch_type != "json" and not isinstance(patch, dict):
            raise ValueError(f"a {patch_type} patch is an object")
        query = [("fieldManager", field_manager)]
        if patch_type == "apply" and force:
            query.append(("force", "true"))
        patched = self._json(
            self._request(
                "PATCH",
                self._wire.on_wire(res).path(namespace, name, subresource),
                query=query,
                body=self._wire.patch(res, patch, patch_type),
                content_type=PATCH_CONTENT_TYPES[patch_type],
            )
        )
        return self._wire.read(res, patched)

    def patch_status(
        self,
        res: Resource,
        name: str,
        patch: dict[str, Any] | builtins.list[dict[str, Any]],
        namespace: str | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        """Patch the status subresource (spec changes in the patch are ignored by the server)."""
        return self.patch(res, name, patch, namespace, subresource="status", **kw)

    def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str = "Background",
        preconditions: dict[str, str] | None = None,
    ) -> bool:
        """Delete; ``False`` when it was already gone. ``preconditions`` ({uid, resourceVersion})
        make sure we delete the object we looked at, not a successor with the same name."""
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if preconditions:
            options["preconditions"] = dict(preconditions)
        try:
            self._request("DELETE", self._wire.on_wire(res).path(namespace, name), body=options, content_type="application/json")
        except NotFound:
            return False
        return True

    def delete_collection(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        propagation: str = "Background",
    ) -> None:
        """Delete every object of ``res`` (in ``namespace``, or in all namespaces) that
        ``label_selector`` selects, in one request (the apiserver deletes them one by one)."""
        options = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        query = _list_query(label_selector, None, None, None)
        self._request(
            "DELETE", self._wire.on_wire(res).path(namespace), query=query, body=options, content_type="application/json"
        )


def retry_on_conflict(operation: Callable[[], Any], *, attempts: int = 5) -> Any:
    """Run ``operation`` (which must re-read what it writes) until it does not hit a Conflict.

    Like client-go's ``retry.RetryOnConflict``: the operation re-reads fresh state on each call,
    so a lost race is resolved by redoing the decision, never by overwriting.
    """
    for attempt in range(attempts):
        try:
            return operation()
        except Conflict:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def _list_query(
    label_selector: str | None, field_selector: str | None, limit: int | None, continue_token: str | None
) -> list[tuple[str, str]]:
    """The query of one list page: its selectors, page size and continue token, where given."""
    query: list[tuple[str, str]] = []
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    if limit:
        query.append(("limit", str(limit)))
    if continue_token:
        query.append(("continue", continue_token))
    return query


def _decode_body(data: bytes, status: int) -> dict[str, Any]:
    """A response body as a JSON object ({} when empty); ApiError ``BadResponse`` otherwise."""
    if not data:
        return {}
    try:
        decoded = wirejson.loads(data)
    except ValueError as exc:
        raise ApiError(status, "BadResponse", f"the apiserver answered with invalid JSON: {exc}") from exc
    if not isinstance(decoded, dict):
        raise ApiError(status, "BadResponse", "the apiserver answered with JSON that is not an object")
    return decoded


__all__ = ["PATCH_CONTENT_TYPES", "KubeClient", "WatchStream", "retry_on_conflict"]
