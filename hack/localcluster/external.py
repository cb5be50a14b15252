"""A cluster we did not start: given by kubeconfig (kind, a shared dev cluster, CI's cluster).

It offers what only needs API access (`kubeconfig`, `kubectl`) and refuses, with a clear
message, what needs control over the control-plane processes (apiserver restart, etcd
compaction). Simulated nodes need a kwok that plays them: `create_nodes` works once the cluster
has one (the in-cluster kwok of `hack/e2e-deploy.sh install-kwok`, or the local cluster's kwok
process when this kubeconfig points at a local cluster) and otherwise says how to get it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .binaries import ensure_binaries
from .errors import ComponentFailedError, KubectlError, PrerequisiteError, UnsupportedOperationError
from .incluster_kwok import KWOK_NAME, KWOK_NAMESPACE
from .nodes import SIMULATED_NODE_LABEL, apply_node_list, is_kwok_managed, ready_node_names

READY_POLL_INTERVAL = 0.5


class ExistingCluster:
    """An externally managed cluster reached through `kubeconfig`."""

    def __init__(self, kubeconfig: str | os.PathLike[str], name: str = "external") -> None:
        path = Path(kubeconfig).expanduser()
        if not path.is_file():
            raise PrerequisiteError(f"kubeconfig {path} does not exist (check PYKUEUE_KUBECONFIG)")
        self.name = name
        self.kubeconfig = str(path)
        # Once a kwok has been seen it is not looked for again: tests create nodes many times.
        self._kwok: str | None = None

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None, timeout: float | None = 120
    ) -> subprocess.CompletedProcess[str]:
        cmd = [self._kubectl_binary(), "--kubeconfig", self.kubeconfig, *args]
        result = subprocess.run(
            cmd, capture_output=True, text=True, input=input, timeout=timeout, check=False
        )
        if check and result.returncode != 0:
            raise KubectlError(result.returncode, cmd, result.stdout, result.stderr)
        return result

    def _unsupported(self, what: str) -> UnsupportedOperationError:
        return UnsupportedOperationError(
            f"{what} needs the local cluster started by hack.localcluster; this run uses the existing "
            f"cluster at {self.kubeconfig} (unset PYKUEUE_KUBECONFIG to use a local one)"
        )

    def restart_apiserver(self) -> None:
        raise self._unsupported("restart_apiserver()")

    def compact_etcd(self) -> int:
        raise self._unsupported("compact_etcd()")

    def etcd_value(self, key: str) -> bytes | None:
        raise self._unsupported("etcd_value()")

    # ------------------------------------------------------------------ simulated nodes

    def kwok_provider(self) -> str | None:
        """What plays simulated nodes in this cluster, or None when nothing does.

        Either the in-cluster kwok Deployment is available, or some node carrying kwok's
        annotation is Ready (a kwok outside the cluster keeps it so, like the local cluster's).
        """
        if self._kwok is not None:
            return self._kwok
        deployment = self._get_json("deployment", KWOK_NAME, "-n", KWOK_NAMESPACE)
        if deployment is not None and (deployment.get("status", {}).get("availableReplicas") or 0) >= 1:
            self._kwok = f"deployment {KWOK_NAMESPACE}/{KWOK_NAME}"
            return self._kwok
        nodes = self._get_json("nodes")
        if nodes is not None:
            played = sorted(ready_node_names(n for n in nodes["items"] if is_kwok_managed(n)))
            if played:
                self._kwok = f"a kwok outside the cluster (it keeps node {played[0]} Ready)"
                return self._kwok
        return None

    def create_nodes(
        self,
        prefix: str,
        count: int,
        labels: Mapping[str, str] | None = None,
        capacity: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, str]] = (),
        *,
        wait: bool = True,
        timeout: float = 60.0,
    ) -> list[str]:
        """Create `count` kwok-managed nodes `<prefix>-<i>` (as LocalCluster does) and wait until Ready."""
        if self.kwok_provider() is None:
            raise PrerequisiteError(
                f"create_nodes() (simulated nodes) needs kwok in the cluster at {self.kubeconfig}, and "
                f"there is none: no available deployment {KWOK_NAMESPACE}/{KWOK_NAME} and no Ready node "
                f"annotated kwok.x-k8s.io/node=fake. Install it with "
                f"`KUBECONFIG={self.kubeconfig} hack/e2e-deploy.sh install-kwok` "
                f"(hack/kind-e2e.sh does), or unset PYKUEUE_KUBECONFIG to use a local cluster"
            )
        names = apply_node_list(self.kubectl, prefix, count, labels=labels, capacity=capacity, taints=taints)
        if names and wait:
            self.wait_nodes_ready(prefix, names, timeout)
        return names

    def wait_nodes_ready(self, prefix: str, names: Sequence[str], timeout: float) -> None:
        """Poll until every node in `names` reports Ready; fail naming those that do not."""
        wanted = set(names)
        deadline = time.monotonic() + timeout
        while True:
            nodes = self._get_json("nodes", "-l", f"{SIMULATED_NODE_LABEL}={prefix}")
            ready = ready_node_names(nodes["items"]) if nodes is not None else set()
            if wanted <= ready:
                return
            if time.monotonic() > deadline:
                raise ComponentFailedError(
                    f"nodes {sorted(wanted - ready)} did not become Ready within {timeout:.0f}s: is "
                    f"{self._kwok or 'kwok'} running? (kubectl -n {KWOK_NAMESPACE} logs deploy/{KWOK_NAME})"
                )
            time.sleep(READY_POLL_INTERVAL)

    def delete_nodes(self, prefix: str) -> None:
        """Delete every simulated node created with `prefix` (needs no kwok: cleanup never fails for that)."""
        self.kubectl("delete", "nodes", "-l", f"{SIMULATED_NODE_LABEL}={prefix}", "--wait=false")

    # ------------------------------------------------------------------ lifecycle

    def up(self) -> ExistingCluster:
        return self

    def down(self) -> list[str]:
        return []

    def _get_json(self, *args: str) -> Any:
        """`kubectl get ... -o json` parsed, or None when the object is not there."""
        result = self.kubectl("get", *args, "-o", "json", check=False)
        if result.returncode != 0:
            if "NotFound" in result.stderr or "not found" in result.stderr:
                return None
            raise KubectlError(result.returncode, ["kubectl", "get", *args], result.stdout, result.stderr)
        return json.loads(result.stdout)

    @staticmethod
    def _kubectl_binary() -> str:
        try:
            return str(ensure_binaries(build=False)["kubectl"])
        except PrerequisiteError:
            found = shutil.which("kubectl")
            if found is None:
                raise PrerequisiteError("kubectl not found: run `make binaries` or install kubectl") from None
            return found
