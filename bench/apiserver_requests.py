"""What a controller wrote, counted by the apiserver: the same figure for pykueue and for Kueue.

pykueue's controller counts its own requests (``/metrics``), Kueue v0.14.8's has no such counter,
so until this the baseline could not say how much API work each controller gives the apiserver
they share with the driver on two cores. The apiserver counts every request it serves in
``apiserver_request_total`` (by verb, group, resource and subresource). The baseline reads that
page before and after a run's load, and :class:`CountingTransport` counts the driver's own
requests the same way; what is left is the controller's, plus the cluster's own components
(kube-controller-manager, the scheduler, kwok). Those do not write Kueue's kinds, and write few
Events, so the figures kept are the writes (``POST``, ``PUT``, ``PATCH``, ``APPLY``, ``DELETE``)
to Kueue's group and to Events: what a controller of Kueue's kinds writes.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from pykueue.kube.transport import HttpResponse, Timeout, Transport

WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "APPLY", "DELETE"})
KUEUE_GROUP = "kueue.x-k8s.io"
EVENT_GROUPS = frozenset({"", "events.k8s.io"})

# verb, group ("" for the core group), resource ("workloads" or "workloads/status")
Key = tuple[str, str, str]


def request_totals(metrics_text: str) -> Counter[Key]:
    """``apiserver_request_total`` summed over every label but verb, group, resource and
    subresource, keeping only the writes to Kueue's group and to Events."""
    totals: Counter[Key] = Counter()
    for family in text_string_to_metric_families(metrics_text):
        if family.name != "apiserver_request":
            continue
        for sample in family.samples:
            if sample.name != "apiserver_request_total":
                continue
            key = _key(
                sample.labels.get("verb", ""),
                sample.labels.get("group", ""),
                sample.labels.get("resource", ""),
                sample.labels.get("subresource", ""),
            )
            if key is not None:
                totals[key] += int(sample.value)
    return totals


def _key(verb: str, group: str, resource: str, subresource: str) -> Key | None:
    if verb not in WRITE_VERBS:
        return None
    if group != KUEUE_GROUP and not (resource == "events" and group in EVENT_GROUPS):
        return None
    return verb, group, f"{resource}/{subresource}" if subresource else resource


def read_request_totals(transport: Transport) -> Counter[Key] | None:
    """The apiserver's counters now (None when its ``/metrics`` does not answer 200: a cluster
    whose credentials may not read it)."""
    try:
        answer = transport.request(
            "GET", "/metrics", query=[], body=None, headers={"Accept": "text/plain"}, timeout=(5.0, 30.0),
            stream=False,
        )
    except Exception:  # the figure is optional; the run goes on without it
        return None
    if answer.status != 200:
        return None
    return request_totals(answer.data.decode("utf-8", errors="replace"))


def key_of(method: str, path: str, patch_type: str | None = None) -> Key | None:
    """The apiserver's key for one request the driver sends (None: not a kept write).

    ``/apis/<group>/<version>/[namespaces/<ns>/]<resource>[/<name>[/<subresource>]]`` or
    ``/api/v1/...`` for the core group; a server-side apply is a ``PATCH`` the apiserver counts
    as ``APPLY``."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return None
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
        rest = rest[2:]  # namespaced: drop "namespaces/<ns>" unless the namespace itself is named
    if not rest:
        return None
    resource = rest[0]
    subresource = rest[2] if len(rest) >= 3 else ""
    verb = "APPLY" if method == "PATCH" and patch_type == "application/apply-patch+yaml" else method
    return _key(verb, group, resource, subresource)


class CountingTransport:
    """A :class:`Transport` that counts the kept writes it sends, by the apiserver's key, so the
    driver's own requests can be taken out of the apiserver's totals."""

    def __init__(self, inner: Transport) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._counts: Counter[Key] = Counter()

    def counts(self) -> Counter[Key]:
        with self._lock:
            return Counter(self._counts)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]],
        body: Any,
        headers: dict[str, str],
        timeout: Timeout,
        stream: bool,
    ) -> HttpResponse:
        key = key_of(method, path, headers.get("Content-Type"))
        answer = self._inner.request(
            method, path, query=query, body=body, headers=headers, timeout=timeout, stream=stream
        )
        if key is not None:  # counted once it was served (a request that never arrived is not)
            with self._lock:
                self._counts[key] += 1
        return answer

    def reload_credentials(self) -> None:
        self._inner.reload_credentials()

    def close(self) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)  # e.g. ``host``


def controller_writes(
    before: Mapping[Key, int], after: Mapping[Key, int], driver: Mapping[Key, int]
) -> dict[str, int]:
    """The run's kept writes the driver did not send, as ``"PATCH workloads/status"`` → count
    (a key whose difference is not positive is left out), largest first."""
    result: dict[str, int] = {}
    for key in set(after) | set(before):
        count = after.get(key, 0) - before.get(key, 0) - driver.get(key, 0)
        if count > 0:
            verb, group, resource = key
            label = f"{verb} {resource}" if group in (KUEUE_GROUP, "") else f"{verb} {resource}.{group}"
            result[label] = result.get(label, 0) + count
    return dict(sorted(result.items(), key=lambda item: (-item[1], item[0])))
