"""Kubernetes Events from every controller of the process: one broadcaster, one recorder per source.

client-go's ``tools/record`` (event.go, events_cache.go) is the model, as it is for Kueue, whose
controllers all record through controller-runtime's one broadcaster:

* :class:`EventBroadcaster` is built once per process (``controller.main``) on the controller's
  one client budget, as Kueue's binary shares one rate limiter among all its clients, but in
  the low-priority lane of it (``KubeClient.with_spare_budget``): Events take only the tokens
  the writes that admit workloads leave over, so they never delay an admission.
  ``ctrl.event_recorder(component)`` hands each area a :class:`Recorder` for its source
  component; the reason strings are Kueue's and are chosen by the callers.
* ``emit`` only enqueues: background sender threads write to the API. The scheduler emits two
  Events per admission from inside its admission writes, and sending them there made every
  admission wait for two more round trips (58 % of the admission writers' time in the scheduler
  baseline, docs/performance.md). The queues (:class:`~controller.runtime.event_queue.PendingEvents`)
  hold at most :data:`MAX_QUEUED` distinct Events, a waiting room sized from the measured cost
  of an entry (:data:`~controller.runtime.event_queue.ENTRY_BYTES`) to hold a full-scale burst
  of admissions, whose two Events each outrun the Event client's budget for minutes: an Event
  identical to one still waiting is folded into it (one write, its ``count`` raised by the
  repeats), and a full queue sheds the least useful waiting Event (a superseded message of the
  same object and reason, else the oldest Normal one) rather than slow a controller down or
  lose the newest. :func:`senders_for_qps` threads send in parallel (enough to spend the Event
  client's whole budget while a create takes 400 ms), each object's Events
  always through the same one, so they keep the order in which they were emitted. An Event is
  stamped with the time it was emitted (client-go stamps it when recorded), so a late one
  still tells when it happened.
* Before sending, :class:`EventCorrelator` does what client-go's ``EventCorrelator`` does:
  a per source+object token bucket (:class:`SpamFilter`, client-go's
  ``EventSourceObjectSpamFilter``: burst 25, one more every 5 minutes) drops the excess;
  :class:`SimilarEvents` (client-go's ``EventAggregator``) turns the 10th and later distinct
  messages of one object, type and reason within 10 minutes into one Event whose message is
  ``(combined from similar events): <latest message>``; and an identical repeat within
  :data:`SERIES_WINDOW_SECONDS` patches the earlier Event's ``count`` and ``lastTimestamp``
  instead of creating another (a workload that stays inadmissible for an hour is one Event with
  a growing count, not thousands).
* Metrics: ``pykueue_events_sent_total`` (writes that reached the API, by ``write`` = create or
  patch), ``pykueue_events_aggregated_total`` (emitted Events that did not need a write of their
  own, by ``how`` = queued, series, similar), ``pykueue_events_dropped_total`` (by ``reason``);
  how late they leave: ``pykueue_events_queue_wait_seconds`` (from the first emit to a sender
  taking it) and ``pykueue_events_queue_wait_max_seconds``; and the waiting room's use,
  ``pykueue_events_waiting`` and ``pykueue_events_waiting_peak`` (entries), and how late the
  backlog is now, ``pykueue_events_oldest_waiting_seconds``.
* Messages are truncated to :data:`MAX_MESSAGE` characters, as Kueue's
  ``api.TruncateEventMessage`` does.

Events are best effort: failures are logged, never raised, so an Event can never fail a
reconcile. :class:`RecordingEvents` is the in-memory recorder unit tests assert on.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from prometheus_client import Counter, Gauge, Histogram

from controller.runtime.event_queue import Outcome, Pending, PendingEvents
from pykueue.api.timestamps import format_time, now_time
from pykueue.kube.errors import ApiError, NotFound
from pykueue.kube.resources import EVENTS, Resource

log = logging.getLogger(__name__)

Clock = Callable[[], float]

# The source component of the core controllers (scheduler, Workload and queue status
# controllers) and of concurrent admission; the Job integration records as its own.
COMPONENT = "pykueue-controller"
# Kueue truncates event messages to 1024 characters (api.TruncateEventMessage).
MAX_MESSAGE = 1024
# Distinct Events waiting, shared by the senders. The scheduler emits two Events per admission
# (QuotaReserved and Admitted, as Kueue) and may admit as fast as the client's budget allows, and
# Events take only what admissions leave of that budget, so while admission saturates it they
# wait: with an Event budget of its own at QPS 50 the full-scale scheduler baseline already had
# 14,517 waiting at its peak (docs/performance.md, "Events under load"), and Kueue's large
# performance shape (50,000 workloads, docs/performance.md "`large_scale` with every Event
# kept") emits about 102,000 while admissions hold the whole budget for 1,000 s. 150,000 entries
# of at most ENTRY_BYTES (measured about 550 B) bound the waiting room at under 92 MiB and hold
# that shape's every Event; beyond that the queue sheds.
MAX_QUEUED = 150_000
# Senders when the QPS is not known (tests, a Controller built without main).
SENDERS = 4
# The time one create takes under load, which sizes the senders: at QPS 50 a create took 77 ms on
# average in a full-scale baseline on an idle machine and 315 ms on a loaded one, where 13
# senders (sized for 250 ms) sent 31 Events/s of the 50 allowed; a sender is blocked
# for that long, so spending the whole budget (when admissions leave it all over) takes
# qps x this many of them.
SEND_SECONDS = 0.4
MAX_SENDERS = 32
# client-go's EventSourceObjectSpamFilter defaults: 25 Events at once per source+object, then
# one more every 5 minutes (defaultSpamBurst, defaultSpamQPS = 1/300).
SPAM_BURST = 25
SPAM_REFILL_SECONDS = 300.0
# An identical Event within this window is counted on the earlier one (client-go's
# EventLogger keeps its entries in an LRU of maxLruCacheEntries; the window is ours, below
# the apiserver's default one hour Event TTL so the Event we patch usually still exists).
SERIES_WINDOW_SECONDS = 600.0
CACHE_ENTRIES = 4096
# client-go's EventAggregator defaults: from the 10th distinct message of one object, type and
# reason within 10 minutes, the messages are combined into one Event.
SIMILAR_MAX_MESSAGES = 10
SIMILAR_WINDOW_SECONDS = 600.0
COMBINED_PREFIX = "(combined from similar events): "

DROPPED = Counter(
    "pykueue_events_dropped_total",
    "Emitted Events never written, by cause (superseded: a newer message of the same object and reason "
    "replaced it in a full queue; queue_full_normal / queue_full_warning: shed from a full queue; "
    "spam: the per-object rate limit).",
    ["reason"],
)
QUEUE_WAIT = Histogram(
    "pykueue_events_queue_wait_seconds",
    "How long an Event waited for a sender, from its first emit to a sender taking it.",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 3600),
)
QUEUE_WAIT_MAX = Gauge(
    "pykueue_events_queue_wait_max_seconds",
    "The longest an Event waited for a sender since the process started.",
)
WAITING = Gauge("pykueue_events_waiting", "Distinct Events waiting for a sender now.")
OLDEST_WAITING = Gauge(
    "pykueue_events_oldest_waiting_seconds",
    "How long the oldest Event still waiting for a sender has waited so far (0 when none waits).",
)
WAITING_PEAK = Gauge(
    "pykueue_events_waiting_peak", "The most distinct Events that waited for a sender at once since the process started."
)


class _RisingGauge:
    """A gauge that only rises: the largest value offered by any broadcaster of the process."""

    def __init__(self, gauge: Gauge) -> None:
        self._gauge = gauge
        self._value = 0.0
        self._lock = threading.Lock()

    def offer(self, value: float) -> None:
        with self._lock:
            if value > self._value:
                self._value = value
                self._gauge.set(value)


_WAIT_MAX = _RisingGauge(QUEUE_WAIT_MAX)
_WAITING_PEAK = _RisingGauge(WAITING_PEAK)

SENT = Counter(
    "pykueue_events_sent_total",
    "Event writes that reached the API server, by write (create: a new Event; patch: a count bump).",
    ["write"],
)
AGGREGATED = Counter(
    "pykueue_events_aggregated_total",
    "Emitted Events that needed no write of their own, by how (queued: folded into an identical Event "
    "still waiting; series: written as a count bump of an Event already sent; similar: combined with "
    "similar messages).",
    ["how"],
)


def senders_for_qps(qps: float) -> int:
    """Enough senders to spend an Event client's budget of ``qps`` writes per second while each
    write takes :data:`SEND_SECONDS` (at least :data:`SENDERS`, at most :data:`MAX_SENDERS`; an
    unlimited client gets the most). The budget, not the senders, then bounds the Event rate."""
    if qps <= 0:
        return MAX_SENDERS
    return min(MAX_SENDERS, max(SENDERS, math.ceil(qps * SEND_SECONDS)))


def _stamp(epoch: float | None) -> str:
    return now_time() if epoch is None else format_time(datetime.fromtimestamp(epoch, UTC))


def truncate(message: str, limit: int = MAX_MESSAGE) -> str:
    return message if len(message) <= limit else message[: limit - 3] + "..."


def reference(involved: Mapping[str, Any]) -> dict[str, Any]:
    """What an Event needs of its object (its ``involvedObject``), so a waiting Event does not
    keep the whole object alive."""
    meta = involved.get("metadata") or {}
    return {
        "apiVersion": involved.get("apiVersion"),
        "kind": involved.get("kind"),
        "metadata": {key: meta[key] for key in ("name", "namespace", "uid", "resourceVersion") if key in meta},
    }


class EventLike(Protocol):
    """What an Event says (:class:`controller.workload.status_plan.EventSpec` is one)."""

    @property
    def type(self) -> str: ...

    @property
    def reason(self) -> str: ...

    @property
    def message(self) -> str: ...


class EventSink(Protocol):
    """What a controller records Events through: a :class:`Recorder` or :class:`RecordingEvents`."""

    def emit(self, involved: Mapping[str, Any], event: EventLike) -> None: ...


class EventApi(Protocol):
    """The raw calls of :class:`pykueue.kube.client.KubeClient` the correlator writes with."""

    def create(self, res: Resource, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]: ...

    def patch(
        self, res: Resource, name: str, patch: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]: ...


class SpamFilter:
    """A token bucket per source+object (client-go's ``EventSourceObjectSpamFilter``).

    Every Event about an object, repeats included, takes a token; an object that has had
    ``burst`` Events gets one more each ``refill_seconds``. Buckets live in an LRU of
    :data:`CACHE_ENTRIES`, so a forgotten object starts again with a full bucket.
    """

    def __init__(
        self,
        burst: int = SPAM_BURST,
        refill_seconds: float = SPAM_REFILL_SECONDS,
        *,
        clock: Clock = time.monotonic,
        capacity: int = CACHE_ENTRIES,
    ) -> None:
        self._burst = float(max(1, burst))
        self._rate = 1.0 / refill_seconds if refill_seconds > 0 else float("inf")
        self._clock = clock
        self._capacity = capacity
        self._buckets: OrderedDict[tuple[str, ...], tuple[float, float]] = OrderedDict()  # tokens, at
        self._lock = threading.Lock()

    def allow(self, key: tuple[str, ...]) -> bool:
        with self._lock:
            now = self._clock()
            tokens, last = self._buckets.get(key, (self._burst, now))
            tokens = min(self._burst, tokens + (now - last) * self._rate)
            allowed = tokens >= 1.0
            self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)
            self._buckets.move_to_end(key)
            while len(self._buckets) > self._capacity:
                self._buckets.popitem(last=False)
            return allowed


class SimilarEvents:
    """client-go's ``EventAggregator``: the distinct messages seen per source, object, type and
    reason; from the ``max_messages``-th within ``window`` seconds the Event becomes one combined
    Event (message prefixed by :data:`COMBINED_PREFIX`, counted on one series).

    client-go keys the combined series by everything but the message and writes the latest
    message on each bump; :meth:`combine` returns that message and key. Entries live in an LRU of
    :data:`CACHE_ENTRIES`, each holding at most ``max_messages`` messages.
    """

    def __init__(
        self,
        max_messages: int = SIMILAR_MAX_MESSAGES,
        window: float = SIMILAR_WINDOW_SECONDS,
        capacity: int = CACHE_ENTRIES,
    ) -> None:
        self._max = max(1, max_messages)
        self._window = window
        self._capacity = capacity
        self._seen: OrderedDict[tuple[str, ...], tuple[set[str], float]] = OrderedDict()  # messages, last
        self._lock = threading.Lock()

    def combine(self, key: tuple[str, ...], message: str, now: float) -> str | None:
        """The combined message when ``message`` makes ``max_messages`` distinct ones for ``key``
        (the window restarts after ``window`` seconds without an Event for it); else ``None``.

        As client-go's: the set is then trimmed by one arbitrary message, so once an object has
        been combined, a message it has seen before may be combined or not.
        """
        with self._lock:
            messages, last = self._seen.get(key, (set(), now))
            if now - last > self._window:
                messages = set()
            messages.add(message)
            self._seen[key] = (messages, now)
            self._seen.move_to_end(key)
            while len(self._seen) > self._capacity:
                self._seen.popitem(last=False)
            if len(messages) < self._max:
                return None
            messages.pop()
            return truncate(COMBINED_PREFIX + message)


class _Series:
    """Recently written Events by identity, so a repeat bumps ``count`` (client-go's EventLogger)."""

    def __init__(self, window: float = SERIES_WINDOW_SECONDS, capacity: int = CACHE_ENTRIES) -> None:
        self._window = window
        self._capacity = capacity
        self._seen: OrderedDict[tuple[str, ...], tuple[str, str, int, float]] = OrderedDict()
        self._lock = threading.Lock()

    def lookup(self, key: tuple[str, ...], now: float) -> tuple[str, str, int] | None:
        with self._lock:
            entry = self._seen.get(key)
            if entry is None or now - entry[3] > self._window:
                return None
            return entry[0], entry[1], entry[2]

    def remember(self, key: tuple[str, ...], namespace: str, name: str, count: int, now: float) -> None:
        with self._lock:
            self._seen[key] = (namespace, name, count, now)
            self._seen.move_to_end(key)
            while len(self._seen) > self._capacity:
                self._seen.popitem(last=False)

    def forget(self, key: tuple[str, ...]) -> None:
        with self._lock:
            self._seen.pop(key, None)


class EventCorrelator:
    """Writes one Event synchronously: spam filter, then a new Event or a bump of its series.

    The senders of :class:`EventBroadcaster` call :meth:`write`; it never raises.
    """

    def __init__(
        self,
        client: EventApi,
        *,
        clock: Clock = time.monotonic,
        spam_burst: int = SPAM_BURST,
        spam_refill_seconds: float = SPAM_REFILL_SECONDS,
        series_window_seconds: float = SERIES_WINDOW_SECONDS,
        similar_max_messages: int = SIMILAR_MAX_MESSAGES,
        similar_window_seconds: float = SIMILAR_WINDOW_SECONDS,
    ) -> None:
        self._client = client
        self._clock = clock
        self._spam = SpamFilter(spam_burst, spam_refill_seconds, clock=clock)
        self._similar = SimilarEvents(similar_max_messages, similar_window_seconds)
        self._series = _Series(series_window_seconds)
        self._serial = itertools.count()
        self._filtered = DROPPED.labels("spam")
        self.filtered = 0

    def write(
        self,
        involved: Mapping[str, Any],
        type_: str,
        reason: str,
        message: str,
        component: str,
        repeats: int = 1,
        *,
        first_emitted: float | None = None,
        last_emitted: float | None = None,
    ) -> dict[str, Any] | None:
        """The Event written or patched; ``None`` when filtered or when the API refused it.

        ``repeats`` identical emits (folded while they waited) are one write whose ``count``
        rises by ``repeats``; the spam filter takes one token for them, as they cost one write.
        ``first_emitted``/``last_emitted`` (epoch seconds; now when not given) become the
        Event's ``firstTimestamp``/``lastTimestamp``, a series bump's ``lastTimestamp``.
        """
        meta = involved.get("metadata") or {}
        involved_ns = str(meta.get("namespace") or "")
        event_ns = involved_ns or "default"
        name = str(meta.get("name") or "")
        uid = str(meta.get("uid") or "")
        kind = str(involved.get("kind") or "")
        api_version = str(involved.get("apiVersion") or "")
        message = truncate(message)
        identity = (component, api_version, kind, involved_ns, name, uid)
        if not self._spam.allow(identity):
            self.filtered += repeats
            self._filtered.inc(repeats)
            if self.filtered == 1 or self.filtered % 1000 == 0:
                log.info(
                    "event rate limit reached for an object; dropping its events",
                    extra={"reason": reason, "involved": f"{involved_ns}/{name}", "filtered": self.filtered},
                )
            return None
        now = self._clock()
        combined = self._similar.combine((*identity, type_, reason), message, now)
        if combined is not None:
            message = combined
            AGGREGATED.labels("similar").inc(repeats)
            key = (uid, event_ns, name, type_, reason, COMBINED_PREFIX, component)
        else:
            key = (uid, event_ns, name, type_, reason, message, component)
        first_stamp = _stamp(first_emitted)
        last_stamp = first_stamp if last_emitted is None or last_emitted == first_emitted else _stamp(last_emitted)
        try:
            previous = self._series.lookup(key, now)
            if previous is not None:
                prev_ns, prev_name, prev_count = previous
                bump: dict[str, Any] = {"count": prev_count + repeats, "lastTimestamp": last_stamp}
                if combined is not None:
                    bump["message"] = message
                try:
                    updated = self._client.patch(EVENTS, prev_name, bump, prev_ns)
                except NotFound:  # the apiserver's TTL removed it: start a new series
                    self._series.forget(key)
                else:
                    self._series.remember(key, prev_ns, prev_name, prev_count + repeats, now)
                    SENT.labels("patch").inc()
                    AGGREGATED.labels("series").inc(repeats)
                    return updated
            event = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {
                    "name": f"{name or 'unknown'}.{time.time_ns():x}{next(self._serial) % 1000:03d}",
                    "namespace": event_ns,
                },
                "involvedObject": {
                    "apiVersion": api_version,
                    "kind": kind,
                    "name": name,
                    "namespace": involved_ns,
                    "uid": uid,
                    "resourceVersion": str(meta.get("resourceVersion") or ""),
                },
                "type": type_,
                "reason": reason,
                "message": message,
                "source": {"component": component},
                "reportingComponent": component,
                "firstTimestamp": first_stamp,
                "lastTimestamp": last_stamp,
                "count": repeats,
            }
            created = self._client.create(EVENTS, event, event_ns)
            SENT.labels("create").inc()
            self._series.remember(key, event_ns, created["metadata"]["name"], repeats, now)
            return created
        except (ApiError, ValueError, KeyError, TypeError) as exc:
            log.warning(
                "could not record event",
                extra={"reason": reason, "involved": f"{involved_ns}/{name}", "error": str(exc)},
            )
            return None


class EventBroadcaster:
    """The process's one Event pipeline; see the module docstring. Senders start on first use."""

    def __init__(
        self,
        client: EventApi,
        *,
        max_queued: int = MAX_QUEUED,
        senders: int = SENDERS,
        clock: Clock = time.monotonic,
        spam_burst: int = SPAM_BURST,
        spam_refill_seconds: float = SPAM_REFILL_SECONDS,
        wall_clock: Clock = time.time,
    ) -> None:
        self.correlator = EventCorrelator(
            client, clock=clock, spam_burst=spam_burst, spam_refill_seconds=spam_refill_seconds
        )
        per_sender = max(1, max_queued // max(1, senders))
        self._wall_clock = wall_clock
        self._queues: list[PendingEvents] = [
            PendingEvents(per_sender, clock=wall_clock) for _ in range(max(1, senders))
        ]
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._started = False
        self._stopped = False
        self._queued_merges = AGGREGATED.labels("queued")
        self.dropped = 0
        self.aggregated = 0
        # The waiting room's use and the lateness, for the metrics (under _stats_lock).
        self._stats_lock = threading.Lock()
        self.waiting = 0
        self.waiting_peak = 0
        self.longest_wait = 0.0
        _LIVE.add(self)

    @property
    def filtered(self) -> int:
        """Events the per-object rate limit dropped."""
        return self.correlator.filtered

    def recorder(self, component: str = COMPONENT) -> Recorder:
        """A recorder whose Events name ``component`` as their source."""
        return Recorder(self, component)

    def enqueue(self, involved: Mapping[str, Any], event: EventLike, component: str) -> None:
        """Hand the Event to its object's sender; never blocks (a repeat merges, a full queue
        sheds the least useful Event and counts it)."""
        if self._stopped:
            return
        self._ensure_senders()
        meta = involved.get("metadata") or {}
        shard = hash((meta.get("namespace"), meta.get("name"))) % len(self._queues)
        outcome = self._queues[shard].put(
            reference(involved), event.type, event.reason, truncate(event.message), component
        )
        self._count(outcome)

    def _count(self, outcome: Outcome) -> None:
        if outcome.added:
            with self._stats_lock:
                self.waiting += 1
                WAITING.inc()
                if self.waiting > self.waiting_peak:
                    self.waiting_peak = self.waiting
                    _WAITING_PEAK.offer(self.waiting)
        if outcome.merged:
            self.aggregated += 1
            self._queued_merges.inc()
        if outcome.shed_reason is not None:
            self.dropped += outcome.shed_events
            DROPPED.labels(outcome.shed_reason).inc(outcome.shed_events)
            if self.dropped == outcome.shed_events or self.dropped // 1000 != (self.dropped - outcome.shed_events) // 1000:
                log.warning(
                    "event queue full; shedding events",
                    extra={"dropped": self.dropped, "reason": outcome.shed_reason},
                )

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued Event was sent (or ``timeout``); True when drained."""

        deadline = time.monotonic() + timeout
        return all(pending.join(max(0.0, deadline - time.monotonic())) for pending in self._queues)

    def shutdown(self, timeout: float = 5.0) -> bool:
        """Send what is queued (bounded by ``timeout``), then stop the senders; later Events are
        ignored. Like client-go's ``Broadcaster.Shutdown``, called once the controllers stopped."""
        with self._lock:
            self._stopped = True
            started = self._started
        if not started:
            return True
        flushed = self.flush(timeout)
        for pending in self._queues:
            # Not flushed in time, a sender may still be busy: that daemon thread ends with the
            # process; the others return once their queue is empty.
            pending.stop()
        return flushed

    def _ensure_senders(self) -> None:
        if self._started:
            return
        with self._lock:
            if self._started or self._stopped:
                return
            for index, pending in enumerate(self._queues):
                thread = threading.Thread(
                    target=self._send_loop, args=(pending,), name=f"event-sender-{index}", daemon=True
                )
                thread.start()
                self._threads.append(thread)
            self._started = True

    def _send_loop(self, pending: PendingEvents) -> None:
        while True:
            item = pending.get()
            if item is None:
                return
            self._taken(item)
            try:
                self.correlator.write(
                    item.involved,
                    item.type,
                    item.reason,
                    item.message,
                    item.component,
                    item.repeats,
                    first_emitted=item.first_emitted,
                    last_emitted=item.last_emitted,
                )
            except Exception:  # write never raises by contract; a bug must not kill the sender
                log.exception("sending an event failed", extra={"reason": item.reason})
            finally:
                pending.task_done()


    def oldest_wait(self) -> float:
        """How long the oldest Event still waiting has waited; 0 when none waits."""
        emitted = [e for e in (q.oldest_emitted() for q in self._queues) if e is not None]
        return max(0.0, self._wall_clock() - min(emitted)) if emitted else 0.0

    def _taken(self, item: Pending) -> None:
        """A sender took ``item``: one fewer waiting, and how long it waited."""
        wait = max(0.0, self._wall_clock() - item.first_emitted)
        QUEUE_WAIT.observe(wait)
        with self._stats_lock:
            self.waiting -= 1
            WAITING.dec()
            if wait > self.longest_wait:
                self.longest_wait = wait
                _WAIT_MAX.offer(wait)


# The process's broadcasters (one outside tests), read when /metrics is scraped.
_LIVE: weakref.WeakSet[EventBroadcaster] = weakref.WeakSet()
OLDEST_WAITING.set_function(lambda: max((b.oldest_wait() for b in list(_LIVE)), default=0.0))


class Recorder:
    """Records Events for one source component through the shared :class:`EventBroadcaster`."""

    def __init__(self, broadcaster: EventBroadcaster, component: str) -> None:
        self.broadcaster = broadcaster
        self.component = component

    def emit(self, involved: Mapping[str, Any], event: EventLike) -> None:
        self.broadcaster.enqueue(involved, event, self.component)


class RecordingEvents:
    """Collects events in memory: ``[(namespace/name, type, reason, message)]`` (for unit tests)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []
        self._lock = threading.Lock()

    def emit(self, involved: Mapping[str, Any], event: EventLike) -> None:
        meta = involved.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}".lstrip("/")
        with self._lock:
            self.events.append((key, event.type, event.reason, truncate(event.message)))

    def reasons(self, key: str | None = None) -> list[str]:
        with self._lock:
            return [reason for k, _, reason, _ in self.events if key is None or k == key]
