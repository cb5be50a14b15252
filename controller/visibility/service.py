"""Answering one visibility request: route, authorize, read the engine, shape the answer.

Transport-free (the HTTPS layer is ``server.py``), so every answer, status code and message is
unit-tested without sockets. The engine is read through the scheduler loop's
:class:`controller.core.engine_reads.EngineReads`: the loop only copies the queue
(``Engine.pending_snapshot``); the sort and the paging run here, on the request's thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controller.core.engine_reads import NotLeading
from controller.engine import Engine, explain_status
from controller.engine import visibility as ev
from controller.multikueue.status import DispatchState

from . import api
from .auth import Authorizer, UserInfo

log = logging.getLogger(__name__)

READ_TIMEOUT_SECONDS = 5.0
NOT_LEADER_MESSAGE = (
    "this pykueue-controller replica is not the leader and holds no queues: only the elected "
    "leader answers the visibility API; retry (see docs/design/visibility.md)"
)


Answer = tuple[int, dict[str, Any]]


class VisibilityService:
    def __init__(
        self,
        reads: Any,
        authorizer: Authorizer,
        workload_of: Callable[[str], Mapping[str, Any] | None],
        multikueue_of: Callable[[str], DispatchState | None] | None = None,
        admission_blocked_by: Callable[[], Sequence[str]] | None = None,
    ) -> None:
        self._reads = reads
        self._authorizer = authorizer
        self._workload_of = workload_of
        # On a MultiKueue manager: what the dispatch loop last saw of a Workload's workers.
        self._multikueue_of = multikueue_of
        # The scheduler loop's blockAdmission wait (SchedulerLoop.admission_blocked_by), called
        # inside the read on the loop's thread so it agrees with the engine the dry run reads.
        self._admission_blocked_by = admission_blocked_by

    def handle(self, path: str, query: Mapping[str, Sequence[str]], user: UserInfo | None) -> Answer:
        request = api.route(path)
        if request is None:
            return 404, api.status(404, "the server could not find the requested resource")
        if user is None:
            return 401, api.status(401, "Unauthorized")
        if request.document is not None:
            return 200, request.document
        try:
            offset, limit = api.page_options(query)
        except api.BadRequest as exc:
            return 400, api.status(400, str(exc))
        try:
            allowed = self._authorizer.allowed(user, request)
        except Exception:
            log.exception("SubjectAccessReview failed")
            return 503, api.status(503, "authorization is unavailable: the SubjectAccessReview failed")
        if not allowed:
            return 403, api.status(403, api.forbidden_message(user.name, request), name=request.name,
                                   kind=request.resource)
        if request.kind == "explain":
            return self._explain(request)
        try:
            snap = self._reads.submit(lambda engine: _snapshot(engine, request), READ_TIMEOUT_SECONDS)
        except NotLeading:
            return 503, api.status(503, NOT_LEADER_MESSAGE)
        except TimeoutError:
            return 503, api.status(503, "the scheduler did not answer in time; retry")
        if snap is None:
            return 404, api.status(404, api.not_found_message(request), name=request.name, kind=request.kind)
        order = ev.ordered(snap)
        if request.kind == "clusterqueue":
            items = ev.cluster_queue_page(snap, order, offset=offset, limit=limit)
        else:
            lq_key = f"{request.namespace}/{request.name}"
            items = ev.local_queue_page(snap, order, lq_key, offset=offset, limit=limit)
        return 200, api.summary(request.version, items, self._workload_of)

    def _explain(self, request: api.Request) -> Answer:
        """A dry run on the scheduler loop's thread (it nominates one workload, or a parent's few
        options: milliseconds); the stored status's check states and options are added here."""
        workload = self._workload_of(f"{request.namespace}/{request.name}")
        if workload is None:
            return 404, api.status(404, f'workloads.kueue.x-k8s.io "{request.name}" not found', name=request.name,
                                   kind="workloads")
        options = explain_status.option_names(workload) if explain_status.is_parent(workload) else []
        try:
            result, by_option = self._reads.submit(_explain_read(request, options, self._admission_blocked_by),
                                                   READ_TIMEOUT_SECONDS)
        except NotLeading:
            return 503, api.status(503, NOT_LEADER_MESSAGE)
        except TimeoutError:
            return 503, api.status(503, "the scheduler did not answer in time; retry")
        key = f"{request.namespace}/{request.name}"
        dispatch = self._multikueue_of(key) if self._multikueue_of is not None else None
        return 200, api.explanation(
            request.version, explain_status.with_stored_status(result, workload, by_option), multikueue=dispatch
        )


def _explain_read(
    request: api.Request, options: Sequence[str], blocked_by: Callable[[], Sequence[str]] | None
) -> Callable[[Engine], Any]:
    key = f"{request.namespace}/{request.name}"

    def read(engine: Engine) -> Any:
        blocked = tuple(blocked_by()) if blocked_by is not None else ()
        return (engine.explain(key, blocked),
                {o: engine.explain(f"{request.namespace}/{o}", blocked) for o in options})

    return read


def _snapshot(engine: Engine, request: api.Request) -> ev.QueueSnapshot | None:
    """Engine thread: copy the queue asked about (cheap; see controller.engine.visibility)."""
    if request.kind == "clusterqueue":
        return engine.pending_snapshot(request.name)
    cluster_queue = engine.cluster_queue_of(request.namespace, request.name)
    return engine.pending_snapshot(cluster_queue) if cluster_queue is not None else None
