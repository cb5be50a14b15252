"""One logging setup for both programs: JSON lines by default, readable text for humans.

Log records carry structured fields through ``extra=`` (``log.info("admitted", extra={"workload":
key})``); the JSON formatter emits every such field as a top-level key so log pipelines can filter
on them, and the text formatter appends them as ``key=value``. Nothing here is specific to a
program: each passes its component name, which appears on every line.
"""

from __future__ import annotations

import json
import logging
import sys
import traceback
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

LogFormat = Literal["json", "text"]

# Attributes every LogRecord has; anything else came from ``extra=`` and is a structured field.
_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None)).keys() | {"message", "asctime", "taskName"}
)


def structured_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The ``extra=`` fields of a record, in insertion order."""
    return {k: v for k, v in vars(record).items() if k not in _STANDARD_ATTRS and not k.startswith("_")}


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "msg", "component", ...fields, "error"}`` on one line."""

    def __init__(self, component: str) -> None:
        super().__init__()
        self.component = component

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "component": self.component,
        }
        for key, value in structured_fields(record).items():
            entry.setdefault(key, value)
        if record.exc_info:
            entry["error"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        return json.dumps(entry, default=str, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    """``ts LEVEL logger: msg key=value ...`` for local development."""

    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(f"{k}={v!r}" if isinstance(v, str) and " " in v else f"{k}={v}"
                          for k, v in structured_fields(record).items())
        line = f"{_timestamp(record)} {record.levelname:<7} {record.name}: {record.getMessage()}"
        if fields:
            line = f"{line} {fields}"
        if record.exc_info:
            line = f"{line}\n{''.join(traceback.format_exception(*record.exc_info)).rstrip()}"
        return line


def setup_logging(
    component: str,
    log_format: LogFormat = "json",
    level: str | int = "INFO",
    stream: TextIO | None = None,
) -> logging.Handler:
    """Route the root logger to ``stream`` (stderr) in the chosen format; returns the handler.

    Replaces any handler installed earlier by this function, so calling it twice (tests, a
    re-exec) never duplicates lines. The official client's urllib3 chatter is kept at WARNING.
    """
    if log_format not in ("json", "text"):
        raise ValueError(f"log format must be 'json' or 'text', not {log_format!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter(component) if log_format == "json" else TextFormatter())
    handler.set_name("pykueue")
    root = logging.getLogger()
    for existing in list(root.handlers):
        if existing.get_name() == "pykueue":
            root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    for noisy in ("urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return handler
