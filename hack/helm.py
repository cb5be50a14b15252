"""Running the pinned helm binary against ``charts/pykueue``.

The generate step, the unit tests and the e2e tests all render the chart the same way through
:func:`render`, so the committed ``manifests/install.yaml`` and what the tests check can never come
from two different renderings. helm is one of the binaries ``hack/build-binaries.sh`` builds from
the Go module proxy; a missing one is built here on first use rather than skipped, so a fresh
machine gets a real render and not a silently green test.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
CHART_DIR = REPO_ROOT / "charts" / "pykueue"
VERSIONS_FILE = REPO_ROOT / "hack" / "versions.env"
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-binaries.sh"
DEFAULT_RELEASE = "pykueue"
DEFAULT_NAMESPACE = "pykueue-system"


class HelmError(RuntimeError):
    """helm is missing and could not be built, or a helm command failed (message has its stderr)."""


def read_versions(path: Path = VERSIONS_FILE) -> dict[str, str]:
    """The ``KEY=VALUE`` pins of hack/versions.env."""
    pins: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            pins[key.strip()] = value.strip().strip("'\"")
    return pins


def _bin_root() -> Path:
    return Path(os.environ.get("PYKUEUE_CACHE", Path.home() / ".cache" / "pykueue")) / "bin"


def _pinned_helm(pins: Mapping[str, str]) -> tuple[Path, bool]:
    """The pinned helm's path and whether its build finished (stamp matches the pin)."""
    pin = pins["HELM_VERSION"]
    path = _bin_root() / f"helm-{pin}" / "helm"
    stamp = path.parent / ".stamp"
    finished = stamp.is_file() and stamp.read_text().strip() == pin and os.access(path, os.X_OK)
    return path, finished


def helm_binary(*, build: bool = True) -> Path:
    """Path of the pinned helm, building it with ``hack/build-binaries.sh helm`` when missing."""
    pins = read_versions()
    path, finished = _pinned_helm(pins)
    if finished:
        return path
    if not build:
        raise HelmError(f"helm {pins['HELM_VERSION']} is not built; run `hack/build-binaries.sh helm`")
    result = subprocess.run(["bash", str(BUILD_SCRIPT), "helm"], capture_output=True, text=True, check=False)
    path, finished = _pinned_helm(pins)
    if result.returncode != 0 or not finished:
        detail = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise HelmError(f"building helm {pins['HELM_VERSION']} failed: {detail}")
    return path


def kube_version() -> str:
    """The Kubernetes version renders target: the pinned one the local cluster runs."""
    return read_versions()["K8S_VERSION"]


def run_helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run helm with the given arguments; raises HelmError with helm's stderr when it fails."""
    result = subprocess.run([str(helm_binary()), *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise HelmError(f"helm {' '.join(args[:2])} failed: {result.stderr.strip()}")
    return result


def render(
    *,
    release: str = DEFAULT_RELEASE,
    namespace: str = DEFAULT_NAMESPACE,
    set_values: Mapping[str, str] | None = None,
    values_files: Sequence[Path] = (),
    include_crds: bool = False,
) -> str:
    """``helm template`` of the chart: the multi-document YAML a ``helm install`` would apply.

    ``set_values`` are ``--set`` pairs (``{"certManager.enabled": "true"}``); the output is
    deterministic for the same inputs, which is what lets a test compare it with a committed file.
    """
    args = ["template", release, str(CHART_DIR), "--namespace", namespace, "--kube-version", kube_version()]
    if include_crds:
        args.append("--include-crds")
    for path in values_files:
        args += ["--values", str(path)]
    for key, value in (set_values or {}).items():
        args += ["--set", f"{key}={value}"]
    return run_helm(*args).stdout


def lint(
    *, set_values: Mapping[str, str] | None = None, strict: bool = True
) -> subprocess.CompletedProcess[str]:
    """``helm lint`` of the chart (``--strict`` makes warnings fail)."""
    args = ["lint", str(CHART_DIR), "--kube-version", kube_version()]
    if strict:
        args.append("--strict")
    for key, value in (set_values or {}).items():
        args += ["--set", f"{key}={value}"]
    return run_helm(*args, check=False)


def render_objects(**kwargs: Any) -> list[dict[str, Any]]:
    """:func:`render`, parsed: the non-empty YAML documents as plain dicts, in helm's order."""
    return [doc for doc in yaml.safe_load_all(render(**kwargs)) if doc]
