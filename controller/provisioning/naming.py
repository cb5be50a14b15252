"""Names of the objects the check creates, as Kueue names them, so tools written for Kueue find them.

* ProvisioningRequest: ``<workload>-<check>-<attempt>``, the attempt counting from 1;
* PodTemplate: ``ppt-<request>-<podSet>``.

Both are cut to 247 characters plus ``-`` and the first five hex digits of the SHA-1 of the full
name when longer (Kueue's ``limitObjectName``), so they stay valid object names.
"""

from __future__ import annotations

import hashlib
import re

HASH_LENGTH = 5
MAX_PREFIX = 252 - HASH_LENGTH
POD_TEMPLATE_PREFIX = "ppt"


def limit_object_name(full_name: str) -> str:
    if len(full_name) <= MAX_PREFIX:
        return full_name
    digest = hashlib.sha1(full_name.encode()).hexdigest()
    return f"{full_name[:MAX_PREFIX]}-{digest[:HASH_LENGTH]}"


def request_name(workload: str, check: str, attempt: int) -> str:
    return limit_object_name(f"{workload}-{check}-{attempt}")


def pod_template_name(request: str, pod_set: str) -> str:
    return limit_object_name(f"{POD_TEMPLATE_PREFIX}-{request}-{pod_set}")


def attempt_of(name: str, workload: str, check: str) -> int | None:
    """The attempt number of request ``name`` made for ``workload``'s ``check``, else ``None``.

    Names cut by :func:`limit_object_name` carry no readable attempt; they are not recognised
    (Kueue has the same limit), which only matters for names near 253 characters.
    """
    match = re.fullmatch(rf"{re.escape(workload)}-{re.escape(check)}-(\d+)", name)
    if match is None:
        return None
    attempt = int(match.group(1))
    return attempt if attempt >= 1 else None
