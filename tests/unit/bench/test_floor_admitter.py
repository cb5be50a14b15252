"""The baseline's floor: the admission it writes, and when it writes none."""

from __future__ import annotations

import copy
import threading
from datetime import UTC, datetime
from typing import Any

from bench import baseline_shape as shape_objects
from bench.baseline_shape import Names, load_shape
from bench.baseline_variants import VARIANTS, choose_variants, parse_source_tree
from bench.floor_admitter import (
    ADMITTED_MESSAGE,
    FloorAdmitter,
    admission_for,
    admission_patch,
    first_flavor,
    podset_usage,
)
from pykueue.kube.errors import Conflict

NOW = datetime(2026, 11, 29, 1, 0, tzinfo=UTC)
NAMES = Names("abc123")
SHAPE = load_shape("baseline")


def _large(queue_index: int = 0, ordinal: int = 0) -> dict[str, Any]:
    large = next(c for c in SHAPE.classes if c.name == "large")
    wl = shape_objects.workload(NAMES, queue_index, large, ordinal)
    wl["metadata"].update(uid="u-1", resourceVersion="7")
    return wl


def _stores() -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    lq = shape_objects.local_queue(NAMES, 0)
    cq = shape_objects.cluster_queue(SHAPE, NAMES, 0)
    return {f"{NAMES.namespace(0)}/main": lq}, {NAMES.cluster_queue(0): cq}


def test_admission_records_every_podset_on_the_first_flavor_with_requests_times_count() -> None:
    wl = _large()
    wl["spec"]["podSets"].append(
        {
            "name": "workers",
            "count": 3,
            "template": {"spec": {"containers": [
                {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m"}}},
            ]}},
        }
    )
    assert podset_usage(wl["spec"]["podSets"][1]) == {"cpu": 2250, "memory": 3 * 2**30}
    assert admission_for(wl, "cq", "flavor-a") == {
        "clusterQueue": "cq",
        "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "flavor-a"}, "resourceUsage": {"cpu": "20"}, "count": 1},
            {
                "name": "workers",
                "flavors": {"cpu": "flavor-a", "memory": "flavor-a"},
                "resourceUsage": {"cpu": "2250m", "memory": "3Gi"},
                "count": 3,
            },
        ],
    }


def test_first_flavor_of_the_first_resource_group() -> None:
    cq = shape_objects.cluster_queue(SHAPE, NAMES, 0)
    assert first_flavor(cq) == NAMES.flavor
    assert first_flavor({"spec": {"resourceGroups": []}}) is None
    assert first_flavor(None) is None


def test_the_patch_is_the_schedulers_reservation_guarded_by_resource_version() -> None:
    lqs, cqs = _stores()
    patch = admission_patch(_large(), lqs.get, cqs.get, NOW)
    assert isinstance(patch, dict)
    assert patch["metadata"] == {"resourceVersion": "7"}
    status = patch["status"]
    assert status["admission"]["clusterQueue"] == NAMES.cluster_queue(0)
    assert status["admission"]["podSetAssignments"][0]["flavors"] == {"cpu": NAMES.flavor}
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["QuotaReserved"]["status"] == conditions["Admitted"]["status"] == "True"
    assert conditions["QuotaReserved"]["message"] == ADMITTED_MESSAGE


def test_nothing_to_write_for_a_workload_that_holds_quota_or_finished() -> None:
    lqs, cqs = _stores()
    patch = admission_patch(_large(), lqs.get, cqs.get, NOW)
    assert isinstance(patch, dict)
    admitted = _large()
    admitted["status"] = copy.deepcopy(patch["status"])
    assert admission_patch(admitted, lqs.get, cqs.get, NOW) is None
    finished = _large()
    finished["status"] = {"conditions": [{"type": "Finished", "status": "True", "reason": "Succeeded"}]}
    assert admission_patch(finished, lqs.get, cqs.get, NOW) is None


