"""The HTTP layer under :class:`pykueue.kube.client.KubeClient`.

:class:`ApiClientTransport` sends raw requests through the official client's
``ApiClient.param_serialize`` + ``call_api`` so that TLS, client certificates, exec plugins and
bearer tokens are handled exactly as ``kubectl``-style kubeconfigs expect, while the paths are
our own (any resource, CRDs included) and bodies stay plain JSON dicts. Keeping this behind the
small :class:`Transport` protocol lets unit tests script HTTP answers without a server.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import urllib3
from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException
from kubernetes.config import incluster_config, kube_config

from pykueue.kube.errors import ConnectionFailed

Timeout = float | tuple[float, float] | None


class StreamTimeout(ConnectionFailed):
    """No bytes arrived on an open stream within the read timeout: the connection is stalled."""


class RawStream(Protocol):
    """The body of a streaming answer, read chunk by chunk as the server flushes it."""

    def chunks(self) -> Iterator[bytes]: ...

    def close(self) -> None: ...


@dataclass
class HttpResponse:
    """One HTTP answer. ``data`` holds the body unless ``stream`` was requested and succeeded."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    data: bytes = b""
    stream: RawStream | None = None


class Transport(Protocol):
    """What the client needs from HTTP: one request, a credential reload, and a close."""

    def request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]],
        body: Any,
        headers: dict[str, str],
        timeout: Timeout,
        stream: bool,
    ) -> HttpResponse: ...

    def reload_credentials(self) -> None: ...

    def close(self) -> None: ...


class _Urllib3Stream:
    """Adapts a urllib3 response opened with ``preload_content=False``."""

    def __init__(self, response: urllib3.response.BaseHTTPResponse) -> None:
        self._response = response
        self._closed = False

    def chunks(self) -> Iterator[bytes]:
        try:
            # For chunked answers (every watch) urllib3 yields each chunk as soon as it arrives;
            # the socket's read timeout bounds the wait for the next one.
            yield from self._response.stream(65536, decode_content=True)
        except (urllib3.exceptions.ReadTimeoutError, TimeoutError) as exc:
            if self._closed:
                return
            raise StreamTimeout(f"stream stalled: {exc}") from exc
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as exc:
            # ProtocolError/InvalidChunkLength/IncompleteRead are ordinary disconnects on long
            # watches; a close() from another thread surfaces as OSError or ValueError.
            if self._closed:
                return
            raise ConnectionFailed(f"stream interrupted: {exc!r}") from exc

    def close(self) -> None:
        """Unblock a reader in another thread and drop the connection (never reused)."""
        self._closed = True
        # Best effort on both: the connection is discarded either way.
        with contextlib.suppress(Exception):
            self._response.shutdown()
        with contextlib.suppress(Exception):
            self._response.close()


ConfigurationFactory = Callable[[], k8s_client.Configuration]


def configuration_factory(kubeconfig: str | None) -> ConfigurationFactory:
    """Return a function that loads fresh credentials each time it is called.

    The choice follows ``kubectl``: an explicit kubeconfig path, else the in-cluster service
    account (when ``KUBERNETES_SERVICE_HOST`` is set), else ``$KUBECONFIG`` / ``~/.kube/config``.
    Calling it again re-reads the files, which is how rotated tokens and certificates are picked
    up after a 401.
    """

    def load() -> k8s_client.Configuration:
        configuration = k8s_client.Configuration()
        if kubeconfig:
            kube_config.load_kube_config(
                config_file=kubeconfig, client_configuration=configuration, persist_config=False
            )
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            incluster_config.load_incluster_config(client_configuration=configuration)
        else:
            kube_config.load_kube_config(client_configuration=configuration, persist_config=False)
        return configuration

    return load


def kubeconfig_dict_factory(document: dict[str, Any]) -> ConfigurationFactory:
    """Like :func:`configuration_factory` for a kubeconfig already in memory (a MultiKueue
    worker's, read from a Secret). The document is used as given: nothing is read from disk."""

    def load() -> k8s_client.Configuration:
        configuration = k8s_client.Configuration()
        loader = kube_config.KubeConfigLoader(config_dict=document)
        loader.load_and_set(configuration)
        return configuration

    return load


class ApiClientTransport:
    """A :class:`Transport` over ``kubernetes.client.ApiClient`` (one per transport, never shared).

    Each transport owns its ``ApiClient`` because the official client's default configuration is
    process-wide and not safe to reload from several threads. A reload builds a new ``ApiClient``
    and swaps it in atomically; requests already in flight finish on the old one.
    """

    def __init__(self, factory: ConfigurationFactory, *, user_agent: str = "pykueue", pool_size: int = 64) -> None:
        self._factory = factory
        self._user_agent = user_agent
        self._pool_size = pool_size
        self._lock = threading.Lock()
        self._api = self._build()

    def _build(self) -> k8s_client.ApiClient:
        configuration = self._factory()
        # Every reflector holds one connection for its watch; workers need more on top.
        configuration.connection_pool_maxsize = self._pool_size
        # Retries are ours (with rate limits and Retry-After); urllib3's own would double them.
        configuration.retries = False
        api = k8s_client.ApiClient(configuration)
        api.user_agent = self._user_agent
        return api

    @property
    def host(self) -> str:
        return str(self._api.configuration.host)

    def reload_credentials(self) -> None:
        fresh = self._build()
        with self._lock:
            old, self._api = self._api, fresh
        # Leave the old pool to the garbage collector: open watches may still be reading from it.
        del old

    def request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]],
        body: Any,
        headers: dict[str, str],
        timeout: Timeout,
        stream: bool,
    ) -> HttpResponse:
        with self._lock:
            api = self._api
        _, url, header_params, serialized_body, _ = api.param_serialize(
            method=method,
            resource_path=path,
            query_params=list(query),
            header_params=dict(headers),
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            answer = api.call_api(
                method, url, header_params=header_params, body=serialized_body, _request_timeout=timeout
            )
        except ApiException as exc:  # raised only for TLS failures before any HTTP answer
            raise ConnectionFailed(f"{method} {path}: {exc.reason}") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ConnectionFailed(f"{method} {path}: {exc!r}") from exc
        raw = answer.response
        response_headers = {k: v for k, v in raw.headers.items()}
        if stream and answer.status < 300:
            return HttpResponse(answer.status, response_headers, b"", _Urllib3Stream(raw))
        try:
            data = raw.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ConnectionFailed(f"{method} {path}: reading the answer: {exc!r}") from exc
        finally:
            raw.release_conn()
        return HttpResponse(answer.status, response_headers, data or b"")

    def close(self) -> None:
        with self._lock:
            api = self._api
        api.close()
