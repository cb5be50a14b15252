"""The controller's writes as the apiserver counted them, less the driver's own."""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench.apiserver_requests import (
    CountingTransport,
    controller_writes,
    key_of,
    read_request_totals,
    request_totals,
)
from bench.baseline_report import format_run
from bench.baseline_shape import load_shape
from pykueue.kube.transport import HttpResponse

PAGE = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, ...
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="kueue.x-k8s.io",resource="workloads",scope="resource",subresource="",verb="POST",version="v1beta2"} 100
apiserver_request_total{code="409",component="apiserver",dry_run="",group="kueue.x-k8s.io",resource="workloads",scope="resource",subresource="",verb="POST",version="v1beta2"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="kueue.x-k8s.io",resource="workloads",scope="resource",subresource="status",verb="PATCH",version="v1beta2"} 250
apiserver_request_total{code="200",component="apiserver",dry_run="",group="kueue.x-k8s.io",resource="clusterqueues",scope="cluster",subresource="status",verb="APPLY",version="v1beta1"} 7
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 190
apiserver_request_total{code="200",component="apiserver",dry_run="",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="PATCH",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="kueue.x-k8s.io",resource="workloads",scope="resource",subresource="",verb="LIST",version="v1beta2"} 40
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="status",verb="PATCH",version="v1"} 900
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 80
"""


def test_only_writes_to_kueues_kinds_and_events_are_kept_summed_over_codes_and_versions() -> None:
    assert request_totals(PAGE) == Counter({
        ("POST", "kueue.x-k8s.io", "workloads"): 102,
        ("PATCH", "kueue.x-k8s.io", "workloads/status"): 250,
        ("APPLY", "kueue.x-k8s.io", "clusterqueues/status"): 7,
        ("POST", "", "events"): 190,
        ("PATCH", "events.k8s.io", "events"): 3,
    })


def test_a_request_path_maps_to_the_apiservers_labels() -> None:
    assert key_of("POST", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads") == (
        "POST", "kueue.x-k8s.io", "workloads")
    assert key_of("PATCH", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w/status",
                  "application/json-patch+json") == ("PATCH", "kueue.x-k8s.io", "workloads/status")
    assert key_of("PATCH", "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/cq/status",
                  "application/apply-patch+yaml") == ("APPLY", "kueue.x-k8s.io", "clusterqueues/status")
    assert key_of("POST", "/api/v1/namespaces/ns/events") == ("POST", "", "events")
    # Not kept: reads, other kinds, a namespace itself, paths that are not resources.
    assert key_of("GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w") is None
    assert key_of("POST", "/api/v1/namespaces") is None
    assert key_of("DELETE", "/api/v1/namespaces/ns") is None
    assert key_of("GET", "/metrics") is None


class _Inner:
    def __init__(self, status: int = 200, data: bytes = b"") -> None:
        self.calls: list[tuple[str, str]] = []
        self.status, self.data = status, data

    def request(self, method: str, path: str, **_: Any) -> HttpResponse:
        self.calls.append((method, path))
        return HttpResponse(self.status, {}, self.data)

    def reload_credentials(self) -> None: ...

    def close(self) -> None: ...


def _send(transport: CountingTransport, method: str, path: str, content_type: str | None = None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    transport.request(method, path, query=[], body=None, headers=headers, timeout=None, stream=False)


def test_the_driver_counts_what_it_sent_and_passes_everything_through() -> None:
    inner = _Inner()
    counting = CountingTransport(inner)  # type: ignore[arg-type]
    for _ in range(3):
        _send(counting, "POST", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads")
    _send(counting, "PATCH", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w/status", "application/json-patch+json")
    _send(counting, "GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads")
    assert len(inner.calls) == 5
    assert counting.counts() == Counter({
        ("POST", "kueue.x-k8s.io", "workloads"): 3,
        ("PATCH", "kueue.x-k8s.io", "workloads/status"): 1,
    })


def test_the_controllers_share_is_the_difference_less_the_drivers() -> None:
    before = request_totals(PAGE)
    after = before + Counter({
        ("POST", "kueue.x-k8s.io", "workloads"): 50,  # all the driver's
        ("PATCH", "kueue.x-k8s.io", "workloads/status"): 120,  # 50 driver's Finished, 70 admissions
        ("POST", "", "events"): 140,
        ("APPLY", "kueue.x-k8s.io", "clusterqueues/status"): 4,
    })
    driver = Counter({("POST", "kueue.x-k8s.io", "workloads"): 50, ("PATCH", "kueue.x-k8s.io", "workloads/status"): 50})
    assert controller_writes(before, after, driver) == {
        "POST events": 140, "PATCH workloads/status": 70, "APPLY clusterqueues/status": 4,
    }


def test_the_apiservers_page_is_read_through_the_transport_and_absent_when_refused() -> None:
    assert read_request_totals(_Inner(200, PAGE.encode())) == request_totals(PAGE)  # type: ignore[arg-type]
    assert read_request_totals(_Inner(403, b"forbidden")) is None  # type: ignore[arg-type]


def test_the_run_block_prints_the_writes_per_workload() -> None:
    shape = load_shape("baseline").scaled(0.001)
    result = {
        "variant": "kueue@v0.14.8", "qps": 50.0, "burst": 100, "scale": 0.001, "workloads": 100,
        "completed": True, "wall_s": 10.0, "cq_utilisation_pct": None, "cq_utilisation_kueue_pct": None,
        "classes": {}, "controller": {}, "driver": {},
        "apiserver_writes": {"POST events": 140, "PATCH workloads/status": 70},
    }
    text = format_run(result, shape)
    assert "controller writes, apiserver-counted [4]" in text
    assert "210  (2.10 per workload: POST events 140, PATCH workloads/status 70)" in text
    assert "[4] the apiserver's apiserver_request_total" in text
