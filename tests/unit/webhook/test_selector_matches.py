"""``selector_matches``: a metav1.LabelSelector against a namespace's labels, never raising on a
malformed selector (the webhook decides which Jobs it manages with it)."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.rules.common import selector_matches

LABELS = {"team": "a", "tier": "gold"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, True),
        ({}, True),
        ({"matchLabels": {"team": "a"}}, True),
        ({"matchLabels": {"team": "b"}}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["silver"]}]}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["x"]}]}, True),
        ({"matchExpressions": [{"key": "team", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, False),
        ({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}, False),
    ],
)
def test_well_formed_selectors(selector: dict[str, Any] | None, expected: bool) -> None:
    assert selector_matches(selector, LABELS) is expected


@pytest.mark.parametrize("bad_key", [["team"], {"team": "a"}, 7, None])
def test_a_key_that_is_not_a_string_names_no_label(bad_key: Any) -> None:
    # An unhashable key used to raise TypeError from ``key in labels``.
    def expression(operator: str) -> dict[str, Any]:
        return {"matchExpressions": [{"key": bad_key, "operator": operator, "values": ["a"]}]}

    assert selector_matches(expression("In"), LABELS) is False
    assert selector_matches(expression("NotIn"), LABELS) is True
    assert selector_matches(expression("Exists"), LABELS) is False
    assert selector_matches(expression("DoesNotExist"), LABELS) is True
