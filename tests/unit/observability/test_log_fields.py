"""No ``extra=`` field may shadow a LogRecord attribute: logging raises KeyError for those at
the moment the line is logged, which would turn a log line into a crash in production."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
RESERVED = set(vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None))) | {"message", "asctime"}


def test_no_structured_field_shadows_a_log_record_attribute() -> None:
    offenders = []
    for package in ("pykueue", "controller", "webhook"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.keyword) and node.arg == "extra" and isinstance(node.value, ast.Dict):
                    for key in node.value.keys:
                        if isinstance(key, ast.Constant) and key.value in RESERVED:
                            offenders.append(f"{path.relative_to(ROOT)}:{node.value.lineno}: {key.value!r}")
    assert offenders == [], "rename these log fields:\n" + "\n".join(offenders)
