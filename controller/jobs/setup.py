"""Plugs the batch/v1 Job integration into the controller process (``controller.main``).

``setup(ctrl)`` reads the Job-related parts of the Configuration, creates the shared informers
the reconciler reads, and registers a leader-only :class:`~.controller.JobController`. The
integration is skipped when the Configuration's ``integrations.frameworks`` does not list
``batch/job`` (Kueue's switch for it).
"""

from __future__ import annotations

import logging

from controller.runtime.manager import Controller
from pykueue.api.config import Configuration

from .controller import JobController
from .management import ManagementPolicy
from .reconciler import COMPONENT as JOB_EVENT_COMPONENT
from .reconciler import JobSettings

log = logging.getLogger(__name__)

FRAMEWORK_NAME = "batch/job"


def framework_enabled(config: Configuration) -> bool:
    """Whether ``integrations.frameworks`` lists ``batch/job`` (it does by default)."""
    return FRAMEWORK_NAME in config.integrations.frameworks


def settings_from_config(config: Configuration) -> JobSettings:
    """The Job integration's view of the Configuration."""
    return JobSettings(
        management=ManagementPolicy.from_raw(
            config.manage_jobs_without_queue_name, config.managed_jobs_namespace_selector
        ),
        wait_for_pods_ready=config.wait_for_pods_ready.enable,
    )


def setup(ctrl: Controller) -> None:
    config = ctrl.config
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
