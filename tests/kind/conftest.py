"""Fixtures of tests/kind: the cluster must be given, and a fresh queue onto the kind workers."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from tests.kind.kube import KUBECONFIG, SYSTEM_TAINT, kubectl


@pytest.fixture(scope="module", autouse=True)
def cluster_given() -> None:
    if not KUBECONFIG:
        pytest.fail("PYKUEUE_KUBECONFIG must point at the kind cluster (hack/kind-e2e.sh sets it)", pytrace=False)


@pytest.fixture
def queue() -> Iterator[tuple[str, str]]:
    suffix = uuid.uuid4().hex[:6]
    ns, flavor, cq = f"kind-real-{suffix}", f"kind-workers-{suffix}", f"kind-real-{suffix}"
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": flavor},
            # The kind workers (not the simulated pools): their label, and their taint tolerated.
            "spec": {"nodeLabels": {"pykueue.dev/e2e-role": "system"},
                     "tolerations": [{"key": SYSTEM_TAINT, "operator": "Exists", "effect": "NoSchedule"}]},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": cq},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "1"},
                                               {"name": "memory", "nominalQuota": "256Mi"}]}]}]},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
            "metadata": {"name": "main", "namespace": ns}, "spec": {"clusterQueue": cq},
        },
    ]  # fmt: skip
    for obj in objects:
        kubectl("create", "-f", "-", input=json.dumps(obj))
    try:
        yield ns, cq
    finally:
        kubectl("delete", "namespace", ns, "--wait=true", "--timeout=90s", check=False)
        kubectl("delete", "clusterqueue", cq, "--ignore-not-found", "--timeout=60s", check=False)
        kubectl("delete", "resourceflavor", flavor, "--ignore-not-found", "--timeout=60s", check=False)
