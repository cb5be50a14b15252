"""Kubernetes Events from the core controllers, with Kueue's reason strings.

A thin layer over :meth:`pykueue.kube.client.KubeClient.emit_event` (best effort, aggregated):
messages are truncated to what the Events API accepts, and a controller that has no client (unit
tests) can use :class:`RecordingEvents` to assert on what would have been emitted.

:class:`KubeEvents` sends from a background thread, as client-go's event broadcaster does: the
scheduler emits two Events per admission from inside its admission writes, and sending them
there made every admission wait for two more API round trips (58 % of the admission writers'
time in the scheduler baseline, docs/performance.md). Like the broadcaster, it holds at most
:data:`MAX_QUEUED` events and drops (and counts) the rest rather than slow a controller down.
:data:`SENDERS` threads send in parallel (one round trip each at a time, so a single sender fell
behind two Events per admission); each object's Events always go through the same sender, so
they keep the order in which they were emitted.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from controller.workload.status_plan import EventSpec

log = logging.getLogger(__name__)

COMPONENT = "pykueue-controller"
# Kueue truncates event messages to 1024 characters (api.TruncateEventMessage).
MAX_MESSAGE = 1024
# client-go's broadcaster queue length (maxQueuedEvents), shared by the senders.
MAX_QUEUED = 1000
SENDERS = 4


def truncate(message: str, limit: int = MAX_MESSAGE) -> str:
    return message if len(message) <= limit else message[: limit - 3] + "..."


class EventSink(Protocol):
    def emit(self, involved: Mapping[str, Any], event: EventSpec) -> None: ...


class KubeEvents:
    """Emit through ``client`` (it aggregates repeats and never raises) from background sender
    threads, each object's Events in the order emitted; see the module docstring."""

    def __init__(
        self, client: Any, component: str = COMPONENT, *, max_queued: int = MAX_QUEUED, senders: int = SENDERS
    ) -> None:
        self._client = client
        self._component = component
        per_sender = max(1, max_queued // max(1, senders))
        self._queues: list[queue.Queue[tuple[dict[str, Any], EventSpec]]] = [
            queue.Queue(maxsize=per_sender) for _ in range(max(1, senders))
        ]
        self._start_lock = threading.Lock()
        self._started = False
        self.dropped = 0

    def emit(self, involved: Mapping[str, Any], event: EventSpec) -> None:
        self._ensure_senders()
        meta = involved.get("metadata") or {}
        shard = hash((meta.get("namespace"), meta.get("name"))) % len(self._queues)
        try:
            self._queues[shard].put_nowait((dict(involved), event))
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("event queue full; dropping events", extra={"dropped": self.dropped})

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued event was sent (or ``timeout``); True when drained."""
        done = threading.Event()

        def join_all() -> None:
            for pending in self._queues:
                pending.join()
            done.set()

        threading.Thread(target=join_all, daemon=True).start()
        return done.wait(timeout)

    def _ensure_senders(self) -> None:
        if self._started:
            return
        with self._start_lock:
            if not self._started:
                for index, pending in enumerate(self._queues):
                    threading.Thread(
                        target=self._send_loop, args=(pending,), name=f"event-sender-{index}", daemon=True
                    ).start()
                self._started = True

    def _send_loop(self, pending: queue.Queue[tuple[dict[str, Any], EventSpec]]) -> None:
        while True:
            involved, event = pending.get()
            try:
                self._client.emit_event(
                    involved, event.type, event.reason, truncate(event.message), self._component
                )
            except Exception:  # emit_event never raises by contract; a bug must not kill the sender
                log.exception("sending an event failed", extra={"reason": event.reason})
            finally:
                pending.task_done()


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
