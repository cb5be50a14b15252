"""Which worker kubeconfigs are refused, and why (Kueue's multikueuecluster.go validation)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from controller.multikueue.kubeconfig import KubeconfigRefused, refusal, validated


def kubeconfig(user: dict[str, Any] | None = None, cluster: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "w", "cluster": {"server": "https://127.0.0.1:6443",
                                                "certificate-authority-data": "Q0E=", **(cluster or {})}}],
        "users": [{"name": "u", "user": {"token": "secret", **(user or {})}}],
        "contexts": [{"name": "c", "context": {"cluster": "w", "user": "u"}}],
        "current-context": "c",
    }


def test_embedded_credentials_are_accepted() -> None:
    assert refusal(kubeconfig()) is None
    assert validated(yaml.safe_dump(kubeconfig()))["current-context"] == "c"


@pytest.mark.parametrize(
    ("user", "cluster", "why"),
    [
        ({"exec": {"command": "/bin/sh"}}, None, "exec credential plugins are not allowed"),
        ({"auth-provider": {"name": "gcp"}}, None, "auth-provider plugins are not allowed"),
        ({"tokenFile": "/var/run/secrets/token"}, None, "token files are not allowed (use token)"),
        ({"client-certificate": "/etc/c.crt"}, None, "client certificate files are not allowed"),
        ({"client-key": "/etc/c.key"}, None, "client key files are not allowed"),
        (None, {"certificate-authority": "/etc/ca.crt"}, "certificate authority files are not allowed"),
        (None, {"insecure-skip-tls-verify": True}, "insecure-skip-tls-verify is not allowed"),
    ],
)
def test_kubeconfigs_reaching_outside_the_worker_are_refused(
    user: dict[str, Any] | None, cluster: dict[str, Any] | None, why: str
) -> None:
    reason = refusal(kubeconfig(user, cluster))
    assert reason is not None and reason.startswith(why)
    with pytest.raises(KubeconfigRefused, match=why.split(" (")[0]):
        validated(yaml.safe_dump(kubeconfig(user, cluster)))


def test_only_the_current_context_is_checked() -> None:
    doc = kubeconfig()
    doc["users"].append({"name": "other", "user": {"exec": {"command": "x"}}})
    assert refusal(doc) is None


@pytest.mark.parametrize(
    ("mutate", "why"),
    [
        (lambda d: d.pop("current-context"), "the kubeconfig has no current-context"),
        (lambda d: d.update(contexts=[]), "the kubeconfig has no context named 'c'"),
        (lambda d: d["clusters"][0]["cluster"].pop("server"), "the kubeconfig's cluster has no server"),
    ],
)
def test_incomplete_kubeconfigs_are_refused(mutate: Any, why: str) -> None:
    doc = copy.deepcopy(kubeconfig())
    mutate(doc)
    assert refusal(doc) == why


def test_garbage_is_refused() -> None:
    with pytest.raises(KubeconfigRefused, match="not a YAML mapping"):
        validated("- a list")
    with pytest.raises(KubeconfigRefused, match="not valid YAML"):
        validated("{unclosed")
