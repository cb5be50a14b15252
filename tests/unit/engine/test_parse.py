"""Conversion of API objects into engine records."""

from __future__ import annotations

from controller.engine.parse import parse_cluster_queue, parse_workload
from tests.builders import FungibleClusterQueueBuilder, PlacementWorkloadBuilder


def test_requests_default_to_limits_and_count_init_containers_and_overhead() -> None:
    obj = PlacementWorkloadBuilder("wl", "ns").queue("q").podset(count=3, cpu="1").obj()
    pod = obj["spec"]["podSets"][0]["template"]["spec"]
    pod["containers"].append({"name": "side", "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}})
    pod["initContainers"] = [{"name": "init", "resources": {"requests": {"cpu": "2", "memory": "512Mi"}}}]
    pod["overhead"] = {"cpu": "100m"}
    (podset,) = parse_workload(obj).podsets
    # per pod: cpu max(1 + 0.5, 2) + 0.1 = 2.1; memory max(1Gi, 512Mi) = 1Gi; times 3 pods.
    assert podset.requests == {"cpu": 6300, "memory": 3 * 1024**3}


def test_status_only_update_reuses_parsed_podsets() -> None:
    builder = PlacementWorkloadBuilder("wl", "ns").queue("q").podset(cpu="1")
    first = parse_workload(builder.obj())
    second = parse_workload(builder.condition("QuotaReserved", False, "Pending").obj(), first)
    assert second.podsets is first.podsets and second.shape == first.shape
    changed = builder.obj()
    changed["metadata"]["generation"] = 2
    changed["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    third = parse_workload(changed, second)
    assert third.podsets[0].requests == {"cpu": 2000}


def test_v1beta1_and_v1beta2_spellings() -> None:
    v1beta1 = parse_cluster_queue(FungibleClusterQueueBuilder("cq").cohort("co").flavor("f", cpu="1")
                                  .fungibility("Borrow", "Preempt").obj())
    assert v1beta1.cohort == "co"
    assert not v1beta1.when_can_borrow_try_next and not v1beta1.when_can_preempt_try_next
    v1beta2 = FungibleClusterQueueBuilder("cq").flavor("f", cpu="1").fungibility("TryNextFlavor", "MayStopSearch").obj()
    v1beta2["spec"]["cohortName"] = "co2"
    spec = parse_cluster_queue(v1beta2)
    assert spec.cohort == "co2" and spec.when_can_borrow_try_next and not spec.when_can_preempt_try_next
    defaults = parse_cluster_queue(FungibleClusterQueueBuilder("cq").flavor("f", cpu="1").obj())
    assert not defaults.when_can_borrow_try_next and defaults.when_can_preempt_try_next


def test_bad_quota_makes_the_queue_invalid_with_a_field_path() -> None:
    spec = parse_cluster_queue(FungibleClusterQueueBuilder("cq").flavor("f", cpu="many").obj())
    assert spec.errors == (
        'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value: "many": '
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    )


def test_shape_is_stable_across_status_updates_for_options_too() -> None:
    builder = PlacementWorkloadBuilder("p-option-spot", "ns").queue("q").podset(cpu="1")
    obj = builder.obj()
    obj["spec"]["workloadMode"] = {"type": "ResourceFlavorOption"}
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
                                           "name": "p", "uid": "u", "controller": True}]
    first = parse_workload(obj)
    second = parse_workload(obj, first)
    third = parse_workload(obj, second)
    assert first.option is not None
    assert first.shape == second.shape == third.shape
    plain = parse_workload(builder.obj())
    assert plain.shape != first.shape  # options of a parent never share a class with others


def test_a_reservation_keeps_the_engines_finer_time_within_the_conditions_second() -> None:
    """The condition's time has whole seconds; the engine's own record of the reservation (made
    when it assumed it) is finer and is kept while it falls in that second. The preemption grace
    and the most-recently-reserved victim order read it."""
    obj = (PlacementWorkloadBuilder("wl", "ns").queue("q").podset(cpu="1")
           .reserved("cq", {"cpu": "default"}, {"cpu": "1"}, at="2026-01-01T00:00:10Z").obj())
    written = parse_workload(obj)
    assert written.admission is not None
    second = written.admission.reserved_at  # 10 s past the minute, whole
    assert second == int(second)
    for earlier, kept in ((second + 0.7, second + 0.7), (second, second),
                          (second + 1.0, second), (second - 0.3, second)):
        written.admission.reserved_at = earlier
        again = parse_workload(obj, written)
        assert again.admission is not None and again.admission.reserved_at == kept, earlier
    assert parse_workload(obj, None).admission.reserved_at == second  # type: ignore[union-attr]
