"""Convert Kueue objects between ``kueue.x-k8s.io/v1beta1`` and ``v1beta2``: pure functions.

The webhook's ``/convert`` endpoint (webhook/conversion.py) calls :func:`convert` for every object
the apiserver hands it; nothing here talks to the API. The mapping follows Kueue's own conversion
(``apis/kueue/v1beta1/*_conversion.go`` in kubernetes-sigs/kueue) and the schema edits of
:mod:`pykueue.api.schemas.v1beta2`:

* renames: ClusterQueue ``spec.cohort`` ↔ ``spec.cohortName``; LocalQueue ``status.flavorUsage`` ↔
  ``status.flavorsUsage``; Workload ``status.accumulatedPastExexcutionTimeSeconds`` ↔
  ``status.accumulatedPastExecutionTimeSeconds``;
* moves: MultiKueueCluster ``spec.kubeConfig``/``spec.clusterProfileRef`` ↔
  ``spec.clusterSource.*``;
* re-encodings: Workload ``spec.priorityClassName`` + ``priorityClassSource`` ↔
  ``spec.priorityClassRef``; a TopologyAssignment's ``domains`` ↔ its compact ``slices``;
  ClusterQueue ``spec.admissionChecks`` → ``spec.admissionChecksStrategy``;
  ``whenCanBorrow: Borrow`` / ``whenCanPreempt: Preempt`` (gone from v1beta2) → ``MayStopSearch``;
  ``spec.concurrentAdmissionPolicy`` ↔ ``spec.concurrentAdmission`` when Kueue's policy can say it
  (:mod:`pykueue.api.concurrent_policy`);
* fields one version lacks (AdmissionCheck ``spec.retryDelayMinutes``, ClusterQueue
  ``status.pendingWorkloadsStatus``, Workload ``spec.preemptionGates``, ...).

Nothing is lost either way: every field a conversion drops or re-encodes ambiguously is written
to the annotation :data:`CONVERSION_DATA_ANNOTATION` of the converted object as an entry
``{to, path, value, guard, expect}``: "converting back to ``to``, put ``value`` at ``path``
(absent ``value``: remove it) if ``guard`` still holds ``expect`` in the object being converted".
The guard makes a stale entry harmless: a field edited in the other version since is converted,
not overwritten by the old value. Entries the plain reverse conversion would reproduce anyway are
not written, so an object that converts cleanly carries no annotation (Cluster API keeps its
``conversion-data`` annotation the same way).

Fields neither version knows are copied as they are.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from typing import Any

from pykueue.api import concurrent_policy
from pykueue.api import constants as c

CONVERSION_DATA_ANNOTATION = "pykueue.x-k8s.io/conversion-data"
V1BETA1 = c.VERSION
V1BETA2 = c.V1BETA2_VERSION
VERSIONS = (V1BETA1, V1BETA2)

Path = tuple[str | int, ...]
_ABSENT = object()


class ConversionError(ValueError):
    """The object cannot be converted (not a Kueue object, unknown version); the message says why."""


# --- paths ----------------------------------------------------------------------------------------


def _get(obj: Any, path: Path) -> Any:
    node = obj
    for step in path:
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                return _ABSENT
            node = node[step]
        else:
            if not isinstance(node, dict) or step not in node:
                return _ABSENT
            node = node[step]
    return node


def _copy(value: Any) -> Any:
    """A deep copy of a JSON value: pickle's C round trip, about twice as fast as JSON's and several
    times :func:`copy.deepcopy`'s on a Workload (docs/design/api-versions.md, "Cost"). Unlike
    JSON's it keeps an object that appears twice in ``value`` one object; decoded JSON has none."""
    return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))


# --- one conversion step ---------------------------------------------------------------------------


