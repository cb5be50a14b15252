"""An in-memory leader-election lock for unit tests."""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.runtime.leaderelection import LeaderRecord, ObservedLease
from pykueue.kube.errors import AlreadyExists, Conflict, ServerError


@dataclass
class MemoryLock:
    """Compare-and-swap storage like the apiserver: a stale resourceVersion is a Conflict."""

    lease: ObservedLease | None = None
    failing: bool = False
    writes: list[LeaderRecord] = field(default_factory=list)
    _rv: int = 0

    @property
    def description(self) -> str:
        return "test/lease"

    def get(self) -> ObservedLease | None:
        if self.failing:
            raise ServerError(503, "ServiceUnavailable", "apiserver down")
        return self.lease

    def create(self, record: LeaderRecord) -> ObservedLease:
        if self.failing:
            raise ServerError(503, "ServiceUnavailable", "apiserver down")
        if self.lease is not None:
            raise AlreadyExists(409, "AlreadyExists", "exists")
        return self._store(record)

    def update(self, record: LeaderRecord, resource_version: str) -> ObservedLease:
        if self.failing:
            raise ServerError(503, "ServiceUnavailable", "apiserver down")
        if self.lease is None or self.lease.resource_version != resource_version:
            raise Conflict(409, "Conflict", "modified")
        return self._store(record)

    def _store(self, record: LeaderRecord) -> ObservedLease:
        self._rv += 1
        self.lease = ObservedLease(record, str(self._rv))
        self.writes.append(record)
        return self.lease
