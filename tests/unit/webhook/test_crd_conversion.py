"""The CRDs' conversion clientConfig and CA bundle, written by the webhook's certificate sync."""

from __future__ import annotations

import base64
import copy
from typing import Any

from pykueue.api.generate import crd
from pykueue.api.schema import KINDS
from pykueue.kube import resources as r
from pykueue.kube.errors import Conflict
from pykueue.tls.certs import generate_bundle, split_pem_certificates
from webhook.crd_conversion import (
    CRD_NAMES,
    CrdConversion,
    MountedCaSync,
    service_client_config,
    url_client_config,
)


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict) or not isinstance(target, dict):
        return copy.deepcopy(patch)
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out


class CrdStore:
    """The CRDs as `make generate` writes them, with merge patches guarded by resourceVersion."""

    def __init__(self) -> None:
        self.crds = {info.crd_name: {**crd(info), "metadata": {"name": info.crd_name, "resourceVersion": "1"}}
                     for info in KINDS.values()}
        self.patches = 0
        self.conflict_once = False

    def get(self, resource: Any, name: str) -> dict[str, Any] | None:
        assert resource is r.CUSTOM_RESOURCE_DEFINITIONS
        return copy.deepcopy(self.crds.get(name))

    def patch(self, resource: Any, name: str, patch: dict[str, Any], **kw: Any) -> dict[str, Any]:
        current = self.crds[name]
        if self.conflict_once:
            self.conflict_once = False
            current["metadata"]["resourceVersion"] = str(int(current["metadata"]["resourceVersion"]) + 1)
        if patch["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
            raise Conflict(409, "Conflict", "modified")
        self.patches += 1
        updated = _merge(current, patch)
        updated["metadata"]["resourceVersion"] = str(int(current["metadata"]["resourceVersion"]) + 1)
        self.crds[name] = updated
        return updated


def _client_config(store: CrdStore, name: str) -> dict[str, Any]:
    return store.crds[name]["spec"]["conversion"]["webhook"]["clientConfig"]


def test_every_kueue_crd_is_named_and_ships_a_webhook_conversion() -> None:
    assert len(CRD_NAMES) == len(KINDS)
    for info in KINDS.values():
        conversion = crd(info)["spec"]["conversion"]
        assert conversion["strategy"] == "Webhook"
        assert conversion["webhook"]["clientConfig"]["service"]["path"] == "/convert"
        assert "caBundle" not in conversion["webhook"]["clientConfig"], "the CA bundle is injected, never generated"


def test_the_service_and_ca_bundle_are_injected_once() -> None:
    store = CrdStore()
    ca = generate_bundle(dns_names=["svc.ns.svc"]).ca_cert
    sync = CrdConversion(store, service_client_config("my-webhook", "my-ns", 8443))  # type: ignore[arg-type]
    sync.sync(ca)
    for name in CRD_NAMES:
        config = _client_config(store, name)
        assert config["service"] == {"name": "my-webhook", "namespace": "my-ns", "path": "/convert", "port": 8443}
        assert split_pem_certificates(base64.b64decode(config["caBundle"])) == [ca]
    writes = store.patches
    sync.sync(ca)
    assert store.patches == writes  # nothing changed: no write


def test_local_mode_points_at_the_url_and_drops_the_service() -> None:
    store = CrdStore()
    ca = generate_bundle(dns_names=["localhost"]).ca_cert
    CrdConversion(store, url_client_config("https://127.0.0.1:9443/")).sync(ca)  # type: ignore[arg-type]
    config = _client_config(store, "workloads.kueue.x-k8s.io")
    assert set(config) == {"url", "caBundle"}
    assert config["url"] == "https://127.0.0.1:9443/convert"


def test_a_rotated_ca_keeps_the_previous_one_trusted_and_a_conflict_is_retried() -> None:
    store = CrdStore()
    old = generate_bundle(dns_names=["a"]).ca_cert
    new = generate_bundle(dns_names=["a"]).ca_cert
    sync = CrdConversion(store, url_client_config("https://127.0.0.1:9443"))  # type: ignore[arg-type]
    sync.sync(old)
    store.conflict_once = True
    sync.sync(new)
    bundle = split_pem_certificates(base64.b64decode(_client_config(store, "clusterqueues.kueue.x-k8s.io")["caBundle"]))
    assert new in bundle and old in bundle


def test_a_crd_without_webhook_conversion_is_left_alone() -> None:
    store = CrdStore()
    store.crds["cohorts.kueue.x-k8s.io"]["spec"]["conversion"] = {"strategy": "None"}
    del store.crds["workloads.kueue.x-k8s.io"]
    CrdConversion(store, url_client_config("https://127.0.0.1:9443")).sync(generate_bundle(dns_names=["a"]).ca_cert)  # type: ignore[arg-type]
    assert store.crds["cohorts.kueue.x-k8s.io"]["spec"]["conversion"] == {"strategy": "None"}
    assert "caBundle" in _client_config(store, "clusterqueues.kueue.x-k8s.io")


def test_cert_manager_mode_trusts_the_mounted_ca_and_follows_its_renewal(tmp_path: Any) -> None:
    store = CrdStore()
    ca_file = tmp_path / "ca.crt"
    sync = MountedCaSync(lambda: CrdConversion(store, service_client_config("wh", "ns", 443)), ca_file)  # type: ignore[arg-type]
    assert sync.run_once() is False and store.patches == 0  # no ca.crt (yet, or an ACME issuer): nothing written
    first = generate_bundle(dns_names=["wh.ns.svc"]).ca_cert
    ca_file.write_bytes(first)
    assert sync.run_once() is True
    config = _client_config(store, "workloads.kueue.x-k8s.io")
    assert config["service"] == {"name": "wh", "namespace": "ns", "path": "/convert", "port": 443}
    assert split_pem_certificates(base64.b64decode(config["caBundle"])) == [first]
    writes = store.patches
    assert sync.run_once() is True and store.patches == writes  # unchanged file: not even a read of the CRDs
    renewed = generate_bundle(dns_names=["wh.ns.svc"]).ca_cert
    ca_file.write_bytes(renewed)
    sync.run_once()
    bundle = split_pem_certificates(base64.b64decode(_client_config(store, "workloads.kueue.x-k8s.io")["caBundle"]))
    assert bundle == [renewed, first]  # the previous CA stays trusted across the renewal
