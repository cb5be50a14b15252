"""A scripted :class:`pykueue.kube.transport.Transport` for client unit tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pykueue.kube.errors import ConnectionFailed
from pykueue.kube.transport import HttpResponse, Timeout


@dataclass
class Sent:
    method: str
    path: str
    query: list[tuple[str, str]]
    body: Any
    headers: dict[str, str]
    timeout: Timeout
    stream: bool


class ChunkStream:
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks
        self.closed = False

    def chunks(self) -> Iterator[bytes]:
        yield from self._chunks

    def close(self) -> None:
        self.closed = True


@dataclass
class ScriptedTransport:
    """Answers requests from a list: an HttpResponse, an exception to raise, or a JSON dict (200)."""

    answers: list[Any]
    sent: list[Sent] = field(default_factory=list)
    reloads: int = 0

    def request(self, method: str, path: str, *, query, body, headers, timeout, stream) -> HttpResponse:
        self.sent.append(Sent(method, path, list(query), body, dict(headers), timeout, stream))
        if not self.answers:
            raise AssertionError(f"unexpected request {method} {path}")
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, HttpResponse):
            return answer
        return HttpResponse(200, {}, json.dumps(answer).encode())

    def reload_credentials(self) -> None:
        self.reloads += 1

    def close(self) -> None:
        pass


def status(code: int, reason: str, message: str = "", retry_after: str | None = None) -> HttpResponse:
    body = json.dumps({"kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": message})
    headers = {"Retry-After": retry_after} if retry_after else {}
    return HttpResponse(code, headers, body.encode())


def refused() -> ConnectionFailed:
    return ConnectionFailed("connection refused")


class FakeClock:
    """A clock that moves only when slept on (token buckets, backoff)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
