"""JSON and text log lines carry the message, the level and structured fields."""

from __future__ import annotations

import io
import json
import logging

import pytest

from pykueue.observability.logging import setup_logging


@pytest.fixture
def restore_root():
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_json_lines_have_fields_and_errors(restore_root) -> None:
    out = io.StringIO()
    setup_logging("pykueue-controller", "json", stream=out)
    log = logging.getLogger("pykueue.test")
    log.info("admitted %s", "wl-1", extra={"workload": "ns/wl-1", "attempt": 2})
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("failed")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["msg"] == "admitted wl-1"
    assert first["level"] == "info" and first["component"] == "pykueue-controller"
    assert first["workload"] == "ns/wl-1" and first["attempt"] == 2
    assert first["ts"].endswith("Z")
    assert "RuntimeError: boom" in second["error"]


def test_setup_twice_does_not_duplicate_lines(restore_root) -> None:
    out = io.StringIO()
    setup_logging("c", "text", stream=out)
    setup_logging("c", "text", stream=out)
    logging.getLogger("x").warning("once", extra={"key": "a b"})
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    assert "WARNING" in lines[0] and "key='a b'" in lines[0]


def test_unknown_format_is_rejected(restore_root) -> None:
    with pytest.raises(ValueError, match="log format"):
        setup_logging("c", "xml")  # type: ignore[arg-type]
