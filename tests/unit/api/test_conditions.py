"""Condition updates follow meta.SetStatusCondition: transition time moves only with status."""

from __future__ import annotations

import re

import pytest

from pykueue.api import conditions as cond
from pykueue.api.conditions import Condition

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"


def test_new_condition_is_added_with_generation_and_time() -> None:
    conds: list[Condition] = []
    assert cond.set_condition(conds, "Active", True, "Ready", "Can admit", observed_generation=3, now=T0)
    assert conds == [{"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit",
                      "lastTransitionTime": T0, "observedGeneration": 3}]


def test_same_status_keeps_transition_time_but_updates_the_rest() -> None:
    conds: list[Condition] = []
    cond.set_condition(conds, "Active", False, "FlavorNotFound", "missing a", observed_generation=1, now=T0)
    assert cond.set_condition(conds, "Active", False, "FlavorNotFound", "missing b", observed_generation=2, now=T1)
    assert conds[0]["lastTransitionTime"] == T0
    assert (conds[0]["message"], conds[0]["observedGeneration"]) == ("missing b", 2)


def test_status_change_moves_transition_time() -> None:
    conds: list[Condition] = []
    cond.set_condition(conds, "Active", False, "Stopped", now=T0)
    assert cond.set_condition(conds, "Active", True, "Ready", now=T1)
    assert conds[0]["lastTransitionTime"] == T1 and conds[0]["status"] == "True"


def test_identical_update_reports_no_change() -> None:
    conds: list[Condition] = []
    cond.set_condition(conds, "Admitted", True, "Admitted", "ok", observed_generation=1, now=T0)
    assert not cond.set_condition(conds, "Admitted", True, "Admitted", "ok", observed_generation=1, now=T1)
    assert conds[0]["lastTransitionTime"] == T0


def test_find_remove_and_is_true() -> None:
    conds: list[Condition] = []
    cond.set_condition(conds, "QuotaReserved", True, "QuotaReserved", now=T0)
    assert cond.is_true(conds, "QuotaReserved")
    assert not cond.is_true(conds, "Admitted")
    assert cond.find_condition(conds, "Admitted") is None
    assert cond.remove_condition(conds, "QuotaReserved")
    assert not cond.remove_condition(conds, "QuotaReserved")
    assert conds == []


def test_object_condition_uses_metadata_generation() -> None:
    obj = {"metadata": {"generation": 7}}
    assert cond.set_object_condition(obj, "Active", "Unknown", "Pending", now=T0)
    assert obj["status"]["conditions"][0]["observedGeneration"] == 7


def test_bad_status_is_rejected() -> None:
    with pytest.raises(ValueError, match="True, False or Unknown"):
        cond.set_condition([], "Active", "yes", "Ready")


def test_now_is_rfc3339_utc() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", cond.now_rfc3339())
