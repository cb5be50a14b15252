"""Leader election on a ``coordination.k8s.io/v1`` Lease (client-go's tools/leaderelection).

Only the leader admits workloads; standbys keep warm caches and wait. The state machine follows
client-go:

* A candidate takes the lease when nobody holds it, or when the record it observes has not
  changed for ``lease_duration`` seconds **of its own clock** (timestamps written in the Lease
  are informational: comparing them across machines would make the election depend on clock
  skew). Unlike client-go, which counts from the moment it *saw* a change, we count from the
  previous read that still showed the old record (the change cannot be older than that), and
  we wake up exactly at expiry instead of at the next retry tick. A standby therefore takes over
  within ``lease_duration`` of the leader's death rather than up to two retry periods later. It
  stays safe: that earlier bound is only used when the previous read is less than
  ``lease_duration - renew_deadline`` old, so the standby still waits more than
  ``renew_deadline`` after the last renewal, by which time a live leader that could not renew
  has already stepped down.
* The leader renews every ``retry_period``; if it cannot renew for ``renew_deadline`` seconds,
  or it sees another holder in the record, it stops leading at once.
* Every write carries the Lease's resourceVersion, so two candidates racing for the same record
  cannot both win (the loser gets a Conflict).
* On graceful shutdown the leader releases the lease (empty holder) so a standby takes over
  without waiting out the lease duration.

There is no fencing: an old leader that is paused past the lease duration may write once more
before noticing. Reconcilers therefore make conflict-checked, idempotent writes.

:meth:`LeaderElector.tick` is one step of the state machine and returns how long to wait before
the next; tests drive it with a fake clock and an in-memory lock.
"""

from __future__ import annotations

import enum
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from controller.runtime import metrics
from pykueue.api.timestamps import format_micro_time
from pykueue.kube.errors import AlreadyExists, ApiError, Conflict
from pykueue.kube.resources import LEASES

log = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class LeaderRecord:
    """The Lease spec fields that matter for the election."""

    holder_identity: str = ""
    lease_duration_seconds: int = 15
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int = 0


@dataclass(frozen=True)
class ObservedLease:
    record: LeaderRecord
    resource_version: str


class Lock(Protocol):
    """Storage for the leader record; writes must be compare-and-swap on resource_version."""

    @property
    def description(self) -> str: ...

    def get(self) -> ObservedLease | None: ...

    def create(self, record: LeaderRecord) -> ObservedLease: ...

    def update(self, record: LeaderRecord, resource_version: str) -> ObservedLease: ...


class LeaseLock:
    """A :class:`Lock` on a Lease object through :class:`pykueue.kube.client.KubeClient`."""

    def __init__(self, client: Any, namespace: str, name: str) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name

    @property
    def description(self) -> str:
        return f"{self.namespace}/{self.name}"

    def get(self) -> ObservedLease | None:
        lease = self._client.get(LEASES, self.name, self.namespace)
        return None if lease is None else self._observed(lease)

    def create(self, record: LeaderRecord) -> ObservedLease:
        body = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": self._spec(record),
        }
        return self._observed(self._client.create(LEASES, body, self.namespace))

    def update(self, record: LeaderRecord, resource_version: str) -> ObservedLease:
        body = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": self.name, "namespace": self.namespace, "resourceVersion": resource_version},
            "spec": self._spec(record),
        }
        return self._observed(self._client.replace(LEASES, body))

    @staticmethod
    def _spec(record: LeaderRecord) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "holderIdentity": record.holder_identity,
            "leaseDurationSeconds": record.lease_duration_seconds,
            "leaseTransitions": record.lease_transitions,
        }
        if record.acquire_time:
            spec["acquireTime"] = record.acquire_time
        if record.renew_time:
            spec["renewTime"] = record.renew_time
        return spec

    @staticmethod
    def _observed(lease: dict[str, Any]) -> ObservedLease:
        spec = lease.get("spec") or {}
        record = LeaderRecord(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )
        return ObservedLease(record, str((lease.get("metadata") or {}).get("resourceVersion") or ""))


class State(enum.Enum):
    FOLLOWING = "following"
    LEADING = "leading"
    STOPPED = "stopped"


