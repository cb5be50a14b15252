"""``explain``: the cycle's nomination run dry for one workload, with what would admit it."""

from __future__ import annotations

from controller.engine.explain_status import check_states, option_names, with_stored_status
from tests.builders import (
    AdmissionCheckBuilder,
    FungibleClusterQueueBuilder,
    PlacementWorkloadBuilder,
    SeedClusterQueueBuilder,
)
from tests.unit.engine.harness import World


def _world(cpu: str = "2", **preemption: str) -> World:
    world = World().flavors("default")
    cq = FungibleClusterQueueBuilder("cq").flavor("default", cpu=cpu)
    if preemption:
        cq = cq.preemption(**preemption)
    world.queue(cq.obj(), lq="lq")
    return world


def test_blocked_by_quota_names_the_missing_amount_and_the_workloads_ahead() -> None:
    world = _world()
    world.add(PlacementWorkloadBuilder("running", "ns").queue("lq").podset(cpu="2")
              .reserved("cq", {"cpu": "default"}, {"cpu": "2"}).admitted().obj())
    world.add(PlacementWorkloadBuilder("first", "ns").queue("lq").podset(cpu="1").at(0).obj())
    world.add(PlacementWorkloadBuilder("mine", "ns").queue("lq").podset(cpu="2").at(1).obj())
    world.cycle()
    result = world.engine.explain("ns/mine")
    assert (result.state, result.cluster_queue, result.position, result.ahead_first) == ("Pending", "cq", 1, ["ns/first"])
    assert result.outcome == "DoesNotFit" and not result.victims  # no preemption policy: nobody to evict
    [view] = result.resources
    assert (view.flavor, view.resource, view.requested, view.free, view.nominal, view.missing) == (
        "default", "cpu", "2", "0", "2", "2")
    assert result.suggestion.startswith("free 2 of cpu in flavor default")
    # Nothing changed: the dry run assumed nothing.
    assert world.engine.admitted_workload("ns/mine") is None and world.engine.pending_count("cq") == 2


def test_fits_and_is_next() -> None:
    world = _world()
    world.add(PlacementWorkloadBuilder("mine", "ns").queue("lq").podset(cpu="1").obj())
    result = world.engine.explain("ns/mine")
    assert result.outcome == "Fits" and result.position == 0
    assert result.suggestion.startswith("it is next")
    assert result.flavors == {"main": {"cpu": "default"}}
    assert world.admit() == ["ns/mine"]  # and the cycle agrees
    assert world.engine.explain("ns/mine").state == "HoldsQuota"


def test_while_block_admission_waits_for_pods_every_suggestion_names_the_workloads_it_waits_for() -> None:
    """``blocked_by`` is the scheduler loop's blockAdmission wait (the cycle itself does not know
    it): "it is next" would mislead, so each suggestion says admission waits for those pods."""
    world = _world(cpu="3")
    world.add(PlacementWorkloadBuilder("running", "ns").queue("lq").podset(cpu="1")
              .reserved("cq", {"cpu": "default"}, {"cpu": "1"}).admitted().obj())
    world.add(PlacementWorkloadBuilder("next", "ns").queue("lq").podset(cpu="1").at(0).obj())
    world.add(PlacementWorkloadBuilder("behind", "ns").queue("lq").podset(cpu="1").at(1).obj())
    world.add(PlacementWorkloadBuilder("big", "ns").queue("lq").podset(cpu="3").at(2).obj())
    wait = ("once the pods of ns/running are ready (waitForPodsReady.blockAdmission: nothing is admitted "
            "while an admitted workload's pods are not ready)")
    nxt = world.engine.explain("ns/next", ["ns/running"])
    assert (nxt.outcome, nxt.position, nxt.blocked_by) == ("Fits", 0, ["ns/running"])
    assert nxt.suggestion == f"it is next: it fits now and will be admitted {wait}"
    assert world.engine.explain("ns/behind", ["ns/running"]).suggestion == (
        f"it fits now, after the 1 workload(s) ahead of it, {wait}")
    assert world.engine.explain("ns/big", ["ns/running"]).suggestion == (
        f"free 1 of cpu in flavor default (or raise its nominalQuota by as much) in ClusterQueue cq; "
        f"and it is admitted only {wait}")
    assert world.engine.explain("ns/running", ["ns/running"]).suggestion == "it is admitted; nothing to change"
    many = world.engine.explain("ns/next", [f"ns/w{i}" for i in range(7)])
    assert "once the pods of ns/w0, ns/w1, ns/w2, ns/w3, ns/w4 and 2 more are ready" in many.suggestion
    # Nothing waits: the unchanged wording.
    assert world.engine.explain("ns/next").suggestion.startswith("it is next: it fits now and will be admitted by the next")


