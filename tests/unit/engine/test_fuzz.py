"""Malformed objects never crash the engine (they are ignored or reported, never raised)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import ClusterQueueBuilder, LocalQueueBuilder, ResourceFlavorBuilder, WorkloadBuilder
from tests.unit.engine.harness import World

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "1", "x", "500m", "-1", "1e3", "None"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["metadata", "spec", "status", "name", "namespace", "podSets", "resourceGroups", "flavors",
                         "resources", "nominalQuota", "count", "template", "containers", "requests", "cpu",
                         "queueName", "admission", "clusterQueue", "conditions", "type", "status", "cohort",
                         "namespaceSelector", "matchExpressions", "operator", "coveredResources", "priority"]),
        children, max_size=4),
    max_leaves=12,
)


def _mutate(base: dict, path: list[str], value: object) -> dict:
    node = base
    for key in path[:-1]:
        nxt = node.get(key)
        if not isinstance(nxt, dict):
            nxt = node[key] = {}
        node = nxt
    node[path[-1]] = value
    return base


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["wl", "cq", "lq", "rf", "cohort", "ac", "pc"]),
    path=st.sampled_from([["spec"], ["spec", "podSets"], ["spec", "resourceGroups"], ["status"],
                          ["status", "admission"], ["metadata"], ["spec", "namespaceSelector"], ["value"],
                          ["spec", "preemption"], ["spec", "flavorFungibility"], ["spec", "admissionChecks"]]),
    value=_json,
)
def test_garbage_never_raises(kind: str, path: list[str], value: object) -> None:
    world = World().flavors("default")
    world.queue(ClusterQueueBuilder("cq").flavor("default", cpu="4").obj())
    world.add(WorkloadBuilder("ok", "ns").queue("lq-cq").podset(cpu="1").obj())
    engine = world.engine
    if kind == "wl":
        obj = _mutate(WorkloadBuilder("w", "ns").queue("lq-cq").podset(cpu="1").obj(), path, value)
        engine.upsert_workload(obj)
    elif kind == "cq":
        engine.upsert_cluster_queue(_mutate(ClusterQueueBuilder("cq").flavor("default", cpu="4").obj(), path, value))
    elif kind == "lq":
        engine.upsert_local_queue(_mutate(LocalQueueBuilder("lq-cq", "ns", "cq").obj(), path, value))
    elif kind == "rf":
        engine.upsert_resource_flavor(_mutate(ResourceFlavorBuilder("default").obj(), path, value))
    elif kind == "cohort":
        engine.upsert_cohort(_mutate({"metadata": {"name": "co"}, "spec": {}}, path, value))
    elif kind == "ac":
        engine.upsert_admission_check(_mutate({"metadata": {"name": "ac"}, "spec": {}}, path, value))
    else:
        engine.upsert_priority_class(_mutate({"metadata": {"name": "p"}, "value": 1}, path, value))
    world.cycle()
    world.cycle()
    engine.pending_workloads("cq")
    engine.pending_count("cq")
