"""The generated CRDs on a real apiserver: established, usable with kubectl, and validating.

The committed YAML is applied as it is (so these tests exercise exactly what users install), the
examples in docs/examples apply with plain ``kubectl apply``, ``kubectl get`` shows Kueue's
columns, ``kubectl explain`` shows our descriptions, and schema-level mistakes are rejected by the
apiserver itself (schema and CEL) with field paths — the same paths ``schema_errors`` reports.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api.constants import API_VERSION
from pykueue.api.schema import KINDS, TEST_KINDS
from pykueue.api.validation import schema_errors
from tests.builders import ClusterQueueBuilder, ProvisioningRequestBuilder
from tests.e2e.helpers.wait import wait_for

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "docs" / "examples"
CRD_FILES = sorted((REPO / "manifests" / "crds").glob("*.yaml")) + sorted(
    (REPO / "manifests" / "test").glob("*.yaml")
)


def _examples() -> list[dict[str, Any]]:
    return [doc for path in sorted(EXAMPLES.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text())]


@pytest.fixture(scope="module")
def crds(cluster: Any, webhook: Any) -> Any:
    """Apply the committed CRDs (idempotent: the local cluster has them already) and wait for them.

    The webhook runs: kubectl reads Kueue kinds in the preferred version, v1beta2, which the
    apiserver converts through the webhook's ``/convert`` (docs/design/api-versions.md).

    The local cluster's own apply keeps the conversion webhook the running webhook configured
    (``Cluster.apply_manifests``); anywhere else the files are applied as they are.
    """
    if hasattr(cluster, "apply_manifests"):
        cluster.apply_manifests()
    else:
        args = ["apply", "--server-side", "--force-conflicts"]
        for path in CRD_FILES:
            args += ["-f", str(path)]
        cluster.kubectl(*args)
    for info in [*KINDS.values(), *TEST_KINDS.values()]:
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{info.crd_name}")
    return cluster


def _strip_finalizers(cluster: Any, doc: dict[str, Any]) -> None:
    """Let examples go even when a webhook added the resource-in-use finalizer and no controller runs."""
    if doc["apiVersion"] != API_VERSION:
        return
    target = [f"{doc['kind'].lower()}.kueue.x-k8s.io/{doc['metadata']['name']}"]
    if "namespace" in doc["metadata"]:
        target += ["-n", doc["metadata"]["namespace"]]
    cluster.kubectl("patch", *target, "--type=merge", "-p", '{"metadata":{"finalizers":null}}', check=False)


@pytest.fixture(scope="module")
def examples(crds: Any) -> Iterator[Any]:
    """docs/examples applied with ``kubectl apply -f``; everything is deleted afterwards."""
    result = crds.kubectl("apply", "-f", str(EXAMPLES), check=False)
    try:
        yield result
    finally:
        crds.kubectl("delete", "-f", str(EXAMPLES), "--ignore-not-found", "--wait=false", check=False)
        for doc in _examples():
            _strip_finalizers(crds, doc)

        def all_gone() -> bool:
            names = [
                f"{d['kind'].lower()}/{d['metadata']['name']}"
                for d in _examples()
                if d["kind"] != "Namespace"
            ]
            left = crds.kubectl(
                "get", *names, "-n", "team-a", "--ignore-not-found", "-o", "name", check=False
            )
            return left.stdout.strip() == ""

        wait_for(all_gone, timeout=90, message="example objects were not deleted")


def test_every_crd_is_established(crds: Any) -> None:
    out = crds.kubectl("get", "crd", "-o", "json").stdout
    established = {
        item["metadata"]["name"]
        for item in json.loads(out)["items"]
        if any(
            c["type"] == "Established" and c["status"] == "True"
            for c in item.get("status", {}).get("conditions", [])
        )
    }
    expected = {info.crd_name for info in [*KINDS.values(), *TEST_KINDS.values()]}
    assert expected <= established


def _applied_name(doc: dict[str, Any]) -> str:
    """How ``kubectl apply`` names an object in its output: ``<kind>.<group>/<name>``."""
    group = doc["apiVersion"].rpartition("/")[0]
    resource = f"{doc['kind'].lower()}.{group}" if group else doc["kind"].lower()
    return f"{resource}/{doc['metadata']['name']}"


def test_every_example_applies(examples: Any) -> None:
    assert examples.returncode == 0, examples.stderr
    applied = {line.split()[0] for line in examples.stdout.splitlines() if line.strip()}
    missing = [_applied_name(doc) for doc in _examples() if _applied_name(doc) not in applied]
    assert missing == [], f"not applied: {missing}; kubectl said: {examples.stdout}"


def test_defaults_are_applied_by_the_apiserver(crds: Any, examples: Any) -> None:
    cq = json.loads(crds.kubectl("get", "clusterqueue", "concurrent-cq", "-o", "json").stdout)
    assert cq["spec"]["queueingStrategy"] == "BestEffortFIFO"
    assert cq["spec"]["preemption"]["withinClusterQueue"] == "Never"
    assert cq["spec"]["flavorFungibility"]["whenCanPreempt"] == "TryNextFlavor"
    prc = json.loads(
        crds.kubectl("get", "provisioningrequestconfig", "spot-capacity-config", "-o", "json").stdout
    )
    assert prc["spec"]["retryStrategy"]["backoffLimitCount"] == 2
    # Read in the version the example is written in: kubectl's default is Kueue's v1beta2, where
    # kubeConfig sits under spec.clusterSource.
    mkc = json.loads(crds.kubectl("get", f"multikueuecluster.{API_VERSION.split('/')[1]}.kueue.x-k8s.io",
                                  "worker-east", "-o", "json").stdout)
    assert mkc["spec"]["kubeConfig"]["locationType"] == "Secret"


def test_kubectl_get_prints_kueue_columns(crds: Any, examples: Any) -> None:
    out = crds.kubectl("get", "cq,lq,kwl,rf", "-A").stdout
    for header in [
        "COHORT",
        "PENDING WORKLOADS",
        "CLUSTERQUEUE",
        "ADMITTED WORKLOADS",
        "QUEUE",
        "RESERVED IN",
        "ADMITTED",
        "FINISHED",
        "AGE",
    ]:
        assert header in out, out
    row = next(line for line in out.splitlines() if "clusterqueue.kueue.x-k8s.io/team-a-cq" in line)
    assert "team-a-cohort" in row
    wide = crds.kubectl("get", "cq", "-o", "wide").stdout
    assert "STRATEGY" in wide.splitlines()[0] and "BestEffortFIFO" in wide
    wpc = crds.kubectl("get", "wpc").stdout
    assert "VALUE" in wpc and "10000" in wpc


def test_kubectl_explain_shows_descriptions(crds: Any) -> None:
    def explained() -> str:
        out = crds.kubectl("explain", "clusterqueue.spec.concurrentAdmission").stdout
        return out if "onSuccess" in out else ""

    out = wait_for(explained, timeout=60, message="kubectl explain did not show concurrentAdmission")
    assert "option workloads" in out
    assert "RemoveOther, RemoveLower, RemoveBelowTarget" in out
    rules = crds.kubectl("explain", "clusterqueue.spec.flavorFungibility.fallbackStrategy.rules").stdout
    assert "timeoutMinutes" in rules and "AdmissionCheckRejected" in rules


# --- objects the apiserver itself must reject -------------------------------------------------------


def _cq(name: str, **spec: Any) -> dict[str, Any]:
    cq = ClusterQueueBuilder(name).flavor("spot", cpu="4").flavor("on-demand", cpu="4").obj()
    cq["spec"].update(spec)
    return cq


def _negative_quota() -> dict[str, Any]:
    obj = _cq("e2e-bad-quota")
    obj["spec"]["resourceGroups"][0]["flavors"][1]["resources"][0]["nominalQuota"] = "-2"
    return obj


def _workload(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "queueName": "lq",
        "podSets": [
            {"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
        ],
    }
    base.update(spec)
    return {"apiVersion": API_VERSION, "kind": "Workload", "metadata": {"name": "e2e-bad-wl"}, "spec": base}


REJECTED = [
    (
        "unknown onSuccess",
        _cq("e2e-bad-onsuccess", concurrentAdmission={"onSuccess": "RemoveAll"}),
        'spec.concurrentAdmission.onSuccess: Unsupported value: "RemoveAll"',
    ),
    (
        "wrong fallback trigger",
        _cq(
            "e2e-bad-trigger",
            flavorFungibility={"fallbackStrategy": {"rules": [{"name": "spot", "trigger": "Stockout"}]}},
        ),
        'spec.flavorFungibility.fallbackStrategy.rules[0].trigger: Unsupported value: "Stockout"',
    ),
    (
        "wrong failurePolicy",
        _cq("e2e-bad-policy", flavorFungibility={"fallbackStrategy": {"failurePolicy": "GiveUp"}}),
        'spec.flavorFungibility.fallbackStrategy.failurePolicy: Unsupported value: "GiveUp"',
    ),
    (
        "both fallback timeouts",
        _cq(
            "e2e-bad-timeouts",
            flavorFungibility={
                "fallbackStrategy": {"rules": [{"name": "spot", "timeout": "5m", "timeoutMinutes": 5}]}
            },
        ),
        "spec.flavorFungibility.fallbackStrategy.rules[0]: Invalid value: timeout and timeoutMinutes are mutually exclusive",
    ),
    (
        "duplicate flavor in a resource group",
        _cq(
            "e2e-bad-flavors",
            resourceGroups=[
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "4"}]},
                        {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "2"}]},
                    ],
                }
            ],
        ),
        "spec.resourceGroups[0].flavors[1]: Duplicate value",
    ),
    (
        "option name not a DNS label",
        _cq(
            "e2e-bad-option-name",
            concurrentAdmission={
                "onSuccess": "RemoveOther",
                "explicitOptions": [{"name": "Spot_1", "allowedResourceFlavors": ["spot"]}],
            },
        ),
        'spec.concurrentAdmission.explicitOptions[0].name: Invalid value: "Spot_1"',
    ),
    (
        "RemoveBelowTarget without target",
        _cq("e2e-bad-target", concurrentAdmission={"onSuccess": "RemoveBelowTarget"}),
        "spec.concurrentAdmission: Invalid value: removeBelowTargetConfig is required",
    ),
    (
        "borrowingLimit without cohort",
        _cq(
            "e2e-bad-borrow",
            resourceGroups=[
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {
                            "name": "spot",
                            "resources": [{"name": "cpu", "nominalQuota": "4", "borrowingLimit": "1"}],
                        }
                    ],
                }
            ],
        ),
        "spec: Invalid value: borrowingLimit must be nil when cohort is empty",
    ),
    (
        "flavor topology without node labels",
        {
            "apiVersion": API_VERSION,
            "kind": "ResourceFlavor",
            "metadata": {"name": "e2e-bad-rf"},
            "spec": {"topologyName": "default"},
        },
        # Kueue's rule text (self.nodeLabels.size() >= 1) fails to evaluate without nodeLabels, so
        # the apiserver reports the evaluation error with the rule's message, as it does for Kueue.
        'spec: Invalid value: "object": no such key: nodeLabels evaluating rule: '
        "at least one nodeLabel is required when topology is set",
    ),
    (
        "duplicate MultiKueue clusters",
        {
            "apiVersion": API_VERSION,
            "kind": "MultiKueueConfig",
            "metadata": {"name": "e2e-bad-mk"},
            "spec": {"clusters": ["a", "a"]},
        },
        'spec.clusters[1]: Duplicate value: "a"',
    ),
    (
        "unknown workloadMode",
        _workload(workloadMode={"type": "Child"}),
        'spec.workloadMode.type: Unsupported value: "Child"',
    ),
    (
        "minCount above count",
        _workload(
            podSets=[
                {
                    "name": "main",
                    "count": 1,
                    "minCount": 2,
                    "template": {"spec": {"containers": [{"name": "c"}]}},
                }
            ]
        ),
        "spec.podSets[0]: Invalid value: minCount should be positive and less or equal to count",
    ),
]


@pytest.mark.parametrize(("obj", "expected"), [c[1:] for c in REJECTED], ids=[c[0] for c in REJECTED])
def test_apiserver_rejects_schema_level_mistakes(
    crds: Any, namespace: str, obj: dict[str, Any], expected: str
) -> None:
    obj = copy.deepcopy(obj)
    if obj["kind"] == "Workload":
        obj["metadata"]["namespace"] = namespace
    result = crds.kubectl("create", "-f", "-", input=json.dumps(obj), check=False)
    if result.returncode == 0:  # never leave a wrongly accepted object behind
        crds.kubectl("delete", "-f", "-", "--wait=false", input=json.dumps(obj), check=False)
    assert result.returncode != 0, f"the apiserver accepted {obj['metadata']['name']}"
    assert expected in result.stderr, result.stderr
    # The schema or CEL answered, not a webhook (one may be registered when the suites share a run).
    assert "admission webhook" not in result.stderr, result.stderr
    # The webhook's schema check (schema_errors) finds the same field.
    python_errors = schema_errors(obj["kind"], obj)
    assert any(_same_field(err.path, err.message, result.stderr) for err in python_errors), (
        python_errors,
        result.stderr,
    )


def _same_field(path: str, message: str, stderr: str) -> bool:
    """Whether the apiserver names the field ``schema_errors`` names.

    Duplicate keys of map lists are the one difference: the webhook points at the key field
    (``items[1].name``) as Kueue's webhooks do, the apiserver at the list item (``items[1]``).
    A duplicate in a set list is the item itself on both sides.
    """
    if message.startswith("Duplicate value") and not path.endswith("]"):
        path = path.rsplit(".", 1)[0]
    return f"{path}:" in stderr


# Kueue's CRDs accept these (its webhook denies them, as pykueue's does: tests/e2e/test_webhook.py),
# so the CRD must not refuse them itself (docs/design/api.md "Parity with Kueue").
LEFT_TO_THE_WEBHOOK = [
    (
        "negative nominalQuota",
        _negative_quota(),
    ),
    (
        "cohort limits without parent",
        {
            "apiVersion": API_VERSION,
            "kind": "Cohort",
            "metadata": {"name": "e2e-bad-cohort"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {
                                "name": "spot",
                                "resources": [{"name": "cpu", "nominalQuota": "4", "lendingLimit": "1"}],
                            }
                        ],
                    }
                ]
            },
        },
    ),
]


@pytest.mark.parametrize("obj", [c[1] for c in LEFT_TO_THE_WEBHOOK], ids=[c[0] for c in LEFT_TO_THE_WEBHOOK])
def test_the_crd_accepts_what_kueues_crd_accepts(crds: Any, obj: dict[str, Any]) -> None:
    result = crds.kubectl("create", "-f", "-", "--dry-run=server", input=json.dumps(obj), check=False)
    # Accepted, or denied by a webhook registered by another suite of the same run; never by the
    # schema or CEL.
    assert result.returncode == 0 or "admission webhook" in result.stderr, result.stderr


def test_installed_crd_leaves_the_seed_000_webhook_rules_to_the_webhook(crds: Any) -> None:
    """StrictFIFO + concurrentAdmission and duplicate option names are the webhook's (docs/design/api.md).

    The apiserver evaluates the CRD before it calls validating webhooks, so a CEL rule or list-map
    key for either would answer first and hide the webhook's denial (tests/e2e/test_webhook.py
    asserts that denial). Checked on the CRD as the apiserver serves it.
    """
    crd = json.loads(crds.kubectl("get", "crd", KINDS["ClusterQueue"].crd_name, "-o", "json").stdout)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    rules = [rule["rule"] for rule in spec.get("x-kubernetes-validations", [])]
    assert rules and not [rule for rule in rules if "StrictFIFO" in rule], rules
    options = spec["properties"]["concurrentAdmission"]["properties"]["explicitOptions"]
    assert options["x-kubernetes-list-type"] == "atomic"
    assert "x-kubernetes-list-map-keys" not in options


def test_immutable_fields_are_enforced_by_cel(crds: Any, namespace: str) -> None:
    lq = {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": namespace},
        "spec": {"clusterQueue": "first"},
    }
    crds.kubectl("create", "-f", "-", input=json.dumps(lq))
    changed = crds.kubectl(
        "patch",
        "localqueue",
        "lq",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"clusterQueue":"second"}}',
        check=False,
    )
    assert changed.returncode != 0
    assert "spec.clusterQueue: Invalid value" in changed.stderr and "field is immutable" in changed.stderr
    assert "admission webhook" not in changed.stderr, "the CRD's transition rule answers, not the webhook"


def test_tests_can_play_the_autoscaler_on_provisioning_requests(crds: Any, namespace: str) -> None:
    """The test-only ProvisioningRequest CRD takes requests and condition updates on its status."""
    request = ProvisioningRequestBuilder("wl-check-1", namespace).pod_set("ppt-wl-check-1-main", 3).obj()
    crds.kubectl("create", "-f", "-", input=json.dumps(request))
    status = {
        "status": {
            "conditions": [
                {
                    "type": "Provisioned",
                    "status": "True",
                    "reason": "Provisioned",
                    "message": "capacity is ready",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
            "provisioningClassDetails": {"ResizeRequestName": "rr-1"},
        }
    }
    crds.kubectl(
        "patch",
        "provisioningrequest",
        "wl-check-1",
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
    )
    served = json.loads(crds.kubectl("get", "provreq", "wl-check-1", "-n", namespace, "-o", "json").stdout)
    assert served["spec"]["podSets"] == [{"podTemplateRef": {"name": "ppt-wl-check-1-main"}, "count": 3}]
    assert served["status"]["conditions"][0]["type"] == "Provisioned"
    assert served["status"]["provisioningClassDetails"] == {"ResizeRequestName": "rr-1"}
    bad = crds.kubectl(
        "patch",
        "provisioningrequest",
        "wl-check-1",
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"conditions":[{"type":"Failed","status":"Maybe"}]}}',
        check=False,
    )
    assert bad.returncode != 0 and "status.conditions[0].status" in bad.stderr
