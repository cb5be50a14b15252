"""docs/examples/v1beta2: Kueue-documentation-style objects in v1beta2, valid and convertible.

Each example is checked against the v1beta2 schema pykueue serves (types, enums, required fields,
and no field the schema lacks, as strict field validation would), is stored the way the apiserver
stores it (converted to v1beta1, where the webhook's and the apiserver's v1beta1 schema find
nothing to refuse), and reads back unchanged. The e2e test applies the same files to a cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from pykueue.api.conversion import CONVERSION_DATA_ANNOTATION, convert
from pykueue.api.generate import crd
from pykueue.api.schema import KINDS
from pykueue.api.validation import schema_errors

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples" / "v1beta2"
DOCS = [
    (f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc)
    for path in sorted(EXAMPLES.glob("*.yaml"))
    for doc in yaml.safe_load_all(path.read_text())
    if doc["kind"] in KINDS
]


def _v1beta2_schema(kind: str) -> dict[str, Any]:
    return next(v for v in crd(KINDS[kind])["spec"]["versions"] if v["name"] == "v1beta2")["schema"]["openAPIV3Schema"]


def _unknown_fields(schema: dict[str, Any], value: Any, path: str) -> list[str]:
    if isinstance(value, dict) and "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
        out = [f"{path}.{k}" for k in value if k not in schema["properties"] and not (path == "" and k in ("metadata",))]
        for k, v in value.items():
            if k in schema["properties"] and k != "metadata":
                out += _unknown_fields(schema["properties"][k], v, f"{path}.{k}")
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [e for i, item in enumerate(value) for e in _unknown_fields(schema["items"], item, f"{path}[{i}]")]
    return []


@pytest.mark.parametrize(("name", "doc"), DOCS, ids=[n for n, _ in DOCS])
def test_example_is_valid_v1beta2(name: str, doc: dict[str, Any]) -> None:
    assert doc["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    schema = _v1beta2_schema(doc["kind"])
    assert [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(doc)] == []
    assert _unknown_fields(schema, doc, "") == []


@pytest.mark.parametrize(("name", "doc"), DOCS, ids=[n for n, _ in DOCS])
def test_example_is_stored_as_valid_v1beta1_and_reads_back_unchanged(name: str, doc: dict[str, Any]) -> None:
    stored = convert(doc, "v1beta1")
    assert [str(e) for e in schema_errors(doc["kind"], stored)] == []
    # Nothing in these examples needs the conversion annotation: v1beta1 can say all of it.
    assert CONVERSION_DATA_ANNOTATION not in (stored["metadata"].get("annotations") or {})
    assert convert(stored, "v1beta2") == doc


def test_the_examples_cover_every_kind_and_the_v1beta2_spellings() -> None:
    assert {doc["kind"] for _, doc in DOCS} == set(KINDS)
    text = "\n".join(p.read_text() for p in EXAMPLES.glob("*.yaml"))
    for field in ("cohortName:", "concurrentAdmissionPolicy:", "lastAcceptableFlavorName:", "priorityClassRef:",
                  "clusterSource:", "admissionChecksStrategy:", "RetainFirstAdmission", "TryPreferredFlavors"):
        assert field in text, field
