"""A simulated cluster-autoscaler for the local cluster: test infrastructure, not shipped in the chart.

The ProvisioningRequest admission check (``docs/design/provisioning.md``) asks the
cluster-autoscaler for capacity through ``autoscaling.x-k8s.io/v1`` ProvisioningRequests. The local
cluster has no autoscaler, so this program plays one, through the real API only:

* ``best-effort-atomic-scale-up.autoscaling.x-k8s.io``: for each pod of each request pod set it
  creates one kwok node from the first node group whose labels include the PodTemplate's
  ``nodeSelector``, then sets ``Accepted=True`` and ``Provisioned=True`` with
  ``provisioningClassDetails: {NodeGroup: <group>}``. The nodes carry the group's labels (and
  ``autoscaler-sim.pykueue.dev/node-group: <group>``, for ``podSetUpdates.nodeSelector``), so the
  pods, placed by the real kube-scheduler through the node selector the check injects, land there.
* ``check-capacity.autoscaling.x-k8s.io``: answers from the free capacity of the ready nodes that
  match the template (``Provisioned=True``), else ``Failed=True`` (``CapacityIsNotFound``).
* any other class: left alone (a real autoscaler would not know it either).

Tests steer it per request with ``SimBehavior`` in ``spec.parameters`` (from the
ProvisioningRequestConfig's ``parameters``, or the workload annotation
``provreq.kueue.x-k8s.io/SimBehavior``), or with the annotation
``autoscaler-sim.pykueue.dev/behavior`` on a live request (it wins). Comma-separated tokens:

* ``delay=S`` — answer nothing until the request is S seconds old;
* ``eta=N``  — first report ``Provisioned=False`` with N successive ETA messages, one per step;
* ``fail``   — ``Failed=True`` on every attempt; ``fail-first=N`` only on attempts 1..N;
* ``expire-booking`` / ``expire-first=N`` — provision, with ``BookingExpired=True`` at once (a
  booking that lapsed before the workload was admitted); as an annotation on a provisioned
  request, ``BookingExpired=True`` from then on (after admission, say);
* ``revoke`` — (annotation on a provisioned request) ``CapacityRevoked=True``, nodes deleted.

The attempt is the request name's numeric suffix (``<workload>-<check>-<attempt>``). Nodes of a
request that is gone are tainted ``ToBeDeletedByClusterAutoscaler:NoSchedule``, then deleted once no
pod is left on them (scale-down). Run it with
``python -m hack.autoscaler_sim --kubeconfig <path> [--node-groups groups.yaml]`` or start
:class:`AutoscalerSim` in a thread (the e2e fixture does).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import logging
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import yaml

from hack.localcluster.nodes import node_manifest
from pykueue.api.quantity import parse_quantity
from pykueue.kube.client import KubeClient
from pykueue.kube.errors import AlreadyExists, ApiError, NotFound
from pykueue.kube.resources import NODES, POD_TEMPLATES, PODS, PROVISIONING_REQUESTS

log = logging.getLogger("autoscaler-sim")

ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
BEHAVIOR_ANNOTATION = "autoscaler-sim.pykueue.dev/behavior"
BEHAVIOR_PARAMETER = "SimBehavior"
REQUEST_LABEL = "autoscaler-sim.pykueue.dev/request"
NODE_GROUP_LABEL = "autoscaler-sim.pykueue.dev/node-group"
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"  # the real cluster-autoscaler's key
NODE_GROUP_DETAIL = "NodeGroup"
Obj = dict[str, Any]


@dataclass(frozen=True)
class NodeGroup:
    """A pool the simulated autoscaler can grow: node labels, per-node capacity, taints."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    capacity: Mapping[str, str] = field(default_factory=lambda: {"cpu": "8", "memory": "32Gi", "pods": "110"})
    taints: Sequence[Mapping[str, str]] = ()


def load_node_groups(text: str) -> list[NodeGroup]:
    """``[{name, labels, capacity, taints}]`` from YAML."""
    return [
        NodeGroup(
            name=str(g["name"]),
            labels={str(k): str(v) for k, v in (g.get("labels") or {}).items()},
            capacity={str(k): str(v) for k, v in (g.get("capacity") or {"cpu": "8", "memory": "32Gi", "pods": "110"}).items()},
            taints=list(g.get("taints") or []),
        )
        for g in yaml.safe_load(text) or []
    ]


