"""The Workload's ``PodsReady`` condition, from whether the job's pods are ready.

The workload controller's WaitForPodsReady logic (eviction after a timeout, requeue with
backoff) only reads this condition; the Job side is the one that knows how many pods are ready.
As in Kueue's job framework:

- not admitted (never, or no longer): ``False``/``WaitForStart``;
- admitted and ready + succeeded pods reach the podSet count: ``True``/``Started`` the first
  time, ``True``/``Recovered`` when it had dropped to ``WaitForRecovery``;
- admitted, not enough ready pods, but it was ready before (or already waiting to recover):
  ``False``/``WaitForRecovery`` — a pod failed after the start, which has its own timeout;
- otherwise ``False``/``WaitForStart``.
"""

from __future__ import annotations

from typing import Any

from controller.workload import view as wv
from controller.workload.status_plan import ConditionSpec
from pykueue.api.constants import (
    COND_PODS_READY,
    REASON_RECOVERED,
    REASON_STARTED,
    REASON_WAIT_FOR_RECOVERY,
    REASON_WAIT_FOR_START,
)

MSG_NOT_READY = "Not all pods are ready or succeeded"
MSG_WAITING_FOR_RECOVERY = "At least one pod has failed, waiting for recovery"
MSG_READY = "All pods reached readiness and the workload is running"


def pods_ready_condition(pods_ready: bool, workload: dict[str, Any]) -> ConditionSpec:
    """The ``PodsReady`` condition ``workload`` should carry.

    ``pods_ready``: the job has as many ready or succeeded pods as its podSets count (the job
    integration knows how to count them; see :func:`controller.jobs.job.pods_ready`).
    """
    previous = wv.condition(workload, COND_PODS_READY) or {}
    if not wv.is_admitted(workload):
        return ConditionSpec(COND_PODS_READY, "False", REASON_WAIT_FOR_START, MSG_NOT_READY)
    if pods_ready:
        recovered = previous.get("status") == "False" and previous.get("reason") == REASON_WAIT_FOR_RECOVERY
        return ConditionSpec(
            COND_PODS_READY, "True", REASON_RECOVERED if recovered else REASON_STARTED, MSG_READY
        )
    was_running = previous.get("status") == "True" or previous.get("reason") == REASON_WAIT_FOR_RECOVERY
    if was_running:
        return ConditionSpec(COND_PODS_READY, "False", REASON_WAIT_FOR_RECOVERY, MSG_WAITING_FOR_RECOVERY)
    return ConditionSpec(COND_PODS_READY, "False", REASON_WAIT_FOR_START, MSG_NOT_READY)


def differs(workload: dict[str, Any], wanted: ConditionSpec) -> bool:
    """Whether writing ``wanted`` would change the Workload (status or reason)."""
    current = wv.condition(workload, wanted.type) or {}
    return current.get("status") != wanted.status or current.get("reason") != wanted.reason
