"""kwok inside a cluster we did not start (kind): the objects that run it there.

The local cluster runs kwok as a process next to the apiserver; a kind cluster has no such process,
so `hack/e2e-deploy.sh install-kwok` deploys kwok as a Deployment in `kube-system` built from
the objects below. They are generated here, not vendored from kwok's kustomize tree, so that the
in-cluster kwok cannot drift from the local one:

- the Stages are `kwok-stages.yaml` itself, mounted from a ConfigMap and read with `--config`,
  exactly as the local kwok process reads them (so no Stage CRD is installed: kwok loads Stages
  either from `--config` or from the CRD, and the file is the one source);
- node selection and lease renewal are the local kwok's flags (`components.kwok`), so only
  nodes annotated `kwok.x-k8s.io/node=fake` are touched (only the simulated pod IPs come from
  another range, INCLUSTER_POD_CIDR);
- the image is kwok's release image at the pinned `KWOK_VERSION` of `hack/versions.env`.

kwok itself, and every real pod of the cluster, must stay off the simulated nodes (a pod there is
played by kwok, not run): the Deployment requires a node without the simulated-node label, and
`daemonset_patch` gives the cluster's DaemonSets (kindnet, kube-proxy) the same requirement.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from .binaries import read_versions
from .cluster import KWOK_STAGES
from .components import KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE
from .nodes import SIMULATED_NODE_LABEL

Obj = dict[str, Any]

KWOK_NAMESPACE = "kube-system"
KWOK_NAME = "kwok-controller"
KWOK_IMAGE_REPOSITORY = "registry.k8s.io/kwok/kwok"
KWOK_HEALTH_PORT = 10247
STAGES_MOUNT_DIR = "/etc/kwok"
STAGES_FILE_NAME = "kwok-stages.yaml"
STAGES_HASH_ANNOTATION = "pykueue.dev/kwok-stages-sha256"
# Pod IPs kwok hands out in a real cluster: outside kind's pod (10.244.0.0/16) and service
# (10.96.0.0/12) subnets, so a simulated pod's IP never shadows a real one.
INCLUSTER_POD_CIDR = "10.252.0.0/16"
# The local kwok's lease duration (components.kwok): renewed like a kubelet's, well inside the
# node-lifecycle controller's 50 s grace period.
NODE_LEASE_DURATION_SECONDS = 40
# The kind workers are tainted with this (hack/kind-config.yaml) so that only pykueue's own pods
# and kwok run there; every test pod lands on a simulated node, where kwok finishes it.
SYSTEM_NODE_TAINT_KEY = "pykueue.dev/e2e-system"
CONTROL_PLANE_TAINT_KEY = "node-role.kubernetes.io/control-plane"
LABELS = {"app.kubernetes.io/name": KWOK_NAME, "app.kubernetes.io/part-of": "pykueue-e2e"}

# A real pod must never land on a simulated node: those carry SIMULATED_NODE_LABEL (nodes.py).
NOT_SIMULATED: Obj = {"key": SIMULATED_NODE_LABEL, "operator": "DoesNotExist"}


def kwok_image(versions: Mapping[str, str] | None = None) -> str:
    """kwok's release image at the pin the local cluster builds its kwok binary from."""
    pins = versions if versions is not None else read_versions()
    return f"{KWOK_IMAGE_REPOSITORY}:{pins['KWOK_VERSION']}"


def kwok_args() -> list[str]:
    """kwok's command line in the cluster: the local kwok's node-selection flags, in-cluster config."""
    return [
        f"--config={STAGES_MOUNT_DIR}/{STAGES_FILE_NAME}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}={KWOK_NODE_ANNOTATION_VALUE}",
        f"--node-lease-duration-seconds={NODE_LEASE_DURATION_SECONDS}",
        f"--cidr={INCLUSTER_POD_CIDR}",
        "--node-ip=$(POD_IP)",
        f"--server-address=0.0.0.0:{KWOK_HEALTH_PORT}",
    ]


def _meta(name: str, namespace: str | None = None) -> Obj:
    meta: Obj = {"name": name, "labels": dict(LABELS)}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def _rbac() -> list[Obj]:
    """What kwok touches, and nothing else: node and pod status, pod deletion, node Leases, Events."""
    rules = [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["nodes/status", "pods/status"], "verbs": ["patch", "update"]},
        {
            "apiGroups": [""],
            "resources": ["pods"],
            "verbs": ["get", "list", "watch", "patch", "update", "delete"],
        },
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "list", "watch", "create", "patch", "update"],
        },
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]},
    ]
    subject = {"kind": "ServiceAccount", "name": KWOK_NAME, "namespace": KWOK_NAMESPACE}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(KWOK_NAME, KWOK_NAMESPACE)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(KWOK_NAME),
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(KWOK_NAME),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": KWOK_NAME},
            "subjects": [subject],
        },
        # kwok writes a status patch per simulated pod and node; a burst of test Jobs must not
        # queue those behind everyone else's requests (API priority and fairness), or pods would
        # look slow to start. kwok's own manifests exempt it the same way.
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": _meta(KWOK_NAME),
            "spec": {
                "priorityLevelConfiguration": {"name": "exempt"},
                "matchingPrecedence": 1000,
                "rules": [
                    {
                        "subjects": [
                            {
                                "kind": "ServiceAccount",
                                "serviceAccount": {"name": KWOK_NAME, "namespace": KWOK_NAMESPACE},
                            }
                        ],
                        "resourceRules": [
                            {
                                "apiGroups": ["*"],
                                "resources": ["*"],
                                "verbs": ["*"],
                                "clusterScope": True,
                                "namespaces": ["*"],
                            }
                        ],
                    }
                ],
            },
        },
    ]


