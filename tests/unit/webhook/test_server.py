"""gunicorn's configuration as the webhook builds it: worker layout from the command line, the
lingering worker class, and the start-up heap frozen in each worker."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask

from webhook.main import parse_args, server_options
from webhook.server import WebhookServer, _freeze_startup_heap
from webhook.worker import DEFAULT_LINGER_SECONDS, LingeringThreadWorker


def _server(*argv: str) -> WebhookServer:
    options = server_options(parse_args(list(argv)), Path("/certs/tls.crt"), Path("/certs/tls.key"))
    return WebhookServer(lambda: Flask("test"), options)


def test_worker_layout_and_linger_come_from_the_command_line() -> None:
    cfg = _server("--workers", "3", "--threads", "2", "--keepalive-linger", "0.25", "--port", "8443").cfg
    assert (cfg.workers, cfg.threads) == (3, 2)
    assert cfg.bind == ["0.0.0.0:8443"]
    assert issubclass(cfg.worker_class, LingeringThreadWorker)
    assert cfg.worker_class.linger_seconds == 0.25


def test_defaults_two_workers_of_four_threads_lingering_briefly() -> None:
    cfg = _server().cfg
    assert (cfg.workers, cfg.threads, cfg.keepalive) == (2, 4, 30)
    assert cfg.worker_class.linger_seconds == DEFAULT_LINGER_SECONDS == 0.1
    assert cfg.post_worker_init is _freeze_startup_heap


@pytest.mark.parametrize(("argv", "message"), [
    (["--keepalive-linger", "-0.1"], "--keepalive-linger must be between 0 and 1 second"),
    (["--keepalive-linger", "2"], "--keepalive-linger must be between 0 and 1 second"),
    (["--threads", "0"], "--workers and --threads must be at least 1"),
    (["--workers", "0"], "--workers and --threads must be at least 1"),
])
def test_bad_layout_flags_stop_with_the_flag_named(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert message in capsys.readouterr().err


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.mark.usefixtures("unfrozen")
def test_post_worker_init_moves_the_startup_heap_out_of_the_collectors_reach() -> None:
    assert gc.get_freeze_count() == 0
    _freeze_startup_heap(object())
    # Everything alive now (this test process's modules, like a worker's app) is frozen.
    assert gc.get_freeze_count() > 10_000
