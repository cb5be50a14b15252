"""``kubectl pykueue pending``: which visibility requests it makes and what it prints."""

from __future__ import annotations

import io
from typing import Any

from pykueue.cli.kubectl_pykueue import build_parser, pending


def _summary(*items: tuple[str, str, int, int, int]) -> dict[str, Any]:
    return {"kind": "PendingWorkloadsSummary", "items": [
        {"metadata": {"name": n, "namespace": "ns"}, "localQueueName": lq, "priority": p,
         "positionInClusterQueue": cq, "positionInLocalQueue": lqp}
        for n, lq, p, cq, lqp in [(i[0], i[1], i[2], i[3], i[4]) for i in items]]}


class FakeClient:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str | None, list[tuple[str, str]] | None]] = []

    def list(self, res: Any, namespace: str | None = None) -> dict[str, Any]:
        return {"items": [{"metadata": {"name": "lq-b"}}, {"metadata": {"name": "lq-a"}}]}

    def get_subresource(self, res: Any, name: str, subresource: str, namespace: str | None = None,
                        query: list[tuple[str, str]] | None = None) -> dict[str, Any]:
        self.calls.append((res.plural, name, namespace, query))
        return _summary((f"{name}-wl", name, 5, 3, 0))


def test_pending_lists_every_local_queue_of_the_namespace() -> None:
    client, out = FakeClient(), io.StringIO()
    assert pending(client, build_parser().parse_args(["pending", "-n", "ns"]), out) == 0
    assert [(c[0], c[1], c[2]) for c in client.calls] == [("localqueues", "lq-a", "ns"), ("localqueues", "lq-b", "ns")]
    lines = out.getvalue().splitlines()
    assert lines[0].split("   ")[0].strip() == "NAMESPACE" and "POSITION IN CQ" in lines[0]
    assert lines[1].split() == ["ns", "lq-a-wl", "lq-a", "5", "3", "0"]


def test_pending_for_a_cluster_queue_pages() -> None:
    client, out = FakeClient(), io.StringIO()
    args = build_parser().parse_args(["pending", "--cluster-queue", "cq", "--limit", "10", "--offset", "20"])
    pending(client, args, out)
    assert client.calls == [("clusterqueues", "cq", None, [("limit", "10"), ("offset", "20")])]


def test_explain_finds_a_jobs_workload_and_prints_the_answer() -> None:
    from pykueue.cli.kubectl_pykueue import explain

    class Client:
        def list(self, res: Any, namespace: str | None = None) -> dict[str, Any]:
            return {"items": [{"metadata": {"name": "job-train-abc12", "ownerReferences": [
                {"kind": "Job", "name": "train"}]}}]}

        def get_subresource(self, res: Any, name: str, subresource: str, namespace: str | None = None,
                            query: Any = None) -> dict[str, Any]:
            assert (res.plural, name, subresource, namespace) == ("workloads", "job-train-abc12", "explain", "ns")
            return {"metadata": {"name": name, "namespace": "ns"}, "state": "Pending", "clusterQueue": "cq",
                    "localQueue": "lq", "clusterQueueActive": True, "positionInClusterQueue": 1,
                    "ahead": {"count": 1, "first": [{"namespace": "ns", "name": "other"}]},
                    "dryRun": {"outcome": "DoesNotFit", "reason": "Pending", "message": "insufficient quota"},
                    "resources": [{"flavor": "f", "resource": "cpu", "requested": "2", "free": "0",
                                   "nominalQuota": "2", "cohortCanLend": "0", "missing": "2"}],
                    "suggestion": "free 2 of cpu in flavor f"}

    out = io.StringIO()
    assert explain(Client(), build_parser().parse_args(["explain", "-n", "ns", "job/train"]), out) == 0
    text = out.getvalue()
    assert "Position:      1 (1 ahead: ns/other)" in text
    assert "f/cpu: needs 2, free 0, nominal 2, cohort can lend 0, missing 2" in text
    assert text.splitlines()[-1] == "To admit it:   free 2 of cpu in flavor f"


def test_explain_prints_each_checks_state_and_each_option() -> None:
    from pykueue.cli.kubectl_pykueue import render_explanation

    out = io.StringIO()
    render_explanation({"metadata": {"name": "w", "namespace": "ns"}, "state": "HoldsQuota", "admitted": False,
                        "admissionChecks": ["prov"],
                        "admissionCheckStates": [{"name": "prov", "state": "Pending", "message": "ETA 5m"}],
                        "options": [{"name": "w-option-spot", "resourceFlavors": ["spot"], "status": "Pending",
                                     "message": "Created", "positionInClusterQueue": 2}],
                        "suggestion": "waits"}, out)
    text = out.getvalue()
    assert "  prov: Pending (ETA 5m)\n" in text
    assert "Option:        w-option-spot (spot): Pending, position 2 - Created\n" in text


def test_explain_prints_the_workloads_whose_pods_block_admission() -> None:
    from pykueue.cli.kubectl_pykueue import render_explanation

    out = io.StringIO()
    render_explanation({"metadata": {"name": "w", "namespace": "ns"}, "state": "Pending",
                        "positionInClusterQueue": 0, "ahead": {"count": 0, "first": []},
                        "dryRun": {"outcome": "Fits", "reason": "", "message": "", "flavors": {}},
                        "admissionBlockedBy": [{"namespace": "ns", "name": "first"}],
                        "suggestion": "it is next: it fits now and will be admitted once the pods of ns/first are ready"},
                       out)
    assert "Admission waits for the pods of: ns/first (blockAdmission)\n" in out.getvalue()


def test_explain_prints_the_multikueue_workers() -> None:
    from pykueue.cli.kubectl_pykueue import render_explanation

    out = io.StringIO()
    render_explanation({"metadata": {"name": "w", "namespace": "ns"}, "state": "HoldsQuota", "admitted": True,
                        "multiKueue": {"admissionCheck": "mk", "dispatcher": "AllAtOnce", "clusterName": "worker2",
                                       "workers": [{"name": "worker2", "active": True, "nominated": True, "copy": True,
                                                    "quotaReserved": True, "admitted": True, "job": True}]},
                        "suggestion": "MultiKueue dispatched it to worker2; its Job runs there"}, out)
    text = out.getvalue()
    assert "MultiKueue:    check mk, AllAtOnce, dispatched to worker2\n" in text
    assert "  worker2: active, nominated, copy created, quota reserved, admitted, Job created\n" in text
