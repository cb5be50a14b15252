"""The bounded queue of Events waiting for a sender: repeats merge, and a full queue sheds the
least useful Event instead of the newest one.

client-go's broadcaster drops whatever arrives once its ``maxQueuedEvents`` are waiting, and its
correlator folds repeats only after they were dequeued. Under load that is backwards: a
scheduler that marks a thousand workloads inadmissible in a second fills the queue with
identical Events, and then the next ``QuotaReserved`` is the one lost. :class:`PendingEvents`
therefore

* folds an Event identical (same source, object, type, reason and message) to one still
  waiting into it: one entry, its ``repeats`` bumped, written as one Event whose ``count``
  rises by that much (what the series count would have shown had each been sent);
* holds at most ``capacity`` distinct entries; when full, sheds, in this order:
  1. an older waiting Event of the same object, type and reason (its message is superseded by
     the newer one, as the newer one describes the object's state now) -- ``superseded``;
  2. the oldest waiting ``Normal`` Event -- ``queue_full_normal`` (Warnings are what an
     operator looks for; the oldest Normal is the stalest news);
  3. the new Event when it is ``Normal`` and every waiting one is a Warning, else the oldest
     Warning -- ``queue_full_normal`` / ``queue_full_warning``.

Entries leave in arrival order (a merged repeat keeps the first one's place), so each object's
Events keep the order in which they were emitted. Memory is bounded by ``capacity`` entries of at
most :data:`ENTRY_BYTES` each: an entry is one string (the object's identity, the Event's type,
reason and message joined by NUL, a character no name, uid or reason holds) and the object's
``resourceVersion``, no dictionaries and no tuple of separate strings, so that the waiting room
can hold every Event of a long burst of admissions (``tests/unit/runtime/test_event_queue.py``
measures it; ``python -m bench.event_queue_memory`` prints it). Each entry carries the wall-clock
times of its first and latest emit: the Event is stamped with them, as client-go stamps an Event
when it is recorded rather than when it is sent, and its wait in the queue is observed when a
sender takes it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Why an Event was not sent, the ``reason`` label of ``pykueue_events_dropped_total``.
SUPERSEDED = "superseded"
SHED_NORMAL = "queue_full_normal"
SHED_WARNING = "queue_full_warning"

# The most one waiting entry may cost, its strings included (none shared with the informer's
# copy of the object), for a Workload's QuotaReserved Event: the queue's bound in bytes is
# ``capacity * ENTRY_BYTES``. Measured with tracemalloc at about 550 bytes on CPython 3.11 (812
# while the key was a tuple of nine strings; test_event_queue.py holds the bound).
ENTRY_BYTES = 640

# The separator of a key's fields: NUL, which no Kubernetes name, uid, kind or reason may hold; a
# message holding one has it replaced (:func:`_clean`), so the fields split back unambiguously.
SEP = "\x00"
# A key is the fields component, apiVersion, kind, namespace, name, uid, type, reason and message
# joined by SEP: one string instead of a tuple of nine, a third less per waiting Event.
Key = str
_COMPONENT, _API_VERSION, _KIND, _NAMESPACE, _NAME, _UID, _TYPE, _REASON, _MESSAGE = range(9)


@dataclass(slots=True)
class Pending:
    """One Event waiting for a sender; ``repeats`` identical emits folded into it, the first at
    ``first_emitted`` and the latest at ``last_emitted`` (epoch seconds)."""

    key: Key
    resource_version: str
    first_emitted: float
    last_emitted: float
    repeats: int = 1
    seq: int = 0

    def fields(self) -> list[str]:
        """The key's nine fields (see :data:`Key`)."""
        return self.key.split(SEP, _MESSAGE)

    @property
    def component(self) -> str:
        return self.fields()[_COMPONENT]

    @property
    def type(self) -> str:
        return self.fields()[_TYPE]

    @property
    def reason(self) -> str:
        return self.fields()[_REASON]

    @property
    def message(self) -> str:
        return self.fields()[_MESSAGE]

    @property
    def similar(self) -> str:
        """The key without the message: a newer message of it supersedes this one."""
        return _similar_part(self.key)

    @property
    def involved(self) -> dict[str, Any]:
        """The Event's ``involvedObject`` reference, rebuilt for the write."""
        fields = self.fields()
        meta = {"name": fields[_NAME], "namespace": fields[_NAMESPACE], "uid": fields[_UID]}
        if self.resource_version:
            meta["resourceVersion"] = self.resource_version
        return {"apiVersion": fields[_API_VERSION], "kind": fields[_KIND], "metadata": meta}


def _similar_part(key: Key) -> str:
    return key[: key.rindex(SEP)]


def _clean(value: str) -> str:
    return value.replace(SEP, "\ufffd") if SEP in value else value


