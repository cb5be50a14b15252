"""Label-selector matching, the one copy both programs use.

Kubernetes gives a missing selector and an empty one opposite meanings, and so does this module:

- a *nil* selector (the field is absent, ``None`` here) matches **nothing**: it is what
  ``metav1.LabelSelectorAsSelector`` returns (``labels.Nothing()``), and what Kueue uses for
  ``ClusterQueue.spec.namespaceSelector`` (Kueue's ``pkg/cache`` builds the ClusterQueue's
  selector with it; its docs: "set the empty selector ``{}`` to allow all namespaces");
- an *empty* selector (``{}``) matches **everything**;
- otherwise every ``matchLabels`` pair and every ``matchExpressions`` requirement must hold.

A call site whose field means something else when absent (the Configuration's
``managedJobsNamespaceSelector``: no selector configured, no namespace restriction) says so itself
before calling :func:`matches`, so the rule stays visible where it applies.

Two entry points: :func:`matches` reads the raw JSON dict and never raises on a malformed selector
(the webhook and the Configuration check use it once per request or load); the engine compiles a
selector once per object change with its own validating parser into :class:`LabelSelector` and
calls :func:`matches_compiled` many times per scheduling cycle. Nothing here validates: syntax
errors are the structural schema's and the webhook's business.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# metav1.LabelSelectorRequirement operators. Node selector terms add "Gt" and "Lt".
LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True, slots=True)
class SelectorRequirement:
    """One label selector requirement (``In``/``NotIn``/``Exists``/``DoesNotExist``), or a node
    selector requirement, which may also be ``Gt``/``Lt``."""

    key: str
    operator: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A compiled ``metav1.LabelSelector``; matching it never re-reads the JSON form."""

    match_labels: tuple[tuple[str, str], ...]
    expressions: tuple[SelectorRequirement, ...]


def requirement_matches(req: SelectorRequirement, labels: Mapping[str, str]) -> bool:
    """One requirement of a label selector or a node selector term; an unknown operator fails."""
    present = req.key in labels
    if req.operator == "In":
        return present and labels[req.key] in req.values
    if req.operator == "NotIn":
        return not present or labels[req.key] not in req.values
    if req.operator == "Exists":
        return present
    if req.operator == "DoesNotExist":
        return not present
    if req.operator in ("Gt", "Lt") and present and len(req.values) == 1:
        try:
            actual, bound = int(labels[req.key]), int(req.values[0])
        except ValueError:
            return False
        return actual > bound if req.operator == "Gt" else actual < bound
    return False


def matches_compiled(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` satisfy a compiled selector; ``None`` (nil) matches nothing."""
    if selector is None:
        return False
    for key, value in selector.match_labels:
        if labels.get(key) != value:
            return False
    return all(requirement_matches(req, labels) for req in selector.expressions)


def matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` satisfy a metav1.LabelSelector in its JSON form.

    ``None`` (nil) matches nothing, ``{}`` matches everything. A malformed selector never raises:
    a requirement with an operator a label selector does not have (including the node-selector
    ``Gt``/``Lt``) fails, and a key that is not a string names no label.
    """
    if selector is None:
        return False
    if not isinstance(selector, Mapping):
        return False
    match_labels = selector.get("matchLabels")
    if isinstance(match_labels, Mapping):
        for key, value in match_labels.items():
            if labels.get(key) != value:
                return False
    expressions = selector.get("matchExpressions")
    for requirement in expressions if isinstance(expressions, list) else ():
        if not isinstance(requirement, Mapping):
            requirement = {}
        label_key, operator = requirement.get("key"), requirement.get("operator")
        values = requirement.get("values")
        values = values if isinstance(values, list) else []
        # A key that is not a string names no label (and an unhashable one must not raise).
        present = isinstance(label_key, str) and label_key in labels
        label_value = labels[label_key] if present else None
        if operator == "In":
            if not (present and label_value in values):
                return False
        elif operator == "NotIn":
            if present and label_value in values:
                return False
        elif operator == "Exists":
            if not present:
                return False
        elif operator == "DoesNotExist":
            if present:
                return False
        else:
            return False
    return True