def test_unknown_queues_are_a_sentence_not_an_exception() -> None:
    lqs, cqs = _stores()
    assert admission_patch(_large(), {}.get, cqs.get, NOW) == (
        f"LocalQueue {NAMES.namespace(0)}/'main' is not known"
    )
    reason = admission_patch(_large(), lqs.get, {}.get, NOW)
    assert isinstance(reason, str) and f"ClusterQueue '{NAMES.cluster_queue(0)}'" in reason


class _Client:
    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail
        self.patches: list[tuple[str, str, dict[str, Any]]] = []
        self.written = threading.Event()

    def patch_status(self, _res: Any, name: str, patch: dict[str, Any], namespace: str) -> dict[str, Any]:
        self.patches.append((namespace, name, patch))
        self.written.set()
        if self.fail is not None:
            raise self.fail
        return {}


class _Store:
    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.get = objects.get


class _Informer:
    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.store = _Store(objects)


def _admitter(client: _Client) -> FloorAdmitter:
    admitter = FloorAdmitter(client, writers=1)  # type: ignore[arg-type]
    lqs, cqs = _stores()
    admitter.local_queues, admitter.cluster_queues = _Informer(lqs), _Informer(cqs)  # type: ignore[assignment]
    return admitter


def test_each_pending_workload_is_written_once_and_a_conflict_counts_as_failed() -> None:
    client = _Client()
    admitter = _admitter(client)
    admitter.offer(_large())
    admitter.pool.shutdown(wait=True)
    assert [(ns, name) for ns, name, _ in client.patches] == [(NAMES.namespace(0), "large-0")]
    assert (admitter.admitted, admitter.failed) == (1, 0)

    conflicted = _Client(Conflict(409, "Conflict", "the object has been modified"))
    admitter = _admitter(conflicted)
    admitter.offer(_large())
    admitter.pool.shutdown(wait=True)
    assert (admitter.admitted, admitter.failed) == (0, 1)
    assert not admitter._in_flight  # offered again by the next watch event


def test_a_workload_already_on_its_way_is_not_offered_twice() -> None:
    client = _Client()
    admitter = _admitter(client)
    gate = threading.Event()
    admitter.pool.submit(gate.wait)  # the one writer is busy until the gate opens
    admitter.offer(_large())
    admitter.offer(_large())
    gate.set()
    admitter.pool.shutdown(wait=True)
    assert len(client.patches) == 1


def test_floor_is_a_variant_without_another_trees_controller(tmp_path: Any) -> None:
    assert VARIANTS["floor"].floor and VARIANTS["floor"].qps == VARIANTS["unthrottled"].qps
    tree = tmp_path / "tree"
    (tree / "controller").mkdir(parents=True)
    (tree / "pykueue").mkdir()
    (tree / "controller" / "main.py").write_text("")
    (tree / "pykueue" / "__init__.py").write_text("")
    chosen = choose_variants(["floor", "unthrottled"], [parse_source_tree(f"old={tree}")])
    assert [v.name for v in chosen] == ["floor", "unthrottled", "unthrottled@old"]


def test_a_workload_without_a_queue_is_a_sentence() -> None:
    lqs, cqs = _stores()
    wl = _large()
    del wl["spec"]["queueName"]
    assert admission_patch(wl, lqs.get, cqs.get, NOW) == f"LocalQueue {NAMES.namespace(0)}/'' is not known"


def test_a_workload_whose_queue_is_not_cached_yet_is_tried_again(monkeypatch: Any) -> None:
    monkeypatch.setattr("bench.floor_admitter.RETRY_AFTER_S", 0.05)
    client = _Client()
    admitter = _admitter(client)
    lqs, _ = _stores()
    missing: dict[str, dict[str, Any]] = {}
    admitter.local_queues = _Informer(missing)  # type: ignore[assignment]
    admitter.offer(_large())
    deadline = threading.Event()
    while admitter.failed == 0 and not deadline.wait(0.01):
        pass
    missing.update(lqs)  # the LocalQueue reaches the cache
    assert client.written.wait(5)
    admitter.pool.shutdown(wait=True)
    assert admitter.admitted == 1 and len(client.patches) == 1