def behavior_of(request: Mapping[str, Any]) -> dict[str, str]:
    """Steering tokens: ``{"eta": "2", "fail": "", ...}``; the annotation wins over the parameter."""
    meta = request.get("metadata") or {}
    text = (meta.get("annotations") or {}).get(BEHAVIOR_ANNOTATION)
    if text is None:
        text = ((request.get("spec") or {}).get("parameters") or {}).get(BEHAVIOR_PARAMETER, "")
    tokens: dict[str, str] = {}
    for token in str(text).split(","):
        key, _, value = token.strip().partition("=")
        if key:
            tokens[key] = value
    return tokens


def node_prefix(request_uid: str) -> str:
    """Names of the nodes made for a request start with this (``<prefix>-<n>``)."""
    return "sim-" + hashlib.sha1(request_uid.encode()).hexdigest()[:10]


def attempt_of(name: str) -> int:
    match = re.search(r"-(\d+)$", name)
    return int(match.group(1)) if match else 1


def condition(type_: str, status: bool, reason: str, message: str) -> Obj:
    return {
        "type": type_,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _conditions(request: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {
        c["type"]: c
        for c in ((request.get("status") or {}).get("conditions") or [])
        if isinstance(c, Mapping) and "type" in c
    }


def _requests_of(template: Mapping[str, Any]) -> dict[str, int]:
    total: dict[str, int] = {"pods": 1}
    for container in ((template.get("template") or {}).get("spec") or {}).get("containers") or []:
        for name, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[name] = total.get(name, 0) + parse_quantity(value, name)
    return total


def _taints(node: Mapping[str, Any]) -> list[Any]:
    return list((node.get("spec") or {}).get("taints") or [])


def _marked_for_deletion(node: Mapping[str, Any]) -> bool:
    return any(isinstance(t, Mapping) and t.get("key") == TO_BE_DELETED_TAINT for t in _taints(node))


def _deletion_taint() -> Obj:
    """The taint a real cluster-autoscaler puts on a node it is about to remove."""
    return {"key": TO_BE_DELETED_TAINT, "value": str(int(datetime.now(UTC).timestamp())), "effect": "NoSchedule"}


class AutoscalerSim:
    """The polling loop; see the module docstring."""

    def __init__(self, client: KubeClient, node_groups: Sequence[NodeGroup], *, period: float = 0.5) -> None:
        self.client = client
        self.node_groups = list(node_groups)
        self.period = period
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._eta_steps: dict[str, int] = {}  # request uid -> ETA messages already reported

    # --- running --------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="autoscaler-sim", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                self.step()
            except Exception:  # a strange object must not end the simulation
                log.exception("autoscaler-sim step failed")
            self._stop.wait(self.period)

    def step(self) -> None:
        requests = self.client.list(PROVISIONING_REQUESTS).get("items") or []
        for request in requests:
            try:
                self.handle(request)
            except (NotFound, AlreadyExists):
                continue
            except ApiError as err:
                log.warning("autoscaler-sim API error: %s", err)
        self.scale_down({str(r["metadata"].get("uid")) for r in requests})

    # --- one request ----------------------------------------------------------------------------

    def handle(self, request: Obj) -> None:
        conds = _conditions(request)
        behavior = behavior_of(request)
        meta = request["metadata"]
        if "revoke" in behavior and conds.get("Provisioned", {}).get("status") == "True":
            if conds.get("CapacityRevoked", {}).get("status") != "True":
                self._write(request, [*conds.values(), condition("CapacityRevoked", True, "CapacityRevoked",
                                                                   "simulated: the nodes were reclaimed")])
                self._delete_nodes(str(meta.get("uid")))
            return
        if conds.get("Provisioned", {}).get("status") == "True" and "expire-booking" in behavior:
            if conds.get("BookingExpired", {}).get("status") != "True":  # set on a live request later
                self._write(request, [*conds.values(), condition("BookingExpired", True, "BookingExpired",
                                                                   "simulated: the booking expired")])
            return
        if any(conds.get(t, {}).get("status") == "True" for t in ("Provisioned", "Failed", "BookingExpired")):
            return
        klass = (request.get("spec") or {}).get("provisioningClassName")
        if klass not in (ATOMIC, CHECK_CAPACITY):
            return
        delay = float(behavior.get("delay") or 0)
        created = meta.get("creationTimestamp")
        if delay and created:
            age = (datetime.now(UTC) - datetime.fromisoformat(str(created).replace("Z", "+00:00"))).total_seconds()
            if age < delay:
                return
        attempt = attempt_of(str(meta["name"]))
        accepted = condition("Accepted", True, "Accepted", "simulated: accepted")
        if "fail" in behavior or ("fail-first" in behavior and attempt <= int(behavior["fail-first"] or 0)):
            self._write(request, [accepted, condition("Failed", True, "SimulatedFailure",
                                                      f"simulated: no capacity for attempt {attempt}")])
            return
        uid = str(meta.get("uid"))
        eta_total = int(behavior.get("eta") or 0)
        done = self._eta_steps.get(uid, 0)
        if done < eta_total:
            self._eta_steps[uid] = done + 1
            self._write(request, [accepted, condition("Provisioned", False, "Provisioning",
                                                      f"simulated: ETA {eta_total - done} step(s)")])
            return
        templates = self._templates(request)
        if templates is None:
            return  # the PodTemplates are not there yet
        if klass == CHECK_CAPACITY:
            if self._fits_existing(templates):
                self._write(request, [accepted, condition("Provisioned", True, "CapacityIsFound", "simulated: capacity found")])
            else:
                self._write(request, [accepted, condition("Failed", True, "CapacityIsNotFound",
                                                          "simulated: the free capacity does not fit")])
            return
        group = self._provision(request, templates)
        if group is None:
            self._write(request, [accepted, condition("Failed", True, "NoMatchingNodeGroup",
                                                      "simulated: no node group matches the pod templates")])
            return
        status = [accepted, condition("Provisioned", True, "Provisioned", f"simulated: nodes of group {group} are ready")]
        if "expire-booking" in behavior or ("expire-first" in behavior and attempt <= int(behavior["expire-first"] or 0)):
            status.append(condition("BookingExpired", True, "BookingExpired", "simulated: the booking expired"))
        self._write(request, status, details={NODE_GROUP_DETAIL: group})

    def _write(self, request: Obj, conditions: list[Any], details: Mapping[str, str] | None = None) -> None:
        status: Obj = {"conditions": list(conditions)}
        if details:
            status["provisioningClassDetails"] = dict(details)
        meta = request["metadata"]
        self.client.patch_status(PROVISIONING_REQUESTS, meta["name"], {"status": status}, meta["namespace"])
        log.info("request %s/%s: %s", meta["namespace"], meta["name"],
                 ", ".join(f"{c['type']}={c['status']}" for c in conditions))

    def _templates(self, request: Obj) -> list[tuple[Obj, int]] | None:
        result = []
        for pod_set in (request.get("spec") or {}).get("podSets") or []:
            template = self.client.get(POD_TEMPLATES, pod_set["podTemplateRef"]["name"], request["metadata"]["namespace"])
            if template is None:
                return None
            result.append((template, int(pod_set.get("count") or 1)))
        return result

    def _group_for(self, template: Obj) -> NodeGroup | None:
        selector = ((template.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
        for group in self.node_groups:
            if all(group.labels.get(k) == v for k, v in selector.items()):
                return group
        return None

    def _provision(self, request: Obj, templates: list[tuple[Obj, int]]) -> str | None:
        """One node per pod, from the matching group; ``None`` when a template matches none."""
        uid = str(request["metadata"].get("uid"))
        groups = [self._group_for(t) for t, _ in templates]
        if any(g is None for g in groups):
            return None
        prefix = node_prefix(uid)
        index = 0
        for group, (_, count) in zip(groups, templates, strict=True):
            assert group is not None
            for _ in range(count):
                node = node_manifest(f"{prefix}-{index}", prefix=prefix, labels={**group.labels, NODE_GROUP_LABEL: group.name, REQUEST_LABEL: uid},
                                     capacity=group.capacity, taints=group.taints)
                index += 1
                with contextlib.suppress(AlreadyExists):
                    self.client.create(NODES, node)
        return groups[0].name if groups[0] is not None else None

    def _fits_existing(self, templates: list[tuple[Obj, int]]) -> bool:
        nodes = self.client.list(NODES).get("items") or []
        pods = self.client.list(PODS).get("items") or []
        free: dict[str, dict[str, int]] = {}
        for node in nodes:
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in (node.get("status") or {}).get("conditions") or [])
            if ready and not (node.get("spec") or {}).get("unschedulable") and not _marked_for_deletion(node):
                free[node["metadata"]["name"]] = {
                    k: parse_quantity(v, k) for k, v in ((node.get("status") or {}).get("allocatable") or {}).items()
                }
        for pod in pods:
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name in free and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                for k, v in _requests_of({"template": pod}).items():
                    free[node_name][k] = free[node_name].get(k, 0) - v
        by_name = {n["metadata"]["name"]: n for n in nodes}
        for template, count in templates:
            selector = ((template.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
            need = _requests_of(template)
            for _ in range(count):
                for name, left in free.items():
                    labels = by_name[name]["metadata"].get("labels") or {}
                    if all(labels.get(k) == v for k, v in selector.items()) and all(
                        left.get(k, 0) >= v for k, v in need.items()
                    ):
                        for k, v in need.items():
                            left[k] -= v
                        break
                else:
                    return False
        return True

    def scale_down(self, live_uids: set[str]) -> None:
        """Remove the nodes of requests that no longer exist, as a real cluster-autoscaler does:
        first taint the node ``ToBeDeletedByClusterAutoscaler:NoSchedule`` so that nothing new
        lands on it, then, at a later step, delete it once no pod is left on it.

        Deleting a node under a pod that still runs or is still shutting down would strand the
        pod (no kubelet is left to finish its deletion) until the PodGC controller force-deletes
        orphans, about a minute later, and the quota held for that pod would wait as long; a node
        left schedulable would take the next workload's pod, which would then be stranded.
        """
        nodes = self.client.list(NODES, label_selector=REQUEST_LABEL).get("items") or []
        for node in nodes:
            if node["metadata"]["labels"].get(REQUEST_LABEL) in live_uids:
                continue
            name = node["metadata"]["name"]
            if not _marked_for_deletion(node):
                # Deleted at a later step: a pod the scheduler placed before the taint is bound by then.
                with contextlib.suppress(NotFound):
                    self.client.patch(NODES, name, {"spec": {"taints": [*_taints(node), _deletion_taint()]}})
                continue
            if self._pods_on(name):
                continue
            log.info("scale-down: node %s (its request is gone and no pod is left on it)", name)
            with contextlib.suppress(NotFound):
                self.client.delete(NODES, name)

    def _pods_on(self, node: str) -> bool:
        """Whether a pod that has not finished is bound to ``node`` (one shutting down counts:
        its deletion waits for the node's kubelet). A finished pod holds nothing, as for the
        real autoscaler; if one is stuck in deletion anyway, the node going lets the PodGC
        controller clean it up."""
        pods = self.client.list(PODS, field_selector=f"spec.nodeName={node}").get("items") or []
        return any((pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed") for pod in pods)

    def _delete_nodes(self, uid: str) -> None:
        for node in self.client.list(NODES, label_selector=f"{REQUEST_LABEL}={uid}").get("items") or []:
            with contextlib.suppress(NotFound):
                self.client.delete(NODES, node["metadata"]["name"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", help="kubeconfig of the cluster (default: $KUBECONFIG)")
    parser.add_argument("--node-groups", help="YAML list of {name, labels, capacity, taints}")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    groups = [NodeGroup("default")]
    if args.node_groups:
        with open(args.node_groups) as handle:
            groups = load_node_groups(handle.read())
    sim = AutoscalerSim(KubeClient.from_config(args.kubeconfig, user_agent="autoscaler-sim"), groups)
    with contextlib.suppress(KeyboardInterrupt):
        sim.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
