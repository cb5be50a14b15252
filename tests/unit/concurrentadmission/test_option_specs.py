"""A ClusterQueue's concurrentAdmission → options in preference order with their migration rights."""

from __future__ import annotations

from controller.concurrentadmission.option_specs import concurrent_config
from tests.builders import ClusterQueueBuilder, SeedClusterQueueBuilder
from tests.unit.concurrentadmission.helpers import three_flavor_queue


def test_no_concurrent_admission_means_no_config() -> None:
    assert concurrent_config(ClusterQueueBuilder("cq").flavor("a", cpu="1").obj()) is None
    assert concurrent_config(None) is None


def test_one_option_per_flavor_in_cluster_queue_order() -> None:
    config = concurrent_config(three_flavor_queue("RemoveLower"))
    assert config is not None
    assert [(o.suffix, o.rank, o.allowed_flavors) for o in config.options] == [
        ("reservation", 0, ("reservation",)),
        ("on-demand", 1, ("on-demand",)),
        ("spot", 2, ("spot",)),
    ]


def test_remove_other_never_migrates_and_remove_lower_always_may() -> None:
    other = concurrent_config(three_flavor_queue("RemoveOther"))
    lower = concurrent_config(three_flavor_queue("RemoveLower"))
    assert other is not None and lower is not None
    assert [o.migration_target for o in other.options] == [False, False, False]
    assert [o.migration_target for o in lower.options] == [True, True, True]


def test_remove_below_target_only_targets_options_at_or_above_the_target() -> None:
    config = concurrent_config(three_flavor_queue("RemoveBelowTarget", target="reservation"))
    assert config is not None
    assert [o.migration_target for o in config.options] == [True, False, False]
    middle = concurrent_config(three_flavor_queue("RemoveBelowTarget", target="on-demand"))
    assert middle is not None
    assert [o.migration_target for o in middle.options] == [True, True, False]


def test_explicit_options_keep_list_order_delays_and_multi_group_flavors() -> None:
    cq = (
        SeedClusterQueueBuilder("cq")
        .flavor("reservation", **{"nvidia.com/gpu": "8"})
        .flavor("on-demand", **{"nvidia.com/gpu": "8"})
        .flavor("default-cpu", cpu="16")
        .concurrent("RemoveBelowTarget", target="reservation")
        .option("res", "reservation", "default-cpu", delete_delay=60)
        .option("od", "on-demand", "default-cpu", create_delay=30)
        .obj()
    )
    cq["spec"]["concurrentAdmission"]["onSuccess"] = "RemoveBelowTarget"
    config = concurrent_config(cq)
    assert config is not None
    res, od = config.options
    assert (res.suffix, res.rank, res.allowed_flavors, res.delete_delay_seconds) == (
        "res",
        0,
        ("reservation", "default-cpu"),
        60.0,
    )
    assert (od.suffix, od.rank, od.create_delay_seconds, od.delete_delay_seconds) == ("od", 1, 30.0, None)
    # The target is judged in the GPU group only; the shared CPU flavor does not lift "od".
    assert (res.migration_target, od.migration_target) == (True, False)


def test_malformed_entries_are_skipped_not_fatal() -> None:
    cq = SeedClusterQueueBuilder("cq").flavor("a", cpu="1").concurrent("RemoveLower").obj()
    cq["spec"]["concurrentAdmission"]["explicitOptions"] = [
        {"name": "ok", "allowedResourceFlavors": ["a"], "createDelaySeconds": -5},
        {"name": "", "allowedResourceFlavors": ["a"]},
        {"allowedResourceFlavors": "a"},
        "junk",
        {"name": "ok", "allowedResourceFlavors": ["a"]},
    ]
    config = concurrent_config(cq)
    assert config is not None
    assert [(o.suffix, o.create_delay_seconds) for o in config.options] == [("ok", 0.0)]
