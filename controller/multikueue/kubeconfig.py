"""Which worker kubeconfigs the manager accepts, and why it refuses the others.

A kubeconfig stored in a Secret is data anyone with write access to that Secret controls; if
the controller honoured everything a kubeconfig can say, that data could make the controller
run a program (``exec`` credential plugins), call an auth provider, or read files of the
controller's own pod (token or certificate *files*). Kueue refuses those too
(``pkg/controller/admissionchecks/multikueue/multikueuecluster.go``, its kubeconfig validation);
here the same rules are a pure function so each refusal is unit tested, and the reason lands in
the MultiKueueCluster's ``Active`` condition (reason ``BadConfig``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

# User fields that make the client read a file or run something on the controller's host.
_FORBIDDEN_USER_FIELDS = {
    "exec": "exec credential plugins are not allowed",
    "auth-provider": "auth-provider plugins are not allowed",
    "tokenFile": "token files are not allowed (use token)",
    "client-certificate": "client certificate files are not allowed (use client-certificate-data)",
    "client-key": "client key files are not allowed (use client-key-data)",
}
_FORBIDDEN_CLUSTER_FIELDS = {
    "certificate-authority": "certificate authority files are not allowed (use certificate-authority-data)",
    "insecure-skip-tls-verify": "insecure-skip-tls-verify is not allowed",
}


class KubeconfigRefused(ValueError):
    """The kubeconfig is malformed or asks for something the manager will not do."""


def parse(raw: bytes | str) -> dict[str, Any]:
    """Decode a kubeconfig document; :class:`KubeconfigRefused` when it is not a mapping."""
    try:
        document = yaml.safe_load(raw)
    except yaml.YAMLError as err:
        raise KubeconfigRefused(f"the kubeconfig is not valid YAML: {err}") from None
    if not isinstance(document, dict):
        raise KubeconfigRefused("the kubeconfig is not a YAML mapping")
    return document


def _named(document: Mapping[str, Any], section: str, name: str, body: str) -> Mapping[str, Any]:
    for entry in document.get(section) or []:
        if isinstance(entry, Mapping) and entry.get("name") == name:
            value = entry.get(body)
            if isinstance(value, Mapping):
                return value
    raise KubeconfigRefused(f"the kubeconfig has no {section[:-1]} named {name!r}")


def refusal(document: Mapping[str, Any]) -> str | None:
    """Why ``document`` is refused (the first reason found), or ``None`` when it is acceptable.

    Only the current context is used, so only its cluster and user are checked, as Kueue does.
    """
    try:
        current = document.get("current-context")
        if not current:
            return "the kubeconfig has no current-context"
        context = _named(document, "contexts", str(current), "context")
        cluster = _named(document, "clusters", str(context.get("cluster") or ""), "cluster")
        user_name = context.get("user")
        user = _named(document, "users", str(user_name), "user") if user_name else {}
    except KubeconfigRefused as err:
        return str(err)
    if not str(cluster.get("server") or ""):
        return "the kubeconfig's cluster has no server"
    for field, why in _FORBIDDEN_USER_FIELDS.items():
        if user.get(field):
            return why
    for field, why in _FORBIDDEN_CLUSTER_FIELDS.items():
        if cluster.get(field):
            return why
    return None


def validated(raw: bytes | str) -> dict[str, Any]:
    """The decoded kubeconfig, or :class:`KubeconfigRefused` saying why it cannot be used."""
    document = parse(raw)
    why = refusal(document)
    if why is not None:
        raise KubeconfigRefused(why)
    return document