class _Step:
    """Records what a conversion did to the fields it touched: the entries the way back needs.

    ``out`` starts as a shallow copy of ``source`` and is edited copy-on-write: :meth:`set` and
    :meth:`pop` copy (shallowly) each object and list on the path they edit the first time they
    reach it, so the subtrees no conversion rewrites (a pod template, a ClusterQueue's resource
    groups, most of a status) are shared with ``source``, never copied, and ``source`` is never
    modified. ``_owned`` holds the containers of ``out`` this step made (by ``id``; holding them
    keeps the ids from being reused while the step lives).
    """

    def __init__(self, source: dict[str, Any], out: dict[str, Any], source_version: str) -> None:
        self.source = source
        self.out = out
        self.source_version = source_version
        self.touched: list[tuple[Path, Path]] = []  # (source path, guard path in out)
        self._owned: dict[int, Any] = {id(out): out}

    def _own(self, parent: Any, key: str | int, child: Any) -> Any:
        """``parent[key]`` as a container of this step's own (a shallow copy the first time)."""
        if id(child) in self._owned:
            return child
        mine = dict(child) if isinstance(child, dict) else list(child)
        parent[key] = mine
        self._owned[id(mine)] = mine
        return mine

    def set(self, path: Path, value: Any) -> None:
        """Set (or, with ``_ABSENT``, remove) the value at ``path`` in ``out``, creating parent
        objects on the way; a path through a scalar or past a list's end is left alone."""
        node: Any = self.out
        for index, step in enumerate(path[:-1]):
            if isinstance(step, int):
                if not isinstance(node, list) or step >= len(node) or not isinstance(node[step], (dict, list)):
                    return
                node = self._own(node, step, node[step])
                continue
            if not isinstance(node, dict):
                return
            if step not in node or not isinstance(node[step], (dict, list)):
                if value is _ABSENT:
                    return
                fresh: Any = [] if isinstance(path[index + 1], int) else {}
                node[step] = fresh
                self._owned[id(fresh)] = fresh
                node = fresh
                continue
            node = self._own(node, step, node[step])
        last = path[-1]
        if isinstance(last, int):
            if isinstance(node, list) and last < len(node) and value is not _ABSENT:
                node[last] = value
            return
        if not isinstance(node, dict):
            return
        if value is _ABSENT:
            node.pop(last, None)
        else:
            node[last] = value

    def pop(self, path: Path) -> Any:
        value = _get(self.out, path)
        if value is not _ABSENT:
            self.set(path, _ABSENT)
        return value

    def touch(self, path: Path, guard: Path | None = None) -> None:
        self.touched.append((path, guard if guard is not None else path))

    def move(self, src: Path, dst: Path) -> None:
        value = self.pop(src)
        if value is not _ABSENT:
            self.set(dst, value)
        self.touch(src, dst)

    def drop(self, path: Path) -> None:
        self.pop(path)
        self.touch(path)


Converter = Callable[[_Step], None]


def _each(obj: Any, path: Path) -> list[Path]:
    """Every concrete path matching ``path``, where ``"*"`` stands for each index of a list."""
    if "*" not in path:
        return [path]
    at = path.index("*")
    items = _get(obj, path[:at])
    if not isinstance(items, list):
        return []
    return [p for i in range(len(items)) for p in _each(obj, (*path[:at], i, *path[at + 1 :]))]


# --- ClusterQueue ---------------------------------------------------------------------------------

_DEPRECATED_FUNGIBILITY = {("whenCanBorrow", "Borrow"), ("whenCanPreempt", "Preempt")}


