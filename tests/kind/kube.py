"""kubectl against the kind cluster of $PYKUEUE_KUBECONFIG, and polling, for tests/kind."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

KUBECONFIG = os.environ.get("PYKUEUE_KUBECONFIG", "")
NAMESPACE = os.environ.get("NAMESPACE", "pykueue-system")
BUSYBOX = os.environ.get("BUSYBOX_IMAGE", "pykueue-local/busybox:static")
SYSTEM_TAINT = "pykueue.dev/e2e-system"  # hack/kind-config.yaml's workers
SIMULATED = "pykueue.dev/simulated-node"  # the label of kwok's nodes (hack/localcluster/nodes.py)


def kubectl_binary() -> str:
    pinned = Path(os.environ.get("PYKUEUE_CACHE", Path.home() / ".cache" / "pykueue")) / "bin/current/kubectl"
    return str(pinned) if pinned.exists() else "kubectl"


def kubectl(*args: str, input: str | None = None, check: bool = True) -> str:
    result = subprocess.run(
        [kubectl_binary(), "--kubeconfig", KUBECONFIG, *args],
        capture_output=True, text=True, input=input, timeout=120, check=False,
    )  # fmt: skip
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def get(*args: str) -> Any:
    return json.loads(kubectl("get", "-o", "json", *args))


def wait_for(predicate: Any, timeout: float, message: str) -> Any:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except AssertionError as err:
            last = err
        if last and not isinstance(last, AssertionError):
            return last
        time.sleep(1)
    raise AssertionError(f"{message} (after {timeout:.0f}s; last: {last!r})")
