"""The webhooks pykueue registers: name, path, the resources and operations each one intercepts.

One table serves both the HTTP routes (:mod:`webhook.handlers` attaches a handler to every path) and
the webhook configuration objects the program writes in local mode (:mod:`webhook.configurations`);
the Helm chart's ``_webhooks.tpl`` lists the same entries for in-cluster installs.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykueue.api import constants as c

MUTATING_CONFIGURATION_NAME = "pykueue-mutating-webhook-configuration"
VALIDATING_CONFIGURATION_NAME = "pykueue-validating-webhook-configuration"

_KUEUE_PATH = f"{c.GROUP.replace('.', '-')}-{c.VERSION}"


@dataclass(frozen=True)
class Hook:
    """One entry of a webhook configuration.

    ``target`` is ``"job"`` for user workloads (namespace-scoped selectors apply) and ``"kueue"`` for
    pykueue's own objects (every object is seen).
    """

    name: str
    path: str
    group: str
    version: str
    kind: str
    resources: tuple[str, ...]
    operations: tuple[str, ...]
    scope: str
    mutating: bool
    target: str


def _kueue(verb: str, kind: str, plural: str, scope: str, operations: tuple[str, ...], *extra: str) -> Hook:
    prefix = "m" if verb == "mutate" else "v"
    return Hook(
        name=f"{prefix}{kind.lower()}.kb.io",
        path=f"/{verb}-{_KUEUE_PATH}-{kind.lower()}",
        group=c.GROUP,
        version=c.VERSION,
        kind=kind,
        resources=(plural, *extra),
        operations=operations,
        scope=scope,
        mutating=verb == "mutate",
        target="kueue",
    )


CREATE = ("CREATE",)
CREATE_UPDATE = ("CREATE", "UPDATE")

HOOKS: tuple[Hook, ...] = (
    Hook("mjob.kb.io", "/mutate-batch-v1-job", "batch", "v1", "Job", ("jobs",), CREATE, "Namespaced", True, "job"),
    _kueue("mutate", "ClusterQueue", "clusterqueues", "Cluster", CREATE),
    _kueue("mutate", "ResourceFlavor", "resourceflavors", "Cluster", CREATE),
    _kueue("mutate", "Workload", "workloads", "Namespaced", CREATE),
    Hook("vjob.kb.io", "/validate-batch-v1-job", "batch", "v1", "Job", ("jobs",), CREATE_UPDATE, "Namespaced", False, "job"),
    _kueue("validate", "ClusterQueue", "clusterqueues", "Cluster", CREATE_UPDATE),
    _kueue("validate", "Cohort", "cohorts", "Cluster", CREATE_UPDATE),
    _kueue("validate", "LocalQueue", "localqueues", "Namespaced", CREATE_UPDATE),
    _kueue("validate", "ResourceFlavor", "resourceflavors", "Cluster", CREATE_UPDATE),
    # Status writes can break Workload invariants too (an admission naming a missing podSet).
    _kueue("validate", "Workload", "workloads", "Namespaced", CREATE_UPDATE, "workloads/status"),
    _kueue("validate", "AdmissionCheck", "admissionchecks", "Cluster", CREATE_UPDATE),
)
