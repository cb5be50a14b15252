"""Start and stop a Job: what admission injects into its pod template, as patches.

:func:`podset_infos` collects, per podSet, what an admitted Workload asks the pods to carry:
the admitted flavors' ``nodeLabels`` (into ``nodeSelector``) and ``tolerations``, the
``kueue.x-k8s.io/podset`` label, the queue labels, and every admission check's
``podSetUpdates``. :func:`start_patch` merges that into the user's original template and
unsuspends the Job in a single merge patch; :func:`stop_patch` and :func:`restore_patch` undo
it.

Merging follows Kueue: updates are additive; a key already present with a *different* value is
a conflict (:class:`PodSetMergeError`), which is permanent — retrying can never succeed — so the
caller finishes the Workload as failed rather than looping.

Why a stop takes more than one patch: the Job API accepts changes to a pod template's node
selector, tolerations, labels and annotations only while the *old* object is suspended and has
never started (``status.startTime`` unset). So the stop is (1) suspend, (2) clear
``status.startTime``, (3) restore the template — each step idempotent, and the reconciler simply
repeats until the Job is suspended, unstarted and restored.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pykueue.api.constants import (
    CLUSTER_QUEUE_NAME_LABEL,
    DEFAULT_PODSET_NAME,
    LOCAL_QUEUE_NAME_LABEL,
    ORIGINAL_TEMPLATE_ANNOTATION,
    PODSET_LABEL,
)
from pykueue.api.objects import dict_or_empty

from . import job as jobs
from .compose import is_label_value
from .template import apply_snapshot, editable_copy, encode_snapshot, saved_snapshot, snapshot

Obj = dict[str, Any]


class PodSetMergeError(ValueError):
    """Two sources want different values for the same key: the Job can never start as admitted."""


class FlavorNotFound(LookupError):
    """An admitted flavor is not (yet) in the cache; the start is retried later."""


@dataclass
class PodSetInfo:
    """What one podSet's pods must carry to run where the Workload was admitted."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[Obj] = field(default_factory=list)
    count: int | None = None  # pods admitted (fewer than the podSet asks after a partial admission)

    def merge(self, other: PodSetInfo, source: str) -> None:
        """Add ``other``'s entries; raise :class:`PodSetMergeError` on a conflicting key."""
        for what, mine, theirs in (
            ("labels", self.labels, other.labels),
            ("annotations", self.annotations, other.annotations),
            ("nodeSelector", self.node_selector, other.node_selector),
        ):
            _merge_map(mine, theirs, f"{source}: {what}")
        for toleration in other.tolerations:
            if toleration not in self.tolerations:
                self.tolerations.append(copy.deepcopy(toleration))


