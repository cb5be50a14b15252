"""The Job's pod template as the user wrote it, saved across a start and restored on a stop.

Starting a Job injects scheduling directives into its pod template (the admitted flavors' node
labels and tolerations, admission-check updates, the podset label). Before that, the four parts
a start may touch — ``nodeSelector``, ``tolerations``, ``labels``, ``annotations`` — are saved per
podSet as JSON in the Job annotation ``kueue.x-k8s.io/original-pod-template``. Stopping the Job
puts them back exactly and drops the annotation, so a Job evicted and re-admitted on another
flavor never carries the first flavor's node selector.

Keeping the snapshot on the Job itself (rather than only in controller memory) means a restart
of the controller between start and stop loses nothing.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from pykueue.api.constants import DEFAULT_PODSET_NAME, ORIGINAL_TEMPLATE_ANNOTATION

from . import job as jobs

Obj = dict[str, Any]

SAVED_METADATA_FIELDS = ("labels", "annotations")
SAVED_SPEC_FIELDS = ("nodeSelector", "tolerations")


# The saved parts, each with the JSON type it must have (anything else is read as empty).
SNAPSHOT_FIELDS: tuple[tuple[str, type], ...] = (
    ("nodeSelector", dict),
    ("tolerations", list),
    ("labels", dict),
    ("annotations", dict),
)


def _typed(value: Any, kind: type) -> Any:
    return copy.deepcopy(value) if isinstance(value, kind) else kind()


def editable_copy(template: Obj) -> tuple[Obj, Obj, Obj]:
    """A deep copy of a pod template with dict ``metadata`` and ``spec`` (whatever the user sent),
    returned with those two, ready to be edited in place."""
    result = copy.deepcopy(template)
    if not isinstance(result.get("metadata"), dict):
        result["metadata"] = {}
    if not isinstance(result.get("spec"), dict):
        result["spec"] = {}
    return result, result["metadata"], result["spec"]


def snapshot(template: Obj) -> Obj:
    """The parts of a pod template a start may change (absent parts are recorded as empty)."""
    meta = jobs.metadata(template)
    pod_spec = jobs.spec(template)
    return {
        field: _typed((meta if field in SAVED_METADATA_FIELDS else pod_spec).get(field), kind)
        for field, kind in SNAPSHOT_FIELDS
    }


def saved_snapshot(job: Obj) -> Obj | None:
    """The snapshot saved on the Job by a start, or ``None`` (never started, or unreadable)."""
    raw = jobs.annotations(job).get(ORIGINAL_TEMPLATE_ANNOTATION)
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except (TypeError, ValueError):
        return None
    podset = data.get(DEFAULT_PODSET_NAME) if isinstance(data, dict) else None
    if not isinstance(podset, dict):
        return None
    return {field: _typed(podset.get(field), kind) for field, kind in SNAPSHOT_FIELDS}


def encode_snapshot(snap: Obj) -> str:
    """The annotation value: ``{"<podset>": {nodeSelector, tolerations, labels, annotations}}``."""
    return json.dumps({DEFAULT_PODSET_NAME: snap}, sort_keys=True, separators=(",", ":"))


def apply_snapshot(template: Obj, snap: Obj) -> Obj:
    """A copy of ``template`` with the four saved parts replaced by ``snap``."""
    result, meta, pod_spec = editable_copy(template)
    for field in SAVED_METADATA_FIELDS:
        if snap.get(field):
            meta[field] = copy.deepcopy(snap[field])
        else:
            meta.pop(field, None)
    for field in SAVED_SPEC_FIELDS:
        if snap.get(field):
            pod_spec[field] = copy.deepcopy(snap[field])
        else:
            pod_spec.pop(field, None)
    return result


def original_pod_template(job: Obj) -> Obj:
    """The Job's pod template with anything a start injected taken out again."""
    template = jobs.pod_template(job)
    snap = saved_snapshot(job)
    return apply_snapshot(template, snap) if snap is not None else copy.deepcopy(template)
