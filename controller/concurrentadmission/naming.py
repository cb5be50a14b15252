"""Deterministic option workload names: ``<parent>-option-<flavor or option name>``.

Names must be valid object names (DNS-1123 subdomains, at most 253 characters). When the plain
form is too long the *parent* part is cut and a short hash of the full parent name is added, so
``-option-<suffix>`` stays readable and two long parents sharing a prefix still get different
names. The webhook bounds explicit option names (``webhook.rules.concurrent``) so this is always
possible; an over-long flavor name is cut and hashed the same way as a last resort.
"""

from __future__ import annotations

import hashlib

from pykueue.api.constants import OPTION_NAME_INFIX

MAX_NAME_LENGTH = 253
HASH_LENGTH = 5
# A parent prefix shorter than this would no longer tell a reader whose option it is.
MIN_PARENT_PREFIX = 9


def _digest(*parts: str) -> str:
    return hashlib.sha1("\n".join(parts).encode(), usedforsecurity=False).hexdigest()[:HASH_LENGTH]


def _trim(text: str, length: int) -> str:
    """``text`` cut to ``length`` without a trailing ``-`` or ``.`` (names must end alphanumeric)."""
    return text[:length].rstrip("-.")


def option_name(parent: str, suffix: str, max_length: int = MAX_NAME_LENGTH) -> str:
    """The name of ``parent``'s option for flavor / explicit option ``suffix``."""
    plain = f"{parent}{OPTION_NAME_INFIX}{suffix}"
    if len(plain) <= max_length:
        return plain
    hashed_parent_room = MIN_PARENT_PREFIX + 1 + HASH_LENGTH
    max_suffix = max_length - hashed_parent_room - len(OPTION_NAME_INFIX)
    if len(suffix) > max_suffix:
        suffix = f"{_trim(suffix, max_suffix - HASH_LENGTH - 1)}-{_digest(suffix)}"
    room = max_length - len(OPTION_NAME_INFIX) - len(suffix) - HASH_LENGTH - 1
    return f"{_trim(parent, room)}-{_digest(parent, suffix)}{OPTION_NAME_INFIX}{suffix}"
