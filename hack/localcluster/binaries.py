"""Finding the pinned control-plane binaries, and building them when they are missing.

The binaries live outside the repository in per-pin directories
(``~/.cache/pykueue/bin/kubernetes-v1.36.3/``) written by ``hack/build-binaries.sh``. Looking
them up by pin, not through the ``current/`` symlinks, means a changed pin is noticed at once.

Go and the module proxy are only needed to build; with a warm cache neither is checked, so a
machine without network still brings up its cached cluster.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import PrerequisiteError

REPO_ROOT = Path(__file__).resolve().parents[2]
VERSIONS_FILE = REPO_ROOT / "hack" / "versions.env"
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-binaries.sh"

# binary name -> (build target in build-binaries.sh, versions.env key of its pin)
BINARY_SOURCES: Mapping[str, tuple[str, str]] = {
    "kube-apiserver": ("kubernetes", "K8S_VERSION"),
    "kube-controller-manager": ("kubernetes", "K8S_VERSION"),
    "kube-scheduler": ("kubernetes", "K8S_VERSION"),
    "kubectl": ("kubernetes", "K8S_VERSION"),
    "etcd": ("etcd", "ETCD_VERSION"),
    "kwok": ("kwok", "KWOK_VERSION"),
}
CLUSTER_BINARIES = tuple(BINARY_SOURCES)


def cache_root() -> Path:
    """The directory shared by binaries and cluster state (``$PYKUEUE_CACHE``)."""
    return Path(os.environ.get("PYKUEUE_CACHE", Path.home() / ".cache" / "pykueue"))


def read_versions(path: Path = VERSIONS_FILE) -> dict[str, str]:
    """Parse the ``KEY=VALUE`` pins of versions.env (comments and blank lines ignored)."""
    pins: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        pins[key.strip()] = value.strip().strip("'\"")
    return pins


@dataclass(frozen=True)
class BinarySet:
    """Absolute paths of the binaries one cluster runs."""

    paths: Mapping[str, Path]

    def __getitem__(self, name: str) -> Path:
        return self.paths[name]


def binary_path(name: str, pins: Mapping[str, str], bin_root: Path) -> Path:
    target, pin_key = BINARY_SOURCES[name]
    return bin_root / f"{target}-{pins[pin_key]}" / name


def missing_binaries(pins: Mapping[str, str], bin_root: Path) -> list[str]:
    """Names of cluster binaries whose pinned build is absent or unfinished (no stamp)."""
    missing = []
    for name in CLUSTER_BINARIES:
        path = binary_path(name, pins, bin_root)
        _, pin_key = BINARY_SOURCES[name]
        stamp = path.parent / ".stamp"
        finished = stamp.is_file() and stamp.read_text().strip() == pins[pin_key]
        if not (finished and os.access(path, os.X_OK)):
            missing.append(name)
    return missing


_GO_VERSION = re.compile(r"go(\d+)\.(\d+)")


def parse_go_version(text: str) -> tuple[int, int] | None:
    """Extract (major, minor) from ``go env GOVERSION`` / ``go version`` output."""
    match = _GO_VERSION.search(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def check_go(
    go_min: str,
    *,
    which: Callable[[str], str | None] = shutil.which,
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> None:
    """Raise PrerequisiteError unless a Go toolchain at least `go_min` is on PATH."""
    if which("go") is None:
        raise PrerequisiteError(
            f"Go is not installed but is needed to build the cluster binaries once; "
            f"install Go {go_min} or newer from https://go.dev/dl and re-run"
        )
    result = run(
        ["go", "env", "GOVERSION"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GOTOOLCHAIN": "local"},
    )
    found = parse_go_version(result.stdout)
    wanted = parse_go_version(f"go{go_min}")
    if found is None or wanted is None:
        raise PrerequisiteError(
            f"could not tell the Go version from `go env GOVERSION` ({result.stdout.strip()!r})"
        )
    if found < wanted:
        raise PrerequisiteError(
            f"Go {found[0]}.{found[1]} is too old to build Kubernetes; install Go {go_min} or newer "
            f"from https://go.dev/dl and re-run"
        )


def module_proxy() -> str:
    """The first proxy of ``$GOPROXY`` (the one the build will talk to)."""
    proxy = os.environ.get("GOPROXY", "https://proxy.golang.org").split(",")[0].split("|")[0]
    return proxy.rstrip("/")


def check_module_proxy(
    k8s_version: str,
    *,
    proxy: str | None = None,
    timeout: float = 15.0,
    opener: Callable[..., object] = urllib.request.urlopen,
) -> None:
    """Raise PrerequisiteError unless the Go module proxy serves the pinned Kubernetes module."""
    proxy = proxy or module_proxy()
    url = f"{proxy}/k8s.io/kubernetes/@v/{k8s_version}.info"
    try:
        response = opener(url, timeout=timeout)
        close = getattr(response, "close", None)
        if close is not None:
            close()
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        raise PrerequisiteError(
            f"cannot reach the Go module proxy at {proxy} ({reason}); it is needed once to build "
            f"Kubernetes {k8s_version}: check the network or set GOPROXY to a reachable proxy"
        ) from None


def ensure_binaries(*, build: bool = True) -> BinarySet:
    """Return the pinned binaries, building the missing ones first when `build` is true.

    Raises PrerequisiteError with a fix-it message when something needed for that is absent.
    """
    pins = read_versions()
    bin_root = cache_root() / "bin"
    missing = missing_binaries(pins, bin_root)
    if missing and not build:
        raise PrerequisiteError(
            f"missing binaries {', '.join(missing)} for the pins in hack/versions.env; run `make binaries`"
        )
    if missing:
        check_go(pins.get("GO_MIN", "1.26"))
        check_module_proxy(pins["K8S_VERSION"])
        targets = sorted({BINARY_SOURCES[name][0] for name in missing})
        result = subprocess.run(
            ["bash", str(BUILD_SCRIPT), *targets],
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if result.returncode != 0:
            last = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise PrerequisiteError(f"building {', '.join(targets)} failed: {last}")
        still_missing = missing_binaries(pins, bin_root)
        if still_missing:
            raise PrerequisiteError(f"the build finished but {', '.join(still_missing)} is still missing")
    return BinarySet({name: binary_path(name, pins, bin_root) for name in CLUSTER_BINARIES})
