"""The ``Active`` condition of AdmissionChecks run by ``kueue.x-k8s.io/multikueue``.

As Kueue's ``admissioncheck.go``: a check whose MultiKueueConfig cannot be loaded is inactive
(``BadConfig``); one whose clusters are all missing or inactive is inactive
(``NoUsableClusters``); one with some usable clusters stays active (``SomeActiveClusters``) and
names the others; otherwise ``Active``. A ClusterQueue with an inactive check admits nothing,
which is how a manager without reachable workers stops reserving quota for work it cannot place.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from controller.runtime.informer import FuncHandler, Informer
from controller.runtime.workers import Workers
from controller.runtime.workqueue import WorkQueue
from pykueue.api import constants as C
from pykueue.api.conditions import Condition, set_condition
from pykueue.kube import resources as R
from pykueue.kube.errors import NotFound

from .clusters import Verdict

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def config_name(check: Mapping[str, Any]) -> str | None:
    """The MultiKueueConfig a check's ``parameters`` name, or None when they name something else."""
    params = (check.get("spec") or {}).get("parameters") or {}
    if params.get("apiGroup") != R.GROUP or params.get("kind") != "MultiKueueConfig" or not params.get("name"):
        return None
    return str(params["name"])


def is_multikueue(check: Mapping[str, Any]) -> bool:
    return (check.get("spec") or {}).get("controllerName") == C.MULTIKUEUE_CONTROLLER


def _cluster_active(cluster: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == C.COND_ACTIVE and c.get("status") == "True"
        for c in (cluster.get("status") or {}).get("conditions") or []
    )


def check_verdict(
    check: Mapping[str, Any],
    config_of: Callable[[str], Obj | None],
    cluster_of: Callable[[str], Obj | None],
) -> Verdict:
    """The ``Active`` condition a MultiKueue check should carry (see the module docstring)."""
    name = config_name(check)
    if name is None:
        return Verdict(False, "BadConfig", "Cannot load the AdmissionChecks parameters: not a MultiKueueConfig")
    config = config_of(name)
    if config is None:
        return Verdict(
            False, "BadConfig", f'Cannot load the AdmissionChecks parameters: MultiKueueConfig "{name}" not found'
        )
    clusters = [str(c) for c in (config.get("spec") or {}).get("clusters") or []]
    missing, inactive = [], []
    for cluster_name in clusters:
        cluster = cluster_of(cluster_name)
        if cluster is None:
            missing.append(cluster_name)
        elif not _cluster_active(cluster):
            inactive.append(cluster_name)
    unusable = len(missing) + len(inactive)
    if not unusable:
        return Verdict(True, "Active", "The admission check is active")
    parts = []
    if missing:
        parts.append(f"Missing clusters: [{' '.join(missing)}]")
    if inactive:
        parts.append(f"Inactive clusters: [{' '.join(inactive)}]")
    message = ", ".join(parts)
    if unusable < len(clusters):
        return Verdict(True, "SomeActiveClusters", message)
    return Verdict(False, "NoUsableClusters", message)


class AdmissionCheckController:
    """Reconciles MultiKueue AdmissionChecks whenever they, a config or a cluster change."""

    name = "multikueue-admissioncheck-controller"

    def __init__(self, client: Any, checks: Informer, configs: Informer, clusters: Informer) -> None:
        self._client = client
        self.checks, self.configs, self.clusters = checks, configs, clusters
        self.queue: WorkQueue[str] = WorkQueue("multikueue-admissioncheck")
        self._runner = Workers(self.queue, self.reconcile, name=self.name, count=1)

    def register_handlers(self) -> None:
        def enqueue_check(obj: Obj) -> None:
            if is_multikueue(obj):
                self.queue.add(str((obj.get("metadata") or {}).get("name")))

        def enqueue_all(_obj: Obj) -> None:
            for check in self.checks.store.list():
                enqueue_check(check)

        self.checks.add_handler(FuncHandler(add=enqueue_check, update=lambda _o, n: enqueue_check(n)))
        for informer in (self.configs, self.clusters):
            informer.add_handler(
                FuncHandler(add=enqueue_all, update=lambda _o, n: enqueue_all(n), delete=enqueue_all)
            )

    def start(self) -> None:
        self._runner.start()

    def stop(self) -> None:
        self._runner.stop()

    def process_one(self, key: str) -> None:
        self._runner.process_one(key)

    def reconcile(self, name: str) -> float | None:
        check = self.checks.store.get(name)
        if check is None or not is_multikueue(check):
            return None
        verdict = check_verdict(check, self.configs.store.get, self.clusters.store.get)
        meta = check.get("metadata") or {}
        conditions: list[Condition] = [dict(c) for c in (check.get("status") or {}).get("conditions") or []]  # type: ignore[misc]
        if not set_condition(
            conditions,
            C.COND_ACTIVE,
            verdict.active,
            verdict.reason,
            verdict.message,
            observed_generation=int(meta.get("generation") or 0),
        ):
            return None
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": {"conditions": conditions}}
        try:
            self._client.patch_status(R.ADMISSION_CHECKS, name, patch)
        except NotFound:
            return None
        log.info("multikueue admission check", extra={"admissionCheck": name, "active": verdict.active,
                                                       "reason": verdict.reason})  # fmt: skip
        return None
