"""The controller process's skeleton: shared informers, probes, leader election, plugged-in work.

:class:`Controller` is what the engine and job areas plug into:

* ``ctrl.informer(WORKLOADS)`` returns the process-wide shared informer for a resource (created
  on first use); add indexers and handlers before :meth:`Controller.run`.
* ``ctrl.register(runnable)`` adds a component with ``start()`` / ``stop()`` (and optionally
  ``register_handlers()``, called at once). Runnables start only on the leader, after every
  informer synced, and stop the moment leadership is lost.
* ``ctrl.event_recorder(component)`` returns a recorder on the process's one
  :class:`~controller.runtime.events.EventBroadcaster` (controller-runtime's
  ``GetEventRecorderFor``); queued Events are sent before the process exits.
* ``ctrl.on_started_leading`` / ``ctrl.on_stopped_leading`` are plain callback lists for work
  that is not a runnable; a started-leading callback gets an Event that is set when it must stop.

Every replica runs the informers (standbys keep warm caches, so a takeover does not start with a
cold list) and serves the probes; only the leader runs runnables. Losing the lease ends the
process with status 1 so it restarts clean, as controller-runtime managers do: threads that were
mid-reconcile cannot be trusted to notice in time, a fresh process can.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from controller.runtime.events import COMPONENT, EventBroadcaster, Recorder
from controller.runtime.health import HealthChecks, ProbeServer, start_probe_servers
from controller.runtime.informer import Informer, InformerSet
from controller.runtime.leaderelection import Callbacks, ElectionConfig, LeaderElector, LeaseLock, Lock
from controller.runtime.replica_role import role_of
from pykueue.api.config import Configuration
from pykueue.kube.resources import Resource

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_LOST_LEADERSHIP = 1


@runtime_checkable
class Runnable(Protocol):
    """A leader-only component (a reconciler with its work queue and workers, the admission loop)."""

    name: str

    def start(self) -> None: ...

    def stop(self) -> None: ...


class Controller:
    """See the module docstring."""

    def __init__(
        self,
        client: Any,
        *,
        identity: str,
        election: ElectionConfig | None,
        health_addr: str = "0.0.0.0:8081",
        metrics_addr: str = "0.0.0.0:8080",
        config: Configuration | None = None,
        sync_timeout: float | None = None,
        lock: Lock | None = None,
        event_broadcaster: EventBroadcaster | None = None,
    ) -> None:
        self.client = client
        # main passes one on the client's spare budget (KubeClient.with_spare_budget); by
        # default Events use ``client`` as it is.
        self.event_broadcaster = event_broadcaster or EventBroadcaster(client)
        self.identity = identity
        # The parsed Configuration the setup modules read (Kueue's defaults when none is given).
        self.config = config if config is not None else Configuration()
        self.informers = InformerSet(client)
        # What one setup module offers later ones, by name (the core offers "engine-reads", the
        # scheduler loop's controller.core.engine_reads.EngineReads, to the visibility API).
        self.shared: dict[str, Any] = {}
        self.health = HealthChecks()
        self.on_started_leading: list[Callable[[threading.Event], None]] = []
        self.on_stopped_leading: list[Callable[[], None]] = []
        self._election = election
        self._lock = lock  # the Lease by default; tests pass an in-memory lock
        self._health_addr = health_addr
        self._metrics_addr = metrics_addr
        self._sync_timeout = sync_timeout
        self._runnables: list[Runnable] = []
        self._started: list[Runnable] = []
        self._leader_lock = threading.Lock()
        self._servers: list[ProbeServer] = []
        self._elector: LeaderElector | None = None
        self._leading = threading.Event()
        self._lost = threading.Event()
        self._shutting_down = threading.Event()
        self.health.add_readiness("informers-synced", self.informers.has_synced)
        self.health.add_liveness("informers", self.informers.alive)

    # --- plugging in -----------------------------------------------------------------------------

    def informer(self, resource: Resource, **options: Any) -> Informer:
        """The shared informer for ``resource`` (see :meth:`InformerSet.get` for options)."""
        return self.informers.get(resource, **options)

    def event_recorder(self, component: str = COMPONENT) -> Recorder:
        """A recorder whose Events name ``component`` as their source, shared broadcaster."""
        return self.event_broadcaster.recorder(component)

    def register(self, runnable: Runnable) -> None:
        if not isinstance(runnable, Runnable):
            raise TypeError(f"{runnable!r} needs a name and start()/stop() to be registered")
        register_handlers = getattr(runnable, "register_handlers", None)
        if callable(register_handlers):
            register_handlers()
        self._runnables.append(runnable)

    @property
    def is_leader(self) -> bool:
        return self._leading.is_set()

    @property
    def servers(self) -> list[ProbeServer]:
        return list(self._servers)

    # --- running -----------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> int:
        """Run until ``stop`` is set (SIGTERM) or leadership is lost; returns the exit status."""
        self._servers = start_probe_servers(
            self._health_addr,
            self._metrics_addr,
            self.health,
            # Kueue's replica_role label: standalone without leader election, else leader/follower.
            role_of(self._election is not None, self._leading.is_set),
        )
        elector_thread: threading.Thread | None = None
        try:
            self.informers.start()
            log.info("waiting for informers to sync", extra={"informers": len(self.informers.informers())})
            if not self.informers.wait_for_sync(self._sync_timeout, stop):
                if stop.is_set():
                    return EXIT_OK
                log.error("informers did not sync in time", extra={"timeout": self._sync_timeout})
                return EXIT_LOST_LEADERSHIP
            log.info("informers synced")
            if self._election is None:
                self._start_leading(threading.Event())
            else:
                lock = self._lock or LeaseLock(
                    self.client, self._election.lease_namespace, self._election.lease_name
                )
                self._elector = LeaderElector(
                    self._election,
                    lock,
                    Callbacks(
                        on_started_leading=self._start_leading,
                        on_stopped_leading=self._stop_leading,
                        on_new_leader=lambda who: log.info("leader is", extra={"leader": who}),
                    ),
                )
                elector_thread = threading.Thread(target=self._elector.run, name="leader-election", daemon=True)
                self.health.add_liveness("leader-election", _thread_alive_or_done(elector_thread, self._lost))
                elector_thread.start()
            while not stop.wait(0.5):
                if self._lost.is_set():
                    break
        finally:
            self._shutting_down.set()
            if self._elector is not None and elector_thread is not None:
                # Stops the leader's work first (on_stopped_leading), then releases the Lease.
                self._elector.stop()
                elector_thread.join(timeout=10)
            elif self._leading.is_set():
                self._stop_leading()
            # The stopped runnables' last Events (drained reconciles) still reach the API.
            self.event_broadcaster.shutdown(timeout=5.0)
            self.informers.stop()
            for server in self._servers:
                server.stop()
        if self._lost.is_set():
            log.error("exiting after losing leadership")
            return EXIT_LOST_LEADERSHIP
        return EXIT_OK

    def _start_leading(self, leading_stop: threading.Event) -> None:
        # Serialised with _stop_leading: leadership lost while runnables are still starting must
        # neither start the remaining ones afterwards nor leave started ones running.
        with self._leader_lock:
            if leading_stop.is_set():
                return
            self._leading.set()
            log.info("starting leader work", extra={"runnables": [r.name for r in self._runnables]})
            for runnable in self._runnables:
                try:
                    runnable.start()
                except Exception:
                    log.exception("runnable failed to start", extra={"runnable": runnable.name})
                    self._lost.set()  # a half-started leader must not keep the lease
                    return
                self._started.append(runnable)
        for callback in self.on_started_leading:
            threading.Thread(target=callback, args=(leading_stop,), name="leader-callback", daemon=True).start()

    def _stop_leading(self) -> None:
        with self._leader_lock:
            self._leading.clear()
            started, self._started = self._started, []
            for runnable in reversed(started):
                try:
                    runnable.stop()
                except Exception:
                    log.exception("runnable failed to stop", extra={"runnable": runnable.name})
        for callback in self.on_stopped_leading:
            try:
                callback()
            except Exception:
                log.exception("on_stopped_leading callback failed")
        if not self._shutting_down.is_set():
            # Not a graceful shutdown: the lease was lost (or never obtainable). Exit and restart.
            self._lost.set()


def _thread_alive_or_done(thread: threading.Thread, finished: threading.Event) -> Callable[[], bool]:
    """Liveness of a thread that may legitimately end (then ``finished`` is set)."""
    return lambda: thread.is_alive() or finished.is_set() or not thread.ident
