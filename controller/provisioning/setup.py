"""Plugs the ProvisioningRequest admission check into the controller process
(``controller.main`` SETUP_MODULES).

As in Kueue, the check runs only when the API server serves ``autoscaling.x-k8s.io/v1``
ProvisioningRequests (the cluster-autoscaler installs that CRD); otherwise it is skipped with a log
line and AdmissionChecks naming it stay inactive.
"""

from __future__ import annotations

import logging

from controller.provisioning.controller import ProvisioningController
from controller.runtime.manager import Controller
from pykueue.api.constants import MANAGED_LABEL
from pykueue.kube import resources as R
from pykueue.kube.errors import ApiError, NotFound

log = logging.getLogger(__name__)


def served(ctrl: Controller) -> bool:
    try:
        ctrl.client.list(R.PROVISIONING_REQUESTS, limit=1)
    except NotFound:
        return False
    except ApiError as err:
        log.warning("cannot tell whether ProvisioningRequests are served; assuming they are", extra={"error": str(err)})
    return True


def setup(ctrl: Controller) -> None:
    if not served(ctrl):
        log.info("autoscaling.x-k8s.io/v1 ProvisioningRequests are not served; the provisioning admission check is off")
        return
    controller = ProvisioningController(
        ctrl.client,
        workloads=ctrl.informer(R.WORKLOADS),
        admission_checks=ctrl.informer(R.ADMISSION_CHECKS),
        configs=ctrl.informer(R.PROVISIONING_REQUEST_CONFIGS),
        requests=ctrl.informer(R.PROVISIONING_REQUESTS),
        pod_templates=ctrl.informer(R.POD_TEMPLATES, label_selector=f"{MANAGED_LABEL}=true"),
        flavors=ctrl.informer(R.RESOURCE_FLAVORS),
        events=ctrl.event_recorder(),
    )
    ctrl.register(controller)
    log.info("provisioning admission check controller registered")
