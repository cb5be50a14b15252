"""KubeClient behaviour against a scripted transport: paths, retries, errors, events, watch parsing."""

from __future__ import annotations

import pytest

from pykueue.api.constants import STORAGE_VERSION, VERSION
from pykueue.kube import client as client_module
from pykueue.kube.client import KubeClient, WatchStream, retry_on_conflict
from pykueue.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    ConnectionFailed,
    Gone,
    Invalid,
    ServerError,
)
from pykueue.kube.resources import CLUSTER_QUEUES, CONFIG_MAPS, JOBS, SERVICE_ACCOUNTS, WORKLOADS
from pykueue.kube.transport import HttpResponse
from pykueue.kube.versions import KueueWire
from tests.unit.kube.fake_transport import ChunkStream, ScriptedTransport, refused, status


def make_client(answers: list, sleeps: list[float] | None = None, **kw) -> tuple[KubeClient, ScriptedTransport]:
    transport = ScriptedTransport(list(answers))
    recorded = sleeps if sleeps is not None else []
    # Kueue kinds on the wire in the programs' own version: these tests are about HTTP; the
    # conversion to the storage version has its own (test_versions.py).
    kw.setdefault("kueue_wire", KueueWire(VERSION))
    client = KubeClient(transport, qps=0, sleep=recorded.append, **kw)
    return client, transport


def test_paths_for_core_group_and_crds() -> None:
    client, transport = make_client([{"kind": "Job"}, {"kind": "ClusterQueue"}, {"kind": "WorkloadList"}], kueue_wire=KueueWire())
    client.get(JOBS, "train", "team-a")
    client.get(CLUSTER_QUEUES, "cq")
    client.list(WORKLOADS, label_selector="a=b", limit=10, resource_version="0")
    assert [s.path for s in transport.sent] == [
        "/apis/batch/v1/namespaces/team-a/jobs/train",
        f"/apis/kueue.x-k8s.io/{STORAGE_VERSION}/clusterqueues/cq",
        f"/apis/kueue.x-k8s.io/{STORAGE_VERSION}/workloads",
    ]
    assert transport.sent[2].query == [("labelSelector", "a=b"), ("limit", "10"), ("resourceVersion", "0")]


def test_get_missing_object_is_none() -> None:
    client, _ = make_client([status(404, "NotFound", 'configmaps "x" not found')])
    assert client.get(CONFIG_MAPS, "x", "default") is None


def test_namespaced_object_without_namespace_is_rejected_before_any_request() -> None:
    client, transport = make_client([])
    with pytest.raises(ValueError, match="namespaced"):
        client.get(JOBS, "train")
    with pytest.raises(ValueError, match=r"metadata\.namespace"):
        client.create(JOBS, {"metadata": {"name": "train"}})
    assert transport.sent == []


def test_throttling_is_retried_honouring_retry_after() -> None:
    sleeps: list[float] = []
    client, transport = make_client(
        [status(429, "TooManyRequests", retry_after="3"), {"metadata": {"name": "cq"}}], sleeps
    )
    assert client.get(CLUSTER_QUEUES, "cq") == {"metadata": {"name": "cq"}}
    assert len(transport.sent) == 2
    assert sleeps and sleeps[0] >= 3.0


def test_server_errors_and_connection_errors_are_retried_then_surface() -> None:
    sleeps: list[float] = []
    client, transport = make_client([refused(), status(503, "ServiceUnavailable"), refused()], sleeps, max_retries=2)
    with pytest.raises(ConnectionFailed):
        client.get(CLUSTER_QUEUES, "cq")
    assert len(transport.sent) == 3
    assert len(sleeps) == 2 and all(s > 0 for s in sleeps)


def test_a_backoff_is_made_only_for_a_request_that_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    # A Backoff seeds its own random generator from the OS: too dear for every request.
    made: list[object] = []
    original = client_module.Backoff.__init__

    def counting_init(self: object, *args: object, **kwargs: object) -> None:
        made.append(self)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(client_module.Backoff, "__init__", counting_init)
    sleeps: list[float] = []
    client, _ = make_client(
        [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}, status(503, "ServiceUnavailable"),
         status(503, "ServiceUnavailable"), {"metadata": {"name": "c"}}],
        sleeps,
    )
    client.get(CLUSTER_QUEUES, "a")
    client.get(CLUSTER_QUEUES, "b")
    assert made == []
    client.get(CLUSTER_QUEUES, "c")
    assert len(made) == 1, "one Backoff for the retried request, kept across its retries"
    assert len(sleeps) == 2


def test_persistent_server_error_raises_typed_error() -> None:
    client, _ = make_client([status(500, "InternalError")] * 2, max_retries=1)
    with pytest.raises(ServerError):
        client.get(CLUSTER_QUEUES, "cq")


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (status(409, "Conflict", "the object has been modified"), Conflict),
        (status(409, "AlreadyExists", "exists"), AlreadyExists),
        (status(410, "Expired", "too old resource version"), Gone),
        (status(422, "Invalid", "spec.x: Required value"), Invalid),
    ],
)
def test_client_errors_are_not_retried_and_are_typed(answer: HttpResponse, error: type) -> None:
    client, transport = make_client([answer])
    with pytest.raises(error):
        client.patch(WORKLOADS, "wl", {"spec": {}}, "ns")
    assert len(transport.sent) == 1


