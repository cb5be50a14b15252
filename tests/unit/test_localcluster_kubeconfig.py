"""Kubeconfig files written for the local cluster."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest
import yaml
from kubernetes.config.kube_config import KubeConfigLoader

from hack.localcluster import pki
from hack.localcluster.kubeconfig import build_kubeconfig, write_kubeconfig


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> pki.PkiPaths:
    return pki.generate_pki(tmp_path_factory.mktemp("pki"))


def _admin_config(paths: pki.PkiPaths) -> dict:
    return build_kubeconfig(
        cluster_name="pykueue-test",
        server="https://127.0.0.1:6443",
        ca_cert=paths.ca_cert,
        client_cert=paths.client_cert(pki.ADMIN),
        client_key=paths.client_key(pki.ADMIN),
        user=pki.ADMIN.user,
    )


def test_kubeconfig_embeds_the_cluster_ca_and_client_credentials(paths: pki.PkiPaths) -> None:
    config = _admin_config(paths)
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    assert cluster["server"] == "https://127.0.0.1:6443"
    assert base64.b64decode(cluster["certificate-authority-data"]) == paths.ca_cert.read_bytes()
    assert base64.b64decode(user["client-certificate-data"]) == paths.client_cert(pki.ADMIN).read_bytes()
    assert base64.b64decode(user["client-key-data"]) == paths.client_key(pki.ADMIN).read_bytes()


def test_written_kubeconfig_is_private_and_loads_with_the_kubernetes_client(
    tmp_path: Path, paths: pki.PkiPaths
) -> None:
    target = write_kubeconfig(tmp_path / "nested" / "kubeconfig", _admin_config(paths))
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    document = yaml.safe_load(target.read_text())
    loader = KubeConfigLoader(config_dict=document)
    assert loader.current_context["name"] == "kubernetes-admin@pykueue-test"
    assert loader.current_context["context"]["cluster"] == "pykueue-test"


def test_rewriting_replaces_the_previous_file(tmp_path: Path, paths: pki.PkiPaths) -> None:
    target = tmp_path / "kubeconfig"
    first = _admin_config(paths)
    write_kubeconfig(target, first)
    second = dict(
        first,
        clusters=[
            {
                "name": "pykueue-test",
                "cluster": {**first["clusters"][0]["cluster"], "server": "https://127.0.0.1:7000"},
            }
        ],
    )
    write_kubeconfig(target, second)
    assert yaml.safe_load(target.read_text())["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:7000"
    assert not list(tmp_path.glob("*.tmp"))
