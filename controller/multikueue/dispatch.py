"""Pure decisions of the dispatch loop: what the copies on workers look like, who won, what to write.

Re-expressed from Kueue's ``workload.go`` (the group of one local and its remote Workloads) and
``batchjob_adapter.go`` (the remote Job), kept free of I/O so the unit tests state them as facts.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from pykueue.api import constants as C
from pykueue.api.timestamps import format_time, parse_time

Obj = dict[str, Any]

# Labels the Job controller puts on a Job's pod template; the remote Job gets its own.
_JOB_CONTROLLER_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid", "batch.kubernetes.io/job-name", "job-name")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def remote_workload(local: Mapping[str, Any], origin: str) -> Obj:
    """The copy of ``local`` created on a worker: same name, namespace, spec (so the same
    LocalQueue), the origin label; no owner, finalizers or status, which belong to the manager."""
    meta = _meta(local)
    labels = dict(meta.get("labels") or {})
    labels[C.MULTIKUEUE_ORIGIN_LABEL] = origin
    annotations = dict(meta.get("annotations") or {})
    annotations[C.MULTIKUEUE_ORIGIN_UID_ANNOTATION] = str(meta.get("uid") or "")
    return {
        "apiVersion": C.API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "labels": labels,
            "annotations": annotations,
        },
        "spec": copy.deepcopy(local.get("spec") or {}),
    }


def remote_job(local_job: Mapping[str, Any], workload_name: str, origin: str) -> Obj:
    """The Job created on the winning worker: the manager's spec without ``managedBy`` (the
    worker's own Job controller runs it) and without the generated selector and pod labels, with
    the prebuilt-workload label naming the copy already admitted there and the origin label."""
    meta = _meta(local_job)
    spec = copy.deepcopy(local_job.get("spec") or {})
    spec.pop("managedBy", None)
    if not spec.get("manualSelector"):
        spec.pop("selector", None)
        template_meta = (spec.get("template") or {}).get("metadata") or {}
        labels = {k: v for k, v in (template_meta.get("labels") or {}).items() if k not in _JOB_CONTROLLER_LABELS}
        if template_meta:
            template_meta["labels"] = labels
    spec["suspend"] = True  # the worker's pykueue starts it once it sees the admitted copy
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in _JOB_CONTROLLER_LABELS}
    labels[C.PREBUILT_WORKLOAD_LABEL] = workload_name
    labels[C.MULTIKUEUE_ORIGIN_LABEL] = origin
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "labels": labels,
            "annotations": dict(meta.get("annotations") or {}),
        },
        "spec": spec,
    }


def has_origin(obj: Mapping[str, Any] | None, origin: str) -> bool:
    return obj is not None and (_meta(obj).get("labels") or {}).get(C.MULTIKUEUE_ORIGIN_LABEL) == origin


def adopted_by_job(remote: Mapping[str, Any] | None) -> bool:
    """Whether the worker's Job integration adopted the copy (a controller owner of kind Job,
    docs/design/jobs.md): from then on the copy lives and dies with that Job."""
    for owner in _meta(remote or {}).get("ownerReferences") or []:
        if isinstance(owner, Mapping) and owner.get("controller") and owner.get("kind") == "Job":
            return True
    return False


def _condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return cond
    return None


def reserved_at(remote: Mapping[str, Any]) -> str | None:
    """When the remote copy got its quota reservation (``None``: it has none)."""
    cond = _condition(remote, C.COND_QUOTA_RESERVED)
    if cond is None or cond.get("status") != "True":
        return None
    return str(cond.get("lastTransitionTime") or "")


def is_admitted(remote: Mapping[str, Any]) -> bool:
    """Whether the worker admitted the copy (every check of its own ClusterQueue Ready)."""
    cond = _condition(remote, C.COND_ADMITTED)
    return cond is not None and cond.get("status") == "True"


def pick_winner(
    remotes: Mapping[str, Mapping[str, Any] | None], current: str | None, *, tie_break: str = ""
) -> str | None:
    """The worker that runs the workload: the one already chosen if its copy still exists,
    else the first to reserve quota, else nobody yet.

    Reservation times have a one-second resolution, so under load several copies often reserve
    "at the same time". Such a tie goes to the worker whose hash with ``tie_break`` (the
    Workload's key) is lowest: every pass, and every manager replica, reading the same state
    agrees, and ties spread evenly over the workers instead of always going to the first name
    (Kueue's tie is the random order of a Go map)."""
    if current and remotes.get(current) is not None:
        return current
    reserving = [
        (at, _tie_rank(tie_break, name), name)
        for name, remote in remotes.items()
        if remote is not None and (at := reserved_at(remote))
    ]
    if not reserving:
        return None
    return min(reserving)[2]


def _tie_rank(seed: str, cluster: str) -> str:
    return hashlib.sha256(f"{seed}\x00{cluster}".encode()).hexdigest()


def nomination_changed(nominated: list[str], active: list[str]) -> bool:
    """Whether ``status.nominatedClusterNames`` must be rewritten to the active workers."""
    return sorted(nominated) != sorted(active)


def check_entry(local: Mapping[str, Any], check: str) -> Mapping[str, Any] | None:
    for state in (local.get("status") or {}).get("admissionChecks") or []:
        if isinstance(state, Mapping) and state.get("name") == check:
            return state
    return None


def check_states_patch(
    local: Mapping[str, Any], check: str, state: str, message: str, now: datetime
) -> list[Obj] | None:
    """The ``status.admissionChecks`` list with ``check`` moved to ``state``; None if unchanged."""
    states = [dict(s) for s in (local.get("status") or {}).get("admissionChecks") or [] if isinstance(s, Mapping)]
    for entry in states:
        if entry.get("name") != check:
            continue
        if entry.get("state") == state and entry.get("message") == message:
            return None
        if entry.get("state") != state:
            entry["lastTransitionTime"] = format_time(now)
        entry["state"], entry["message"] = state, message
        return states
    return None


def is_active(cluster: Mapping[str, Any] | None) -> bool:
    """Whether a MultiKueueCluster's ``Active`` condition is True."""
    cond = _condition(cluster or {}, C.COND_ACTIVE)
    return cond is not None and cond.get("status") == "True"


def worker_lost(cluster: Mapping[str, Any] | None, timeout: float, now: datetime) -> bool:
    """Whether the winning worker has been inactive (or gone) for longer than ``timeout``."""
    if cluster is None:
        return True
    cond = _condition(cluster, C.COND_ACTIVE)
    if cond is None or cond.get("status") == "True":
        return False
    since = parse_time(str(cond.get("lastTransitionTime") or ""))
    return since is None or now - since > timedelta(seconds=timeout)


def job_status_patch(local_job: Mapping[str, Any], remote: Mapping[str, Any]) -> Obj | None:
    """A merge patch making the manager's Job status equal the worker's; None when it already is.

    Fields the worker's Job no longer has are cleared (``None``) at every depth: a merge patch
    merges nested objects, so copying the worker's ``uncountedTerminatedPods: {}`` over a mirrored
    ``{succeeded: [uid]}`` would keep the uid, and the Job API refuses a finished Job whose
    ``uncountedTerminatedPods`` is not empty."""
    mine = dict(local_job.get("status") or {})
    theirs = dict(remote.get("status") or {})
    if mine == theirs:
        return None
    return _replacing_merge_patch(mine, theirs)


def _replacing_merge_patch(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> Obj:
    """The RFC 7386 merge patch that turns ``mine`` into exactly ``theirs``."""
    patch: Obj = {k: None for k in mine if k not in theirs}
    for key, value in theirs.items():
        current = mine.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            if current != value:
                patch[key] = _replacing_merge_patch(current, value)
        elif current != value or key not in mine:
            patch[key] = value
    return patch


_POD_COUNTS = ("active", "ready", "terminating")


def forget_pods_patch(local_job: Mapping[str, Any]) -> Obj | None:
    """A status patch dropping the pod counts mirrored from a worker, for a Job MultiKueue
    manages; None when there is nothing to drop (or the Job is not MultiKueue's)."""
    if (local_job.get("spec") or {}).get("managedBy") != C.MULTIKUEUE_CONTROLLER:
        return None
    status = local_job.get("status") or {}
    counts = [k for k in _POD_COUNTS if status.get(k)]
    return {k: None for k in counts} or None
