"""Plugs concurrent admission into the controller process (``controller.main`` SETUP_MODULES)."""

from __future__ import annotations

import logging
from typing import Any

from controller.concurrentadmission.controller import OptionController
from pykueue.kube import resources as R

log = logging.getLogger(__name__)


def setup(ctrl: Any) -> None:
    controller = OptionController(
        ctrl.client,
        workloads=ctrl.informer(R.WORKLOADS),
        local_queues=ctrl.informer(R.LOCAL_QUEUES),
        cluster_queues=ctrl.informer(R.CLUSTER_QUEUES),
        events=ctrl.event_recorder(),
    )
    ctrl.register(controller)
    log.info("concurrent admission controller registered")
