"""Delegated authentication and authorization, as an aggregated API server must do them.

The apiserver proxies a request for ``visibility.kueue.x-k8s.io`` to us after authenticating the
caller itself, and says who the caller is in request headers (``X-Remote-User``,
``X-Remote-Group``, ``X-Remote-Extra-*``). Those headers are believed only on a connection whose
client certificate was issued by the *requestheader* CA and carries an allowed name (the front
proxy's certificate); the CA, the names and the header names are what the apiserver publishes in
``kube-system/extension-apiserver-authentication`` (:func:`load_requestheader_config`). A caller
reaching us directly with a bearer token is authenticated with a ``TokenReview``.

Every request for pending workloads is then authorized with a ``SubjectAccessReview`` for verb
``get`` on ``clusterqueues/pendingworkloads`` (or ``localqueues/pendingworkloads`` in the
namespace) — exactly the attributes Kueue's ClusterRoles grant. Answers are cached for a few
seconds per (user, attributes), as the generic apiserver's delegating authorizer does, so a
dashboard polling every second does not double the apiserver's load.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pykueue.kube import resources as r

from .api import GROUP, SUBRESOURCE, Request

log = logging.getLogger(__name__)

AUTHENTICATION_CONFIGMAP = ("kube-system", "extension-apiserver-authentication")
ALLOWED_TTL_SECONDS = 10.0
DENIED_TTL_SECONDS = 10.0


@dataclass(frozen=True)
class UserInfo:
    name: str
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    uid: str = ""


@dataclass(frozen=True)
class RequestHeaderConfig:
    """The front proxy's trust settings (the apiserver's ``--requestheader-*`` flags)."""

    client_ca: str  # PEM
    allowed_names: tuple[str, ...] = ()
    username_headers: tuple[str, ...] = ("X-Remote-User",)
    group_headers: tuple[str, ...] = ("X-Remote-Group",)
    extra_prefixes: tuple[str, ...] = ("X-Remote-Extra-",)


def _json_list(data: Mapping[str, str], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    raw = data.get(key)
    if not raw:
        return default
    try:
        values = json.loads(raw)
    except ValueError:
        return default
    return tuple(str(v) for v in values) if isinstance(values, list) else default


def load_requestheader_config(configmap: Mapping[str, Any] | None) -> RequestHeaderConfig | None:
    """From ``extension-apiserver-authentication``; None when the apiserver runs without an
    aggregation layer (no ``requestheader-client-ca-file``)."""
    data = (configmap or {}).get("data") or {}
    ca = data.get("requestheader-client-ca-file")
    if not ca:
        return None
    return RequestHeaderConfig(
        client_ca=ca,
        allowed_names=_json_list(data, "requestheader-allowed-names", ()),
        username_headers=_json_list(data, "requestheader-username-headers", ("X-Remote-User",)),
        group_headers=_json_list(data, "requestheader-group-headers", ("X-Remote-Group",)),
        extra_prefixes=_json_list(data, "requestheader-extra-headers-prefix", ("X-Remote-Extra-",)),
    )


def user_from_front_proxy(
    config: RequestHeaderConfig, client_cn: str | None, headers: Any
) -> UserInfo | None:
    """The user the front proxy vouches for, or None when the connection is not the front proxy's
    (no verified client certificate, or a name it may not use) or names nobody."""
    if client_cn is None:
        return None
    if config.allowed_names and client_cn not in config.allowed_names:
        return None
    name = next((v for h in config.username_headers for v in (headers.get_all(h) or []) if v), "")
    if not name:
        return None
    groups = tuple(v for h in config.group_headers for v in (headers.get_all(h) or []))
    extra: dict[str, tuple[str, ...]] = {}
    for header in dict.fromkeys(h.lower() for h in headers):  # a repeated header is listed once per value
        for prefix in config.extra_prefixes:
            if header.startswith(prefix.lower()):
                key = header[len(prefix):]
                extra[key] = extra.get(key, ()) + tuple(headers.get_all(header) or [])
    return UserInfo(name, groups, extra)


class Authenticator:
    """See the module docstring; ``client`` creates TokenReviews."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def from_token(self, token: str) -> UserInfo | None:
        review = self._client.create(
            r.TOKEN_REVIEWS,
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
        )
        status = review.get("status") or {}
        if not status.get("authenticated"):
            return None
        user = status.get("user") or {}
        extra = {k: tuple(v) for k, v in (user.get("extra") or {}).items()}
        return UserInfo(user.get("username", ""), tuple(user.get("groups") or ()), extra, user.get("uid", ""))


class Authorizer:
    """SubjectAccessReviews with a short cache; ``clock`` for tests."""

    def __init__(self, client: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[tuple[Any, ...], tuple[float, bool]] = {}
        self.reviews = 0

    @staticmethod
    def attributes(request: Request) -> dict[str, Any]:
        if request.kind == "explain":
            # Whoever may read the Workload may ask why it waits.
            return {"group": "kueue.x-k8s.io", "version": "v1beta1", "resource": "workloads", "name": request.name,
                    "namespace": request.namespace, "verb": "get"}
        attributes: dict[str, Any] = {
            "group": GROUP,
            "version": request.version,
            "resource": request.resource,
            "subresource": SUBRESOURCE,
            "name": request.name,
            "verb": "get",
        }
        if request.namespace:
            attributes["namespace"] = request.namespace
        return attributes

    def allowed(self, user: UserInfo, request: Request) -> bool:
        attributes = self.attributes(request)
        key = (user.name, user.groups, tuple(sorted((k, v) for k, v in user.extra.items())), user.uid,
               tuple(sorted(attributes.items())))
        now = self._clock()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] > now:
                return hit[1]
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups), "resourceAttributes": attributes}
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}
        if user.uid:
            spec["uid"] = user.uid
        review = self._client.create(
            r.SUBJECT_ACCESS_REVIEWS,
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
        )
        self.reviews += 1
        allowed = bool((review.get("status") or {}).get("allowed"))
        ttl = ALLOWED_TTL_SECONDS if allowed else DENIED_TTL_SECONDS
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key] = (now + ttl, allowed)
        return allowed
