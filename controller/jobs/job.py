"""Read-only accessors on a batch/v1 Job as the apiserver serves it (a plain JSON dict).

These are the answers Kueue's ``GenericJob`` interface gives for a batch Job (``IsSuspended``,
``IsActive``, ``PodsReady``, ``Finished``, the pod count), kept in one place so the reconciler
and the tests agree on, for example, how parallelism and completions combine.
"""

# No ``from __future__ import annotations`` here: it binds the module-level name ``annotations``,
# which the accessor of that name below would silently redefine (and type checkers would then
# see the ``__future__`` feature object instead of the function). Python 3.11 needs no future
# import for the annotations this module uses.
from dataclasses import dataclass
from typing import Any

from pykueue.api.constants import JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION, JOB_MIN_PARALLELISM_ANNOTATION
from pykueue.api.objects import list_or_empty

JOB_API_VERSION = "batch/v1"
JOB_KIND = "Job"
JOB_GROUP = "batch"

Obj = dict[str, Any]


def dict_field(obj: Obj, field: str) -> Obj:
    """``obj[field]`` when it is an object, ``{}`` when missing or of another type."""
    value = obj.get(field)
    return value if isinstance(value, dict) else {}


def metadata(obj: Obj) -> Obj:
    """``metadata`` of any object, ``{}`` when missing (a strange object never raises here)."""
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def labels(obj: Obj) -> dict[str, str]:
    value = metadata(obj).get("labels")
    return value if isinstance(value, dict) else {}


def annotations(obj: Obj) -> dict[str, str]:
    value = metadata(obj).get("annotations")
    return value if isinstance(value, dict) else {}


def spec(obj: Obj) -> Obj:
    value = obj.get("spec")
    return value if isinstance(value, dict) else {}


def status(obj: Obj) -> Obj:
    value = obj.get("status")
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int) -> int:
    """An int field, or ``default`` when absent or not an integer (bools are not integers)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return value


def is_suspended(job: Obj) -> bool:
    return spec(job).get("suspend") is True


def pods_count(job: Obj) -> int:
    """How many pods the Job runs at once: ``parallelism``, capped by ``completions``.

    The apiserver defaults ``parallelism`` to 1, so an absent value only appears in objects
    that never went through it (tests, dry runs); it is treated the same way.
    """
    job_spec = spec(job)
    count = max(_int(job_spec.get("parallelism"), 1), 0)
    completions = job_spec.get("completions")
    if completions is not None:
        count = min(count, max(_int(completions, count), 0))
    return count


def min_parallelism(job: Obj) -> int | None:
    """``kueue.x-k8s.io/job-min-parallelism`` as an integer (partial admission), or None."""
    raw = annotations(job).get(JOB_MIN_PARALLELISM_ANNOTATION)
    try:
        return int(raw) if raw is not None else None
    except (TypeError, ValueError):
        return None


def completions_follow_parallelism(job: Obj) -> bool:
    """``kueue.x-k8s.io/job-completions-equal-parallelism: "true"``: a partially admitted Job's
    completions are set with its parallelism."""
    return str(annotations(job).get(JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION, "")).lower() == "true"


def active_pods(job: Obj) -> int:
    return max(_int(status(job).get("active"), 0), 0)


def is_active(job: Obj) -> bool:
    """Whether the Job controller still counts running (or terminating) pods for the Job."""
    return active_pods(job) > 0 or _int(status(job).get("terminating"), 0) > 0


def pods_ready(job: Obj) -> bool:
    """Kueue's test for a batch Job: ready plus succeeded pods reach the pod count."""
    job_status = status(job)
    ready = _int(job_status.get("ready"), 0) + _int(job_status.get("succeeded"), 0)
    return ready >= pods_count(job)


@dataclass(frozen=True, slots=True)
class Finish:
    """How a Job ended: ``success`` and the message of its terminal condition."""

    success: bool
    message: str


def finished(job: Obj) -> Finish | None:
    """``Finish`` when the Job has a true ``Complete`` or ``Failed`` condition, else ``None``."""
    for cond in list_or_empty(status(job).get("conditions")):
        if not isinstance(cond, dict) or cond.get("status") != "True":
            continue
        if cond.get("type") == "Complete":
            return Finish(True, str(cond.get("message") or "Job finished successfully"))
        if cond.get("type") == "Failed":
            reason = cond.get("reason") or "Failed"
            return Finish(False, str(cond.get("message") or f"Job failed: {reason}"))
    return None


def controller_owner(obj: Obj) -> Obj | None:
    """The ownerReference with ``controller: true``, if any."""
    for ref in list_or_empty(metadata(obj).get("ownerReferences")):
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def pod_template(job: Obj) -> Obj:
    value = spec(job).get("template")
    return value if isinstance(value, dict) else {}


def key(obj: Obj) -> str:
    """``namespace/name``, the work-queue key of a namespaced object."""
    meta = metadata(obj)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _index_ranges(value: Any, completions: int) -> list[tuple[int, int]]:
    """``"1,3-5"`` (the Job status's index lists) as inclusive ranges below ``completions``;
    unreadable parts are skipped (a strange status never raises here)."""
    ranges = []
    for part in str(value or "").split(","):
        first, _, last = part.strip().partition("-")
        try:
            low = int(first)
            high = int(last) if last else low
        except ValueError:
            continue
        high = min(high, completions - 1)
        if 0 <= low <= high:
            ranges.append((low, high))
    return ranges


def terminal_indexes(job: Obj, completions: int) -> int:
    """How many indexes of an Indexed Job will never run again: completed ones plus failed ones
    (``backoffLimitPerIndex`` used up), counted once each and only below ``completions`` (a stale
    status may list indexes a shrink removed)."""
    if completions <= 0:
        return 0
    job_status = status(job)
    ranges = sorted(
        _index_ranges(job_status.get("completedIndexes"), completions)
        + _index_ranges(job_status.get("failedIndexes"), completions)
    )
    counted, last = 0, -1
    for low, high in ranges:
        low = max(low, last + 1)
        if low <= high:
            counted += high - low + 1
            last = high
    return counted


def reclaimable_pods(job: Obj) -> int:
    """Pods of the Job whose quota can go back while it runs (Kueue's ``ReclaimablePods`` for a
    batch Job): once fewer completions remain than ``parallelism``, the difference will never
    run again. A one-pod Job, or one with nothing terminal yet, has none."""
    job_spec = spec(job)
    parallelism = max(_int(job_spec.get("parallelism"), 1), 0)
    completions = max(_int(job_spec.get("completions"), parallelism), 0)
    if job_spec.get("completionMode") == "Indexed":
        terminal = terminal_indexes(job, completions)
    else:
        terminal = max(_int(status(job).get("succeeded"), 0), 0)
    if parallelism <= 1 or terminal <= 0:
        return 0
    remaining = max(completions - terminal, 0)
    return parallelism - remaining if remaining < parallelism else 0