def _cluster_queue_up(step: _Step) -> None:
    out = step.out
    step.move(("spec", "cohort"), ("spec", "cohortName"))
    for field in ("whenCanBorrow", "whenCanPreempt"):
        path: Path = ("spec", "flavorFungibility", field)
        if (field, _get(out, path)) in _DEPRECATED_FUNGIBILITY:
            step.set(path, "MayStopSearch")
            step.touch(path)
    checks = step.pop(("spec", "admissionChecks"))
    step.touch(("spec", "admissionChecks"), ("spec", "admissionChecksStrategy"))
    if isinstance(checks, list) and checks and _get(out, ("spec", "admissionChecksStrategy")) is _ABSENT:
        step.set(("spec", "admissionChecksStrategy"), {"admissionChecks": [{"name": name} for name in checks]})
        step.touch(("spec", "admissionChecksStrategy"))
    # A concurrentAdmission Kueue can express reads as Kueue's policy in v1beta2, so a queue written
    # with the policy is stored without an annotation and every v1beta2 reader sees Kueue's spelling.
    concurrent = _get(out, ("spec", "concurrentAdmission"))
    policy = concurrent_policy.to_policy(concurrent) if isinstance(concurrent, dict) else None
    if policy is not None and _get(out, ("spec", "concurrentAdmissionPolicy")) is _ABSENT:
        step.set(("spec", "concurrentAdmissionPolicy"), policy)
        step.pop(("spec", "concurrentAdmission"))
    step.touch(("spec", "concurrentAdmission"), ("spec", "concurrentAdmissionPolicy"))
    step.touch(("spec", "concurrentAdmissionPolicy"))
    step.drop(("status", "pendingWorkloadsStatus"))
    step.drop(("status", "fairSharing", "admissionFairSharingStatus"))


def _cluster_queue_down(step: _Step) -> None:
    out = step.out
    step.move(("spec", "cohortName"), ("spec", "cohort"))
    policy = _get(out, ("spec", "concurrentAdmissionPolicy"))
    if policy is not _ABSENT:
        mapped = concurrent_policy.to_concurrent_admission(policy) if isinstance(policy, dict) else None
        if mapped is not None and _get(out, ("spec", "concurrentAdmission")) is _ABSENT:
            step.set(("spec", "concurrentAdmission"), mapped)
        step.pop(("spec", "concurrentAdmissionPolicy"))
        # The way back restores the policy and removes the concurrentAdmission made from it.
        step.touch(("spec", "concurrentAdmissionPolicy"), ("spec", "concurrentAdmission"))
        step.touch(("spec", "concurrentAdmission"))
    elif _get(out, ("spec", "concurrentAdmission")) is not _ABSENT:
        # Written in v1beta2 with pykueue's own field: the way back keeps that spelling instead of
        # turning it into Kueue's policy.
        step.touch(("spec", "concurrentAdmission"))
        step.touch(("spec", "concurrentAdmissionPolicy"), ("spec", "concurrentAdmission"))


# --- Cohort, LocalQueue, AdmissionCheck, MultiKueue -----------------------------------------------


def _cohort_up(step: _Step) -> None:
    step.drop(("status", "fairSharing", "admissionFairSharingStatus"))


def _local_queue_up(step: _Step) -> None:
    step.move(("status", "flavorUsage"), ("status", "flavorsUsage"))
    step.drop(("status", "flavors"))


def _local_queue_down(step: _Step) -> None:
    step.move(("status", "flavorsUsage"), ("status", "flavorUsage"))


def _admission_check_up(step: _Step) -> None:
    step.drop(("spec", "retryDelayMinutes"))


def _multikueue_cluster_up(step: _Step) -> None:
    step.move(("spec", "kubeConfig"), ("spec", "clusterSource", "kubeConfig"))
    step.move(("spec", "clusterProfileRef"), ("spec", "clusterSource", "clusterProfileRef"))


def _multikueue_cluster_down(step: _Step) -> None:
    step.move(("spec", "clusterSource", "kubeConfig"), ("spec", "kubeConfig"))
    step.move(("spec", "clusterSource", "clusterProfileRef"), ("spec", "clusterProfileRef"))
    if _get(step.out, ("spec", "clusterSource")) == {}:
        step.pop(("spec", "clusterSource"))
    step.touch(("spec", "clusterSource"))


def _multikueue_config_down(step: _Step) -> None:
    step.drop(("spec", "quotaManagement"))


# --- Workload ---------------------------------------------------------------------------------------

