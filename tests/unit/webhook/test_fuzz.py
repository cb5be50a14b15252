"""Fuzzing: malformed and random AdmissionReviews never get a 500, and never kill a gunicorn worker."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykueue.api.conversion import convert
from pykueue.tls.certs import generate_bundle
from tests.builders import JobBuilder, SeedClusterQueueBuilder, WorkloadBuilder
from tests.unit.webhook.gunicorn_process import stop_gunicorn
from tests.unit.webhook.reviews import review
from webhook.registry import HOOKS, LEGACY_KUEUE_PATHS

PATHS = [hook.path for hook in HOOKS] + [path for path, _ in LEGACY_KUEUE_PATHS]
FUZZ_SETTINGS = settings(
    max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
# Keys the rules actually read, so random values land where they can hurt.
interesting_keys = st.sampled_from([
    "spec", "status", "metadata", "labels", "resourceGroups", "flavors", "resources", "coveredResources",
    "nominalQuota", "borrowingLimit", "lendingLimit", "concurrentAdmission", "explicitOptions", "name",
    "allowedResourceFlavors", "onSuccess", "removeBelowTargetConfig", "flavorFungibility", "fallbackStrategy",
    "rules", "timeout", "timeoutMinutes", "trigger", "podSets", "template", "containers", "requests",
    "workloadMode", "type", "conditions", "admission", "podSetAssignments", "suspend", "parallelism",
    "ownerReferences", "kueue.x-k8s.io/queue-name", "namespaceSelector", "matchExpressions", "cohort",
    "cohortName", "concurrentAdmissionPolicy", "migration", "mode", "constraints", "lastAcceptableFlavorName",
    "priorityClassRef", "queueingStrategy",
])


def seeds() -> list[tuple[str, dict[str, Any]]]:
    cq = SeedClusterQueueBuilder("cq").flavor("a", cpu="1").flavor("b", cpu="1").option("x", "a").fallback_rule(
        "a", timeout="1m").obj()
    workload = WorkloadBuilder("w", "ns").queue("q").podset(cpu="1").reserved("cq").obj()
    # v1beta2 seeds: Kueue's policy and the fields v1beta2 spells its own way.
    policy_cq = convert(SeedClusterQueueBuilder("cq").cohort("co").flavor("a", cpu="1").flavor("b", cpu="1").obj(), "v1beta2")
    policy_cq["spec"]["concurrentAdmissionPolicy"] = {
        "migration": {"mode": "TryPreferredFlavors", "constraints": {"lastAcceptableFlavorName": "b"}}}
    workload_v2 = convert(workload, "v1beta2")
    workload_v2["spec"].update(priority=1, priorityClassRef={"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                                             "name": "p"})
    return [
        ("ClusterQueue", cq),
        ("ClusterQueue", policy_cq),
        ("Job", JobBuilder("j", "ns").queue("q").requests(cpu="1").obj()),
        ("Workload", workload),
        ("Workload", workload_v2),
    ]


@st.composite
def mutated_objects(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A valid object of some kind with random values written at random places in it."""
    kind, obj = draw(st.sampled_from(seeds()))
    for _ in range(draw(st.integers(1, 6))):
        node: Any = obj
        for _depth in range(draw(st.integers(0, 5))):
            if isinstance(node, dict) and node:
                child = node[draw(st.sampled_from(sorted(node)))]
            elif isinstance(node, list) and node:
                child = node[draw(st.integers(0, len(node) - 1))]
            else:
                break
            if not isinstance(child, dict | list):
                break
            node = child
        if isinstance(node, dict):
            node[draw(interesting_keys | st.text(max_size=8))] = draw(json_values)
        elif isinstance(node, list):
            node.append(draw(json_values))
    return kind, obj


def check(app: Flask, path: str, body: bytes) -> Any:
    response = app.test_client().post(path, data=body, content_type="application/json")
    assert response.status_code in (200, 400), (response.status_code, response.get_data(as_text=True))
    return response


@FUZZ_SETTINGS
@given(path=st.sampled_from([*PATHS, "/nope"]), body=st.binary(max_size=300))
def test_random_bytes(app: Flask, path: str, body: bytes) -> None:
    check(app, path, body)


