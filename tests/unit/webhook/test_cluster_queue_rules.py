"""ClusterQueue semantic rules: a table of valid and invalid queues, each invalid one with its message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.builders import SeedClusterQueueBuilder
from webhook.rules.clusterqueue import validate_cluster_queue

B = SeedClusterQueueBuilder
Obj = dict[str, Any]


def two_flavors() -> SeedClusterQueueBuilder:
    return B("cq").flavor("reservation", cpu="8").flavor("spot", cpu="8")


def with_spec(builder: SeedClusterQueueBuilder, **fields: Any) -> Obj:
    obj = builder.obj()
    obj["spec"].update(fields)
    return obj


def two_groups() -> SeedClusterQueueBuilder:
    return B("cq").flavor("reservation", cpu="8").flavor("gpu-a", **{"nvidia.com/gpu": "4"})


VALID: list[tuple[str, Callable[[], Obj]]] = [
    ("plain queue", lambda: B("cq").flavor("default", cpu="4", memory="8Gi").obj()),
    ("concurrent per flavor", lambda: two_flavors().concurrent("RemoveLower").obj()),
    ("remove below target", lambda: two_flavors().concurrent("RemoveBelowTarget", target="reservation").obj()),
    ("explicit options over two groups", lambda: two_groups().concurrent("RemoveOther")
     .option("res", "reservation", "gpu-a").option("any", "reservation", create_delay=60, delete_delay=0).obj()),
    ("option name at the bound", lambda: two_flavors().option("o" * 40, "spot").obj()),
    ("fallback rules", lambda: two_flavors().fallback("RetryAllFlavors").fallback_rule("spot", timeout="10m")
     .fallback_rule("*", minutes=30).fallback_rule("spot", "AdmissionCheckRejected").obj()),
    ("cohort limits", lambda: B("cq").cohort("co").flavor("f", cpu="4", borrowing_limit={"cpu": "2"},
                                                          lending_limit={"cpu": "4"}).obj()),
    ("preference with TryNextFlavor", lambda: with_spec(two_flavors(), flavorFungibility={
        "whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor", "preference": "PreemptionOverBorrowing"})),
    ("onFlavors of this queue", lambda: two_flavors().admission_check_strategy("prov", "spot").obj()),
    # Kueue v0.19 accepts both lists (their union applies); older Kueue refused the pair.
    ("admissionChecks and admissionChecksStrategy together",
     lambda: two_flavors().admission_checks("quota-check").admission_check_strategy("prov", "spot").obj()),
]

INVALID: list[tuple[str, Callable[[], Obj], str]] = [
    # --- concurrent admission ------------------------------------------------------------------
    ("StrictFIFO", lambda: two_flavors().strategy("StrictFIFO").concurrent("RemoveOther").obj(),
     'spec.concurrentAdmission: Invalid value: "object": concurrentAdmission is not supported with queueingStrategy '
     "StrictFIFO"),
    ("duplicate option names", lambda: two_flavors().option("spot", "spot").option("spot", "reservation").obj(),
     'spec.concurrentAdmission.explicitOptions[1].name: Duplicate value: "spot"'),
    ("option name not a DNS label", lambda: two_flavors().option("Spot_1", "spot").obj(),
     'spec.concurrentAdmission.explicitOptions[0].name: Invalid value: "Spot_1": a lowercase RFC 1123 label must '
     "consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"),
    ("option name too long", lambda: two_flavors().option("o" * 41, "spot").obj(),
     f'spec.concurrentAdmission.explicitOptions[0].name: Invalid value: "{"o" * 41}": must be no more than 40 '
     "characters so that <workload>-option-<name> can always be formed"),
    ("option name empty", lambda: two_flavors().option("", "spot").obj(),
     "spec.concurrentAdmission.explicitOptions[0].name: Required value"),
    ("allowed flavors empty", lambda: two_flavors().option("a").obj(),
     "spec.concurrentAdmission.explicitOptions[0].allowedResourceFlavors: Required value: an option must allow at "
     "least one resource flavor"),
    ("allowed flavors duplicated", lambda: two_flavors().option("a", "spot", "spot").obj(),
     'spec.concurrentAdmission.explicitOptions[0].allowedResourceFlavors[1]: Duplicate value: "spot"'),
    ("allowed flavor not in queue", lambda: two_flavors().option("a", "on-demand").obj(),
     'spec.concurrentAdmission.explicitOptions[0].allowedResourceFlavors[0]: Unsupported value: "on-demand": '
     'supported values: "reservation", "spot"'),
    ("negative delay", lambda: two_flavors().option("a", "spot", create_delay=-1).obj(),
     "spec.concurrentAdmission.explicitOptions[0].createDelaySeconds: Invalid value: -1: must be greater than or "
     "equal to 0"),
    ("RemoveBelowTarget without config", lambda: two_flavors().concurrent("RemoveBelowTarget").obj(),
     "spec.concurrentAdmission.removeBelowTargetConfig: Required value: onSuccess RemoveBelowTarget needs a "
     "targetResourceFlavor"),
    ("target not a flavor of the queue", lambda: two_flavors().concurrent("RemoveBelowTarget", target="gold").obj(),
     'spec.concurrentAdmission.removeBelowTargetConfig.targetResourceFlavor: Unsupported value: "gold": supported '
     'values: "reservation", "spot"'),
    ("target config with another policy", lambda: two_flavors().concurrent("RemoveLower", target="spot").obj(),
     "spec.concurrentAdmission.removeBelowTargetConfig: Forbidden: may only be set when onSuccess is RemoveBelowTarget"),
    ("two groups without explicit options", lambda: two_groups().concurrent("RemoveOther").obj(),
     "spec.resourceGroups: Invalid value: 2: must have exactly one resource group when concurrentAdmission has no "
     "explicitOptions"),
    ("unknown policy", lambda: two_flavors().concurrent("RemoveAll").obj(),
     'spec.concurrentAdmission.onSuccess: Unsupported value: "RemoveAll": supported values: "RemoveOther", '
     '"RemoveLower", "RemoveBelowTarget"'),
    # --- fallbacks ----------------------------------------------------------------------------
    ("fallbacks with concurrent admission", lambda: two_flavors().concurrent("RemoveOther")
     .fallback_rule("spot", timeout="5m").obj(),
     "spec.flavorFungibility.fallbackStrategy: Forbidden: may not be set together with spec.concurrentAdmission: "
     "concurrent admission tries every flavor at once through options, so there is no single attempt to fall "
     "back from"),
    ("fallback rule for unknown flavor", lambda: two_flavors().fallback_rule("gold", timeout="5m").obj(),
     'spec.flavorFungibility.fallbackStrategy.rules[0].name: Unsupported value: "gold": supported values: '
     '"reservation", "spot", "*"'),
    ("two rules for one flavor and trigger", lambda: two_flavors().fallback_rule("spot", timeout="5m")
     .fallback_rule("spot", minutes=3).obj(),
     'spec.flavorFungibility.fallbackStrategy.rules[1]: Duplicate value: a rule for name "spot" and trigger '
     '"TimeoutForPodsReadyExceeded" already exists'),
    ("zero timeout", lambda: two_flavors().fallback_rule("spot", timeout="0s").obj(),
     'spec.flavorFungibility.fallbackStrategy.rules[0].timeout: Invalid value: "0s": must be greater than 0'),
    ("negative minutes", lambda: two_flavors().fallback_rule("spot", minutes=-5).obj(),
     "spec.flavorFungibility.fallbackStrategy.rules[0].timeoutMinutes: Invalid value: -5: must be greater than 0"),
    ("unparsable timeout", lambda: two_flavors().fallback_rule("spot", timeout="10 minutes").obj(),
     'spec.flavorFungibility.fallbackStrategy.rules[0].timeout: Invalid value: "10 minutes": must be a duration '
     'such as "10m" or "1h30m"'),
    ("timeout and minutes", lambda: two_flavors().fallback_rule("spot", timeout="5m", minutes=5).obj(),
     "spec.flavorFungibility.fallbackStrategy.rules[0].timeoutMinutes: Forbidden: timeout and timeoutMinutes are "
     "mutually exclusive"),
    ("timeout rule without timeout", lambda: two_flavors().fallback_rule("spot").obj(),
     "spec.flavorFungibility.fallbackStrategy.rules[0].timeout: Required value: one of timeout or timeoutMinutes is "
     "required for trigger TimeoutForPodsReadyExceeded"),
    ("timeout on a rejection trigger", lambda: two_flavors().fallback_rule("spot", "AdmissionCheckRejected",
                                                                           minutes=5).obj(),
     "spec.flavorFungibility.fallbackStrategy.rules[0].timeoutMinutes: Forbidden: a timeout does not apply to trigger "
     "AdmissionCheckRejected"),
    ("unknown failure policy", lambda: two_flavors().fallback("GiveUp").obj(),
     'spec.flavorFungibility.fallbackStrategy.failurePolicy: Unsupported value: "GiveUp": supported values: '
     '"DeactivateWorkload", "RetryAllFlavors"'),
    # --- Kueue's ClusterQueue rules -----------------------------------------------------------
    ("flavor in two groups", lambda: B("cq").flavor("f", cpu="1").flavor("f", memory="1Gi").obj(),
     'spec.resourceGroups[1].flavors[0].name: Duplicate value: "f"'),
    ("resource in two groups", lambda: with_spec(B("cq"), resourceGroups=[
        {"coveredResources": ["cpu"], "flavors": [{"name": "a", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]},
        {"coveredResources": ["cpu"], "flavors": [{"name": "b", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]},
    ]), 'spec.resourceGroups[1].coveredResources[0]: Duplicate value: "cpu"'),
    ("resources out of order", lambda: with_spec(B("cq"), resourceGroups=[
        {"coveredResources": ["cpu", "memory"], "flavors": [{"name": "a", "resources": [
            {"name": "memory", "nominalQuota": "1"}, {"name": "cpu", "nominalQuota": "1"}]}]},
    ]), 'spec.resourceGroups[0].flavors[0].resources[0].name: Invalid value: "memory": must match the name in '
        "coveredResources"),
    ("negative nominal quota", lambda: B("cq").flavor("f", cpu="-1").obj(),
     'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value: "-1": must be greater than or '
     "equal to 0"),
    ("borrowing limit without cohort", lambda: B("cq").flavor("f", cpu="4", borrowing_limit={"cpu": "1"}).obj(),
     'spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid value: "1": must be nil when cohort is '
     "empty"),
    ("lending limit above nominal", lambda: B("cq").cohort("co").flavor("f", cpu="4", lending_limit={"cpu": "5"}).obj(),
     'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "5": must be less than or equal to '
     "the nominalQuota"),
    ("bad namespace selector", lambda: B("cq").flavor("f", cpu="1").namespace_selector(
        {"matchExpressions": [{"key": "team", "operator": "In"}]}).obj(),
     "spec.namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' "
     "or 'NotIn'"),
    ("borrowWithinCohort without reclaim", lambda: B("cq").flavor("f", cpu="1").preemption(
        reclaim_within_cohort="Never", borrow_within_cohort="LowerPriority").obj(),
     'spec.preemption: Invalid value: "object": reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never'),
    ("preference without TryNextFlavor", lambda: with_spec(two_flavors(), flavorFungibility={
        "whenCanBorrow": "MayStopSearch", "preference": "BorrowingOverPreemption"}),
     'spec.flavorFungibility.preference: Invalid value: "BorrowingOverPreemption": may only be set when '
     "whenCanBorrow and whenCanPreempt are both TryNextFlavor"),
    ("onFlavors not in queue", lambda: two_flavors().admission_check_strategy("prov", "gold").obj(),
     'spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]: Unsupported value: "gold": supported values: '
     '"reservation", "spot"'),
    ("fair sharing weight too small", lambda: with_spec(two_flavors(), fairSharing={"weight": "0.0000000001"}),
     'spec.fairSharing.weight: Invalid value: "0.0000000001": must be greater than 0.000000001'),
]


@pytest.mark.parametrize(("description", "make"), VALID, ids=[v[0] for v in VALID])
def test_valid_cluster_queues(description: str, make: Callable[[], Obj]) -> None:
    assert [str(e) for e in validate_cluster_queue(make(), None)] == []


@pytest.mark.parametrize(("description", "make", "message"), INVALID, ids=[v[0] for v in INVALID])
def test_invalid_cluster_queues(description: str, make: Callable[[], Obj], message: str) -> None:
    assert message in [str(e) for e in validate_cluster_queue(make(), None)]


def test_concurrent_admission_is_immutable() -> None:
    old = two_flavors().concurrent("RemoveLower").obj()
    new = two_flavors().concurrent("RemoveOther").obj()
    assert [str(e) for e in validate_cluster_queue(new, old)] == [
        'spec.concurrentAdmission: Invalid value: "object": field is immutable'
    ]
    assert validate_cluster_queue(old, old) == []


def test_badly_typed_spec_never_raises() -> None:
    cq = B("cq").obj()
    cq["spec"] = {"resourceGroups": [None, 3, {"flavors": "x"}], "concurrentAdmission": [],
                  "flavorFungibility": {"fallbackStrategy": {"rules": [None, {"name": 1, "timeout": 5}]}}}
    validate_cluster_queue(cq, None)  # errors or not, it must not raise


def _ghost_check(builder: SeedClusterQueueBuilder) -> SeedClusterQueueBuilder:
    """A check restricted to a flavor the queue does not have, as a queue stored before the rule."""
    return builder.admission_check_strategy("prov", "spot", "ghost")


GHOST_ERROR = ('spec.admissionChecksStrategy.admissionChecks[0].onFlavors[1]: Unsupported value: "ghost": '
               'supported values: "reservation", "spot"')


def test_update_of_a_legacy_queue_keeps_its_unchanged_on_flavors_unchecked() -> None:
    # Kueue (RejectUpdatesToCQWithInvalidOnFlavors off, its default) lets a queue that already
    # carries such a check be edited, so long as neither the check nor the queue's flavors change.
    old = _ghost_check(two_flavors()).obj()
    edited = _ghost_check(two_flavors().strategy("StrictFIFO")).obj()
    assert [str(e) for e in validate_cluster_queue(edited, old)] == []
    reordered = two_flavors().strategy("StrictFIFO").admission_check_strategy("prov", "ghost", "spot").obj()
    assert [str(e) for e in validate_cluster_queue(reordered, old)] == []  # onFlavors is a set


def test_update_revalidates_on_flavors_that_change_or_when_the_flavors_change() -> None:
    old = _ghost_check(two_flavors()).obj()
    assert GHOST_ERROR in [str(e) for e in validate_cluster_queue(_ghost_check(two_flavors()).obj(), None)]
    grown = two_flavors().admission_check_strategy("prov", "reservation", "spot", "ghost").obj()
    assert [str(e) for e in validate_cluster_queue(grown, old)] == [
        'spec.admissionChecksStrategy.admissionChecks[0].onFlavors[2]: Unsupported value: "ghost": '
        'supported values: "reservation", "spot"'
    ]
    three = _ghost_check(two_flavors().flavor("on-demand", cpu="1")).obj()
    assert [str(e) for e in validate_cluster_queue(three, old)] == [
        'spec.admissionChecksStrategy.admissionChecks[0].onFlavors[1]: Unsupported value: "ghost": '
        'supported values: "reservation", "spot", "on-demand"'
    ]
    without_strategy = two_flavors().obj()
    assert GHOST_ERROR in [str(e) for e in validate_cluster_queue(_ghost_check(two_flavors()).obj(), without_strategy)]