def test_would_fit_after_preempting_names_the_victims() -> None:
    world = _world(within_cluster_queue="LowerPriority")
    world.add(PlacementWorkloadBuilder("low", "ns").queue("lq").podset(cpu="2").priority(0)
              .reserved("cq", {"cpu": "default"}, {"cpu": "2"}).admitted().obj())
    world.add(PlacementWorkloadBuilder("mine", "ns").queue("lq").podset(cpu="2").priority(10).obj())
    result = world.engine.explain("ns/mine")
    assert result.outcome == "FitsAfterPreemption"
    assert result.victims == [("ns/low", "cq", "InClusterQueue")]
    assert "after preempting 1 workload(s): ns/low" in result.suggestion
    evictions = world.cycle().preemptions
    assert [p.victim for p in evictions] == ["ns/low"]  # the cycle picks the same victim


def test_stopped_queue_and_unknown_workload() -> None:
    world = World().flavors("default")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="2").stop_policy("Hold").obj(), lq="lq")
    world.add(PlacementWorkloadBuilder("mine", "ns").queue("lq").podset(cpu="1").obj())
    result = world.engine.explain("ns/mine")
    assert not result.queue_active and result.queue_inactive_reason == "Stopped"
    assert "set spec.stopPolicy to None" in result.suggestion
    assert world.engine.explain("ns/nope").state == "Unknown"


def test_a_flavor_excluded_by_a_fallback_rule_is_named_and_skipped() -> None:
    world = World().flavors("reservation", "spot", "on-demand")
    cq = (SeedClusterQueueBuilder("cq").flavor("reservation", cpu="2").flavor("spot", cpu="100")
          .flavor("on-demand", cpu="100").fallback().fallback_rule("*", timeout="10m"))
    world.queue(cq.obj())
    world.add(PlacementWorkloadBuilder("full", "ns").queue("lq-cq").podset(cpu="2")
              .reserved("cq", {"cpu": "reservation"}, {"cpu": "2"}).admitted().obj())
    world.add(PlacementWorkloadBuilder("wl", "ns").queue("lq-cq").podset(cpu="1").flavor_assigned("spot").obj())
    result = world.engine.explain("ns/wl")
    assert result.excluded_flavors == ["spot"]
    assert [v.flavor for v in result.resources] == ["reservation", "on-demand"]  # spot is not offered
    assert result.outcome == "Fits" and result.flavors == {"main": {"cpu": "on-demand"}}
    reservations = world.cycle().reservations  # and the cycle admits it to on-demand too
    assert [r.workload for r in reservations] == ["ns/wl"]
    assert reservations[0].admission["podSetAssignments"][0]["flavors"] == {"cpu": "on-demand"}


def test_admission_checks_follow_the_reservation() -> None:
    world = World().flavors("default")
    world.engine.upsert_admission_check(AdmissionCheckBuilder("prov").active(True).obj())
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="2").admission_checks("prov").obj(), lq="lq")
    world.add(PlacementWorkloadBuilder("mine", "ns").queue("lq").podset(cpu="1").obj())
    result = world.engine.explain("ns/mine")
    assert result.admission_checks == ["prov"] and result.outcome == "Fits"
    assert result.suggestion == ("it is next: it fits now and will be admitted by the next scheduling cycle; "
                                 "then admission checks prov must pass")
    (reservation,) = world.cycle().reservations
    assert reservation.admission_checks  # the cycle reserves and leaves admission to the check


def _checks_world() -> World:
    world = World().flavors("default")
    world.engine.upsert_admission_check(AdmissionCheckBuilder("prov").active(True).obj())
    world.engine.upsert_admission_check(AdmissionCheckBuilder("budget").active(True).obj())
    world.queue(FungibleClusterQueueBuilder("cq").flavor("default", cpu="2").admission_checks("prov", "budget").obj(),
                lq="lq")
    return world


def test_reserved_and_waiting_on_checks_names_each_checks_state_and_message() -> None:
    world = _checks_world()
    wl = (PlacementWorkloadBuilder("mine", "ns").queue("lq").podset(cpu="1")
          .reserved("cq", {"cpu": "default"}, {"cpu": "1"})
          .check("prov", "Pending", message="waiting for capacity, ETA 5m")
          .check("budget", "Ready", message="within budget").obj())
    world.add(wl)
    result = with_stored_status(world.engine.explain("ns/mine"), wl)
    assert (result.state, result.admitted, result.cluster_queue, result.admission_checks) == (
        "HoldsQuota", False, "cq", ["prov", "budget"])
    assert [(v.name, v.state, v.message) for v in result.check_states] == [
        ("prov", "Pending", "waiting for capacity, ETA 5m"), ("budget", "Ready", "within budget")]
    # Only the check that is not Ready is named as what it waits for.
    assert result.suggestion == ("it holds quota in ClusterQueue cq and waits for admission check(s): "
                                 "prov is Pending (waiting for capacity, ETA 5m)")


def test_an_admitted_workload_has_nothing_to_change() -> None:
    world = _checks_world()
    wl = (PlacementWorkloadBuilder("mine", "ns").queue("lq").podset(cpu="1")
          .reserved("cq", {"cpu": "default"}, {"cpu": "1"}).admitted()
          .check("prov", "Ready").check("budget", "Ready").obj())
    world.add(wl)
    result = with_stored_status(world.engine.explain("ns/mine"), wl)
    assert (result.state, result.admitted) == ("HoldsQuota", True)
    assert result.suggestion == "it is admitted; nothing to change"