def _merge_map(target: dict[str, str], extra: Mapping[str, str], where: str) -> None:
    for key, value in extra.items():
        if key in target and target[key] != value:
            raise PodSetMergeError(f"{where}: conflict for key {key!r}: {target[key]!r} vs {value!r}")
        target[key] = value


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def podset_infos(workload: Obj, flavors: Mapping[str, Obj]) -> list[PodSetInfo]:
    """What the admitted ``workload`` injects per podSet; ``flavors`` maps name → ResourceFlavor.

    Raises :class:`FlavorNotFound` for a flavor missing from ``flavors`` and
    :class:`PodSetMergeError` when admission checks' updates conflict with each other.
    """
    wl_status = jobs.status(workload)
    admission = jobs.dict_field(wl_status, "admission")
    cluster_queue = str(admission.get("clusterQueue") or "")
    local_queue = str(jobs.spec(workload).get("queueName") or "")
    infos: list[PodSetInfo] = []
    for assignment in admission.get("podSetAssignments") or []:
        if not isinstance(assignment, dict):
            raise PodSetMergeError(f"status.admission.podSetAssignments: Invalid value: {assignment!r}")
        name = str(assignment.get("name") or DEFAULT_PODSET_NAME)
        count = assignment.get("count")
        info = PodSetInfo(name=name, labels={PODSET_LABEL: name}, count=count if isinstance(count, int) else None)
        if cluster_queue and is_label_value(cluster_queue):
            info.labels[CLUSTER_QUEUE_NAME_LABEL] = cluster_queue
        if local_queue and is_label_value(local_queue):
            info.labels[LOCAL_QUEUE_NAME_LABEL] = local_queue
        assigned = jobs.dict_field(assignment, "flavors")
        # Resources are visited in name order so the result does not depend on dict order.
        for flavor_name in dict.fromkeys(assigned[r] for r in sorted(assigned)):
            flavor = flavors.get(flavor_name)
            if flavor is None:
                raise FlavorNotFound(f"ResourceFlavor {flavor_name!r} not found")
            flavor_spec = jobs.spec(flavor)
            for key, value in _str_map(flavor_spec.get("nodeLabels")).items():
                info.node_selector.setdefault(key, value)
            for toleration in flavor_spec.get("tolerations") or []:
                if isinstance(toleration, dict) and toleration not in info.tolerations:
                    info.tolerations.append(copy.deepcopy(toleration))
        for check in wl_status.get("admissionChecks") or []:
            if not isinstance(check, dict):
                continue
            for update in check.get("podSetUpdates") or []:
                if not isinstance(update, dict) or update.get("name", DEFAULT_PODSET_NAME) != name:
                    continue
                from_check = PodSetInfo(
                    name=name,
                    labels=_str_map(update.get("labels")),
                    annotations=_str_map(update.get("annotations")),
                    node_selector=_str_map(update.get("nodeSelector")),
                    tolerations=[t for t in update.get("tolerations") or [] if isinstance(t, dict)],
                )
                info.merge(from_check, f"admission check {check.get('name')!r}")
        infos.append(info)
    return infos


def inject(template: Obj, info: PodSetInfo) -> Obj:
    """A copy of the pod ``template`` with ``info`` merged in (Kueue's ``podset.Merge``)."""
    result, meta, pod_spec = editable_copy(template)
    for what, existing_key, extra in (
        ("labels", "labels", info.labels),
        ("annotations", "annotations", info.annotations),
    ):
        merged = dict(meta.get(existing_key) or {})
        _merge_map(merged, extra, f"pod template {what}")
        if merged:
            meta[existing_key] = merged
    selector = dict(pod_spec.get("nodeSelector") or {})
    _merge_map(selector, info.node_selector, "pod template nodeSelector")
    if selector:
        pod_spec["nodeSelector"] = selector
    tolerations = list(pod_spec.get("tolerations") or [])
    for toleration in info.tolerations:
        if toleration not in tolerations:
            tolerations.append(copy.deepcopy(toleration))
    if tolerations:
        pod_spec["tolerations"] = tolerations
    return result