@dataclass(frozen=True)
class Outcome:
    """What :meth:`PendingEvents.put` did: merged into a waiting entry, and what it shed (the
    drop reason and how many emitted Events that entry held), if anything."""

    merged: bool = False
    shed_reason: str | None = None
    shed_events: int = 0

    @property
    def added(self) -> int:
        """How many entries the queue grew by: 1 for a new entry that shed nothing, else 0."""
        return int(not self.merged and self.shed_reason is None)


def _similar_key(involved: dict[str, Any], component: str, type_: str, reason: str) -> str:
    """The key's fields up to the reason (object, type and reason: what a newer message supersedes)."""
    meta = involved.get("metadata") or {}
    return SEP.join(
        _clean(str(value or ""))
        for value in (
            component,
            involved.get("apiVersion"),
            involved.get("kind"),
            meta.get("namespace"),
            meta.get("name"),
            meta.get("uid"),
            type_,
            reason,
        )
    )


class PendingEvents:
    """A FIFO of distinct waiting Events with merging and shedding (see the module docstring).

    Thread safe; :meth:`get` blocks. ``join`` waits until every entry taken was ``task_done``.
    ``clock`` (epoch seconds) stamps the emits.
    """

    def __init__(self, capacity: int, *, clock: Callable[[], float] = time.time) -> None:
        self._capacity = max(1, capacity)
        self._clock = clock
        # One ordered map per type, so the oldest Normal is found at once; ``get`` takes the
        # older of the two heads.
        self._normal: OrderedDict[Key, Pending] = OrderedDict()
        self._other: OrderedDict[Key, Pending] = OrderedDict()
        # hash(object+type+reason) -> key of its latest waiting entry. Keyed by the hash, not a
        # copy of the string, to keep an entry small; a collision only costs a supersede (the
        # key found is checked before it is used).
        self._similar: dict[int, Key] = {}
        self._seq = itertools.count()
        self._unfinished = 0
        self._stopped = False
        self._cond = threading.Condition()

    def __len__(self) -> int:
        with self._cond:
            return len(self._normal) + len(self._other)

    def put(self, involved: dict[str, Any], type_: str, reason: str, message: str, component: str) -> Outcome:
        similar = _similar_key(involved, component, type_, reason)
        key = similar + SEP + _clean(message)
        similar_hash = hash(similar)
        now = self._clock()
        with self._cond:
            bucket = self._normal if type_ == "Normal" else self._other
            waiting = bucket.get(key)
            if waiting is not None:
                waiting.repeats += 1
                waiting.last_emitted = now
                return Outcome(merged=True)
            shed: Pending | None = None
            shed_reason: str | None = None
            if len(self._normal) + len(self._other) >= self._capacity:
                older_key = self._similar.get(similar_hash)
                if older_key is not None and _similar_part(older_key) == similar:
                    shed, shed_reason = self._remove(older_key), SUPERSEDED
                elif self._normal:
                    shed, shed_reason = self._remove(next(iter(self._normal))), SHED_NORMAL
                elif type_ == "Normal":
                    return Outcome(shed_reason=SHED_NORMAL, shed_events=1)
                else:
                    shed, shed_reason = self._remove(next(iter(self._other))), SHED_WARNING
            meta = involved.get("metadata") or {}
            entry = Pending(key, str(meta.get("resourceVersion") or ""), now, now, seq=next(self._seq))
            bucket[key] = entry
            self._similar[similar_hash] = key
            self._unfinished += 1
            self._cond.notify()
            if shed is not None:
                self._unfinished -= 1
                self._cond.notify_all()
                return Outcome(shed_reason=shed_reason, shed_events=shed.repeats)
            return Outcome()

    def get(self) -> Pending | None:
        """The oldest waiting entry; blocks while there is none; ``None`` once stopped."""
        with self._cond:
            while not self._normal and not self._other:
                if self._stopped:
                    return None
                self._cond.wait()
            heads = [next(iter(b.values())) for b in (self._normal, self._other) if b]
            oldest = min(heads, key=lambda p: p.seq)
            return self._remove(oldest.key)

    def oldest_emitted(self) -> float | None:
        """When the oldest waiting entry was first emitted; ``None`` when none waits."""
        with self._cond:
            heads = [next(iter(b.values())).first_emitted for b in (self._normal, self._other) if b]
            return min(heads, default=None)

    def task_done(self) -> None:
        with self._cond:
            self._unfinished -= 1
            self._cond.notify_all()

    def join(self, timeout: float) -> bool:
        """Wait until every entry was taken and done; False after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._unfinished > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def stop(self) -> None:
        """Wake the sender: ``get`` returns ``None`` once nothing is left."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _remove(self, key: Key) -> Pending:
        bucket = self._normal if key in self._normal else self._other
        entry = bucket.pop(key)
        similar_hash = hash(entry.similar)
        if self._similar.get(similar_hash) == key:
            del self._similar[similar_hash]
        return entry
