"""The conversion micro-benchmark's objects are what they claim and a smoke run prints figures."""

from __future__ import annotations

import json

import pytest

from bench import conversion_micro
from pykueue.api.conversion import CONVERSION_DATA_ANNOTATION, convert


def test_the_objects_round_trip_and_only_the_cluster_queue_carries_conversion_data() -> None:
    """The ClusterQueue uses v1beta1 spellings v1beta2 lacks, so its v1beta2 form exercises the annotation."""
    for kind, source, target, obj in conversion_micro.cases():
        assert obj["kind"] == kind and obj["apiVersion"].endswith(source)
        annotated = CONVERSION_DATA_ANNOTATION in obj["metadata"].get("annotations", {})
        assert annotated == (kind == "ClusterQueue" and source == "v1beta2")
        assert convert(convert(obj, target), source) == obj
    wl = conversion_micro.workload_v1beta1()
    assert {c["type"] for c in wl["status"]["conditions"]} >= {"QuotaReserved", "Admitted"}
    assert len(json.dumps(wl["spec"]["podSets"][0]["template"])) > 2500


def test_a_smoke_run_prints_a_row_per_object_and_direction(capsys: pytest.CaptureFixture[str]) -> None:
    assert conversion_micro.main(["--calls", "2", "--repeat", "1"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [(r["kind"], r["from"]) for r in summary["rows"]] == [
        (kind, version) for kind in ("Workload", "ClusterQueue", "LocalQueue") for version in ("v1beta2", "v1beta1")
    ]
    assert all(r["convert_us"] > 0 and r["shared_us"] > 0 for r in summary["rows"])
    assert all(("wire_read_us" in r) == (r["from"] == "v1beta2") for r in summary["rows"])
