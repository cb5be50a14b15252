"""``pykueue.api.labelselectors``: metav1.LabelSelector meaning, in its JSON and compiled forms.

A nil selector matches nothing and an empty one everything (``metav1.LabelSelectorAsSelector``);
the JSON matcher never raises on a malformed selector (the webhook decides which Jobs it manages
with it).
"""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api.labelselectors import (
    LabelSelector,
    SelectorRequirement,
    matches,
    matches_compiled,
    requirement_matches,
)

LABELS = {"team": "a", "tier": "gold"}

CASES: list[tuple[dict[str, Any] | None, bool]] = [
    (None, False),
    ({}, True),
    ({"matchLabels": {}, "matchExpressions": []}, True),
    ({"matchLabels": {"team": "a"}}, True),
    ({"matchLabels": {"team": "b"}}, False),
    ({"matchLabels": {"zone": "x"}}, False),
    ({"matchLabels": {"team": "a"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["x"]}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["silver"]}]}, False),
    ({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["x"]}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]}, False),
    ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["x"]}]}, True),
    ({"matchExpressions": [{"key": "team", "operator": "Exists"}]}, True),
    ({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, False),
    ({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}, False),
    ({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, True),
]


def _compile(selector: dict[str, Any] | None) -> LabelSelector | None:
    if selector is None:
        return None
    return LabelSelector(
        tuple(selector.get("matchLabels", {}).items()),
        tuple(
            SelectorRequirement(e["key"], e["operator"], tuple(e.get("values", ())))
            for e in selector.get("matchExpressions", [])
        ),
    )


@pytest.mark.parametrize(("selector", "expected"), CASES)
def test_json_selectors(selector: dict[str, Any] | None, expected: bool) -> None:
    assert matches(selector, LABELS) is expected


@pytest.mark.parametrize(("selector", "expected"), CASES)
def test_compiled_selectors_mean_the_same(selector: dict[str, Any] | None, expected: bool) -> None:
    assert matches_compiled(_compile(selector), LABELS) is expected


def test_nil_matches_nothing_even_without_labels_and_empty_matches_everything() -> None:
    assert matches(None, {}) is False
    assert matches_compiled(None, {}) is False
    assert matches({}, {}) is True
    assert matches_compiled(LabelSelector((), ()), {}) is True


@pytest.mark.parametrize("bad_key", [["team"], {"team": "a"}, 7, None])
def test_a_key_that_is_not_a_string_names_no_label(bad_key: Any) -> None:
    # An unhashable key must not raise TypeError from ``key in labels``.
    def expression(operator: str) -> dict[str, Any]:
        return {"matchExpressions": [{"key": bad_key, "operator": operator, "values": ["a"]}]}

    assert matches(expression("In"), LABELS) is False
    assert matches(expression("NotIn"), LABELS) is True
    assert matches(expression("Exists"), LABELS) is False
    assert matches(expression("DoesNotExist"), LABELS) is True


@pytest.mark.parametrize("operator", ["Gt", "Lt", "Equals", None])
def test_an_operator_a_label_selector_lacks_fails(operator: Any) -> None:
    selector = {"matchExpressions": [{"key": "count", "operator": operator, "values": ["1"]}]}
    assert matches(selector, {"count": "5"}) is False


def test_malformed_parts_are_ignored_or_fail_but_never_raise() -> None:
    assert matches({"matchLabels": ["team"]}, LABELS) is True
    assert matches({"matchExpressions": "team"}, LABELS) is True
    assert matches({"matchExpressions": ["team"]}, LABELS) is False


def test_node_selector_operators_compare_integers() -> None:
    assert requirement_matches(SelectorRequirement("count", "Gt", ("3",)), {"count": "5"}) is True
    assert requirement_matches(SelectorRequirement("count", "Lt", ("3",)), {"count": "5"}) is False
    assert requirement_matches(SelectorRequirement("count", "Gt", ("3",)), {"count": "five"}) is False
    assert requirement_matches(SelectorRequirement("count", "Gt", ("3",)), {}) is False
