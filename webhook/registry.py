"""The webhooks pykueue registers: name, path, the resources and operations each one intercepts.

One table serves both the HTTP routes (:mod:`webhook.handlers` attaches a handler to every path) and
the webhook configuration objects the program writes in local mode (:mod:`webhook.configurations`);
the Helm chart's ``_webhooks.tpl`` lists the same entries for in-cluster installs.

The ``kueue.x-k8s.io`` hooks are Kueue's (v0.15 and later): ``v1beta2`` paths
(``/validate-kueue-x-k8s-io-v1beta2-workload``), as Kueue's ``pkg/webhooks`` registers them. Their
rules list both served versions, ``v1beta2`` first, so the apiserver sends each object in the
version its client wrote: a ``v1beta2`` write reaches the hooks with no conversion-webhook call, and
a ``v1beta1`` write costs only the conversions its storage in ``v1beta2`` needs (Kueue lists
``v1beta2`` alone because its handlers decode into ``v1beta2`` types; pykueue's read either
version, :mod:`webhook.handlers`). :data:`LEGACY_KUEUE_PATHS` are the ``v1beta1`` paths of the
configurations before this: still served, never registered, so the configurations an upgrade
replaces keep working until they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykueue.api import constants as c

MUTATING_CONFIGURATION_NAME = "pykueue-mutating-webhook-configuration"
VALIDATING_CONFIGURATION_NAME = "pykueue-validating-webhook-configuration"

_KUEUE_PATH_GROUP = c.GROUP.replace(".", "-")
# The versions the kueue.x-k8s.io hooks are registered for, the path's first.
KUEUE_HOOK_VERSIONS: tuple[str, ...] = (c.V1BETA2_VERSION, c.VERSION)


def kueue_path(verb: str, kind: str, version: str = KUEUE_HOOK_VERSIONS[0]) -> str:
    """Kueue's path of a kind's hook: ``/<verb>-kueue-x-k8s-io-<version>-<kind>``."""
    return f"/{verb}-{_KUEUE_PATH_GROUP}-{version}-{kind.lower()}"


@dataclass(frozen=True)
class Hook:
    """One entry of a webhook configuration.

    ``target`` is ``"job"`` for user workloads (namespace-scoped selectors apply) and ``"kueue"`` for
    pykueue's own objects (every object is seen). ``versions`` are the rule's ``apiVersions``.
    """

    name: str
    path: str
    group: str
    versions: tuple[str, ...]
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
        path=kueue_path(verb, kind),
        group=c.GROUP,
        versions=KUEUE_HOOK_VERSIONS,
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
    Hook("mjob.kb.io", "/mutate-batch-v1-job", "batch", ("v1",), "Job", ("jobs",), CREATE, "Namespaced", True, "job"),
    _kueue("mutate", "ClusterQueue", "clusterqueues", "Cluster", CREATE),
    _kueue("mutate", "ResourceFlavor", "resourceflavors", "Cluster", CREATE),
    _kueue("mutate", "Workload", "workloads", "Namespaced", CREATE),
    Hook("vjob.kb.io", "/validate-batch-v1-job", "batch", ("v1",), "Job", ("jobs",), CREATE_UPDATE, "Namespaced", False, "job"),
    _kueue("validate", "ClusterQueue", "clusterqueues", "Cluster", CREATE_UPDATE),
    _kueue("validate", "Cohort", "cohorts", "Cluster", CREATE_UPDATE),
    _kueue("validate", "LocalQueue", "localqueues", "Namespaced", CREATE_UPDATE),
    _kueue("validate", "ResourceFlavor", "resourceflavors", "Cluster", CREATE_UPDATE),
    # Status writes can break Workload invariants too (an admission naming a missing podSet).
    _kueue("validate", "Workload", "workloads", "Namespaced", CREATE_UPDATE, "workloads/status"),
    _kueue("validate", "AdmissionCheck", "admissionchecks", "Cluster", CREATE_UPDATE),
)

# The v1beta1 paths registered before the hooks moved to v1beta2: (path, the hook now serving it).
LEGACY_KUEUE_PATHS: tuple[tuple[str, Hook], ...] = tuple(
    (kueue_path("mutate" if hook.mutating else "validate", hook.kind, c.VERSION), hook)
    for hook in HOOKS
    if hook.target == "kueue"
)
