"""AdmissionReview v1: parsing requests and building responses, to the letter of the contract.

Two failure kinds are kept apart on purpose (as kopf does):

* a *malformed review* (not JSON, not an AdmissionReview, no ``request.uid``) raises
  :class:`MalformedReview`; the HTTP layer answers 400 so the apiserver applies the webhook's
  ``failurePolicy`` instead of reading a verdict we could not honestly give;
* a *denied user request* is a well-formed review answered with HTTP 200 and ``allowed: false``.

The response always echoes the request ``uid`` (a v1 apiserver rejects a response whose uid does not
match) and always carries ``apiVersion``/``kind``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

ADMISSION_API_VERSION = "admission.k8s.io/v1"
ADMISSION_KIND = "AdmissionReview"
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


class MalformedReview(ValueError):
    """The body is not an AdmissionReview we can answer; the reason is one line for the HTTP 400."""


@dataclass(frozen=True)
class GroupVersionKind:
    group: str
    version: str
    kind: str


@dataclass(frozen=True)
class UserInfo:
    username: str = ""
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class AdmissionRequest:
    """The parts of ``request`` the rules read. ``obj``/``old_obj`` are plain JSON dicts or None."""

    uid: str
    kind: GroupVersionKind
    resource: str
    sub_resource: str
    operation: str
    namespace: str
    name: str
    user: UserInfo
    obj: dict[str, Any] | None
    old_obj: dict[str, Any] | None
    dry_run: bool = False


@dataclass
class Verdict:
    """What a handler decided. ``patch`` is a list of RFC 6902 operations (mutating hooks only)."""

    allowed: bool = True
    message: str = ""
    code: int = 200
    reason: str = ""
    warnings: list[str] = field(default_factory=list)
    patch: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def deny(cls, message: str, *, code: int = 403, reason: str = "Forbidden") -> Verdict:
        return cls(allowed=False, message=message, code=code, reason=reason)


def _require_dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedReview(f"{what} must be a JSON object")
    return value


def _optional_object(value: Any, what: str) -> dict[str, Any] | None:
    if value is None:
        return None
    return _require_dict(value, what)


def _string(container: dict[str, Any], key: str, what: str, *, required: bool = False) -> str:
    value = container.get(key, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise MalformedReview(f"{what} must be a string")
    if required and not value:
        raise MalformedReview(f"{what} is required")
    return value


def parse_review(body: bytes) -> AdmissionRequest:
    """Parse an HTTP body into an :class:`AdmissionRequest` or raise :class:`MalformedReview`."""
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, ValueError) as err:
        raise MalformedReview(f"body is not JSON: {type(err).__name__}") from None
    review = _require_dict(document, "body")
    if review.get("kind") != ADMISSION_KIND:
        raise MalformedReview(f"kind must be {ADMISSION_KIND}")
    if review.get("apiVersion") != ADMISSION_API_VERSION:
        raise MalformedReview(f"apiVersion must be {ADMISSION_API_VERSION}")
    request = _require_dict(review.get("request"), "request")
    uid = _string(request, "uid", "request.uid", required=True)
    kind = _require_dict(request.get("kind"), "request.kind")
    gvk = GroupVersionKind(
        group=_string(kind, "group", "request.kind.group"),
        version=_string(kind, "version", "request.kind.version", required=True),
        kind=_string(kind, "kind", "request.kind.kind", required=True),
    )
    resource = _optional_object(request.get("resource"), "request.resource") or {}
    operation = _string(request, "operation", "request.operation", required=True)
    if operation not in OPERATIONS:
        raise MalformedReview(f"request.operation {operation[:32]!r} is not one of {sorted(OPERATIONS)}")
    user_info = _optional_object(request.get("userInfo"), "request.userInfo") or {}
    raw_groups = user_info.get("groups") or []
    if not isinstance(raw_groups, list) or not all(isinstance(g, str) for g in raw_groups):
        raise MalformedReview("request.userInfo.groups must be a list of strings")
    dry_run = request.get("dryRun", False)
    return AdmissionRequest(
        uid=uid,
        kind=gvk,
        resource=_string(resource, "resource", "request.resource.resource"),
        sub_resource=_string(request, "subResource", "request.subResource"),
        operation=operation,
        namespace=_string(request, "namespace", "request.namespace"),
        name=_string(request, "name", "request.name"),
        user=UserInfo(
            username=_string(user_info, "username", "request.userInfo.username"),
            groups=tuple(raw_groups),
        ),
        obj=_optional_object(request.get("object"), "request.object"),
        old_obj=_optional_object(request.get("oldObject"), "request.oldObject"),
        dry_run=bool(dry_run),
    )


def build_response(uid: str, verdict: Verdict, *, mutating: bool) -> dict[str, Any]:
    """The AdmissionReview answer for ``verdict``; only mutating hooks may carry a patch."""
    response: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        status: dict[str, Any] = {"code": verdict.code, "message": verdict.message}
        if verdict.reason:
            status["reason"] = verdict.reason
        response["status"] = status
    if verdict.warnings:
        response["warnings"] = list(verdict.warnings)
    if mutating and verdict.allowed and verdict.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(verdict.patch).encode()).decode()
    return {"apiVersion": ADMISSION_API_VERSION, "kind": ADMISSION_KIND, "response": response}
