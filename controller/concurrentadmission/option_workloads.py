"""Parent and option Workload objects: telling them apart, and building an option from its parent.

An option is a copy of its parent's spec (podSets, queue, priority) with:

* ``spec.workloadMode.type: ResourceFlavorOption`` and ``spec.active: true``;
* every podSet's ``allowedResourceFlavors`` set to the option's flavors (the engine assigns only
  those);
* a *controller* ownerReference to the parent (the garbage collector deletes options with it);
* annotations the engine reads: preference rank, whether it is a migration target and the
  parent's queue timestamp (:data:`~pykueue.api.constants.OPTION_PREFERENCE_ANNOTATION`,
  :data:`~pykueue.api.constants.OPTION_MIGRATION_TARGET_ANNOTATION`,
  :data:`~pykueue.api.constants.OPTION_QUEUE_TIMESTAMP_ANNOTATION`);
* the parent's labels (so label selectors written for the job's workload find its options too),
  without the parent marker label.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from controller.concurrentadmission.option_specs import OptionSpec
from controller.workload.view import has_reservation, is_active, workload_mode
from pykueue.api import constants as c
from pykueue.api.objects import mapping_or_empty

Obj = dict[str, Any]


def is_parent(wl: Mapping[str, Any]) -> bool:
    labels = mapping_or_empty(mapping_or_empty(wl.get("metadata")).get("labels"))
    return (
        workload_mode(wl) == c.WORKLOAD_MODE_PARENT
        or labels.get(c.CONCURRENT_ADMISSION_PARENT_LABEL) == "true"
    )


def is_option(wl: Mapping[str, Any]) -> bool:
    return workload_mode(wl) == c.WORKLOAD_MODE_OPTION


def _parent_ref(option: Mapping[str, Any]) -> Mapping[str, Any]:
    """The controller ownerReference to a Workload (the parent), or an empty mapping."""
    for ref in mapping_or_empty(option.get("metadata")).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("kind") == "Workload":
            return ref
    return {}


def parent_name(option: Mapping[str, Any]) -> str | None:
    """The name of the Workload controlling ``option`` (its parent), if any."""
    name = _parent_ref(option).get("name")
    return name if isinstance(name, str) and name else None


def parent_uid(option: Mapping[str, Any]) -> str | None:
    """The uid of the Workload controlling ``option`` (its parent), if any."""
    uid = _parent_ref(option).get("uid")
    return uid if isinstance(uid, str) and uid else None


# Informer index over Workloads: an option's parent uid -> the option. Shared by the option
# controller and the Job integration (a parent's Job follows whichever option holds quota).
OPTION_BY_PARENT_UID = "concurrent/option-by-parent-uid"


def option_by_parent_uid(obj: Mapping[str, Any]) -> list[str]:
    if not is_option(obj):
        return []
    uid = parent_uid(obj)
    return [uid] if uid else []


def option_rank(option: Mapping[str, Any]) -> int | None:
    annotations = mapping_or_empty(mapping_or_empty(option.get("metadata")).get("annotations"))
    raw = annotations.get(c.OPTION_PREFERENCE_ANNOTATION)
    try:
        return int(raw) if raw is not None else None
    except (TypeError, ValueError):
        return None


def allowed_flavors(option: Mapping[str, Any]) -> tuple[str, ...]:
    """The flavors an option allows (the union over its podSets, in first-seen order)."""
    seen: dict[str, None] = {}
    for podset in mapping_or_empty(option.get("spec")).get("podSets") or []:
        for flavor in mapping_or_empty(podset).get("allowedResourceFlavors") or []:
            seen[str(flavor)] = None
    return tuple(seen)


def engine_annotations(spec: OptionSpec) -> dict[str, str]:
    return {
        c.OPTION_PREFERENCE_ANNOTATION: str(spec.rank),
        c.OPTION_MIGRATION_TARGET_ANNOTATION: "true" if spec.migration_target else "false",
    }


def annotations_patch(option: Mapping[str, Any], spec: OptionSpec) -> Obj | None:
    """A metadata merge patch bringing the engine annotations up to date, or ``None``."""
    current = mapping_or_empty(mapping_or_empty(option.get("metadata")).get("annotations"))
    wanted = engine_annotations(spec)
    changed = {k: v for k, v in wanted.items() if current.get(k) != v}
    if not changed:
        return None
    meta = mapping_or_empty(option.get("metadata"))
    return {"metadata": {"resourceVersion": meta.get("resourceVersion"), "annotations": changed}}


# Spec fields an option copies from its parent and keeps in line with it afterwards: a Job's
# WorkloadPriorityClass label may change at any time, and the Job integration updates the parent.
FOLLOWED_SPEC_FIELDS = ("priority", "priorityClassName", "priorityClassSource")


def sync_patch(option: Mapping[str, Any], parent: Mapping[str, Any], spec: OptionSpec) -> Obj | None:
    """One resourceVersion-guarded merge patch bringing the engine annotations and the priority
    fields of ``option`` in line with ``spec`` and ``parent``, or ``None`` when nothing differs."""
    patch = annotations_patch(option, spec) or {
        "metadata": {"resourceVersion": mapping_or_empty(option.get("metadata")).get("resourceVersion")}
    }
    stamp = mapping_or_empty(parent.get("metadata")).get("creationTimestamp")
    annotations = mapping_or_empty(mapping_or_empty(option.get("metadata")).get("annotations"))
    if stamp and annotations.get(c.OPTION_QUEUE_TIMESTAMP_ANNOTATION) != stamp:
        patch["metadata"].setdefault("annotations", {})[c.OPTION_QUEUE_TIMESTAMP_ANNOTATION] = stamp
    if c.OPTION_PREEMPTION_GATE_ANNOTATION in annotations and (has_reservation(option) or not is_active(option)):
        # The gate was used (the option reserved) or the option is out: pass it on.
        patch["metadata"].setdefault("annotations", {})[c.OPTION_PREEMPTION_GATE_ANNOTATION] = None
    current = mapping_or_empty(option.get("spec"))
    wanted = mapping_or_empty(parent.get("spec"))
    changed = {
        k: copy.deepcopy(wanted.get(k))
        for k in FOLLOWED_SPEC_FIELDS
        if (current.get(k) or None) != (wanted.get(k) or None) or (k == "priority" and current.get(k) != wanted.get(k))
    }  # an absent class and v1beta1's "" (no class) are the same
    if "priorityClassName" in changed or "priorityClassSource" in changed:
        # The class is one field in v1beta2 (priorityClassRef): the pair travels together.
        changed.update({k: copy.deepcopy(wanted.get(k)) for k in ("priorityClassName", "priorityClassSource")})
    if changed:
        patch["spec"] = changed
    return patch if "annotations" in patch["metadata"] or changed else None


def _without_flavors(podsets: Any) -> list[Any]:
    return [
        {k: v for k, v in ps.items() if k != "allowedResourceFlavors"} if isinstance(ps, Mapping) else ps
        for ps in podsets or []
    ]


def matches_spec(option: Mapping[str, Any], parent: Mapping[str, Any], spec: OptionSpec) -> bool:
    """Whether an existing option still allows exactly the flavors ``spec`` asks for and still
    carries the parent's podSets (a suspended Job's Workload may be updated in place)."""
    podsets = mapping_or_empty(option.get("spec")).get("podSets") or []
    return (
        bool(podsets)
        and all(
            tuple(mapping_or_empty(ps).get("allowedResourceFlavors") or ()) == spec.allowed_flavors for ps in podsets
        )
        and _without_flavors(podsets) == _without_flavors(mapping_or_empty(parent.get("spec")).get("podSets"))
    )


def build_option(parent: Mapping[str, Any], spec: OptionSpec, name: str) -> Obj:
    """The option Workload ``name`` of ``parent`` for ``spec``."""
    meta = mapping_or_empty(parent.get("metadata"))
    parent_spec = mapping_or_empty(parent.get("spec"))
    labels = {k: v for k, v in mapping_or_empty(meta.get("labels")).items() if k != c.CONCURRENT_ADMISSION_PARENT_LABEL}
    podsets = []
    for podset in parent_spec.get("podSets") or []:
        podset = copy.deepcopy(dict(mapping_or_empty(podset)))
        podset["allowedResourceFlavors"] = list(spec.allowed_flavors)
        podsets.append(podset)
    option_spec: Obj = {
        key: copy.deepcopy(value)
        for key, value in parent_spec.items()
        if key
        in (
            "queueName",
            "priority",
            "priorityClassName",
            "priorityClassSource",
        )  # not maximumExecutionTimeSeconds: it counts per parent (parent_plan)
    }
    option_spec.update(
        {
            "podSets": podsets,
            "active": True,
            "workloadMode": {"type": c.WORKLOAD_MODE_OPTION},
        }
    )
    metadata: Obj = {
        "name": name,
        "namespace": meta.get("namespace"),
        "annotations": {
            **engine_annotations(spec),
            **(
                {c.OPTION_QUEUE_TIMESTAMP_ANNOTATION: str(meta["creationTimestamp"])}
                if meta.get("creationTimestamp")
                else {}
            ),
        },
        "ownerReferences": [
            {
                "apiVersion": c.API_VERSION,
                "kind": "Workload",
                "name": meta.get("name"),
                "uid": meta.get("uid"),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": c.API_VERSION, "kind": "Workload", "metadata": metadata, "spec": option_spec}
