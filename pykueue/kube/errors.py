"""Typed errors for Kubernetes API failures.

Callers branch on *what* went wrong (the object is gone, somebody else wrote first, the watch
expired) rather than on HTTP numbers, so every non-2xx answer is turned into one of these
classes by :func:`error_from_response`. The apiserver's ``Status`` body is kept on the error
because its ``reason`` and ``details.causes`` carry the field-level explanation users need.
"""

from __future__ import annotations

import json
from typing import Any


class ApiError(Exception):
    """A request the apiserver answered with an error (or that never got an answer: status 0)."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body: dict[str, Any] = body or {}
        self.retry_after = retry_after

    @property
    def causes(self) -> list[dict[str, Any]]:
        """The ``details.causes`` of the Status (field, reason, message), empty when absent."""
        details = self.body.get("details") or {}
        causes = details.get("causes") or []
        return [c for c in causes if isinstance(c, dict)]


class NotFound(ApiError):
    """404: the object (or its namespace, or the resource type) does not exist."""


class Conflict(ApiError):
    """409: the object changed since it was read; re-read and try again."""


class AlreadyExists(ApiError):
    """409 with reason AlreadyExists: a create hit an existing name."""


class Gone(ApiError):
    """410: the requested resourceVersion is too old (compacted); a watch must relist."""


class Forbidden(ApiError):
    """403: RBAC denies the request (or an admission webhook rejected it with 403)."""


class Unauthorized(ApiError):
    """401: the credentials were not accepted (an expired token, a rotated certificate)."""


class Invalid(ApiError):
    """422: the object failed validation; :attr:`causes` names the fields."""


class TooManyRequests(ApiError):
    """429: the apiserver is throttling us; :attr:`retry_after` says how long to wait."""


class ServerError(ApiError):
    """5xx: the apiserver (or etcd, or a webhook it called) failed."""


class ConnectionFailed(ApiError):
    """The request never got an HTTP answer (refused, reset, timed out); status is 0."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "ConnectionFailed", message)


def _class_for(status: int, reason: str) -> type[ApiError]:
    if status == 404:
        return NotFound
    if status == 409:
        return AlreadyExists if reason == "AlreadyExists" else Conflict
    if status == 410 or reason in ("Expired", "Gone"):
        return Gone
    if status == 403:
        return Forbidden
    if status == 401:
        return Unauthorized
    if status == 422:
        return Invalid
    if status == 429:
        return TooManyRequests
    if status >= 500:
        return ServerError
    return ApiError


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (the apiserver only sends the delta-seconds form)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return max(0.0, seconds)


def error_from_status(status_obj: dict[str, Any], http_status: int | None = None) -> ApiError:
    """Build the typed error for a ``Status`` object, as found in a body or a watch ERROR event."""
    code = http_status if http_status is not None else int(status_obj.get("code") or 0)
    reason = str(status_obj.get("reason") or "")
    message = str(status_obj.get("message") or reason or f"HTTP {code}")
    retry_after = None
    details = status_obj.get("details") or {}
    if isinstance(details, dict) and details.get("retryAfterSeconds"):
        retry_after = float(details["retryAfterSeconds"])
    cls = _class_for(code, reason)
    return cls(code, reason or cls.__name__, message, body=status_obj, retry_after=retry_after)


def error_from_response(status: int, body: bytes | str | None, retry_after_header: str | None) -> ApiError:
    """Build the typed error for an HTTP error answer; tolerate bodies that are not JSON."""
    status_obj: dict[str, Any] = {}
    if body:
        try:
            parsed = json.loads(body)
            if isinstance(parsed, dict):
                status_obj = parsed
        except ValueError:
            text = body.decode(errors="replace") if isinstance(body, bytes) else body
            status_obj = {"message": text.strip()[:2000]}
    error = error_from_status(status_obj, http_status=status)
    header_delay = parse_retry_after(retry_after_header)
    if header_delay is not None:
        error.retry_after = header_delay
    return error
