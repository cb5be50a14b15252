"""A hierarchical Cohort written for Kueue names its parent in ``spec.parentName``.

Kueue's ``CohortSpec`` (``apis/kueue/v1beta1/cohort_types.go``, the same in v1beta2) serialises
the parent as ``parentName``. A schema with any other spelling makes the apiserver prune the field
(the child silently becomes a root, losing the quota it borrows from its parent) and makes
``kubectl apply --validate=strict`` refuse the manifest. The manifest below is written as a Kueue
user would, not with the test builders, so a drift between the builders and the schema cannot
hide the break.
"""

from __future__ import annotations

from typing import Any

from pykueue.api.validation import schema_errors
from tests.builders import FungibleClusterQueueBuilder, PlacementWorkloadBuilder
from tests.unit.engine.harness import World
from webhook.rules.cohort_flavor import validate_cohort


def kueue_cohort(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


ROOT = kueue_cohort(
    "org",
    {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "10"}]}]}]},
)
# borrowingLimit and lendingLimit are only allowed on a cohort that has a parent.
CHILD = kueue_cohort(
    "team",
    {"parentName": "org", "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "0", "borrowingLimit": "6",
                                           "lendingLimit": "0"}]}]}]},
)


def test_kueue_cohort_with_parent_name_passes_schema_and_webhook() -> None:
    for cohort in (ROOT, CHILD):
        assert schema_errors("Cohort", cohort) == []
        assert validate_cohort(cohort, None) == []


def test_the_old_parent_spelling_is_not_part_of_the_api() -> None:
    errors = [str(e) for e in schema_errors("Cohort", kueue_cohort("team", {"parent": "org"}))]
    assert any('unknown field "parent"' in e for e in errors), errors


def test_engine_links_the_child_to_its_parent_and_borrows_through_it() -> None:
    world = World().flavors("default")
    world.engine.upsert_cohort(ROOT)
    world.engine.upsert_cohort(CHILD)
    world.queue(FungibleClusterQueueBuilder("cq").cohort("team").flavor("default", cpu="0").obj())

    team = world.engine.forest.cohorts["team"]
    assert team.parent is not None and team.parent.name == "org"
    assert world.engine.forest.root_of["cq"] == "cohort:org"

    # The queue owns nothing; its 6 cpu come from the root through the child's borrowingLimit.
    world.add(PlacementWorkloadBuilder("fits", "ns").queue("lq-cq").podset(cpu="6").at(0).obj())
    world.add(PlacementWorkloadBuilder("over", "ns").queue("lq-cq").podset(cpu="1").at(1).obj())
    assert world.admit() == ["ns/fits"]
    assert world.admit() == []
