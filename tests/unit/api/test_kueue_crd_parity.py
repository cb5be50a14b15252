"""pykueue's CRDs against Kueue's own published CRDs, fact by fact (docs/design/api.md "Parity with Kueue").

The oracle is the set of CRDs of the Kueue release pinned in ``hack/versions.env``, fetched by
``make kueue-crds`` (never committed; :mod:`tests.kueue_oracle`). For every kind both serve, the
schema of each version (v1beta1 and v1beta2) generated from ``pykueue/api/schemas`` is compared with Kueue's path by path
(:mod:`tests.crd_parity`): presence, type, format, enum, default, required, size and range limits,
pattern, list types and map keys, CEL rules and messages, preserve-unknown-fields, int-or-string,
and the CRD's printer columns, short names, categories, scope, subresources and each version's
served/storage/deprecated flags. A difference
fails unless ``kueue_crd_parity_allowlist`` says why it is deliberate; an allow-list entry that no
longer matches a difference fails too, so the list only shrinks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pykueue.api.generate import crd
from pykueue.api.schema import KINDS, object_schema
from tests.crd_parity import Difference, compare_crds
from tests.kueue_oracle import REPO_ROOT, kueue_crds
from tests.unit.api.kueue_crd_parity_allowlist import ALLOWED_BY_VERSION, MISSING_KINDS

VERSIONS = sorted(ALLOWED_BY_VERSION)


@pytest.fixture(scope="module")
def oracle() -> dict[str, dict[str, Any]]:
    return kueue_crds()


def _allowed_by(entry: tuple[str, str, str], diff: Difference) -> bool:
    kind, path, facet = entry
    if kind != diff.kind:
        return False
    if path.endswith(".*"):
        prefix = path[:-2]
        return diff.path == prefix or diff.path.startswith((prefix + ".", prefix + "[]", prefix + "{}"))
    return path == diff.path and facet == diff.facet


def _all_differences(oracle: dict[str, dict[str, Any]], version: str) -> list[Difference]:
    return [
        d for kind, info in KINDS.items() if kind in oracle for d in compare_crds(crd(info), oracle[kind], version)
    ]


def test_every_kind_kueue_serves_is_served_or_allow_listed(oracle: dict[str, dict[str, Any]]) -> None:
    assert sorted(set(oracle) - set(KINDS)) == sorted(MISSING_KINDS)
    assert sorted(set(KINDS) - set(oracle)) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_schemas_match_kueue_except_the_allow_list(oracle: dict[str, dict[str, Any]], version: str) -> None:
    diffs = _all_differences(oracle, version)
    unexpected = [d for d in diffs if not any(_allowed_by(e, d) for e in ALLOWED_BY_VERSION[version])]
    assert not unexpected, (
        f"{len(unexpected)} {version} difference(s) from Kueue's CRDs; fix pykueue/api/schemas or, if deliberate, "
        "add them to tests/unit/api/kueue_crd_parity_allowlist.py with the reason:\n"
        + "\n".join(f"  {d}" for d in unexpected)
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_allow_list_has_no_stale_entries(oracle: dict[str, dict[str, Any]], version: str) -> None:
    diffs = _all_differences(oracle, version)
    allowed = ALLOWED_BY_VERSION[version]
    stale = [e for e in allowed if not any(_allowed_by(e, d) for d in diffs)]
    assert not stale, "allow-list entries that no longer differ from Kueue (remove them):\n" + "\n".join(
        f"  {e}" for e in stale
    )
    assert len(allowed) == len(set(allowed)), "duplicate allow-list entries"


def test_the_comparison_sees_every_kind_of_difference() -> None:
    """The engine itself: a difference in each compared facet is reported, and only there."""
    base: dict[str, Any] = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "enum": ["x", "y"], "maxLength": 3},
            "b": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "c": {"type": "object", "x-kubernetes-validations": [{"rule": "r", "message": "m"}]},
        },
        "required": ["a", "b"],
    }
    same = compare_crds_for(base, base)
    assert same == []
    changed: dict[str, Any] = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "enum": ["y", "x"], "maxLength": 4},
            "b": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"},
            "c": {"type": "object", "x-kubernetes-validations": [{"rule": "r", "message": "other"}]},
            "d": {"type": "string"},
        },
        "required": ["b", "a"],
    }
    got = {(d.path, d.facet) for d in compare_crds_for(changed, base)}
    assert got == {("a", "maxLength"), ("b", "x-kubernetes-list-type"), ("c", "x-kubernetes-validations"), ("d", "presence")}


def compare_crds_for(ours: dict[str, Any], theirs: dict[str, Any]) -> list[Difference]:
    def wrap(schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "spec": {
                "scope": "Cluster",
                "names": {"kind": "K"},
                "versions": [{"name": "v1beta1", "schema": {"openAPIV3Schema": schema}}],
            }
        }

    return compare_crds(wrap(ours), wrap(theirs))


def test_a_missing_oracle_fails_with_one_line_naming_the_fix(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYKUEUE_CACHE", str(tmp_path))
    with pytest.raises(pytest.fail.Exception) as failure:
        kueue_crds()
    message = str(failure.value)
    assert "\n" not in message
    assert str(tmp_path) in message and "run `make kueue-crds`" in message


def test_the_generated_pod_template_comes_from_the_pinned_kubernetes() -> None:
    """Bumping K8S_VERSION without `python -m hack.gen_podtemplate_schema` fails here."""
    document = json.loads((REPO_ROOT / "pykueue" / "api" / "schemas" / "podtemplate.json").read_text())
    pin = next(
        line.split("=", 1)[1]
        for line in (REPO_ROOT / "hack" / "versions.env").read_text().splitlines()
        if line.startswith("K8S_VERSION=")
    )
    assert document["source"].startswith(f"k8s.io/kubernetes@{pin} ")
    assert object_schema("Workload")["properties"]["spec"]["properties"]["podSets"]["items"]["properties"][
        "template"
    ]["properties"]["spec"]["properties"]["containers"]["x-kubernetes-list-map-keys"] == ["name"]
