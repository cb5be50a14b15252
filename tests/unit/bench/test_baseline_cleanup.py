"""A benchmark run's cleanup: its Workloads deleted per namespace before the namespaces, and the
next run held back until none of the run's objects is left (after a `kueue@` run they are stored
in Kueue's version, which the project's CRDs no longer serve once restored)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.baseline import CLEANUP_BASE_S, RUN_KINDS, cleanup_seconds, delete_run
from bench.baseline_shape import RUN_LABEL, Names
from pykueue.kube.resources import CLUSTER_QUEUES, NAMESPACES, RESOURCE_FLAVORS, WORKLOADS, Resource


class FakeCluster:
    """Objects per kind; a deletion takes effect after ``lag`` more lists (the apiserver deletes
    a collection one object at a time)."""

    def __init__(self, objects: dict[Resource, list[str]], lag: int) -> None:
        self.objects = {res: list(names) for res, names in objects.items()}
        self.lag = lag
        self.calls: list[tuple[str, Resource, str | None]] = []
        self._doomed: dict[Resource, int] = {}

    def list(self, res: Resource, namespace: str | None = None, *, label_selector: str | None = None, limit: int | None = None) -> dict[str, Any]:
        assert label_selector == f"{RUN_LABEL}=r1"
        for doomed, left in list(self._doomed.items()):
            if left <= 0:
                self.objects[doomed] = []
                del self._doomed[doomed]
            else:
                self._doomed[doomed] = left - 1
        return {"items": [{"metadata": {"name": n}} for n in self.objects.get(res, [])][: limit or None]}

    def delete(self, res: Resource, name: str, namespace: str | None = None) -> bool:
        self.calls.append(("delete", res, name))
        self._doomed[res] = self.lag
        return True

    def delete_collection(self, res: Resource, namespace: str | None = None, *, label_selector: str | None = None) -> None:
        assert label_selector == f"{RUN_LABEL}=r1"
        self.calls.append(("delete_collection", res, namespace))
        self._doomed[res] = self.lag


def test_workloads_go_per_namespace_before_the_namespaces_and_the_wait_ends_when_all_are_gone() -> None:
    cluster = FakeCluster({NAMESPACES: ["ns-0", "ns-1"], WORKLOADS: ["a", "b"], CLUSTER_QUEUES: ["cq"], RESOURCE_FLAVORS: ["f"]}, lag=3)
    sleeps: list[float] = []
    assert delete_run(cluster, Names("r1"), wait_s=60, sleep=sleeps.append) is True  # type: ignore[arg-type]
    kinds = [(call, res) for call, res, _ in cluster.calls]
    assert kinds[:2] == [("delete_collection", WORKLOADS)] * 2
    assert {ns for call, res, ns in cluster.calls if call == "delete_collection"} == {"ns-0", "ns-1"}
    assert kinds.index(("delete", NAMESPACES)) > 1, "namespaces only after their workloads"
    assert sleeps, "it waited for the deletions to take effect"
    assert all(not cluster.objects.get(res) for res in RUN_KINDS)


def test_objects_left_after_the_wait_are_named_and_reported(capsys: pytest.CaptureFixture[str]) -> None:
    cluster = FakeCluster({NAMESPACES: ["ns-0"], WORKLOADS: ["a"]}, lag=10_000)
    clock = iter(range(10_000))
    left = delete_run(cluster, Names("r1"), wait_s=5, sleep=lambda _s: None, clock=lambda: float(next(clock)))  # type: ignore[arg-type]
    assert left is False
    out = capsys.readouterr().out
    assert "still there after 5 s" in out and str(WORKLOADS) in out and str(NAMESPACES) in out


def test_a_larger_run_is_given_longer_to_clean_up() -> None:
    assert cleanup_seconds(0) == CLEANUP_BASE_S
    assert cleanup_seconds(50_000) > cleanup_seconds(15_000) > CLEANUP_BASE_S
