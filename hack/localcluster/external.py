"""A cluster we did not start: given by kubeconfig (kind, a shared dev cluster, CI's cluster).

It offers what only needs API access (`kubeconfig`, `kubectl`) and refuses, with a clear
message, what needs control over the control-plane processes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .binaries import ensure_binaries
from .errors import KubectlError, PrerequisiteError, UnsupportedOperationError


class ExistingCluster:
    """An externally managed cluster reached through `kubeconfig`."""

    def __init__(self, kubeconfig: str | os.PathLike[str], name: str = "external") -> None:
        path = Path(kubeconfig).expanduser()
        if not path.is_file():
            raise PrerequisiteError(f"kubeconfig {path} does not exist (check PYKUEUE_KUBECONFIG)")
        self.name = name
        self.kubeconfig = str(path)

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

    def create_nodes(self, *args: object, **kwargs: object) -> list[str]:
        raise self._unsupported("create_nodes() (simulated nodes)")

    def delete_nodes(self, prefix: str) -> None:
        raise self._unsupported("delete_nodes() (simulated nodes)")

    def up(self) -> ExistingCluster:
        return self

    def down(self) -> list[str]:
        return []

    @staticmethod
    def _kubectl_binary() -> str:
        try:
            return str(ensure_binaries(build=False)["kubectl"])
        except PrerequisiteError:
            found = shutil.which("kubectl")
            if found is None:
                raise PrerequisiteError("kubectl not found: run `make binaries` or install kubectl") from None
            return found