_PRIORITY_SOURCES = {
    "kueue.x-k8s.io/workloadpriorityclass": ("kueue.x-k8s.io", "WorkloadPriorityClass"),
    "scheduling.k8s.io/priorityclass": ("scheduling.k8s.io", "PriorityClass"),
}
_ASSIGNMENTS: Path = ("status", "admission", "podSetAssignments", "*", "topologyAssignment")


def _domains_to_slices(domains: list[Any], levels: int) -> list[dict[str, Any]] | None:
    """v1beta1's one-entry-per-domain list as one v1beta2 slice; None when it is not well formed."""
    if not domains:
        return []
    counts, values = [], []
    for domain in domains:
        if not isinstance(domain, dict) or not isinstance(domain.get("values"), list):
            return None
        counts.append(domain.get("count"))
        values.append(domain["values"])
    if any(len(v) != levels for v in values):
        return None
    pod_counts: dict[str, Any] = {"universal": counts[0]} if len(set(map(str, counts))) == 1 else {"individual": counts}
    per_level: list[dict[str, Any]] = []
    for level in range(levels):
        column = [v[level] for v in values]
        per_level.append({"universal": column[0]} if len(set(column)) == 1 else {"individual": {"roots": column}})
    return [{"domainCount": len(domains), "podCounts": pod_counts, "valuesPerLevel": per_level}]


def _slices_to_domains(slices: list[Any]) -> list[dict[str, Any]] | None:
    """v1beta2's slices expanded to one v1beta1 entry per domain; None when they are not well formed."""
    domains: list[dict[str, Any]] = []
    for piece in slices:
        if not isinstance(piece, dict):
            return None
        count, pods, per_level = piece.get("domainCount"), piece.get("podCounts") or {}, piece.get("valuesPerLevel") or []
        if not isinstance(count, int) or not isinstance(pods, dict) or not isinstance(per_level, list):
            return None
        for i in range(count):
            individual = pods.get("individual")
            pod_count = individual[i] if isinstance(individual, list) and i < len(individual) else pods.get("universal")
            values = []
            for level in per_level:
                if not isinstance(level, dict):
                    return None
                if "universal" in level:
                    values.append(level["universal"])
                    continue
                spec = level.get("individual") or {}
                roots = spec.get("roots") if isinstance(spec, dict) else None
                if not isinstance(roots, list) or i >= len(roots):
                    return None
                values.append(f"{spec.get('prefix', '')}{roots[i]}{spec.get('suffix', '')}")
            domains.append({"values": values, "count": pod_count})
    return domains


def _workload_up(step: _Step) -> None:
    out = step.out
    name = step.pop(("spec", "priorityClassName"))
    source = step.pop(("spec", "priorityClassSource"))
    if isinstance(source, str) and source in _PRIORITY_SOURCES and isinstance(name, str) and name:
        group, kind = _PRIORITY_SOURCES[source]
        step.set(("spec", "priorityClassRef"), {"group": group, "kind": kind, "name": name})
    step.touch(("spec", "priorityClassName"), ("spec", "priorityClassRef"))
    step.touch(("spec", "priorityClassSource"), ("spec", "priorityClassRef"))
    step.move(("status", "accumulatedPastExexcutionTimeSeconds"), ("status", "accumulatedPastExecutionTimeSeconds"))
    for path in _each(out, _ASSIGNMENTS):
        assignment = _get(out, path)
        if not isinstance(assignment, dict) or "domains" not in assignment:
            continue
        levels = assignment.get("levels")
        slices = _domains_to_slices(assignment["domains"], len(levels)) if isinstance(levels, list) and isinstance(
            assignment["domains"], list
        ) else None
        step.touch((*path, "domains"), (*path, "slices"))
        step.pop((*path, "domains"))
        if slices is not None:
            step.set((*path, "slices"), slices)