def test_unauthorized_reloads_credentials_once() -> None:
    client, transport = make_client([status(401, "Unauthorized"), {"metadata": {"name": "cq"}}])
    assert client.get(CLUSTER_QUEUES, "cq") is not None
    assert transport.reloads == 1


def test_patch_content_types_and_status_subresource() -> None:
    client, transport = make_client([{}, {}, {}])
    client.patch_status(WORKLOADS, "wl", {"status": {"conditions": []}}, "ns")
    client.patch(WORKLOADS, "wl", [{"op": "test", "path": "/x", "value": 1}], "ns", patch_type="json")
    client.patch(CLUSTER_QUEUES, "cq", {"spec": {}}, patch_type="apply", field_manager="me", force=True)
    assert transport.sent[0].path.endswith("/namespaces/ns/workloads/wl/status")
    assert transport.sent[0].headers["Content-Type"] == "application/merge-patch+json"
    assert transport.sent[1].headers["Content-Type"] == "application/json-patch+json"
    assert transport.sent[2].headers["Content-Type"] == "application/apply-patch+yaml"
    assert ("force", "true") in transport.sent[2].query and ("fieldManager", "me") in transport.sent[2].query


def test_a_subresource_that_creates_is_posted_at_the_objects_subresource_path() -> None:
    client, transport = make_client([{"kind": "TokenRequest", "status": {"token": "t0k"}}])
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}}
    answer = client.create_subresource(SERVICE_ACCOUNTS, "reader", "token", request, "monitoring")
    assert answer["status"]["token"] == "t0k"
    (sent,) = transport.sent
    assert (sent.method, sent.path) == ("POST", "/api/v1/namespaces/monitoring/serviceaccounts/reader/token")
    assert sent.body == request and sent.headers["Content-Type"] == "application/json"


def test_patch_rejects_mismatched_body_shape() -> None:
    client, _ = make_client([])
    with pytest.raises(ValueError, match="list of operations"):
        client.patch(WORKLOADS, "wl", {"op": "add"}, "ns", patch_type="json")


def test_delete_sends_preconditions_and_reports_absence() -> None:
    client, transport = make_client([{}, status(404, "NotFound")])
    assert client.delete(WORKLOADS, "wl", "ns", preconditions={"uid": "u1"}) is True
    assert client.delete(WORKLOADS, "wl", "ns") is False
    assert transport.sent[0].body["preconditions"] == {"uid": "u1"}
    assert transport.sent[0].body["propagationPolicy"] == "Background"



def test_delete_collection_deletes_what_the_selector_selects_in_one_request() -> None:
    client, transport = make_client([{}])
    client.delete_collection(WORKLOADS, "ns", label_selector="run=r1")
    (sent,) = transport.sent
    assert (sent.method, sent.path) == ("DELETE", "/apis/kueue.x-k8s.io/v1beta1/namespaces/ns/workloads")
    assert ("labelSelector", "run=r1") in sent.query
    assert sent.body["propagationPolicy"] == "Background"

def test_list_all_follows_continue_tokens() -> None:
    client, transport = make_client(
        [
            {"items": [{"n": 1}], "metadata": {"continue": "t1", "resourceVersion": "5"}},
            {"items": [{"n": 2}], "metadata": {"resourceVersion": "7"}},
        ]
    )
    items, rv = client.list_all(CONFIG_MAPS, "ns", page_size=1)
    assert items == [{"n": 1}, {"n": 2}] and rv == "7"
    assert ("continue", "t1") in transport.sent[1].query


def test_watch_splits_events_across_chunk_boundaries() -> None:
    stream = ChunkStream([b'{"type":"ADDED","object":{"a"', b':1}}\n{"type":"BOOK', b'MARK","object":{}}\n'])
    client, transport = make_client([HttpResponse(200, {}, b"", stream)])
    events = list(client.watch(CONFIG_MAPS, resource_version="10", timeout_seconds=300, read_timeout=70))
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert ("allowWatchBookmarks", "true") in transport.sent[0].query
    assert transport.sent[0].timeout == (10.0, 70)


def test_watch_garbage_line_is_a_disconnect() -> None:
    watch = WatchStream(ChunkStream([b"not json\n"]))
    with pytest.raises(ConnectionFailed):
        next(watch)


def test_retry_on_conflict_reruns_until_success() -> None:
    calls = []

    def operation() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise Conflict(409, "Conflict", "modified")
        return "ok"

    assert retry_on_conflict(operation) == "ok"
    assert len(calls) == 3


def test_invalid_json_answer_is_a_typed_error() -> None:
    client, _ = make_client([HttpResponse(200, {}, b"<html>proxy error</html>")])
    with pytest.raises(ApiError, match="invalid JSON"):
        client.get(CLUSTER_QUEUES, "cq")
