"""gunicorn, embedded: TLS listener, gthread workers, and the master-side hooks.

Workers are ``gthread`` (a few threads each): handlers are short and mostly CPU, but a Job hook may
wait on an apiserver read, and threads keep one slow read from stalling other requests. The app is
loaded in each worker after the fork (no ``preload_app``), so each worker builds its own Kubernetes
client and cache rather than sharing sockets inherited from the master. The worker class is
:class:`webhook.worker.LingeringThreadWorker` (gthread with one thread hand-off fewer per request on
a busy connection), and each worker freezes its start-up heap out of the garbage collector.

The master owns everything that must happen once per replica: the certificate sync loop (started in
``when_ready``, stopped in ``on_exit``) and cleanup on exit.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication

from webhook.tls import ReloadingContext
from webhook.worker import DEFAULT_LINGER_SECONDS, lingering_worker

log = logging.getLogger("pykueue.webhook.server")


@dataclass
class ServerOptions:
    bind: str
    certfile: str
    keyfile: str
    workers: int = 2
    threads: int = 4
    # Above the apiserver's webhook timeout (10 s) so gunicorn never kills a worker the apiserver
    # is still waiting for.
    timeout: int = 30
    graceful_timeout: int = 10
    keepalive: int = 30
    linger_seconds: float = DEFAULT_LINGER_SECONDS
    on_ready: Callable[[], None] | None = None
    on_exit: Callable[[], None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _freeze_startup_heap(_worker: Any) -> None:
    """Move everything a worker built at start-up out of the garbage collector's reach.

    A worker starts with some 60,000 long-lived objects (Flask, jsonschema validators, the
    compiled schema checks, the Kubernetes client's modules). A full collection walks them all —
    about 7 ms on this machine, most of a 10 ms p99 budget, for every request in flight in that
    worker — yet none of them ever becomes garbage. ``gc.freeze`` after one collection leaves only
    what requests allocate to the collector. Called after the app is loaded (``post_worker_init``),
    since the app is built in each worker rather than in the master.
    """
    gc.collect()
    gc.freeze()


def _child_exit(_server: Any, worker: Any) -> None:
    # Per-process metric files of a dead worker are merged into the "dead" totals.
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


class WebhookServer(BaseApplication):
    def __init__(self, app_factory: Callable[[], Flask], options: ServerOptions) -> None:
        self.app_factory = app_factory
        self.options = options
        self.tls = ReloadingContext(options.certfile, options.keyfile)
        super().__init__()

    def load_config(self) -> None:
        options = self.options
        reloading = self.tls
        settings: dict[str, Any] = {
            "bind": [options.bind],
            "workers": options.workers,
            "worker_class": lingering_worker(options.linger_seconds),
            "post_worker_init": _freeze_startup_heap,
            "threads": options.threads,
            "timeout": options.timeout,
            "graceful_timeout": options.graceful_timeout,
            "keepalive": options.keepalive,
            "certfile": options.certfile,
            "keyfile": options.keyfile,
            "ssl_context": lambda _config, _default_factory: reloading.context(),
            "child_exit": _child_exit,
            "when_ready": lambda _server: options.on_ready() if options.on_ready else None,
            "on_exit": lambda _server: options.on_exit() if options.on_exit else None,
            "accesslog": None,
            "errorlog": "-",
            "loglevel": "warning",
            "proc_name": "pykueue-webhook",
            **options.extra,
        }
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:  # type: ignore[override]  # the stubs' start_response lacks PEP 3333's exc_info
        return self.app_factory()
