"""The worker loop around the reconciler: errors are retried with backoff, never propagated."""

from __future__ import annotations

from typing import Any

import pytest

from controller.jobs.controller import JobController
from controller.jobs.reconciler import JobSettings, Result
from controller.runtime.events import RecordingEvents
from controller.runtime.store import Store
from pykueue.kube.errors import Conflict, Invalid


class _Informer:
    def __init__(self) -> None:
        self._store = Store()
        self.handlers: list[Any] = []

    @property
    def store(self) -> Any:
        return self._store.reader()

    def add_indexer(self, name: str, func: Any) -> None:
        self._store.add_indexer(name, func)

    def add_handler(self, handler: Any, *, resync: bool = False) -> None:
        self.handlers.append(handler)


class _Informers:
    def __init__(self) -> None:
        self.by_resource: dict[Any, _Informer] = {}

    def get(self, resource: Any, **_: Any) -> _Informer:
        return self.by_resource.setdefault(resource, _Informer())


class _Reconciler:
    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome
        self.calls: list[tuple[str, str]] = []

    def reconcile(self, namespace: str, name: str) -> Result:
        self.calls.append((namespace, name))
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


def controller_with(outcome: Any) -> tuple[JobController, _Reconciler]:
    ctrl = JobController(
        writer=None,  # type: ignore[arg-type]
        informers=_Informers(),  # type: ignore[arg-type]
        settings=JobSettings(),
        events=RecordingEvents(),
    )
    fake = _Reconciler(outcome)
    ctrl.reconciler = fake  # type: ignore[assignment]
    return ctrl, fake


@pytest.mark.parametrize(
    "error",
    [Conflict(409, "Conflict", "stale"), Invalid(422, "Invalid", "bad"), RuntimeError("bug")],
)
def test_failures_are_retried_with_backoff_and_never_raised(error: Exception) -> None:
    ctrl, fake = controller_with(error)
    ctrl.process_one("ns/job")
    ctrl.process_one("ns/job")
    assert fake.calls == [("ns", "job"), ("ns", "job")]
    assert ctrl.queue.num_requeues("ns/job") == 2


def test_success_forgets_the_failures_and_honours_requeue_after() -> None:
    ctrl, fake = controller_with(Conflict(409, "Conflict", "stale"))
    ctrl.process_one("ns/job")
    fake.outcome = Result(requeue_after=30.0)
    ctrl.process_one("ns/job")
    assert ctrl.queue.num_requeues("ns/job") == 0
    assert ctrl.queue.waiting() == 1 and len(ctrl.queue) == 0


def test_workload_events_enqueue_the_owning_job() -> None:
    ctrl, _ = controller_with(Result())
    ctrl.register_handlers()
    handler = ctrl.lister.workloads.handlers[0]  # type: ignore[attr-defined]
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "job", "uid": "u", "controller": True}
    handler.on_add({"metadata": {"name": "wl", "namespace": "ns", "ownerReferences": [owner]}})
    assert ctrl.queue.get(timeout=0) == "ns/job"
