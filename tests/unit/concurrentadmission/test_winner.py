"""One winner per parent: the claim on the parent, written with a resourceVersion precondition
before an option is marked Admitted (controller/concurrentadmission/winner.py)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from controller.concurrentadmission.winner import WinnerClaims, claimed_by, decide_claim
from controller.core.workload_controller import WorkloadController
from controller.runtime.events import RecordingEvents
from pykueue.api import constants as C
from tests.builders import LocalQueueBuilder, ResourceFlavorBuilder, condition
from tests.unit.concurrentadmission.helpers import config_of, option, parent, reserved, three_flavor_queue
from tests.unit.core.fakes import FakeApi, FakeInformer

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
PLURALS = ("workloads", "localqueues", "clusterqueues", "resourceflavors", "workloadpriorityclasses", "priorityclasses")
Obj = dict[str, Any]


def _checked_queue() -> Obj:
    cq = three_flavor_queue("RemoveOther")
    cq["spec"]["admissionChecks"] = ["prov"]
    return cq


def _ready(obj: Obj, flavor: str) -> Obj:
    """Reserved on ``flavor``, its check Ready, not Admitted yet: the workload controller's turn."""
    obj = reserved(obj, flavor, admitted=False)
    obj["status"]["conditions"].append(
        condition("Admitted", False, C.REASON_UNSATISFIED_CHECKS, "The workload has not all admission checks")
    )
    obj["status"]["admissionChecks"] = [
        {"name": "prov", "state": "Ready", "lastTransitionTime": "2026-01-01T00:00:00Z", "message": ""}
    ]
    return obj


def _world() -> tuple[FakeApi, dict[str, FakeInformer], Obj, Obj, Obj]:
    informers = {p: FakeInformer() for p in PLURALS}
    api = FakeApi(informers)
    cq = _checked_queue()
    api.put("clusterqueues", cq)
    api.put("localqueues", LocalQueueBuilder("lq", "ns", "cq").obj())
    for flavor in ("reservation", "on-demand", "spot"):
        api.put("resourceflavors", ResourceFlavorBuilder(flavor).obj())
    p = parent()
    p["metadata"]["uid"] = "parent-uid"
    p = api.put("workloads", p)
    config = config_of(cq)
    a = api.put("workloads", _ready(option(p, config, "reservation"), "reservation"))
    b = api.put("workloads", _ready(option(p, config, "on-demand"), "on-demand"))
    return api, informers, p, a, b


def _controller(api: FakeApi, informers: dict[str, FakeInformer], *, claims: bool = True) -> WorkloadController:
    store = informers["workloads"].store
    return WorkloadController(
        api,
        workloads=informers["workloads"],
        local_queues=informers["localqueues"],
        cluster_queues=informers["clusterqueues"],
        events=RecordingEvents(),
        clock=lambda: NOW,
        claim_winner=WinnerClaims(api, store.get).claim if claims else None,
    )


def _admitted(api: FakeApi, name: str) -> bool:
    obj = api.objects[("workloads", f"ns/{name}")]
    return any(
        c["type"] == "Admitted" and c["status"] == "True" for c in obj.get("status", {}).get("conditions", [])
    )


def test_two_options_ready_at_once_on_stale_caches_yield_one_admitted_option() -> None:
    """Both options' checks are Ready; each is reconciled against a cache that never shows the
    other's admission (lag). The first claims the parent; the second's claim, made from the same
    parent resourceVersion, conflicts, reads the parent again and finds the first: it stays
    reserved and not admitted."""
    api, informers, p, a, b = _world()
    ctrl = _controller(api, informers)
    api.lag = True
    ctrl.reconcile(f"ns/{a['metadata']['name']}")
    retry = ctrl.reconcile(f"ns/{b['metadata']['name']}")
    assert _admitted(api, a["metadata"]["name"])
    assert not _admitted(api, b["metadata"]["name"])
    assert retry is not None, "the refused option is looked at again (the claimant may still lose)"
    parent_now = api.objects[("workloads", f"ns/{p['metadata']['name']}")]
    assert claimed_by(parent_now) == a["metadata"]["name"]
    b_now = api.objects[("workloads", f"ns/{b['metadata']['name']}")]
    admitted = next(c for c in b_now["status"]["conditions"] if c["type"] == "Admitted")
    assert admitted["reason"] == C.REASON_OTHER_OPTION_ADMITTED
    assert a["metadata"]["name"] in admitted["message"]
    assert api.conflicts >= 1


def test_without_the_claim_both_options_would_be_admitted() -> None:
    """The race the claim closes, shown on the same stale caches."""
    api, informers, _p, a, b = _world()
    ctrl = _controller(api, informers, claims=False)
    api.lag = True
    ctrl.reconcile(f"ns/{a['metadata']['name']}")
    ctrl.reconcile(f"ns/{b['metadata']['name']}")
    assert _admitted(api, a["metadata"]["name"]) and _admitted(api, b["metadata"]["name"])


def test_a_sibling_that_gave_its_quota_back_no_longer_holds_the_claim() -> None:
    """After a migration or a preemption the annotation still names the old winner; once that
    option holds no quota, another option claims the parent."""
    api, informers, p, a, b = _world()
    p = api.put("workloads", {**p, "metadata": {**p["metadata"], "annotations": {C.OPTION_WINNER_ANNOTATION: a["metadata"]["name"]}}})
    released = copy.deepcopy(a)
    released["status"] = {"conditions": [condition("QuotaReserved", False, "Pending", "evicted")]}
    api.put("workloads", released)
    ctrl = _controller(api, informers)
    ctrl.reconcile(f"ns/{b['metadata']['name']}")
    assert _admitted(api, b["metadata"]["name"])
    assert claimed_by(api.objects[("workloads", f"ns/{p['metadata']['name']}")]) == b["metadata"]["name"]


def test_the_claim_is_rewritten_by_its_own_holder_so_older_claims_conflict() -> None:
    p = parent()
    p["metadata"].update(resourceVersion="7", annotations={C.OPTION_WINNER_ANNOTATION: "x"})
    me = {"metadata": {"name": "x"}}
    decision = decide_claim(p, me, None)
    assert decision.patch == {
        "metadata": {"resourceVersion": "7", "annotations": {C.OPTION_WINNER_ANNOTATION: "x"}}
    }


def test_a_sibling_holding_quota_keeps_the_claim() -> None:
    p = parent()
    p["metadata"]["annotations"] = {C.OPTION_WINNER_ANNOTATION: "w"}
    holder = reserved({"metadata": {"name": "w"}}, "spot")
    decision = decide_claim(p, {"metadata": {"name": "x"}}, holder)
    assert decision.patch is None and decision.holder == "w"
    # the same sibling without quota, or gone: granted
    assert decide_claim(p, {"metadata": {"name": "x"}}, {"metadata": {"name": "w"}}).patch is not None
    assert decide_claim(p, {"metadata": {"name": "x"}}, None).patch is not None


def test_an_option_whose_parent_is_gone_is_not_admitted() -> None:
    api, informers, p, a, _b = _world()
    del api.objects[("workloads", f"ns/{p['metadata']['name']}")]
    informers["workloads"].store.delete(f"ns/{p['metadata']['name']}")
    ctrl = _controller(api, informers)
    ctrl.reconcile(f"ns/{a['metadata']['name']}")
    assert not _admitted(api, a["metadata"]["name"])
