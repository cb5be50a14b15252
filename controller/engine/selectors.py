"""Node affinity against flavor labels, taints against tolerations.

Label selectors themselves are matched by :mod:`pykueue.api.labelselectors`.

Pure functions over compiled records; no JSON here.
"""

from __future__ import annotations

from pykueue.api.labelselectors import requirement_matches

from .records import FlavorInfo, PodSetInfo, SelectorRequirement


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
            # Kueue prints the taint as Go formats the struct (key, value, effect, timeAdded).
            return f"untolerated taint {{{taint.key} {taint.value} {taint.effect} <nil>}} in flavor {flavor.name}"
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
