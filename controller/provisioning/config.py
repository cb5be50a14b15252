"""A ProvisioningRequestConfig read into a typed value, and the AdmissionCheck's ``Active`` verdict.

An AdmissionCheck belongs to this controller when ``spec.controllerName`` is
``kueue.x-k8s.io/provisioning-request``; its ``spec.parameters`` must name a
ProvisioningRequestConfig (``kueue.x-k8s.io``/``ProvisioningRequestConfig``/name). Kueue's
``admissioncheck_reconciler.go`` sets ``Active=True`` (reason ``Active``) when that config exists,
otherwise ``Active=False`` (reason ``BadParametersRef``); a ClusterQueue using an inactive check is
itself inactive, so no workload waits on a check nobody can answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pykueue.api import constants as C

REASON_ACTIVE = "Active"
REASON_BAD_PARAMETERS = "BadParametersRef"
MSG_ACTIVE = "The admission check is active"
CONFIG_KIND = "ProvisioningRequestConfig"

DEFAULT_BACKOFF_LIMIT = 3
DEFAULT_BACKOFF_BASE_SECONDS = 60
DEFAULT_BACKOFF_MAX_SECONDS = 1800

MERGE_IDENTICAL_TEMPLATES = "IdenticalPodTemplates"
MERGE_IDENTICAL_REQUIREMENTS = "IdenticalWorkloadSchedulingRequirements"


@dataclass(frozen=True)
class RetryStrategy:
    backoff_limit: int = DEFAULT_BACKOFF_LIMIT
    base_seconds: int = DEFAULT_BACKOFF_BASE_SECONDS
    max_seconds: int = DEFAULT_BACKOFF_MAX_SECONDS


@dataclass(frozen=True)
class ProvisioningConfig:
    """What the check needs of a ProvisioningRequestConfig (unset fields get Kueue's defaults)."""

    name: str
    class_name: str
    parameters: dict[str, str] = field(default_factory=dict)
    managed_resources: tuple[str, ...] = ()
    retry: RetryStrategy = RetryStrategy()
    # (node selector key, provisioningClassDetails key) pairs from spec.podSetUpdates.nodeSelector
    node_selector_updates: tuple[tuple[str, str], ...] = ()
    merge_policy: str = ""


def _non_negative(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def parse_config(prc: Mapping[str, Any]) -> ProvisioningConfig | None:
    """The typed config, or ``None`` when it has no usable ``provisioningClassName``."""
    spec = prc.get("spec") if isinstance(prc.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    class_name = spec.get("provisioningClassName")
    if not isinstance(class_name, str) or not class_name:
        return None
    params = spec.get("parameters")
    retry = spec.get("retryStrategy") if isinstance(spec.get("retryStrategy"), Mapping) else {}
    assert isinstance(retry, Mapping)
    updates = spec.get("podSetUpdates") if isinstance(spec.get("podSetUpdates"), Mapping) else {}
    assert isinstance(updates, Mapping)
    selectors = tuple(
        (str(entry["key"]), str(entry["valueFromProvisioningClassDetail"]))
        for entry in updates.get("nodeSelector") or []
        if isinstance(entry, Mapping) and entry.get("key") and entry.get("valueFromProvisioningClassDetail")
    )
    policy = spec.get("podSetMergePolicy")
    return ProvisioningConfig(
        name=str((prc.get("metadata") or {}).get("name") or ""),
        class_name=class_name,
        parameters={str(k): str(v) for k, v in params.items()} if isinstance(params, Mapping) else {},
        managed_resources=tuple(str(r) for r in spec.get("managedResources") or [] if isinstance(r, str)),
        retry=RetryStrategy(
            backoff_limit=_non_negative(retry.get("backoffLimitCount"), DEFAULT_BACKOFF_LIMIT),
            base_seconds=_non_negative(retry.get("backoffBaseSeconds"), DEFAULT_BACKOFF_BASE_SECONDS),
            max_seconds=_non_negative(retry.get("backoffMaxSeconds"), DEFAULT_BACKOFF_MAX_SECONDS),
        ),
        node_selector_updates=selectors,
        merge_policy=policy if policy in (MERGE_IDENTICAL_TEMPLATES, MERGE_IDENTICAL_REQUIREMENTS) else "",
    )


def is_ours(check: Mapping[str, Any] | None) -> bool:
    spec = (check or {}).get("spec")
    return isinstance(spec, Mapping) and spec.get("controllerName") == C.PROVISIONING_REQUEST_CONTROLLER


def config_name(check: Mapping[str, Any]) -> str | None:
    """The ProvisioningRequestConfig ``check`` points at, or ``None`` for a wrong reference."""
    params = (check.get("spec") or {}).get("parameters")
    if not isinstance(params, Mapping):
        return None
    if params.get("apiGroup") != C.GROUP or params.get("kind") != CONFIG_KIND:
        return None
    name = params.get("name")
    return name if isinstance(name, str) and name else None


def active_condition(check: Mapping[str, Any], prc: Mapping[str, Any] | None) -> tuple[bool, str, str]:
    """``(status, reason, message)`` of the check's ``Active`` condition given its config."""
    name = config_name(check)
    if name is None:
        return False, REASON_BAD_PARAMETERS, (
            f"spec.parameters must reference a {C.GROUP} {CONFIG_KIND}"
        )
    if prc is None:
        return False, REASON_BAD_PARAMETERS, f"{CONFIG_KIND} {name!r} not found"
    if parse_config(prc) is None:
        return False, REASON_BAD_PARAMETERS, f"{CONFIG_KIND} {name!r} has no provisioningClassName"
    return True, REASON_ACTIVE, MSG_ACTIVE
