"""Kubeconfig files for the local cluster's users and components.

Certificates are embedded (``*-data`` fields) rather than referenced by path so a kubeconfig can
be copied elsewhere (for example into a Secret for a MultiKueue worker) and still work.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")


def build_kubeconfig(
    *,
    cluster_name: str,
    server: str,
    ca_cert: Path,
    client_cert: Path,
    client_key: Path,
    user: str,
) -> dict[str, Any]:
    """Return a kubeconfig document with one cluster, one user and one current context."""
    context = f"{user}@{cluster_name}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [
            {
                "name": cluster_name,
                "cluster": {"server": server, "certificate-authority-data": _b64(ca_cert)},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": _b64(client_cert),
                    "client-key-data": _b64(client_key),
                },
            }
        ],
        "contexts": [{"name": context, "context": {"cluster": cluster_name, "user": user}}],
        "current-context": context,
    }


def write_kubeconfig(path: Path, document: dict[str, Any]) -> Path:
    """Write `document` to `path` readable only by its owner (it holds a private key)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(document, sort_keys=False))
    tmp.chmod(0o600)
    tmp.replace(path)
    return path
