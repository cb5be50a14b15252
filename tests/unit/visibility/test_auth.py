"""Delegated authentication: who the front proxy vouches for, and when it is believed."""

from __future__ import annotations

import base64
import json
from email.message import Message
from typing import Any

from controller.visibility.apiservice import ApiServiceSync
from controller.visibility.auth import RequestHeaderConfig, load_requestheader_config, user_from_front_proxy
from pykueue.tls.certs import generate_bundle, split_pem_certificates

CONFIG = RequestHeaderConfig(client_ca="PEM", allowed_names=("front-proxy-client",))


def _headers(*pairs: tuple[str, str]) -> Message:
    message = Message()
    for name, value in pairs:
        message[name] = value
    return message


def test_front_proxy_headers_believed_only_from_an_allowed_verified_client() -> None:
    headers = _headers(("X-Remote-User", "alice"), ("X-Remote-Group", "devs"), ("X-Remote-Group", "system:authenticated"),
                       ("X-Remote-Extra-Scopes", "a"), ("X-Remote-Extra-Scopes", "b"))
    user = user_from_front_proxy(CONFIG, "front-proxy-client", headers)
    assert user is not None
    assert (user.name, user.groups, dict(user.extra)) == ("alice", ("devs", "system:authenticated"), {"scopes": ("a", "b")})
    assert user_from_front_proxy(CONFIG, None, headers) is None  # no verified client certificate
    assert user_from_front_proxy(CONFIG, "someone-else", headers) is None  # not an allowed name
    assert user_from_front_proxy(CONFIG, "front-proxy-client", _headers()) is None  # names nobody
    anyone = RequestHeaderConfig(client_ca="PEM")
    assert user_from_front_proxy(anyone, "any-cn", headers) is not None  # no allowed names: any CA client


def test_requestheader_config_from_the_apiservers_configmap() -> None:
    configmap = {"data": {
        "requestheader-client-ca-file": "PEM",
        "requestheader-allowed-names": json.dumps(["front-proxy-client"]),
        "requestheader-username-headers": json.dumps(["X-Remote-User"]),
        "requestheader-group-headers": json.dumps(["X-Remote-Group"]),
        "requestheader-extra-headers-prefix": json.dumps(["X-Remote-Extra-"]),
    }}
    config = load_requestheader_config(configmap)
    assert config == RequestHeaderConfig("PEM", ("front-proxy-client",), ("X-Remote-User",), ("X-Remote-Group",),
                                         ("X-Remote-Extra-",))
    assert load_requestheader_config({"data": {"client-ca-file": "x"}}) is None
    assert load_requestheader_config(None) is None


class FakeApiServices:
    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.patches: list[tuple[str, dict[str, Any]]] = []

    def get(self, res: Any, name: str) -> dict[str, Any] | None:
        return self.objects.get(name)

    def patch(self, res: Any, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        self.patches.append((name, patch))
        self.objects[name]["spec"].update({k: v for k, v in patch["spec"].items() if v is not None})
        return self.objects[name]


def test_ca_bundle_published_on_existing_api_services_only_when_it_changes() -> None:
    first, second = generate_bundle(dns_names=["svc"]), generate_bundle(dns_names=["svc"])
    fake = FakeApiServices({"v1beta1.visibility.kueue.x-k8s.io": {"metadata": {"resourceVersion": "1"}, "spec": {}}})
    sync = ApiServiceSync(fake)
    sync.sync(first.ca_cert)
    assert [name for name, _ in fake.patches] == ["v1beta1.visibility.kueue.x-k8s.io"]  # v1beta2 not installed
    sync.sync(first.ca_cert)
    assert len(fake.patches) == 1
    sync.sync(second.ca_cert)  # a rotation: the new CA first, the old one kept while replicas switch
    bundle = base64.b64decode(fake.objects["v1beta1.visibility.kueue.x-k8s.io"]["spec"]["caBundle"])
    assert split_pem_certificates(bundle) == [second.ca_cert, first.ca_cert]
    assert fake.patches[-1][1]["metadata"]["resourceVersion"] == "1"