def _config_map(stages_yaml: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(KWOK_NAME, KWOK_NAMESPACE),
        "data": {STAGES_FILE_NAME: stages_yaml},
    }


def _deployment(image: str, stages_yaml: str) -> Obj:
    probe = {"httpGet": {"path": "/healthz", "port": KWOK_HEALTH_PORT, "scheme": "HTTP"}}
    container = {
        "name": "kwok",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": kwok_args(),
        "env": [
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            # kwok reads nothing from its home directory when --config is given; keep it writable
            # anyway, since the root filesystem is read-only.
            {"name": "HOME", "value": "/tmp"},
        ],
        "ports": [{"name": "health", "containerPort": KWOK_HEALTH_PORT}],
        "readinessProbe": {**probe, "periodSeconds": 5},
        "livenessProbe": {**probe, "initialDelaySeconds": 30, "periodSeconds": 30, "failureThreshold": 5},
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "stages", "mountPath": STAGES_MOUNT_DIR, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(KWOK_NAME, KWOK_NAMESPACE),
        "spec": {
            "replicas": 1,
            # Two kwoks playing the same nodes would fight over every status: never overlap.
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": dict(LABELS)},
            "template": {
                "metadata": {
                    "labels": dict(LABELS),
                    # kwok reads its Stages once at start: a changed file must roll a new pod.
                    "annotations": {STAGES_HASH_ANNOTATION: hashlib.sha256(stages_yaml.encode()).hexdigest()},
                },
                "spec": {
                    "serviceAccountName": KWOK_NAME,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65532,
                        "runAsGroup": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [{"matchExpressions": [dict(NOT_SIMULATED)]}]
                            }
                        }
                    },
                    "tolerations": [
                        {"key": SYSTEM_NODE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
                        {"key": CONTROL_PLANE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
                    ],
                    "containers": [container],
                    "volumes": [
                        {"name": "stages", "configMap": {"name": KWOK_NAME}},
                        {"name": "tmp", "emptyDir": {}},
                    ],
                },
            },
        },
    }


def kwok_manifests(stages_yaml: str | None = None, *, image: str | None = None) -> list[Obj]:
    """Every object of the in-cluster kwok, in apply order (RBAC, Stages, Deployment).

    `stages_yaml` defaults to the local cluster's own Stage file, read as it is on disk.
    """
    stages = stages_yaml if stages_yaml is not None else KWOK_STAGES.read_text()
    return [*_rbac(), _config_map(stages), _deployment(image or kwok_image(), stages)]


def render(objects: Iterable[Obj]) -> str:
    return yaml.safe_dump_all(list(objects), sort_keys=False)


# ------------------------------------------------------------------ DaemonSets


def _with_not_simulated(terms: list[Obj]) -> list[Obj] | None:
    """`terms` with NOT_SIMULATED in every term (terms are ORed), or None if all have it already."""
    if not terms:
        return [{"matchExpressions": [dict(NOT_SIMULATED)]}]
    changed = False
    result = []
    for term in terms:
        expressions = list(term.get("matchExpressions") or [])
        if NOT_SIMULATED not in expressions:
            expressions.append(dict(NOT_SIMULATED))
            changed = True
        result.append({**term, "matchExpressions": expressions})
    return result if changed else None


def daemonset_patch(daemonset: Mapping[str, Any]) -> Obj | None:
    """A JSON merge patch keeping `daemonset`'s pods off simulated nodes, or None if they already are.

    kindnet and kube-proxy tolerate every taint, so without this each simulated node would get
    their pods, which kwok would then finish after two seconds and the DaemonSet controller would
    recreate, forever. Existing node-affinity terms are kept; the requirement is added to each.
    """
    pod_spec = daemonset.get("spec", {}).get("template", {}).get("spec", {})
    node_affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = _with_not_simulated(list(required.get("nodeSelectorTerms") or []))
    if terms is None:
        return None
    return {
        "spec": {
            "template": {
                "spec": {
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
                        }
                    }
                }
            }
        }
    }
