"""Plugs the batch/v1 Job integration into the controller process (``controller.main``).

``setup(ctrl)`` reads the Job-related parts of the Configuration, creates the shared informers
the reconciler reads, and registers a leader-only :class:`~.controller.JobController`. The
integration is skipped when the Configuration's ``integrations.frameworks`` does not list
``batch/job`` (Kueue's switch for it).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from .controller import JobController
from .management import ManagementPolicy
from .reconciler import COMPONENT as JOB_EVENT_COMPONENT
from .reconciler import JobSettings

log = logging.getLogger(__name__)

FRAMEWORK_NAME = "batch/job"


def _field(obj: Any, *names: str) -> Any:
    """A Configuration field from a dataclass or a dict, under its snake or camel spelling."""
    if obj is None:
        return None
    for name in names:
        if isinstance(obj, Mapping):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return None


def _as_mapping(value: Any) -> Mapping[str, Any] | None:
    """A label selector as a JSON dict, whether the Configuration keeps it as a dict or a dataclass."""
    if value is None or isinstance(value, Mapping):
        return value
    labels = _field(value, "match_labels", "matchLabels")
    expressions = _field(value, "match_expressions", "matchExpressions") or []
    return {
        "matchLabels": dict(labels or {}),
        "matchExpressions": [
            e
            if isinstance(e, Mapping)
            else {
                "key": _field(e, "key"),
                "operator": _field(e, "operator"),
                "values": list(_field(e, "values") or []),
            }
            for e in expressions
        ],
    }


def framework_enabled(config: Any) -> bool:
    frameworks = _field(_field(config, "integrations"), "frameworks")
    return frameworks is None or FRAMEWORK_NAME in frameworks


def settings_from_config(config: Any) -> JobSettings:
    """The Job integration's view of the Configuration (defaults when ``config`` is None)."""
    manage = bool(_field(config, "manage_jobs_without_queue_name", "manageJobsWithoutQueueName"))
    selector = _as_mapping(_field(config, "managed_jobs_namespace_selector", "managedJobsNamespaceSelector"))
    wait = _field(config, "wait_for_pods_ready", "waitForPodsReady")
    enabled = _field(wait, "enable")
    # v1beta1 spells the switch ``enable``; a section without one (v1beta2 style) means on.
    pods_ready = wait is not None and (enabled is None or bool(enabled))
    return JobSettings(management=ManagementPolicy.from_raw(manage, selector), wait_for_pods_ready=pods_ready)


def setup(ctrl: Any) -> None:
    config = getattr(ctrl, "config", None)
    if not framework_enabled(config):
        log.info("batch/job integration disabled by integrations.frameworks")
        return
    settings = settings_from_config(config)
    job_controller = JobController(
        ctrl.client, ctrl.informers, settings, events=ctrl.event_recorder(JOB_EVENT_COMPONENT)
    )
    ctrl.register(job_controller)
    log.info(
        "batch/job integration registered",
        extra={
            "manageJobsWithoutQueueName": settings.management.manage_jobs_without_queue_name,
            "waitForPodsReady": settings.wait_for_pods_ready,
        },
    )
