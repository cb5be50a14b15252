"""The manager's Job status mirrors the worker's exactly, whatever a merge patch would keep."""

from __future__ import annotations

from typing import Any

from controller.multikueue.dispatch import job_status_patch


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386, as the apiserver applies a merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result


def job(status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "j"}, "status": status}


def test_nothing_to_write_when_the_status_already_matches() -> None:
    status = {"active": 1, "uncountedTerminatedPods": {}}
    assert job_status_patch(job(status), job(dict(status))) is None


def test_a_nested_field_the_worker_dropped_is_cleared() -> None:
    # The worker's Job counted its succeeded pod and then finished: a plain copy merged over the
    # mirrored status would keep the uid, and the Job API refuses a finished Job with uncounted pods.
    mirrored = {"active": 1, "uncountedTerminatedPods": {"succeeded": ["uid-1"]}}
    finished = {
        "succeeded": 1,
        "uncountedTerminatedPods": {},
        "conditions": [{"type": "Complete", "status": "True"}],
    }
    patch = job_status_patch(job(mirrored), job(finished))
    assert merge(mirrored, patch) == finished


def test_top_level_fields_the_worker_dropped_are_cleared_and_lists_replaced() -> None:
    mirrored = {"active": 2, "ready": 2, "conditions": [{"type": "Suspended", "status": "True"}]}
    running = {"active": 1, "conditions": []}
    patch = job_status_patch(job(mirrored), job(running))
    assert merge(mirrored, patch) == running
    assert patch is not None and patch["ready"] is None