@dataclass
class Callbacks:
    """``on_started_leading`` runs in its own thread and gets an Event set when leadership ends;
    ``on_stopped_leading`` runs synchronously when leadership is lost or released (it is always
    called once when the elector stops, even if it never led, like client-go);
    ``on_new_leader`` hears every holder change it observes."""

    on_started_leading: Callable[[threading.Event], None] = lambda _stop: None
    on_stopped_leading: Callable[[], None] = lambda: None
    on_new_leader: Callable[[str], None] = lambda _identity: None


@dataclass
class ElectionConfig:
    lease_name: str
    lease_namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leaderElection: identity must not be empty")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("leaderElection.leaseDuration must be greater than leaderElection.renewDeadline")
        if self.renew_deadline <= self.retry_period * 1.2:
            raise ValueError("leaderElection.renewDeadline must be greater than 1.2 x leaderElection.retryPeriod")
        if self.retry_period <= 0:
            raise ValueError("leaderElection.retryPeriod must be positive")


@dataclass
class _Observation:
    record: LeaderRecord | None = None
    at: float = 0.0


@dataclass
class LeaderElector:
    """Campaign for a lease; call :meth:`run` in a thread, :meth:`stop` to end (and release)."""

    config: ElectionConfig
    lock: Lock
    callbacks: Callbacks = field(default_factory=Callbacks)
    clock: Clock = time.monotonic
    wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        self.state = State.FOLLOWING
        self._observed = _Observation()
        self._observed_rv = ""
        self._last_read: float | None = None  # when we last read the lease (any content)
        self._last_renew = 0.0
        self._leader_seen = ""
        self._stop = threading.Event()
        self._leading_stop: threading.Event | None = None
        self._stopped_called = False
        metrics.LEADER.labels(self.config.lease_name).set(0)

    # --- queries ---------------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.state is State.LEADING

    @property
    def observed_leader(self) -> str:
        return self._leader_seen

    # --- the state machine -------------------------------------------------------------------------

    def tick(self) -> float:
        """Try to acquire or renew once; returns seconds until the next attempt."""
        if self.state is State.STOPPED:
            return self.config.retry_period
        now = self.clock()
        succeeded = self._try_acquire_or_renew(now)
        if self.state is State.FOLLOWING:
            if succeeded:
                self._become_leader(now)
                return self.config.retry_period
            # client-go jitters acquisition retries by up to 1.2x so candidates do not align;
            # but never sleep past the moment the observed lease expires.
            retry = self.config.retry_period * (1 + 0.2 * self.rng.random())
            expires_in = self._expires_in(now)
            return retry if expires_in is None else max(0.01, min(retry, expires_in))
        # LEADING
        if succeeded:
            self._last_renew = now
            return self.config.retry_period
        holder = self._observed.record.holder_identity if self._observed.record else ""
        if holder and holder != self.config.identity:
            self._lose(f"lease taken over by {holder}")
            return self.config.retry_period
        deadline_in = self._last_renew + self.config.renew_deadline - now
        if deadline_in <= 0:
            self._lose(f"could not renew within {self.config.renew_deadline:g}s")
            return self.config.retry_period
        # Retry, but be awake at the renew deadline to step down on time.
        return max(0.01, min(self.config.retry_period, deadline_in))

    def _expires_in(self, now: float) -> float | None:
        record = self._observed.record
        if record is None or not record.holder_identity or record.holder_identity == self.config.identity:
            return None
        duration = record.lease_duration_seconds or self.config.lease_duration
        return self._observed.at + duration - now

    def _try_acquire_or_renew(self, now: float) -> bool:
        timestamp = format_micro_time(self.wall_clock())
        desired = LeaderRecord(
            holder_identity=self.config.identity,
            lease_duration_seconds=int(self.config.lease_duration),
            acquire_time=timestamp,
            renew_time=timestamp,
        )
        try:
            current = self.lock.get()
        except ApiError as exc:
            log.warning("cannot read the lease", extra={"lease": self.lock.description, "error": str(exc)})
            return False
        if current is None:
            try:
                created = self.lock.create(desired)
            except (AlreadyExists, Conflict):
                return False
            except ApiError as exc:
                log.warning("cannot create the lease", extra={"lease": self.lock.description, "error": str(exc)})
                return False
            self._observe(created, now)
            return True

        record = current.record
        previous_read, self._last_read = self._last_read, now
        if record != self._observed.record:
            self._observe(current, self._change_time_bound(previous_read, now))
        held_by_other = bool(record.holder_identity) and record.holder_identity != self.config.identity
        duration = record.lease_duration_seconds or self.config.lease_duration
        if held_by_other and self._observed.at + duration > now:
            return False

        if record.holder_identity == self.config.identity:
            desired = replace(
                desired, acquire_time=record.acquire_time or timestamp, lease_transitions=record.lease_transitions
            )
        else:
            desired = replace(desired, lease_transitions=record.lease_transitions + 1)
        try:
            updated = self.lock.update(desired, current.resource_version)
        except Conflict:
            return False
        except ApiError as exc:
            log.warning("cannot update the lease", extra={"lease": self.lock.description, "error": str(exc)})
            return False
        self._observe(updated, now)
        return True

    def _change_time_bound(self, previous_read: float | None, now: float) -> float:
        """A safe earliest time for a change we just saw.

        The change happened after our previous read (which still showed the old record). That
        bound is used only when the previous read is recent enough, closer than
        ``lease_duration - renew_deadline``: then the lease cannot expire in our eyes before
        the leader's own renew deadline has passed, so a live leader is never overtaken. After a
        long gap (we could not read the lease for a while) we fall back to client-go's "now".
        """
        margin = self.config.lease_duration - self.config.renew_deadline
        if self._observed.record is not None and previous_read is not None and now - previous_read < margin:
            return previous_read
        return now

    def _observe(self, lease: ObservedLease, now: float) -> None:
        self._observed = _Observation(lease.record, now)
        self._observed_rv = lease.resource_version
        holder = lease.record.holder_identity
        if holder and holder != self._leader_seen:
            self._leader_seen = holder
            log.info("new leader observed", extra={"lease": self.lock.description, "leader": holder})
            self._safe(self.callbacks.on_new_leader, holder)

    def _become_leader(self, now: float) -> None:
        self.state = State.LEADING
        self._last_renew = now
        metrics.LEADER.labels(self.config.lease_name).set(1)
        log.info("became leader", extra={"lease": self.lock.description, "identity": self.config.identity})
        self._leading_stop = threading.Event()
        threading.Thread(
            target=self._safe,
            args=(self.callbacks.on_started_leading, self._leading_stop),
            name="on-started-leading",
            daemon=True,
        ).start()

    def _lose(self, why: str) -> None:
        log.error("lost leadership", extra={"lease": self.lock.description, "reason": why})
        self._end_leadership()
        self.state = State.STOPPED

    def _end_leadership(self) -> None:
        metrics.LEADER.labels(self.config.lease_name).set(0)
        if self._leading_stop is not None:
            self._leading_stop.set()
        if not self._stopped_called:
            self._stopped_called = True
            self._safe(self.callbacks.on_stopped_leading)

    # --- lifecycle ---------------------------------------------------------------------------------

    def run(self) -> None:
        """Campaign until :meth:`stop` or until leadership is lost (then the process should exit,
        as controller-runtime's managers do, and restart with clean state)."""
        try:
            while not self._stop.is_set() and self.state is not State.STOPPED:
                delay = self.tick()
                self._stop.wait(delay)
        finally:
            if self.state is State.LEADING:
                self._end_leadership()
                if self.config.release_on_cancel:
                    self.release()
                self.state = State.STOPPED
            elif not self._stopped_called:
                self._stopped_called = True
                self._safe(self.callbacks.on_stopped_leading)

    def stop(self) -> None:
        self._stop.set()

    def release(self) -> bool:
        """Give up the lease if we hold it (holder cleared, 1 s duration), so a standby takes over."""
        try:
            current = self.lock.get()
            if current is None or current.record.holder_identity != self.config.identity:
                return False
            timestamp = format_micro_time(self.wall_clock())
            self.lock.update(
                LeaderRecord(
                    holder_identity="",
                    lease_duration_seconds=1,
                    acquire_time=timestamp,
                    renew_time=timestamp,
                    lease_transitions=current.record.lease_transitions,
                ),
                current.resource_version,
            )
        except ApiError as exc:
            log.warning("could not release the lease", extra={"lease": self.lock.description, "error": str(exc)})
            return False
        log.info("released the lease", extra={"lease": self.lock.description})
        return True

    @staticmethod
    def _safe(func: Callable[..., None], *args: Any) -> None:
        try:
            func(*args)
        except Exception:
            log.exception("leader election callback failed")