def _workload_down(step: _Step) -> None:
    out = step.out
    ref = step.pop(("spec", "priorityClassRef"))
    if isinstance(ref, dict):
        for source, (group, kind) in _PRIORITY_SOURCES.items():
            if (ref.get("group"), ref.get("kind")) == (group, kind) and isinstance(ref.get("name"), str):
                step.set(("spec", "priorityClassSource"), source)
                step.set(("spec", "priorityClassName"), ref["name"])
    # v1beta1 defaults the source to "" (the apiserver applies it to every stored Workload), so a
    # Workload without a class reads back the same in v1beta2 without a conversion annotation.
    if isinstance(out.get("spec"), dict) and _get(out, ("spec", "priorityClassSource")) is _ABSENT:
        step.set(("spec", "priorityClassSource"), "")
    step.touch(("spec", "priorityClassRef"), ("spec", "priorityClassName"))
    step.move(("status", "accumulatedPastExecutionTimeSeconds"), ("status", "accumulatedPastExexcutionTimeSeconds"))
    step.drop(("spec", "preemptionGates"))
    step.drop(("status", "preemptionGates"))
    for path in _each(out, ("spec", "podSets", "*", "topologyRequest", "podsetSliceRequiredTopologyConstraints")):
        step.drop(path)
    for path in _each(out, _ASSIGNMENTS):
        assignment = _get(out, path)
        if not isinstance(assignment, dict) or "slices" not in assignment:
            continue
        domains = _slices_to_domains(assignment["slices"]) if isinstance(assignment["slices"], list) else None
        step.touch((*path, "slices"), (*path, "domains"))
        step.pop((*path, "slices"))
        if domains is not None:
            step.set((*path, "domains"), domains)


def _nothing(step: _Step) -> None:
    """Kinds whose two versions are the same schema (ResourceFlavor) or differ only in limits."""


# kind -> (v1beta1 -> v1beta2, v1beta2 -> v1beta1)
CONVERTERS: dict[str, tuple[Converter, Converter]] = {
    "AdmissionCheck": (_admission_check_up, _nothing),
    "ClusterQueue": (_cluster_queue_up, _cluster_queue_down),
    "Cohort": (_cohort_up, _nothing),
    "LocalQueue": (_local_queue_up, _local_queue_down),
    "MultiKueueCluster": (_multikueue_cluster_up, _multikueue_cluster_down),
    "MultiKueueConfig": (_nothing, _multikueue_config_down),
    "ProvisioningRequestConfig": (_nothing, _nothing),
    "ResourceFlavor": (_nothing, _nothing),
    "Workload": (_workload_up, _workload_down),
    "WorkloadPriorityClass": (_nothing, _nothing),
}


# --- the annotation ---------------------------------------------------------------------------------