def test_a_retry_check_holds_a_pending_workload_until_it_is_reset() -> None:
    world = _checks_world()
    wl = (PlacementWorkloadBuilder("mine", "ns").queue("lq").podset(cpu="1")
          .check("prov", "Retry", message="ProvisioningRequest mine-prov-1 failed", retry_count=1)
          .check("budget", "Pending").obj())
    world.add(wl)
    result = with_stored_status(world.engine.explain("ns/mine"), wl)
    assert result.state == "Pending" and result.check_states[0].retry_count == 1
    assert result.suggestion.startswith(
        "admission check prov is Retry (ProvisioningRequest mine-prov-1 failed): the workload is evicted")
    assert world.admit() == []  # the cycle does not take it while the check says Retry


def test_a_rejected_check_says_the_workload_is_deactivated() -> None:
    world = _checks_world()
    wl = (PlacementWorkloadBuilder("mine", "ns").queue("lq").podset(cpu="1")
          .reserved("cq", {"cpu": "default"}, {"cpu": "1"})
          .check("prov", "Rejected", message="no capacity in any zone").check("budget", "Ready").obj())
    world.add(wl)
    result = with_stored_status(world.engine.explain("ns/mine"), wl)
    assert result.suggestion.startswith("admission check prov is Rejected (no capacity in any zone): "
                                        "the workload is deactivated")


def test_strange_check_entries_are_skipped() -> None:
    wl = {"status": {"admissionChecks": ["x", {"state": "Ready"}, {"name": "ok", "state": "Pending", "retryCount": True}]}}
    assert [(v.name, v.state, v.retry_count) for v in check_states(wl)] == [("ok", "Pending", None)]
    assert check_states({"status": "nonsense"}) == []


def test_a_concurrent_admission_parent_says_where_each_option_is() -> None:
    world = World().flavors("reservation", "spot")
    world.queue(FungibleClusterQueueBuilder("cq").flavor("reservation", cpu="1").flavor("spot", cpu="1").obj(),
                lq="lq")
    world.add(PlacementWorkloadBuilder("busy", "ns").queue("lq").podset(cpu="1")
              .reserved("cq", {"cpu": "reservation"}, {"cpu": "1"}).admitted().obj())
    parent = PlacementWorkloadBuilder("job", "ns").queue("lq").podset(cpu="1").obj()
    parent["metadata"]["labels"] = {"kueue.x-k8s.io/concurrent-admission-parent": "true"}
    parent["status"] = {"options": [
        {"name": "job-option-reservation", "resourceFlavors": ["reservation"], "status": "Pending", "message": "Created"},
        {"name": "job-option-spot", "resourceFlavors": ["spot"], "status": "QuotaReserved", "message": ""},
    ]}
    world.add(parent)
    world.add(PlacementWorkloadBuilder("job-option-reservation", "ns").queue("lq").podset(cpu="1").obj())
    world.add(PlacementWorkloadBuilder("job-option-spot", "ns").queue("lq").podset(cpu="1")
              .reserved("cq", {"cpu": "spot"}, {"cpu": "1"}).obj())
    assert world.engine.explain("ns/job").state == "Unknown"  # the engine never queues a parent
    by_option = {o: world.engine.explain(f"ns/{o}") for o in option_names(parent)}
    result = with_stored_status(world.engine.explain("ns/job"), parent, by_option)
    assert result.state == "Parent"
    assert [(o.name, o.flavors, o.status, o.state, o.position) for o in result.options] == [
        ("job-option-reservation", ["reservation"], "Pending", "Pending", 0),
        ("job-option-spot", ["spot"], "QuotaReserved", "HoldsQuota", None)]
    assert result.options[0].outcome == "DoesNotFit"
    assert result.suggestion.startswith(
        "a concurrent-admission parent is scheduled through its options: job-option-reservation (reservation) is "
        "Pending at position 0, dry run DoesNotFit; job-option-spot (spot) is QuotaReserved")


def test_a_deactivated_workload_says_why_from_its_evicted_condition() -> None:
    world = _checks_world()
    wl = (PlacementWorkloadBuilder("mine", "ns").queue("lq").podset(cpu="1").active(False)
          .condition("Evicted", True, "DeactivatedDueToAdmissionCheck",
                     "Admission check(s) rejected: prov (no capacity in any zone)")
          .check("prov", "Pending").check("budget", "Pending").obj())
    world.add(wl)
    result = with_stored_status(world.engine.explain("ns/mine"), wl)
    assert result.state == "Deactivated"
    assert result.suggestion == ("it is deactivated (DeactivatedDueToAdmissionCheck: Admission check(s) rejected: "
                                 "prov (no capacity in any zone)); remove the cause, then set spec.active to true "
                                 "to queue it again")
