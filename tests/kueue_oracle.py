"""Where Kueue's published CRDs live on this machine: the oracle of the schema parity test.

``make kueue-crds`` (``hack/build-binaries.sh kueue-crds``) copies the CRDs of the Kueue release
pinned as ``KUEUE_VERSION`` in ``hack/versions.env`` out of the ``sigs.k8s.io/kueue`` Go module into
``$PYKUEUE_CACHE/kueue-<version>/crds`` (``~/.cache/pykueue`` by default). They are fetched, never
committed, so the comparison is always with Kueue's own files and not with a transcription.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]


def kueue_version() -> str:
    """The pinned Kueue release (``KUEUE_VERSION`` in hack/versions.env)."""
    for line in (REPO_ROOT / "hack" / "versions.env").read_text().splitlines():
        if line.startswith("KUEUE_VERSION="):
            return line.split("=", 1)[1].strip()
    raise AssertionError("hack/versions.env has no KUEUE_VERSION pin")


def kueue_crd_dir() -> Path:
    """The directory of Kueue's CRDs; fails the calling test (never skips) when it was not fetched."""
    cache = Path(os.environ.get("PYKUEUE_CACHE", Path.home() / ".cache" / "pykueue"))
    version = kueue_version()
    crds = cache / f"kueue-{version}" / "crds"
    if not (crds / ".stamp").is_file() or not any(crds.glob("*.yaml")):
        pytest.fail(f"Kueue {version}'s CRDs are missing from {crds}: run `make kueue-crds`", pytrace=False)
    return crds


def kueue_crds() -> dict[str, dict[str, Any]]:
    """Kueue's CustomResourceDefinitions by kind."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(kueue_crd_dir().glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                out[doc["spec"]["names"]["kind"]] = doc
    return out