def _read_entries(obj: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``obj`` without the conversion annotation (a shallow copy where it had one; ``obj`` is not
    modified), and the annotation's entries; an unreadable one is dropped (it can only restore,
    never decide)."""
    annotations = _get(obj, ("metadata", "annotations"))
    if not isinstance(annotations, dict) or CONVERSION_DATA_ANNOTATION not in annotations:
        return obj, []
    raw = annotations[CONVERSION_DATA_ANNOTATION]
    metadata = dict(obj["metadata"])
    rest = {key: value for key, value in annotations.items() if key != CONVERSION_DATA_ANNOTATION}
    if rest:
        metadata["annotations"] = rest
    else:
        del metadata["annotations"]
    obj = {**obj, "metadata": metadata}
    try:
        entries = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return obj, []
    if not isinstance(entries, list):
        return obj, []
    return obj, [
        e for e in entries
        if isinstance(e, dict) and isinstance(e.get("path"), list) and isinstance(e.get("guard"), list) and e.get("to") in VERSIONS
    ]


def _write_entries(step: _Step, entries: list[dict[str, Any]]) -> None:
    if not entries:
        return
    encoded = json.dumps(entries, separators=(",", ":"), sort_keys=True)
    if not isinstance(_get(step.out, ("metadata", "annotations")), dict):
        step.set(("metadata", "annotations"), {})  # a metadata without (or with a broken) annotations map
    step.set(("metadata", "annotations", CONVERSION_DATA_ANNOTATION), encoded)


def _value(entry: dict[str, Any], key: str) -> Any:
    return entry.get(key, _ABSENT)


def _plain(obj: dict[str, Any], kind: str, source: str, target: str) -> _Step:
    """The field mapping alone; ``step.out`` shares every subtree it does not rewrite with ``obj``."""
    out = {**obj, "apiVersion": f"{c.GROUP}/{target}"}
    step = _Step(obj, out, source)
    up, down = CONVERTERS[kind]
    (up if target == V1BETA2 else down)(step)
    return step


def _version_of(obj: dict[str, Any]) -> tuple[str, str]:
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if not isinstance(api_version, str) or "/" not in api_version:
        raise ConversionError(f"object has no apiVersion of the {c.GROUP} group: {api_version!r}")
    group, _, version = api_version.partition("/")
    if group != c.GROUP or version not in VERSIONS:
        raise ConversionError(f"apiVersion {api_version!r} is not {c.GROUP}/{V1BETA1} or {c.GROUP}/{V1BETA2}")
    if kind not in CONVERTERS:
        raise ConversionError(f"kind {kind!r} is not a {c.GROUP} kind pykueue serves")
    if not isinstance(obj.get("metadata", {}), dict):
        raise ConversionError("metadata is not a JSON object")
    return str(kind), version


def convert(obj: dict[str, Any], target: str) -> dict[str, Any]:
    """``obj`` (a v1beta1 or v1beta2 Kueue object) in ``target`` version; ``obj`` is not modified
    and the result shares nothing with it, so either may be changed afterwards."""
    return convert_shared(_copy(obj) if isinstance(obj, dict) else obj, target)


def convert_shared(obj: dict[str, Any], target: str) -> dict[str, Any]:
    """:func:`convert` without the copy: ``obj`` is not modified, but the result shares every
    subtree the conversion does not rewrite with it (and is ``obj`` itself when ``obj`` is
    already in ``target``).

    For callers that drop ``obj`` once converted (the client's reads: an object fresh from the
    JSON decoder, pykueue/kube/versions.py; the webhook's reviews) or only serialise the result
    (the client's writes): a copy would be the largest part of the cost of a conversion
    (docs/design/api-versions.md), and nobody is left to see the sharing.
    """
    if target not in VERSIONS:
        raise ConversionError(f"desired version {target!r} is not {V1BETA1} or {V1BETA2}")
    if not isinstance(obj, dict):
        raise ConversionError("object is not a JSON object")
    kind, source = _version_of(obj)
    if source == target:
        return obj
    source_obj, entries = _read_entries(obj)
    step = _plain(source_obj, kind, source, target)
    out = step.out
    # Restore what an earlier conversion into `source` put aside for `target`, where it is still current.
    for entry in entries:
        if entry["to"] == target and _get(source_obj, tuple(entry["guard"])) == _value(entry, "expect"):
            step.set(tuple(entry["path"]), _value(entry, "value"))  # fresh from json.loads: owned by `out`
    # Keep what `target` cannot say for the way back, unless the plain way back says it anyway.
    back = _plain(out, kind, target, source).out
    keep = [e for e in entries if e["to"] == source]  # put aside by an older conversion, not consumed here
    kept_paths = {tuple(e["path"]) for e in keep}
    for path, guard in step.touched:
        original = _get(source_obj, path)
        if path in kept_paths or _get(back, path) == original:
            continue
        kept: dict[str, Any] = {"to": source, "path": list(path), "guard": list(guard)}
        if original is not _ABSENT:
            kept["value"] = original
        current = _get(out, guard)
        if current is not _ABSENT:
            kept["expect"] = current
        keep.append(kept)
        kept_paths.add(path)
    _write_entries(step, keep)
    return out


# --- patches ----------------------------------------------------------------------------------------

_PRIORITY_FIELDS = ("priorityClassName", "priorityClassSource")


def convert_patch(kind: str, patch: dict[str, Any], source: str, target: str) -> dict[str, Any]:
    """A JSON merge patch written against ``source`` as the same patch against ``target``.

    The programs write Kueue kinds with merge patches of a few fields (a status, a condition
    list, finalizers, ``spec.active``); the client sends them in the storage version
    (pykueue/kube/versions.py). A patch is a partial object, so it gets the plain field mapping
    and none of :func:`convert`'s bookkeeping: no conversion-data annotation (a patch that wrote
    one would overwrite the stored object's entries with a partial view) and no defaults for
    fields the patch does not name. Merge patches delete with ``null``; a deleted field that is
    re-encoded rather than renamed (Workload ``priorityClassName``/``priorityClassSource`` ↔
    ``priorityClassRef``, ClusterQueue ``admissionChecks`` → ``admissionChecksStrategy``) deletes
    its counterpart. Renamed fields carry their ``null`` through
    the rename on their own. Lists are replaced whole by a merge patch, so the list elements the
    mapping rewrites (topology assignments) are always complete in the patch. For the same reason
    a patch that sets one of ``priorityClassName``/``priorityClassSource`` to v1beta2 must set
    both (``priorityClassRef`` is built from the pair): one alone is refused rather than dropped.
    """
    if target not in VERSIONS or source not in VERSIONS:
        raise ConversionError(f"versions {source!r} → {target!r} are not {V1BETA1}/{V1BETA2}")
    if kind not in CONVERTERS:
        raise ConversionError(f"kind {kind!r} is not a {c.GROUP} kind pykueue serves")
    if not isinstance(patch, dict):
        raise ConversionError("a merge patch is a JSON object")
    if source == target:
        return _copy(patch)
    spec_in = patch.get("spec")
    if kind == "Workload" and target == V1BETA2 and isinstance(spec_in, dict):
        named = [f for f in _PRIORITY_FIELDS if spec_in.get(f)]  # "" is v1beta1's "no class"
        if len(named) == 1:
            raise ConversionError(
                f"a Workload patch setting spec.{named[0]} must set both spec.priorityClassName and "
                "spec.priorityClassSource (v1beta2 has them as one spec.priorityClassRef)"
            )
    body = _copy(patch)
    body["apiVersion"], body["kind"] = f"{c.GROUP}/{source}", kind
    out = _plain(body, kind, source, target).out
    spec_out = out.get("spec")
    if (
        kind == "ClusterQueue"
        and target == V1BETA2
        and isinstance(spec_in, dict)
        and isinstance(spec_out, dict)
        and "admissionChecks" in spec_in
        and spec_in["admissionChecks"] is None
        and "admissionChecksStrategy" not in spec_in
    ):
        # v1beta2 keeps a ClusterQueue's check list only as admissionChecksStrategy (the two are
        # exclusive in v1beta1): deleting the list deletes what holds it there.
        spec_out["admissionChecksStrategy"] = None
    if kind == "Workload" and isinstance(spec_in, dict) and isinstance(spec_out, dict):
        if target == V1BETA2 and any(f in spec_in and spec_in[f] is None for f in _PRIORITY_FIELDS):
            spec_out["priorityClassRef"] = None
        if target == V1BETA1:
            if "priorityClassRef" in spec_in and spec_in["priorityClassRef"] is None:
                spec_out.update(dict.fromkeys(_PRIORITY_FIELDS))
            elif "priorityClassRef" not in spec_in:
                spec_out.pop("priorityClassSource", None)  # the read-side default, not the patch's
    for key in ("apiVersion", "kind"):
        if key not in patch:
            out.pop(key, None)
    if "apiVersion" in patch:
        out["apiVersion"] = f"{c.GROUP}/{target}"
    return out
