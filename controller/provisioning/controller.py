"""The ProvisioningRequest controller: two work queues on shared informers (leader only).

* **AdmissionChecks** (``provisioning-admissioncheck``): each check whose controllerName is
  ``kueue.x-k8s.io/provisioning-request`` gets ``Active`` from :func:`.config.active_condition`;
  a ProvisioningRequestConfig event re-queues the checks naming it.
* **Workloads** (``provisioning-workload``): one reconcile of a workload

  1. finished, evicted or deactivated → delete every request it owns (they are garbage collected
     too, through the owner reference, once the workload is deleted);
  2. no quota reservation → nothing to do;
  3. for each of its checks run by this controller: resolve the config, find the latest request
     (highest attempt among the owned requests named for the check and in sync with the config),
     decide the check state (:func:`.checkstate.decide_check`);
  4. write ``status.admissionChecks`` when it changed: a merge patch guarded by the workload's
     resourceVersion (a conflict re-reads and re-decides), with Events;
  5. delete owned requests that are not the latest of a check;
  6. create the next attempt (:func:`.checkstate.next_attempt`) and its PodTemplates.

  Triggers: Workload events, events of the requests it owns (the autoscaler's condition changes),
  and AdmissionCheck/ProvisioningRequestConfig changes (every workload carrying the check).

Creates tolerate ``AlreadyExists`` (the cache may lag our own writes), deletes ``NotFound``; the
names are deterministic, so a restarted controller finds its requests instead of duplicating them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from controller.provisioning import metrics
from controller.provisioning.checkstate import CheckDecision, Outcome, decide_check, next_attempt
from controller.provisioning.config import (
    ProvisioningConfig,
    active_condition,
    config_name,
    is_ours,
    parse_config,
)
from controller.provisioning.naming import attempt_of, request_name
from controller.provisioning.requests import (
    build_pod_template,
    build_request,
    request_pod_sets,
    synced_with_config,
)
from controller.runtime.events import EventSink
from controller.runtime.informer import FuncHandler
from controller.runtime.workers import Workers
from controller.runtime.workqueue import WorkQueue
from controller.workload import indexes
from controller.workload import view as wv
from controller.workload.patches import apply_conditions, with_resource_version
from controller.workload.status_plan import EVENT_NORMAL, EVENT_WARNING, ConditionSpec, EventSpec
from pykueue.api import constants as C
from pykueue.api.timestamps import utcnow
from pykueue.kube.errors import AlreadyExists, ApiError, NotFound
from pykueue.kube.resources import ADMISSION_CHECKS, POD_TEMPLATES, PROVISIONING_REQUESTS, WORKLOADS, Resource

log = logging.getLogger(__name__)

Obj = dict[str, Any]

REQUEST_BY_OWNER = "provisioning/by-owner-workload"  # "namespace/workload"
WORKLOAD_BY_CHECK = "provisioning/by-admission-check"  # check name
EVENT_REQUEST_CREATED = "ProvisioningRequestCreated"
EVENT_FAILED_CREATE = "FailedCreate"
# Kueue only copies a new ETA into the check's message; an Event makes each one visible in
# `kubectl describe` (pykueue's own reason).
EVENT_REQUEST_ETA = "ProvisioningRequestETA"


class Writer(Protocol):
    """What the controller uses of :class:`pykueue.kube.client.KubeClient`."""

    def create(self, res: Resource, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]: ...

    def patch_status(
        self, res: Resource, name: str, patch: Any, namespace: str | None = None, **kw: Any
    ) -> dict[str, Any]: ...

    def delete(self, res: Resource, name: str, namespace: str | None = None, **kw: Any) -> bool: ...


def request_by_owner(obj: Obj) -> list[str]:
    owner = wv.controller_owner(obj)
    if owner and owner.get("kind") == "Workload" and str(owner.get("apiVersion", "")).startswith(f"{C.GROUP}/"):
        return [f"{wv.namespace(obj)}/{owner.get('name')}"]
    return []


def workload_by_check(obj: Obj) -> list[str]:
    return [
        str(s["name"])
        for s in wv.status(obj).get("admissionChecks") or []
        if isinstance(s, Mapping) and isinstance(s.get("name"), str)
    ]


class ProvisioningController:
    """See the module docstring."""

    name = "provisioning"

    def __init__(
        self,
        client: Writer,
        *,
        workloads: indexes.InformerLike,
        admission_checks: indexes.InformerLike,
        configs: indexes.InformerLike,
        requests: indexes.InformerLike,
        pod_templates: indexes.InformerLike,
        flavors: indexes.InformerLike,
        events: EventSink,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._client = client
        self._workloads = workloads
        self._checks = admission_checks
        self._configs = configs
        self._requests = requests
        self._pod_templates = pod_templates
        self._flavors = flavors
        self._events = events
        self._clock = clock
        self.queue: WorkQueue[str] = WorkQueue("provisioning-workload")
        self.check_queue: WorkQueue[str] = WorkQueue("provisioning-admissioncheck")
        self._runner = Workers(self.queue, self.reconcile, name="provisioning-workload")
        self._check_runner = Workers(self.check_queue, self.reconcile_check, name="provisioning-admissioncheck")
        for informer, index, func in (
            (requests, REQUEST_BY_OWNER, request_by_owner),
            (workloads, WORKLOAD_BY_CHECK, workload_by_check),
        ):
            with contextlib.suppress(KeyError, ValueError):
                informer.add_indexer(index, func)

    # --- wiring --------------------------------------------------------------------------------

    def register_handlers(self) -> None:
        self._workloads.add_handler(
            FuncHandler(
                add=self._workload_changed,
                update=lambda _o, n: self._workload_changed(n),
                delete=lambda _o: None,
            ),
            resync=True,
        )
        self._requests.add_handler(
            FuncHandler(
                add=self._request_changed,
                update=lambda _o, n: self._request_changed(n),
                delete=self._request_changed,
            )
        )
        self._pod_templates.add_handler(
            FuncHandler(add=lambda _o: None, update=lambda _o, _n: None, delete=self._template_deleted)
        )
        self._checks.add_handler(
            FuncHandler(add=self._check_changed, update=lambda o, n: self._check_updated(o, n), delete=self._check_changed)
        )
        self._configs.add_handler(
            FuncHandler(add=self._config_changed, update=lambda _o, n: self._config_changed(n), delete=self._config_changed)
        )

    def start(self) -> None:
        self._runner.start()
        self._check_runner.start()

    def stop(self) -> None:
        self._runner.stop()
        self._check_runner.stop()

    def _workload_changed(self, wl: Obj) -> None:
        if workload_by_check(wl) or self._requests.store.index_keys(REQUEST_BY_OWNER, wv.key(wl)):
            self.queue.add(wv.key(wl))

    def _request_changed(self, request: Obj) -> None:
        for key in request_by_owner(request):
            self.queue.add(key)

    def _template_deleted(self, template: Obj) -> None:
        """A PodTemplate gone from under a live request (deleted by hand, or a stale one replaced)
        is made again: wake the workload owning its request."""
        owner = wv.controller_owner(template) or {}
        if owner.get("kind") == "ProvisioningRequest":
            request = self._requests.store.get(f"{wv.namespace(template)}/{owner.get('name')}")
            if request is not None:
                self._request_changed(request)

    def _check_updated(self, old: Obj, new: Obj) -> None:
        if wv.spec(old) != wv.spec(new) or not wv.status(new).get("conditions"):
            self._check_changed(new)

    def _check_changed(self, check: Obj) -> None:
        if not is_ours(check):
            return
        self.check_queue.add(wv.name(check))
        for key in self._workloads.store.index_keys(WORKLOAD_BY_CHECK, wv.name(check)):
            self.queue.add(key)

    def _config_changed(self, prc: Obj) -> None:
        for check in self._checks.store.list():
            if is_ours(check) and config_name(check) == wv.name(prc):
                self._check_changed(check)

    # --- reads ---------------------------------------------------------------------------------

    def config_for(self, check_name: str) -> ProvisioningConfig | None:
        check = self._checks.store.get(check_name)
        if check is None or not is_ours(check):
            return None
        name = config_name(check)
        prc = self._configs.store.get(name) if name else None
        return parse_config(prc) if prc is not None else None

    def owned_requests(self, wl: Mapping[str, Any]) -> list[Obj]:
        uid = wv.meta(wl).get("uid")
        return [
            r
            for r in self._requests.store.by_index(REQUEST_BY_OWNER, wv.key(wl))
            if (wv.controller_owner(r) or {}).get("uid") == uid
        ]

    # --- the AdmissionCheck --------------------------------------------------------------------

    def reconcile_check(self, name: str) -> float | None:
        check = self._checks.store.get(name)
        if check is None or not is_ours(check):
            return None
        ref = config_name(check)
        prc = self._configs.store.get(ref) if ref else None
        status, reason, message = active_condition(check, prc)
        conditions = apply_conditions(
            wv.status(check).get("conditions"),
            [ConditionSpec(C.COND_ACTIVE, "True" if status else "False", reason, message)],
            [],
            wv.generation(check),
            self._clock(),
        )
        if conditions is not None:
            with contextlib.suppress(NotFound):
                self._client.patch_status(ADMISSION_CHECKS, name, with_resource_version(check, {"conditions": conditions}))
            log.info("admission check condition set", extra={"admission_check": name, "active": status, "reason": reason})
        return None

    # --- a Workload ----------------------------------------------------------------------------

    def reconcile(self, key: str) -> float | None:
        wl = self._workloads.store.get(key)
        if wl is None:
            return None  # its requests go with it (owner references)
        owned = self.owned_requests(wl)
        if wv.is_finished(wl) or wv.is_evicted(wl) or not wv.is_active(wl):
            for gone in owned:
                self._delete_request(gone, "workload")
            return None
        if not wv.has_reservation(wl):
            return None
        now = self._clock()
        states = [dict(s) for s in wv.status(wl).get("admissionChecks") or [] if isinstance(s, Mapping)]
        latest: dict[str, tuple[Obj | None, int]] = {}
        decisions: dict[str, CheckDecision] = {}
        configs: dict[str, ProvisioningConfig | None] = {}
        for state in states:
            check_name = str(state.get("name") or "")
            if not is_ours(self._checks.store.get(check_name)):
                continue
            config = configs[check_name] = self.config_for(check_name)
            needed = config is not None and bool(request_pod_sets(wl, config))
            if config is not None and needed:
                for candidate in owned:
                    number = attempt_of(wv.name(candidate), wv.name(wl), check_name)
                    if number is None or not synced_with_config(candidate, wl, config):
                        continue
                    if check_name not in latest or latest[check_name][1] < number:
                        latest[check_name] = (candidate, number)
            request, attempt = latest.get(check_name, (None, 0))
            decisions[check_name] = decide_check(
                state, config=config, needed=needed, wl=wl, request=request, attempt=attempt, now=now
            )
        if decisions:
            self._write_states(wl, states, decisions)
        # Requests of checks the workload no longer carries (the ClusterQueue dropped the check),
        # of a removed config, or superseded by a later attempt go.
        keep = {wv.name(r) for r, _ in latest.values() if r is not None}
        for stale in owned:
            if wv.name(stale) not in keep:
                self._delete_request(stale, "superseded")
        for check_name, decision in decisions.items():
            config = configs[check_name]
            if config is None or decision.outcome is Outcome.NOT_NEEDED:
                continue
            request, attempt = latest.get(check_name, (None, 0))
            new_attempt = next_attempt(decision.state, request, attempt, wv.is_admitted(wl))
            if new_attempt is not None:
                request = self._create_request(wl, check_name, new_attempt, config)
            if request is not None and decision.state.get("state") != C.CHECK_READY:
                self._ensure_pod_templates(wl, request, config)
        return None

    def _write_states(self, wl: Obj, states: list[Obj], decisions: dict[str, CheckDecision]) -> None:
        new_states = [dict(decisions[s["name"]].state) if s.get("name") in decisions else s for s in states]
        if new_states == states:
            return
        self._client.patch_status(
            WORKLOADS, wv.name(wl), with_resource_version(wl, {"admissionChecks": new_states}), wv.namespace(wl)
        )
        old = {s.get("name"): s for s in states}
        for name, decision in decisions.items():
            before = old.get(name) or {}
            after = decision.state
            if before.get("state") != after.get("state"):
                message = f"Admission check {name} updated state from {before.get('state')} to {after.get('state')}"
                if after.get("message"):
                    message += f" with message {after.get('message')}"
                self._events.emit(wl, EventSpec(EVENT_NORMAL, C.EVENT_ADMISSION_CHECK_UPDATED, message))
                metrics.CHECK_OUTCOMES.labels(name, str(after.get("state"))).inc()
            if decision.eta_message:
                self._events.emit(
                    wl, EventSpec(EVENT_NORMAL, EVENT_REQUEST_ETA, f"Admission check {name}: {decision.eta_message}")
                )
            if decision.missing_details:
                log.warning(
                    "provisioningClassDetails lack keys named by podSetUpdates",
                    extra={"workload": wv.key(wl), "admission_check": name, "missing": decision.missing_details},
                )
        log.info(
            "admission check states written",
            extra={"workload": wv.key(wl), "states": {n: d.state.get("state") for n, d in decisions.items()}},
        )

    def _create_request(self, wl: Obj, check_name: str, attempt: int, config: ProvisioningConfig) -> Obj | None:
        name = request_name(wv.name(wl), check_name, attempt)
        existing = self._requests.store.get(f"{wv.namespace(wl)}/{name}")
        if existing is not None:
            # Ours and current, or an out-of-sync one being deleted: its delete event returns here.
            return existing if synced_with_config(existing, wl, config) else None
        request = build_request(wl, name, config)
        try:
            created = self._client.create(PROVISIONING_REQUESTS, request, wv.namespace(wl))
        except AlreadyExists:
            return None  # our cache lags; the request's own event brings us back
        except ApiError as err:
            self._failed_create(wl, "ProvisioningRequest", name, err)
            raise
        self._events.emit(wl, EventSpec(EVENT_NORMAL, EVENT_REQUEST_CREATED, f'Created ProvisioningRequest: "{name}"'))
        metrics.REQUESTS_CREATED.labels(check_name).inc()
        log.info("ProvisioningRequest created", extra={"workload": wv.key(wl), "request": name, "attempt": attempt})
        return created

    def _ensure_pod_templates(self, wl: Obj, request: Obj, config: ProvisioningConfig) -> None:
        flavors = {wv.name(f): f for f in self._flavors.store.list()}
        namespace = wv.namespace(wl)
        for pod_set in request_pod_sets(wl, config):
            template = build_pod_template(request, pod_set, flavors)
            existing = self._pod_templates.store.get(f"{namespace}/{template['metadata']['name']}")
            if existing is not None:
                owner_uid = (wv.controller_owner(existing) or {}).get("uid")
                if owner_uid == wv.meta(request).get("uid"):
                    continue
                # Left by an earlier request of the same name (a config change re-made attempt n)
                # that the garbage collector has not removed yet: replace it.
                uid = wv.meta(existing).get("uid")
                with contextlib.suppress(NotFound):
                    self._client.delete(
                        POD_TEMPLATES, wv.name(existing), namespace, preconditions={"uid": uid} if uid else None
                    )
            try:
                self._client.create(POD_TEMPLATES, template, namespace)
            except AlreadyExists:
                continue
            except ApiError as err:
                self._failed_create(wl, "PodTemplate", str(template["metadata"]["name"]), err)
                raise

    def _failed_create(self, wl: Obj, kind: str, name: str, err: ApiError) -> None:
        """Kueue's Warning ``FailedCreate``; the key is retried with backoff by the caller."""
        self._events.emit(wl, EventSpec(EVENT_WARNING, EVENT_FAILED_CREATE, f"Error creating {kind} {name!r}: {err}"))

    def _delete_request(self, request: Obj, cause: str) -> None:
        uid = wv.meta(request).get("uid")
        with contextlib.suppress(NotFound):
            if self._client.delete(
                PROVISIONING_REQUESTS, wv.name(request), wv.namespace(request), preconditions={"uid": uid} if uid else None
            ):
                metrics.REQUESTS_DELETED.labels(cause).inc()
                log.info("ProvisioningRequest deleted", extra={"request": wv.key(request), "cause": cause})

