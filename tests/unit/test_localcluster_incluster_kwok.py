"""The in-cluster kwok (kind path): the same Stages and node selection as the local kwok process."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack.localcluster import components
from hack.localcluster.binaries import CLUSTER_BINARIES, BinarySet, read_versions
from hack.localcluster.cluster import KWOK_STAGES
from hack.localcluster.incluster_kwok import (
    INCLUSTER_POD_CIDR,
    KWOK_NAME,
    KWOK_NAMESPACE,
    NOT_SIMULATED,
    SYSTEM_NODE_TAINT_KEY,
    daemonset_patch,
    kwok_manifests,
    render,
)
from hack.localcluster.layout import ClusterLayout, Ports
from hack.localcluster.nodes import SIMULATED_NODE_LABEL, node_manifest

Obj = dict[str, Any]


def by_kind(objects: list[Obj]) -> dict[str, Obj]:
    found = {o["kind"]: o for o in objects}
    assert len(found) == len(objects), "one object per kind"
    return found


@pytest.fixture
def objects() -> dict[str, Obj]:
    return by_kind(kwok_manifests())


def flags(args: list[str] | tuple[str, ...]) -> dict[str, str]:
    return dict(arg.removeprefix("--").partition("=")[::2] for arg in args)


def container(objects: dict[str, Obj]) -> Obj:
    [only] = objects["Deployment"]["spec"]["template"]["spec"]["containers"]
    return only


def test_the_image_is_kwoks_release_at_the_pinned_version(objects: dict[str, Obj]) -> None:
    assert container(objects)["image"] == f"registry.k8s.io/kwok/kwok:{read_versions()['KWOK_VERSION']}"
    other = by_kind(kwok_manifests(image="mirror.example/kwok:v9"))
    assert container(other)["image"] == "mirror.example/kwok:v9"


def test_the_stages_are_the_local_clusters_file_as_it_is(objects: dict[str, Obj]) -> None:
    data = objects["ConfigMap"]["data"]
    assert data == {"kwok-stages.yaml": KWOK_STAGES.read_text()}
    stages = list(yaml.safe_load_all(data["kwok-stages.yaml"]))
    assert {s["kind"] for s in stages} == {"Stage"}
    succeeded = next(s for s in stages if s["metadata"]["name"] == "pykueue-pod-succeeded")
    assert "pykueue.dev/sim-run-seconds" in succeeded["spec"]["delay"]["durationFrom"]["jq"]["expression"]


def test_kwok_reads_the_stages_from_the_mounted_config_map(objects: dict[str, Obj]) -> None:
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    mount = next(m for m in container(objects)["volumeMounts"] if m["name"] == "stages")
    volume = next(v for v in pod["volumes"] if v["name"] == "stages")
    assert volume["configMap"]["name"] == objects["ConfigMap"]["metadata"]["name"]
    config = flags(container(objects)["args"])["config"]
    assert Path(config).parent == Path(mount["mountPath"])
    assert Path(config).name in objects["ConfigMap"]["data"]


def test_node_selection_and_leases_match_the_local_kwok_process(
    tmp_path: Path, objects: dict[str, Obj]
) -> None:
    layout = ClusterLayout(tmp_path / "clusters" / "unit")
    binaries = BinarySet({name: tmp_path / "bin" / name for name in CLUSTER_BINARIES})
    ports = Ports(etcd_client=1, etcd_peer=2, apiserver=3, controller_manager=4, scheduler=5, kwok=6)
    local = flags(components.kwok(layout, ports, binaries).argv[1:])
    incluster = flags(container(objects)["args"])
    for flag in ("manage-all-nodes", "manage-nodes-with-annotation-selector", "node-lease-duration-seconds"):
        assert incluster[flag] == local[flag], flag
    # The pod IPs differ on purpose: kind's own pods use the local cluster's range.
    assert incluster["cidr"] == INCLUSTER_POD_CIDR != "10.244.0.0/16"
    assert incluster["node-ip"] == "$(POD_IP)"


def test_kwok_stays_off_simulated_nodes_and_fits_the_tainted_kind_workers(objects: dict[str, Obj]) -> None:
    deployment = objects["Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [{"matchExpressions": [NOT_SIMULATED]}]
    assert NOT_SIMULATED["key"] == SIMULATED_NODE_LABEL
    assert SIMULATED_NODE_LABEL in node_manifest("n-0", prefix="n")["metadata"]["labels"]
    assert {"key": SYSTEM_NODE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}, "two kwoks never play the same node"
    assert deployment["spec"]["replicas"] == 1
    assert deployment["metadata"]["namespace"] == KWOK_NAMESPACE
    assert deployment["metadata"]["name"] == KWOK_NAME, "ExistingCluster looks for it by this name"


def test_kwok_runs_unprivileged(objects: dict[str, Obj]) -> None:
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    security = container(objects)["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}


def test_rbac_grants_only_what_kwok_touches(objects: dict[str, Obj]) -> None:
    rules = objects["ClusterRole"]["rules"]
    granted = {(resource, verb) for rule in rules for resource in rule["resources"] for verb in rule["verbs"]}
    assert all("*" not in pair for pair in granted)
    assert ("pods/status", "patch") in granted and ("nodes/status", "patch") in granted
    assert ("leases", "update") in granted, "kwok renews each simulated node's Lease"
    assert not any(resource.startswith("secrets") for resource, _ in granted)
    assert ("nodes", "delete") not in granted and ("nodes", "create") not in granted
    binding = objects["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == objects["ClusterRole"]["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": KWOK_NAME, "namespace": KWOK_NAMESPACE}]
    assert objects["Deployment"]["spec"]["template"]["spec"]["serviceAccountName"] == KWOK_NAME


def test_rendering_is_yaml_in_apply_order() -> None:
    kinds = [o["kind"] for o in yaml.safe_load_all(render(kwok_manifests()))]
    assert kinds.index("ConfigMap") < kinds.index("Deployment")
    assert kinds.index("ServiceAccount") < kinds.index("Deployment")


# --- DaemonSets -----------------------------------------------------------------------------------


def daemonset(affinity: Obj | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "i"}]}
    if affinity is not None:
        spec["affinity"] = affinity
    return {
        "metadata": {"name": "kube-proxy", "namespace": "kube-system"},
        "spec": {"template": {"spec": spec}},
    }


def required_terms(patch: Obj) -> list[Obj]:
    node_affinity = patch["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    return node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]


def test_a_daemonset_without_affinity_gets_one_term_excluding_simulated_nodes() -> None:
    patch = daemonset_patch(daemonset())
    assert patch is not None
    assert required_terms(patch) == [{"matchExpressions": [NOT_SIMULATED]}]


def test_existing_terms_each_get_the_requirement_and_keep_theirs() -> None:
    linux = {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}
    arm = {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [linux]}, {"matchFields": [arm]}]
            }
        }
    }
    original = copy.deepcopy(affinity)
    patch = daemonset_patch(daemonset(affinity))
    assert patch is not None
    assert required_terms(patch) == [
        {"matchExpressions": [linux, NOT_SIMULATED]},
        {"matchFields": [arm], "matchExpressions": [NOT_SIMULATED]},
    ]
    assert affinity == original, "the listed object is not modified"


def test_a_daemonset_already_kept_off_needs_no_patch() -> None:
    patch = daemonset_patch(daemonset())
    assert patch is not None
    patched = daemonset(patch["spec"]["template"]["spec"]["affinity"])
    assert daemonset_patch(patched) is None


def test_a_changed_stage_file_rolls_a_new_kwok_pod() -> None:
    """kwok reads --config once; the pod template carries the file's hash so an apply restarts it."""

    def template_annotations(stages: str) -> Obj:
        return by_kind(kwok_manifests(stages))["Deployment"]["spec"]["template"]["metadata"]["annotations"]

    same = template_annotations(KWOK_STAGES.read_text())
    assert same == template_annotations(KWOK_STAGES.read_text())
    assert template_annotations(KWOK_STAGES.read_text() + "\n# changed\n") != same
