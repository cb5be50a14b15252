"""Plugs concurrent admission into the controller process (``controller.main`` SETUP_MODULES)."""

from __future__ import annotations

import logging

from controller.concurrentadmission.controller import OptionController
from controller.runtime.manager import Controller
from pykueue.kube import resources as R

log = logging.getLogger(__name__)


def setup(ctrl: Controller) -> None:
    """Registers the option controller; it reads no Configuration field (a ClusterQueue's
    ``concurrentAdmission`` stanza configures it)."""
    controller = OptionController(
        ctrl.client,
        workloads=ctrl.informer(R.WORKLOADS),
        local_queues=ctrl.informer(R.LOCAL_QUEUES),
        cluster_queues=ctrl.informer(R.CLUSTER_QUEUES),
        events=ctrl.event_recorder(),
    )
    ctrl.register(controller)
    log.info("concurrent admission controller registered")
