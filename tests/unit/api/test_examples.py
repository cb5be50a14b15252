"""Every example in docs/examples passes the schema and survives defaulting unchanged."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api.schema import KINDS, apply_defaults
from pykueue.api.validation import schema_errors

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"


def _documents() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            docs.append((f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return docs


DOCS = _documents()
KUEUE_DOCS = [(name, doc) for name, doc in DOCS if doc["kind"] in KINDS]


@pytest.mark.parametrize(("name", "doc"), KUEUE_DOCS, ids=[n for n, _ in KUEUE_DOCS])
def test_example_is_schema_valid(name: str, doc: dict[str, Any]) -> None:
    assert [str(e) for e in schema_errors(doc["kind"], doc)] == []


@pytest.mark.parametrize(("name", "doc"), KUEUE_DOCS, ids=[n for n, _ in KUEUE_DOCS])
def test_example_survives_defaulting(name: str, doc: dict[str, Any]) -> None:
    original = copy.deepcopy(doc)
    # Defaulting neither loses a field nor touches the input.
    defaulted = apply_defaults(doc["kind"], doc)
    assert doc == original
    assert _is_superset(defaulted, original)
    assert schema_errors(doc["kind"], defaulted) == []


def _is_superset(big: Any, small: Any) -> bool:
    if isinstance(small, dict):
        return isinstance(big, dict) and all(k in big and _is_superset(big[k], v) for k, v in small.items())
    if isinstance(small, list):
        return isinstance(big, list) and len(big) == len(small) and all(map(_is_superset, big, small))
    return bool(big == small)


def test_examples_cover_every_kind_and_seed_field() -> None:
    kinds = {doc["kind"] for _, doc in KUEUE_DOCS}
    assert kinds == set(KINDS)
    text = "\n".join(p.read_text() for p in EXAMPLES.glob("*.yaml"))
    for field in [
        "concurrentAdmission", "explicitOptions", "removeBelowTargetConfig", "targetResourceFlavor",
        "createDelaySeconds", "deleteDelaySeconds", "workloadMode", "allowedResourceFlavors",
        "fallbackStrategy", "failurePolicy", "timeoutMinutes", "timeout:", "AdmissionCheckRejected",
        "flavorAssignmentHistory", "options:", "nominatedClusterNames", "clusterName:",
        "provisioningClassName", "managedResources", "retryStrategy", "podSetUpdates", "podSetMergePolicy",
        "kubeConfig", "locationType: Path", "locationType: Secret", "clusters:",
        "kueue.x-k8s.io/queue-name",
    ]:
        assert field in text, field


def test_namespaced_examples_use_the_namespace_the_set_creates() -> None:
    created = {doc["metadata"]["name"] for _, doc in DOCS if doc["kind"] == "Namespace"}
    used = {doc["metadata"]["namespace"] for _, doc in DOCS if "namespace" in doc["metadata"]}
    assert used and used <= created
