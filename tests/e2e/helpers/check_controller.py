"""A small admission-check controller for e2e tests, behaving like a real one.

Like Kueue's check controllers (e.g. ``pkg/controller/admissionchecks/provisioning/controller.go``)
it acts only on Workloads that hold a quota reservation and whose state for its check is
``Pending``, and it decides from the flavors the reservation assigned: ``Rejected`` when one of
them is in ``reject_flavors``, else ``Ready``. It runs as a thread polling the namespace, and every
write is guarded by resourceVersion (a 409 is simply retried on the next poll).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes.client.exceptions import ApiException

from tests.e2e.helpers.kueue import KueueApi, now_rfc3339


def _assigned_flavors(wl: dict[str, Any]) -> set[str]:
    admission = (wl.get("status") or {}).get("admission") or {}
    flavors: set[str] = set()
    for assignment in admission.get("podSetAssignments") or []:
        flavors.update((assignment.get("flavors") or {}).values())
    return flavors


class FlavorCheckController:
    """Answers check ``check`` on the Workloads of ``namespace``. See the module docstring."""

    def __init__(self, kueue: KueueApi, namespace: str, check: str, reject_flavors: set[str]) -> None:
        self.kueue = kueue
        self.namespace = namespace
        self.check = check
        self.reject_flavors = set(reject_flavors)
        self.decisions: list[tuple[str, str, str]] = []  # (workload, flavors, state)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"check-{check}", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            try:
                for wl in self.kueue.workloads(self.namespace):
                    self._reconcile(wl)
            except ApiException:
                continue  # the next poll reads fresh objects

    def _reconcile(self, wl: dict[str, Any]) -> None:
        status = wl.get("status") or {}
        if not status.get("admission"):
            return  # no quota reservation: nothing to check yet
        if any(c.get("type") == "Evicted" and c.get("status") == "True" for c in status.get("conditions") or []):
            return  # on its way out: its reservation is about to be released
        states = status.get("admissionChecks") or []
        if not any(s.get("name") == self.check and s.get("state") == "Pending" for s in states):
            return
        flavors = _assigned_flavors(wl)
        rejected = flavors & self.reject_flavors
        state = "Rejected" if rejected else "Ready"
        message = f"no capacity in flavor {', '.join(sorted(rejected))}" if rejected else "capacity found"
        updated = [
            dict(s, state=state, message=message, lastTransitionTime=now_rfc3339())
            if s.get("name") == self.check
            else s
            for s in states
        ]
        body = {"metadata": {"resourceVersion": wl["metadata"]["resourceVersion"]}, "status": {"admissionChecks": updated}}
        try:
            self.kueue.patch_status("Workload", wl["metadata"]["name"], body, self.namespace)
        except ApiException as err:
            if err.status in (404, 409):
                return
            raise
        self.decisions.append((wl["metadata"]["name"], ",".join(sorted(flavors)), state))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@contextmanager
def flavor_check_controller(
    kueue: KueueApi, namespace: str, check: str, reject_flavors: set[str]
) -> Iterator[FlavorCheckController]:
    controller = FlavorCheckController(kueue, namespace, check, reject_flavors)
    controller.start()
    try:
        yield controller
    finally:
        controller.stop()
