"""Kubernetes Events from the core controllers, with Kueue's reason strings.

A thin layer over :meth:`pykueue.kube.client.KubeClient.emit_event` (best effort, aggregated):
messages are truncated to what the Events API accepts, and a controller that has no client (unit
tests) can use :class:`RecordingEvents` to assert on what would have been emitted.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Protocol

from .plan import EventSpec

COMPONENT = "pykueue-controller"
# Kueue truncates event messages to 1024 characters (api.TruncateEventMessage).
MAX_MESSAGE = 1024


def truncate(message: str, limit: int = MAX_MESSAGE) -> str:
    return message if len(message) <= limit else message[: limit - 3] + "..."


class EventSink(Protocol):
    def emit(self, involved: Mapping[str, Any], event: EventSpec) -> None: ...


class KubeEvents:
    """Emit through the shared client (it aggregates repeats and never raises)."""

    def __init__(self, client: Any, component: str = COMPONENT) -> None:
        self._client = client
        self._component = component

    def emit(self, involved: Mapping[str, Any], event: EventSpec) -> None:
        self._client.emit_event(
            dict(involved), event.type, event.reason, truncate(event.message), self._component
        )


class RecordingEvents:
    """Collects events in memory: ``[(namespace/name, type, reason, message)]``."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []
        self._lock = threading.Lock()

    def emit(self, involved: Mapping[str, Any], event: EventSpec) -> None:
        meta = involved.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}".lstrip("/")
        with self._lock:
            self.events.append((key, event.type, event.reason, truncate(event.message)))

    def reasons(self, key: str | None = None) -> list[str]:
        with self._lock:
            return [reason for k, _, reason, _ in self.events if key is None or k == key]