@FUZZ_SETTINGS
@given(path=st.sampled_from(PATHS), document=json_values)
def test_random_json(app: Flask, path: str, document: Any) -> None:
    check(app, path, json.dumps(document).encode())


@FUZZ_SETTINGS
@given(
    path=st.sampled_from(PATHS),
    mutated=mutated_objects(),
    operation=st.sampled_from(["CREATE", "UPDATE", "DELETE"]),
    request_noise=st.dictionaries(
        st.sampled_from(["kind", "userInfo", "object", "oldObject", "operation", "namespace", "dryRun", "name"]),
        json_values, max_size=2),
)
def test_mutated_reviews(app: Flask, path: str, mutated: tuple[str, dict[str, Any]], operation: str,
                         request_noise: dict[str, Any]) -> None:
    kind, obj = mutated
    api_version = obj.get("apiVersion")
    version = api_version.rpartition("/")[2] if isinstance(api_version, str) and kind != "Job" else None
    body = review(kind, obj, old=obj if operation != "CREATE" else None, operation=operation, uid="fuzz-uid",
                  version=version or None)
    body["request"].update(request_noise)
    response = check(app, path, json.dumps(body).encode())
    if response.status_code == 200:
        answer = response.get_json()
        assert answer["apiVersion"] == "admission.k8s.io/v1"
        assert answer["kind"] == "AdmissionReview"
        assert answer["response"]["uid"] == "fuzz-uid"
        assert "internal error" not in answer["response"].get("status", {}).get("message", ""), answer


# --- a real gunicorn process ----------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _worker_pids(master: int) -> set[int]:
    pids = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == master:
            pids.add(int(stat.parent.name))
    return pids


@pytest.fixture
def gunicorn_server(tmp_path: Path) -> Iterator[tuple[int, bytes, subprocess.Popen[bytes]]]:
    bundle = generate_bundle(dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    (tmp_path / "tls.crt").write_bytes(bundle.cert)
    (tmp_path / "tls.key").write_bytes(bundle.key)
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "webhook.main", "--cert-management", "external", "--cert-dir", str(tmp_path),
         "--bind", "127.0.0.1", "--port", str(port), "--workers", "2", "--log-format", "text",
         "--kubeconfig", str(tmp_path / "no-kubeconfig")],
        stdout=subprocess.DEVNULL, stderr=(tmp_path / "log").open("wb"), start_new_session=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    deadline = time.monotonic() + 30
    while len(_worker_pids(process.pid)) < 2 or not _healthy(port, bundle.ca_cert):
        assert process.poll() is None, (tmp_path / "log").read_text()
        assert time.monotonic() < deadline, "gunicorn did not start"
        time.sleep(0.2)
    try:
        yield port, bundle.ca_cert, process
    finally:
        stop_gunicorn(process)


def _healthy(port: int, ca: bytes) -> bool:
    try:
        return _post(port, ca, "/healthz", None)[0] == 200
    except OSError:
        return False


def _post(port: int, ca: bytes, path: str, body: bytes | None) -> tuple[int, bytes]:
    context = ssl.create_default_context(cadata=ca.decode())
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        connection.request("GET" if body is None else "POST", path, body=body,
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_burst_of_random_reviews_against_gunicorn(
    gunicorn_server: tuple[int, bytes, subprocess.Popen[bytes]]
) -> None:
    port, ca, process = gunicorn_server
    workers_before = _worker_pids(process.pid)
    bodies: list[tuple[str, bytes]] = []

    @settings(max_examples=400, deadline=None, database=None)
    @given(path=st.sampled_from(PATHS), mutated=mutated_objects(), junk=st.binary(max_size=64), raw=st.booleans())
    def collect(path: str, mutated: tuple[str, dict[str, Any]], junk: bytes, raw: bool) -> None:
        kind, obj = mutated
        body = junk if raw else json.dumps(review(kind, obj)).encode()
        bodies.append((path, body))

    collect()
    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(lambda item: _post(port, ca, item[0], item[1])[0], bodies))
    assert len(statuses) == len(bodies) >= 400
    assert set(statuses) <= {200, 400}
    assert _worker_pids(process.pid) == workers_before, "a worker died and was replaced"
    assert process.poll() is None