def _map_patch(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """A JSON merge patch turning map ``current`` into ``desired`` (``None`` deletes the field)."""
    if not desired:
        return None
    patch: dict[str, Any] = {k: v for k, v in desired.items() if current.get(k) != v}
    patch.update({k: None for k in current if k not in desired})
    return patch


def _template_patch(current: Obj, desired: Obj) -> Obj:
    """Merge patch for ``spec.template`` covering the four fields a start or stop changes."""
    cur_meta, want_meta = dict_or_empty(current.get("metadata")), dict_or_empty(desired.get("metadata"))
    cur_spec, want_spec = dict_or_empty(current.get("spec")), dict_or_empty(desired.get("spec"))
    meta_patch: Obj = {}
    for field_name in ("labels", "annotations"):
        cur, want = dict_or_empty(cur_meta.get(field_name)), dict_or_empty(want_meta.get(field_name))
        garbage = not isinstance(cur_meta.get(field_name), dict | None)
        if cur != want or garbage:
            meta_patch[field_name] = _map_patch(cur, want)
    spec_patch: Obj = {}
    cur_selector, want_selector = dict_or_empty(cur_spec.get("nodeSelector")), dict_or_empty(want_spec.get("nodeSelector"))
    if cur_selector != want_selector:
        spec_patch["nodeSelector"] = _map_patch(cur_selector, want_selector)
    cur_tolerations = cur_spec.get("tolerations") if isinstance(cur_spec.get("tolerations"), list) else []
    want_tolerations = want_spec.get("tolerations") if isinstance(want_spec.get("tolerations"), list) else []
    if cur_tolerations != want_tolerations:
        spec_patch["tolerations"] = want_tolerations or None
    patch: Obj = {}
    if meta_patch:
        patch["metadata"] = meta_patch
    if spec_patch:
        patch["spec"] = spec_patch
    return patch


def start_patch(job: Obj, infos: list[PodSetInfo]) -> Obj:
    """One merge patch that injects ``infos`` into the Job's original template and unsuspends it.

    The original template is saved in the annotation first (or kept, when an earlier start
    already saved it), and ``metadata.resourceVersion`` makes the patch fail with a conflict if
    the Job changed since it was read.
    """
    snap = saved_snapshot(job)
    current = jobs.pod_template(job)
    if snap is None:
        snap = snapshot(current)
    original = apply_snapshot(current, snap)
    info = next((i for i in infos if i.name == DEFAULT_PODSET_NAME), None)
    if info is None:
        raise PodSetMergeError(f"the admission has no podSetAssignment named {DEFAULT_PODSET_NAME!r}")
    desired = inject(original, info)
    meta = jobs.metadata(job)
    patch: Obj = {
        "metadata": {
            "resourceVersion": meta.get("resourceVersion"),
            "annotations": {ORIGINAL_TEMPLATE_ANNOTATION: encode_snapshot(snap)},
        },
        "spec": {"suspend": False},
    }
    template_patch = _template_patch(current, desired)
    if template_patch:
        patch["spec"]["template"] = template_patch
    patch["spec"].update(_parallelism_patch(job, info.count))
    return patch


def _parallelism_patch(job: Obj, count: int | None) -> Obj:
    """Partial admission: a Job with ``job-min-parallelism`` runs with the admitted pod count
    (and its completions too with ``job-completions-equal-parallelism``), as Kueue sets them."""
    if count is None or jobs.min_parallelism(job) is None:
        return {}
    spec = jobs.spec(job)
    patch: Obj = {}
    if spec.get("parallelism") != count:
        patch["parallelism"] = count
    if jobs.completions_follow_parallelism(job) and spec.get("completions") != count:
        patch["completions"] = count
    return patch


def suspend_patch(job: Obj) -> Obj:
    """Step 1 of a stop: suspend (the Job controller then deletes the Job's active pods)."""
    return {
        "metadata": {"resourceVersion": jobs.metadata(job).get("resourceVersion")},
        "spec": {"suspend": True},
    }


def clear_start_time_patch() -> Obj:
    """Step 2 of a stop (status subresource): forget the start, so the template becomes mutable."""
    return {"status": {"startTime": None}}


def restore_patch(job: Obj, fallback_template: Obj | None = None, original_count: int | None = None) -> Obj | None:
    """Step 3 of a stop: put back the saved template and drop the annotation; ``None`` if nothing to do.

    Without a saved snapshot (a Job started by an older controller, or whose annotation was
    removed) the Workload's podSet template — the original by construction — is the fallback.
    ``original_count`` (the Workload's podSet count) puts back the parallelism a partial
    admission lowered.
    """
    snap = saved_snapshot(job)
    if snap is None and fallback_template is not None:
        snap = snapshot(fallback_template)
    current = jobs.pod_template(job)
    has_annotation = ORIGINAL_TEMPLATE_ANNOTATION in jobs.annotations(job)
    template_patch = _template_patch(current, apply_snapshot(current, snap)) if snap is not None else {}
    spec_patch = _parallelism_patch(job, original_count)
    if template_patch:
        spec_patch["template"] = template_patch
    if not spec_patch and not has_annotation:
        return None
    patch: Obj = {"metadata": {"resourceVersion": jobs.metadata(job).get("resourceVersion")}}
    if has_annotation:
        patch["metadata"]["annotations"] = {ORIGINAL_TEMPLATE_ANNOTATION: None}
    if spec_patch:
        patch["spec"] = spec_patch
    return patch


def is_started(job: Obj) -> bool:
    """Whether the Job API still regards the Job as started (its template is then immutable)."""
    return bool(jobs.status(job).get("startTime"))
