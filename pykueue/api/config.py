"""The controller's configuration file: ``config.kueue.x-k8s.io/v1beta1`` kind ``Configuration``.

pykueue reads the subset of Kueue's v1beta1 Configuration (``apis/config/v1beta1`` in Kueue) that
it implements; both programs load the same file with :func:`load_config` and receive the frozen
:class:`Configuration` below, never the raw document.  The file is checked with ``jsonschema``
(unknown fields are errors, as in Kueue's strict loader) and then with the semantic rules Kueue
applies; every problem becomes a :class:`ConfigError` whose message starts with the field path,
e.g. ``waitForPodsReady.timeout: Invalid value: "0s": must be greater than 0``.  Defaults follow
Kueue's v1beta1 ``SetDefaults_Configuration``, with pykueue's own namespace and object names.
Durations (``timeout``, ``lease_duration``, ``gc_interval``, ...) are exposed as float seconds
under the snake_case of their YAML names.

A field the schema accepts is either honoured by one of the programs or refused at start by
:func:`refused_fields` (today none: every field of the subset is honoured); docs/design/runtime.md
tables which program honours which field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from pykueue.api.constants import CONFIG_API_VERSION
from pykueue.api.dsl import DNS1123_LABEL, DNS1123_SUBDOMAIN, DURATION_PATTERN
from pykueue.api.durations import parse_duration
from pykueue.api.labelselectors import matches
from pykueue.api.validation import FieldError, join_path, path_of

DEFAULT_NAMESPACE = "pykueue-system"
DEFAULT_WEBHOOK_SERVICE = "pykueue-webhook-service"
DEFAULT_WEBHOOK_SECRET = "pykueue-webhook-server-cert"
DEFAULT_LEADER_ELECTION_ID = "pykueue-controller-leader"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
DISPATCHER_ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
DISPATCHER_INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
# Any other dispatcherName is an external dispatcher: another controller writes the Workloads'
# status.nominatedClusterNames (Kueue's apis/config/v1beta1/configuration_types.go).
SUPPORTED_FRAMEWORKS = ("batch/job",)
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"


class ConfigError(ValueError):
    """The configuration cannot be used; ``str()`` lists each bad field with its rule.

    A ValueError, so callers that only know "bad value" (the controller's flag handling) catch it.
    """

    def __init__(self, errors: list[FieldError], source: str | None = None) -> None:
        self.errors = errors
        self.source = source
        super().__init__("; ".join(str(e) for e in errors))


# --- the typed result -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RequeuingStrategy:
    timestamp: str = "Eviction"
    backoff_limit_count: int | None = None  # None: requeue forever
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 3600


@dataclass(frozen=True)
class WaitForPodsReady:
    enable: bool = False
    timeout: float = 300.0
    block_admission: bool = False
    recovery_timeout: float | None = None
    requeuing_strategy: RequeuingStrategy = field(default_factory=RequeuingStrategy)


@dataclass(frozen=True)
class ClientConnection:
    qps: float = 20.0
    burst: int = 30


@dataclass(frozen=True)
class Integrations:
    frameworks: tuple[str, ...] = ("batch/job",)


@dataclass(frozen=True)
class InternalCertManagement:
    enable: bool = True
    webhook_service_name: str = DEFAULT_WEBHOOK_SERVICE
    webhook_secret_name: str = DEFAULT_WEBHOOK_SECRET


@dataclass(frozen=True)
class LeaderElection:
    leader_elect: bool = True
    resource_name: str = DEFAULT_LEADER_ELECTION_ID
    resource_namespace: str | None = None  # None: the configuration's namespace
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


@dataclass(frozen=True)
class WebhookServer:
    port: int = 9443
    host: str = ""
    cert_dir: str = "/tmp/k8s-webhook-server/serving-certs"


@dataclass(frozen=True)
class MultiKueue:
    gc_interval: float = 60.0
    origin: str = "multikueue"
    worker_lost_timeout: float = 900.0
    dispatcher_name: str = DISPATCHER_ALL_AT_ONCE
    # v1beta2's incrementalDispatcherConfig.stepSize: workers the Incremental dispatcher adds per
    # round (Kueue's default 3, set only with that dispatcher; the others never read it).
    incremental_step_size: int = 3


def default_namespace_selector(namespace: str) -> dict[str, Any]:
    """Kueue's default: every namespace except kube-system and the controller's own."""
    return {
        "matchExpressions": [
            {"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": ["kube-system", namespace]}
        ]
    }


PREEMPT_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
PREEMPT_LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
# The strategy lists Kueue accepts (``validStrategySets`` in Kueue's pkg/config/validation.go).
VALID_PREEMPTION_STRATEGY_SETS: tuple[tuple[str, ...], ...] = (
    (PREEMPT_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,),
    (PREEMPT_LESS_THAN_INITIAL_SHARE,),
    (PREEMPT_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, PREEMPT_LESS_THAN_INITIAL_SHARE),
)
DEFAULT_PREEMPTION_STRATEGIES = VALID_PREEMPTION_STRATEGY_SETS[2]


@dataclass(frozen=True)
class FairSharing:
    """``fairSharing``: order heads and choose victims by dominant resource share across each
    cohort tree (docs/design/fair-sharing.md)."""

    enable: bool = False
    preemption_strategies: tuple[str, ...] = DEFAULT_PREEMPTION_STRATEGIES


@dataclass(frozen=True)
class AdmissionFairSharing:
    """``admissionFairSharing``: order the LocalQueues of a ClusterQueue whose admission mode is
    ``UsageBasedAdmissionFairSharing`` by their decayed past usage."""

    usage_half_life_time: float = 0.0
    usage_sampling_interval: float = 300.0
    resource_weights: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Configuration:
    namespace: str = DEFAULT_NAMESPACE
    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: dict[str, Any] = field(
        default_factory=lambda: default_namespace_selector(DEFAULT_NAMESPACE)
    )
    wait_for_pods_ready: WaitForPodsReady = field(default_factory=WaitForPodsReady)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    integrations: Integrations = field(default_factory=Integrations)
    internal_cert_management: InternalCertManagement = field(default_factory=InternalCertManagement)
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    metrics_bind_address: str = ":8080"
    health_probe_bind_address: str = ":8081"
    webhook: WebhookServer = field(default_factory=WebhookServer)
    multi_kueue: MultiKueue = field(default_factory=MultiKueue)
    fair_sharing: FairSharing = field(default_factory=FairSharing)
    admission_fair_sharing: AdmissionFairSharing | None = None  # None: the section is absent


# --- the file's schema ---------------------------------------------------------------------------


def _obj(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = list(required)
    return out


_DURATION = {"type": "string", "pattern": DURATION_PATTERN}
_LABEL_SELECTOR = _obj(
    {
        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        "matchExpressions": {
            "type": "array",
            "items": _obj(
                {
                    "key": {"type": "string"},
                    "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                    "values": {"type": "array", "items": {"type": "string"}},
                },
                ("key", "operator"),
            ),
        },
    }
)

CONFIG_SCHEMA: dict[str, Any] = _obj(
    {
        # v1beta2 documents are rewritten to v1beta1 before validation (_from_v1beta2).
        "apiVersion": {"enum": [CONFIG_API_VERSION, f"{CONFIG_API_VERSION.rsplit('/', 1)[0]}/v1beta2"]},
        "kind": {"enum": ["Configuration"]},
        "namespace": {"type": "string", "pattern": DNS1123_LABEL, "maxLength": 63},
        "manageJobsWithoutQueueName": {"type": "boolean"},
        "managedJobsNamespaceSelector": _LABEL_SELECTOR,
        "waitForPodsReady": _obj(
            {
                "enable": {"type": "boolean"},
                "timeout": _DURATION,
                "blockAdmission": {"type": "boolean"},
                "recoveryTimeout": _DURATION,
                "requeuingStrategy": _obj(
                    {
                        "timestamp": {"enum": ["Eviction", "Creation"]},
                        "backoffLimitCount": {"type": "integer", "minimum": 0},
                        "backoffBaseSeconds": {"type": "integer", "minimum": 0},
                        "backoffMaxSeconds": {"type": "integer", "minimum": 0},
                    }
                ),
            }
        ),
        "clientConnection": _obj({"qps": {"type": "number"}, "burst": {"type": "integer", "minimum": 0}}),
        "integrations": _obj(
            {"frameworks": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": True}}
        ),
        "internalCertManagement": _obj(
            {
                "enable": {"type": "boolean"},
                "webhookServiceName": {"type": "string", "pattern": DNS1123_LABEL, "maxLength": 63},
                "webhookSecretName": {"type": "string", "pattern": DNS1123_SUBDOMAIN, "maxLength": 253},
            }
        ),
        "leaderElection": _obj(
            {
                "leaderElect": {"type": "boolean"},
                "resourceName": {"type": "string", "pattern": DNS1123_SUBDOMAIN},
                "resourceNamespace": {"type": "string", "pattern": DNS1123_LABEL},
                "resourceLock": {"enum": ["leases"]},
                "leaseDuration": _DURATION,
                "renewDeadline": _DURATION,
                "retryPeriod": _DURATION,
            }
        ),
        "metrics": _obj({"bindAddress": {"type": "string"}}),
        "health": _obj({"healthProbeBindAddress": {"type": "string"}}),
        "webhook": _obj(
            {
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "host": {"type": "string"},
                "certDir": {"type": "string"},
            }
        ),
        "multiKueue": _obj(
            {
                "gcInterval": _DURATION,
                "origin": {"type": "string", "pattern": LABEL_VALUE, "maxLength": 63},
                "workerLostTimeout": _DURATION,
                "dispatcherName": {"type": "string", "maxLength": 63},
                # v1beta2 only (parse_config refuses it in a v1beta1 document, as Kueue's strict
                # decoding does: v1beta1 has no such field).
                "incrementalDispatcherConfig": _obj({"stepSize": {"type": "integer", "maximum": 2**31 - 1}}),
            }
        ),
        "fairSharing": _obj(
            {
                "enable": {"type": "boolean"},
                "preemptionStrategies": {
                    "type": "array",
                    "items": {"enum": [PREEMPT_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, PREEMPT_LESS_THAN_INITIAL_SHARE]},
                },
            }
        ),
        "admissionFairSharing": _obj(
            {
                "usageHalfLifeTime": _DURATION,
                "usageSamplingInterval": _DURATION,
                "resourceWeights": {"type": "object", "additionalProperties": {"type": "number"}},
            }
        ),
    },
    ("apiVersion", "kind"),
)

# --- loading -------------------------------------------------------------------------------------

_DOMAIN_PATH = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[-A-Za-z0-9._~!$&'()*+,;=:@/]+$")


def _schema_errors(raw: dict[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    validator = jsonschema.Draft7Validator(CONFIG_SCHEMA)
    for err in sorted(validator.iter_errors(raw), key=lambda e: list(map(str, e.absolute_path))):
        path = path_of(list(err.absolute_path))
        if err.validator == "additionalProperties":
            known = err.schema.get("properties", {})
            errors += [
                FieldError(join_path(path, name), f'Invalid value: unknown field "{name}"')
                for name in err.instance
                if name not in known
            ]
        elif err.validator == "required":
            errors += [FieldError.required(join_path(path, n)) for n in err.validator_value if n not in err.instance]
        elif err.validator == "enum":
            errors.append(FieldError.not_supported(path, err.instance, err.validator_value))
        elif err.validator == "pattern":
            errors.append(FieldError.invalid(path, err.instance, f"should match '{err.validator_value}'"))
        elif err.validator == "type":
            errors.append(FieldError.invalid(path, err.instance, f"must be of type {err.validator_value}"))
        else:
            errors.append(FieldError.invalid(path, err.instance, err.message))
    return errors


def _semantic_errors(raw: dict[str, Any], cfg: Configuration) -> list[FieldError]:
    errors: list[FieldError] = []
    wfpr = raw.get("waitForPodsReady", {})
    if "timeout" in wfpr and cfg.wait_for_pods_ready.timeout <= 0:
        errors.append(FieldError.invalid("waitForPodsReady.timeout", wfpr["timeout"], "must be greater than 0"))
    strategy = cfg.wait_for_pods_ready.requeuing_strategy
    if strategy.backoff_max_seconds < strategy.backoff_base_seconds:
        errors.append(
            FieldError.invalid(
                "waitForPodsReady.requeuingStrategy.backoffMaxSeconds",
                strategy.backoff_max_seconds,
                "must be greater than or equal to backoffBaseSeconds",
            )
        )
    for i, name in enumerate(cfg.integrations.frameworks):
        if name not in SUPPORTED_FRAMEWORKS:
            errors.append(FieldError.not_supported(f"integrations.frameworks[{i}]", name, SUPPORTED_FRAMEWORKS))
    selector = cfg.managed_jobs_namespace_selector
    for protected in ("kube-system", cfg.namespace):
        # Judged by the namespace's name label alone, the one label every namespace carries.
        if matches(selector, {NAMESPACE_NAME_LABEL: protected}):
            errors.append(
                FieldError.invalid(
                    "managedJobsNamespaceSelector", "object", f"should not match the {protected} namespace"
                )
            )
    le = cfg.leader_election
    if le.leader_elect and not le.lease_duration > le.renew_deadline > le.retry_period > 0:
        errors.append(
            FieldError.invalid(
                "leaderElection.renewDeadline",
                raw.get("leaderElection", {}).get("renewDeadline", f"{le.renew_deadline}s"),
                "must be less than leaseDuration and greater than retryPeriod (both positive)",
            )
        )
    errors += _fair_sharing_errors(raw, cfg)
    dispatcher = cfg.multi_kueue.dispatcher_name
    if not _DOMAIN_PATH.match(dispatcher):
        errors.append(
            FieldError.invalid("multiKueue.dispatcherName", dispatcher, "must be a domain-prefixed path (e.g. acme.io/foo)")
        )
    errors += _incremental_dispatcher_errors(raw.get("multiKueue") or {}, dispatcher)
    return errors


def _incremental_dispatcher_errors(mk: dict[str, Any], dispatcher: str) -> list[FieldError]:
    """Kueue's ``validateMultiKueue`` for ``incrementalDispatcherConfig``: only with the
    Incremental dispatcher, and a ``stepSize`` of at least 1."""
    idc = mk.get("incrementalDispatcherConfig")
    if idc is None:
        return []
    path = "multiKueue.incrementalDispatcherConfig"
    errors: list[FieldError] = []
    if dispatcher != DISPATCHER_INCREMENTAL:
        errors.append(FieldError.invalid(
            path, "object", "incrementalDispatcherConfig is only valid when dispatcherName is set to the incremental dispatcher"
        ))  # fmt: skip
    step = idc.get("stepSize")
    if step is not None and step < 1:
        errors.append(FieldError.invalid(f"{path}.stepSize", step, "must be greater than or equal to 1"))
    return errors


def _fair_sharing_errors(raw: dict[str, Any], cfg: Configuration) -> list[FieldError]:
    """Kueue's ``validateFairSharing`` and ``validateAdmissionFairSharing``: an enabled fair
    sharing needs one of the accepted strategy lists; admission fair sharing needs a non-negative
    half-life, a positive sampling interval and non-negative resource weights."""
    errors: list[FieldError] = []
    fs = cfg.fair_sharing
    if fs.enable:
        if not fs.preemption_strategies:
            errors.append(FieldError.required("fairSharing.preemptionStrategies"))
        elif fs.preemption_strategies not in VALID_PREEMPTION_STRATEGY_SETS:
            errors.append(
                FieldError.not_supported(
                    "fairSharing.preemptionStrategies",
                    ",".join(fs.preemption_strategies),
                    [",".join(s) for s in VALID_PREEMPTION_STRATEGY_SETS],
                )
            )
    afs = cfg.admission_fair_sharing
    raw_afs = raw.get("admissionFairSharing") or {}
    if afs is not None:
        if afs.usage_half_life_time < 0:
            errors.append(
                FieldError.invalid("admissionFairSharing.usageHalfLifeTime", raw_afs.get("usageHalfLifeTime"),
                                   "must be greater than or equal to 0")
            )
        if afs.usage_sampling_interval <= 0:
            errors.append(
                FieldError.invalid("admissionFairSharing.usageSamplingInterval",
                                   raw_afs.get("usageSamplingInterval"), "must be greater than 0")
            )
        for resource, weight in sorted(afs.resource_weights.items()):
            if weight < 0:
                errors.append(
                    FieldError.invalid(f"admissionFairSharing.resourceWeights[{resource}]", weight,
                                       "must be greater than or equal to 0")
                )
    return errors


def _fair_sharing(raw: dict[str, Any]) -> FairSharing:
    """Kueue's v1beta1 defaulting: an enabled section without strategies gets both, in the
    default order; a disabled one is as good as absent."""
    fs = raw.get("fairSharing")
    if not isinstance(fs, dict) or not fs.get("enable", False):
        return FairSharing()
    strategies = fs.get("preemptionStrategies")
    return FairSharing(
        enable=True,
        preemption_strategies=tuple(strategies) if strategies else DEFAULT_PREEMPTION_STRATEGIES,
    )


def _admission_fair_sharing(raw: dict[str, Any]) -> AdmissionFairSharing | None:
    afs = raw.get("admissionFairSharing")
    if not isinstance(afs, dict):
        return None
    interval = _seconds(afs.get("usageSamplingInterval"), 300.0)
    return AdmissionFairSharing(
        usage_half_life_time=_seconds(afs.get("usageHalfLifeTime"), 0.0) or 0.0,
        # Kueue: an unset (zero) sampling interval defaults to five minutes.
        usage_sampling_interval=interval if interval else 300.0,
        resource_weights={str(k): float(v) for k, v in (afs.get("resourceWeights") or {}).items()},
    )


def _seconds(value: str | None, default: float | None) -> float | None:
    return default if value is None else parse_duration(value)


def _build(raw: dict[str, Any]) -> Configuration:
    """Turn a schema-valid document into the typed Configuration with Kueue's defaults."""
    namespace = raw.get("namespace", DEFAULT_NAMESPACE)
    w = raw.get("waitForPodsReady")
    if w is None:
        wait = WaitForPodsReady()
    else:
        rs = w.get("requeuingStrategy", {})
        timeout = _seconds(w.get("timeout"), 300.0)
        wait = WaitForPodsReady(
            enable=w.get("enable", False),
            timeout=timeout if timeout is not None else 300.0,
            # Kueue: blockAdmission defaults to true when waiting is enabled.
            block_admission=w.get("blockAdmission", w.get("enable", False)),
            recovery_timeout=_seconds(w.get("recoveryTimeout"), None),
            requeuing_strategy=RequeuingStrategy(
                timestamp=rs.get("timestamp", "Eviction"),
                backoff_limit_count=rs.get("backoffLimitCount"),
                backoff_base_seconds=rs.get("backoffBaseSeconds", 60),
                backoff_max_seconds=rs.get("backoffMaxSeconds", 3600),
            ),
        )
    cc, ig = raw.get("clientConnection", {}), raw.get("integrations", {})
    icm, le = raw.get("internalCertManagement", {}), raw.get("leaderElection", {})
    wh, mk = raw.get("webhook", {}), raw.get("multiKueue", {})
    return Configuration(
        namespace=namespace,
        manage_jobs_without_queue_name=raw.get("manageJobsWithoutQueueName", False),
        managed_jobs_namespace_selector=raw.get("managedJobsNamespaceSelector", default_namespace_selector(namespace)),
        wait_for_pods_ready=wait,
        client_connection=ClientConnection(qps=float(cc.get("qps", 20.0)), burst=cc.get("burst", 30)),
        integrations=Integrations(frameworks=tuple(ig.get("frameworks", ["batch/job"]))),
        internal_cert_management=InternalCertManagement(
            enable=icm.get("enable", True),
            webhook_service_name=icm.get("webhookServiceName", DEFAULT_WEBHOOK_SERVICE),
            webhook_secret_name=icm.get("webhookSecretName", DEFAULT_WEBHOOK_SECRET),
        ),
        leader_election=LeaderElection(
            leader_elect=le.get("leaderElect", True),
            resource_name=le.get("resourceName", DEFAULT_LEADER_ELECTION_ID),
            resource_namespace=le.get("resourceNamespace"),
            lease_duration=_seconds(le.get("leaseDuration"), 15.0) or 0.0,
            renew_deadline=_seconds(le.get("renewDeadline"), 10.0) or 0.0,
            retry_period=_seconds(le.get("retryPeriod"), 2.0) or 0.0,
        ),
        metrics_bind_address=raw.get("metrics", {}).get("bindAddress", ":8080"),
        health_probe_bind_address=raw.get("health", {}).get("healthProbeBindAddress", ":8081"),
        webhook=WebhookServer(
            port=wh.get("port", 9443),
            host=wh.get("host", ""),
            cert_dir=wh.get("certDir", "/tmp/k8s-webhook-server/serving-certs"),
        ),
        multi_kueue=MultiKueue(
            gc_interval=_seconds(mk.get("gcInterval"), 60.0) or 0.0,
            origin=mk.get("origin", "multikueue"),
            worker_lost_timeout=_seconds(mk.get("workerLostTimeout"), 900.0) or 0.0,
            dispatcher_name=mk.get("dispatcherName", DISPATCHER_ALL_AT_ONCE),
            incremental_step_size=(mk.get("incrementalDispatcherConfig") or {}).get("stepSize") or 3,
        ),
        fair_sharing=_fair_sharing(raw),
        admission_fair_sharing=_admission_fair_sharing(raw),
    )


# --- what pykueue cannot honour ---------------------------------------------------------------------

# Every multiKueue field (gcInterval, origin, workerLostTimeout, dispatcherName, v1beta2's
# incrementalDispatcherConfig.stepSize) is honoured by
# controller/multikueue; a field pykueue accepts but cannot honour would be listed here as
# ("snake_name", "camelName") and refused at start.
_MULTIKUEUE_FIELDS: tuple[tuple[str, str], ...] = ()
MULTIKUEUE_NOT_IMPLEMENTED = "pykueue does not implement this multiKueue setting"


def refused_fields(cfg: Configuration) -> list[FieldError]:
    """The valid settings neither program can honour, each naming its field.

    Kueue accepts them, so :func:`parse_config` does too; the programs refuse to start on them
    (:func:`require_supported`) rather than run while silently ignoring what the file asks for.
    Every ``multiKueue`` field is honoured since the Incremental and External dispatchers exist
    (docs/design/multikueue.md), and ``admissionFairSharing`` since admission fair sharing
    exists (docs/design/fair-sharing.md).
    """
    defaults = MultiKueue()
    refused = [
        FieldError(f"multiKueue.{camel}", f"Forbidden: {MULTIKUEUE_NOT_IMPLEMENTED}")
        for snake, camel in _MULTIKUEUE_FIELDS
        if getattr(cfg.multi_kueue, snake) != getattr(defaults, snake)
    ]
    return refused


def require_supported(cfg: Configuration, source: str | None = None) -> Configuration:
    """``cfg`` itself, or a :class:`ConfigError` listing :func:`refused_fields` on one line."""
    errors = refused_fields(cfg)
    if errors:
        raise ConfigError(errors, source)
    return cfg


CONFIG_V1BETA2_API_VERSION = f"{CONFIG_API_VERSION.rsplit('/', 1)[0]}/v1beta2"


def _from_v1beta2(raw: dict[str, Any]) -> tuple[dict[str, Any], list[FieldError]]:
    """A ``config.kueue.x-k8s.io/v1beta2`` document as the v1beta1 one it stands for.

    Kueue's v1beta2 (``apis/config/v1beta1/configuration_conversion.go``) differs from v1beta1, within
    the fields pykueue accepts, in two places: ``waitForPodsReady`` and ``fairSharing`` have no
    ``enable`` (the section's presence enables it), an unset ``blockAdmission`` means false, and
    v1beta2's ``fairSharing`` is not defaulted: its ``preemptionStrategies`` is required.
    """
    out = dict(raw, apiVersion=CONFIG_API_VERSION)
    fair = raw.get("fairSharing")
    if isinstance(fair, dict):
        if "enable" in fair:
            return out, [FieldError("fairSharing.enable", f'unknown field "fairSharing.enable" in {CONFIG_V1BETA2_API_VERSION} '
                                    "(the section's presence enables it)")]
        if not fair.get("preemptionStrategies"):
            return out, [FieldError.required("fairSharing.preemptionStrategies")]
        out["fairSharing"] = {**fair, "enable": True}
    wait = raw.get("waitForPodsReady")
    if not isinstance(wait, dict):
        return out, []
    if "enable" in wait:
        return out, [FieldError("waitForPodsReady.enable", f'unknown field "waitForPodsReady.enable" in {CONFIG_V1BETA2_API_VERSION} '
                                "(the section's presence enables it)")]
    out["waitForPodsReady"] = {**wait, "enable": True, "blockAdmission": wait.get("blockAdmission", False)}
    return out, []


def parse_config(raw: Any, source: str | None = None) -> Configuration:
    """Validate a decoded configuration document and return it with defaults; ConfigError if bad.

    Both Kueue's ``config.kueue.x-k8s.io/v1beta1`` and ``v1beta2`` are read.
    """
    if not isinstance(raw, dict):
        raise ConfigError([FieldError.invalid("", type(raw).__name__, "the configuration must be a YAML mapping")], source)
    if raw.get("apiVersion") == CONFIG_V1BETA2_API_VERSION:
        raw, errors = _from_v1beta2(raw)
        if errors:
            raise ConfigError(errors, source)
    elif isinstance(raw.get("multiKueue"), dict) and "incrementalDispatcherConfig" in raw["multiKueue"]:
        raise ConfigError([FieldError("multiKueue.incrementalDispatcherConfig",
                                      f'unknown field "multiKueue.incrementalDispatcherConfig" in {CONFIG_API_VERSION} '
                                      f"(a {CONFIG_V1BETA2_API_VERSION} field)")], source)  # fmt: skip
    errors = _schema_errors(raw)
    if errors:
        raise ConfigError(errors, source)
    cfg = _build(raw)
    errors = _semantic_errors(raw, cfg)
    if errors:
        raise ConfigError(errors, source)
    return cfg


def load_config(path: str | Path | None) -> Configuration:
    """Load and validate the configuration file at ``path``; ``None`` gives the defaults."""
    if path is None:
        return Configuration()
    source = str(path)
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError([FieldError("", f"cannot read {source}: {exc.strerror or exc}")], source) from exc
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError([FieldError("", f"{source} is not valid YAML{where}")], source) from exc
    return parse_config(raw, source)
