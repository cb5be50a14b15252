"""Label selectors, node affinity against flavor labels, taints against tolerations.

Pure functions over compiled records; no JSON here.
"""

from __future__ import annotations

from collections.abc import Mapping

from .records import FlavorInfo, LabelSelector, PodSetInfo, SelectorRequirement


def requirement_matches(req: SelectorRequirement, labels: Mapping[str, str]) -> bool:
    """One requirement of a label selector or a node selector term."""
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


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics; ``None`` (a nil selector) matches nothing, ``{}`` everything."""
    if selector is None:
        return False
    for key, value in selector.match_labels:
        if labels.get(key) != value:
            return False
    return all(requirement_matches(req, labels) for req in selector.expressions)


def flavor_mismatch(podset: PodSetInfo, flavor: FlavorInfo) -> str | None:
    """Why ``podset`` cannot use ``flavor``, or None when it can (Kueue's flavor eligibility).

    Taints: a NoSchedule/NoExecute taint of the flavor must be tolerated by the pod's tolerations
    or the flavor's own. Labels: the pod's nodeSelector and required node affinity are compared
    with the flavor's ``nodeLabels``, looking only at label keys the flavor defines; a key the
    flavor does not define says nothing about the flavor and is ignored.
    """
    for taint in flavor.node_taints:
        if not any(t.tolerates(taint) for t in podset.tolerations) and not any(
            t.tolerates(taint) for t in flavor.tolerations
        ):
            return f"untolerated taint {{{taint.key}: {taint.value}}} in flavor {flavor.name}"
    labels = flavor.node_labels
    for key, value in podset.node_selector.items():
        if key in labels and labels[key] != value:
            return f"flavor {flavor.name} doesn't match node affinity"
    if podset.affinity_terms is not None:
        relevant_terms: list[tuple[SelectorRequirement, ...]] = []
        for term in podset.affinity_terms:
            relevant = tuple(req for req in term if req.key in labels)
            if not relevant:
                # Terms are ORed: a term that constrains nothing this flavor knows matches it.
                relevant_terms = []
                break
            relevant_terms.append(relevant)
        if relevant_terms and not any(
            all(requirement_matches(req, labels) for req in term) for term in relevant_terms
        ):
            return f"flavor {flavor.name} doesn't match node affinity"
    return None
