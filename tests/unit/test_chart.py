"""The Helm chart, rendered by the pinned helm: lint, structure, least-privilege RBAC, freshness.

helm is built on first use (``hack/helm.py``) rather than skipped when missing, so these tests
always look at a real render.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack import helm, render_install

NAMESPACE = "pykueue-system"
Obj = dict[str, Any]

CERT_MANAGER = {"certManager.enabled": "true"}


@pytest.fixture(scope="module")
def default_objects() -> list[Obj]:
    return helm.render_objects(namespace=NAMESPACE)


@pytest.fixture(scope="module")
def cert_manager_objects() -> list[Obj]:
    return helm.render_objects(namespace=NAMESPACE, set_values=CERT_MANAGER)


def find(objects: Iterable[Obj], kind: str, name: str | None = None) -> list[Obj]:
    return [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def one(objects: Iterable[Obj], kind: str, name: str) -> Obj:
    found = find(objects, kind, name)
    assert len(found) == 1, f"expected exactly one {kind} {name}, found {len(found)}"
    return found[0]


def container(deployment: Obj) -> Obj:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def args_of(deployment: Obj) -> dict[str, str]:
    """``--flag=value`` arguments as a dict (bare flags map to "")."""
    parsed: dict[str, str] = {}
    for arg in container(deployment)["args"]:
        flag, _, value = arg.partition("=")
        parsed[flag] = value
    return parsed


# --- RBAC evaluation, as the apiserver's RBAC authorizer does it ---------------------------------


def rule_allows(rule: Obj, group: str, resource: str, verb: str, name: str | None) -> bool:
    if group not in rule.get("apiGroups", []) and "*" not in rule.get("apiGroups", []):
        return False
    if resource not in rule.get("resources", []) and "*" not in rule.get("resources", []):
        return False
    if verb not in rule.get("verbs", []) and "*" not in rule.get("verbs", []):
        return False
    names = rule.get("resourceNames")
    return not names or (name is not None and name in names)


def bound_rules(objects: list[Obj], service_account: str, namespace: str | None) -> list[Obj]:
    """Rules granted to the service account: cluster-wide (namespace None) or in `namespace`."""
    rules: list[Obj] = []
    for binding in find(objects, "ClusterRoleBinding") + find(objects, "RoleBinding"):
        subjects = binding.get("subjects", [])
        if not any(s["kind"] == "ServiceAccount" and s["name"] == service_account for s in subjects):
            continue
        if binding["kind"] == "RoleBinding" and binding["metadata"]["namespace"] != namespace:
            continue
        ref = binding["roleRef"]
        role = one(objects, ref["kind"], ref["name"])
        rules += role["rules"]
    return rules


def allowed(
    objects: list[Obj],
    sa: str,
    verb: str,
    group: str,
    resource: str,
    *,
    namespace: str | None = None,
    name: str | None = None,
) -> bool:
    return any(rule_allows(r, group, resource, verb, name) for r in bound_rules(objects, sa, namespace))


# --- lint and render -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [{}, CERT_MANAGER, {"metrics.serviceMonitor.enabled": "true"}],
    ids=["default", "cert-manager", "service-monitor"],
)
def test_helm_lint_strict_passes(values: dict[str, str]) -> None:
    result = helm.lint(set_values=values)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"webhook.replicas": "two"}, "/webhook/replicas': got string, want integer"),
        ({"webhook.podAntiAffinity": "maybe"}, "/webhook/podAntiAffinity': value must be one of"),
        ({"certmanager.enabled": "true"}, "additional properties 'certmanager' not allowed"),
        ({"controller.config.namespace": "elsewhere"}, "invalid propertyName 'namespace'"),
        # The Pods' ports and probes follow controller.metricsPort/healthPort and webhook.port.
        ({"controller.config.metrics.bindAddress": ":9090"}, "invalid propertyName 'metrics'"),
        ({"controller.config.webhook.port": "9444"}, "invalid propertyName 'webhook'"),
        ({"webhook.externalURL": "http://127.0.0.1:9443"}, "/webhook/externalURL'"),
        ({"certManager.issuerRef.kind": "Issuers"}, "/certManager/issuerRef/kind'"),
    ],
)
def test_bad_values_are_refused_naming_the_field(values: dict[str, str], message: str) -> None:
    with pytest.raises(helm.HelmError) as refused:
        helm.render(set_values=values)
    assert message in str(refused.value)


def test_default_render_has_every_component(default_objects: list[Obj]) -> None:
    kinds = {(o["kind"], o["metadata"]["name"]) for o in default_objects}
    for expected in [
        ("Deployment", "pykueue-controller"),
        ("Deployment", "pykueue-webhook"),
        ("Service", "pykueue-webhook-service"),
        ("Service", "pykueue-controller-metrics"),
        ("PodDisruptionBudget", "pykueue-webhook"),
        ("ConfigMap", "pykueue-manager-config"),
        ("Secret", "pykueue-webhook-server-cert"),
        ("MutatingWebhookConfiguration", "pykueue-mutating-webhook-configuration"),
        ("ValidatingWebhookConfiguration", "pykueue-validating-webhook-configuration"),
        ("ServiceAccount", "pykueue-controller"),
        ("ServiceAccount", "pykueue-webhook"),
    ]:
        assert expected in kinds
    assert not find(default_objects, "ServiceMonitor")
    assert not find(default_objects, "Certificate")
    for obj in default_objects:
        if _reads_the_front_proxy_ca(obj):
            assert obj["metadata"]["namespace"] == "kube-system"  # where the apiserver publishes it
        elif obj["kind"] not in {
            "APIService",
            "ClusterRole",
            "ClusterRoleBinding",
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        }:
            assert obj["metadata"]["namespace"] == NAMESPACE, obj["metadata"]["name"]


def _reads_the_front_proxy_ca(obj: Obj) -> bool:
    """The visibility API's binding to Kubernetes' own extension-apiserver-authentication-reader."""
    return obj["kind"] == "RoleBinding" and obj["roleRef"]["name"] == "extension-apiserver-authentication-reader"


def test_install_manifest_and_chart_crds_are_fresh() -> None:
    stale = render_install.stale_files()
    assert stale == [], f"stale generated files {stale}: run `make generate`"


def test_install_manifest_is_the_default_render_plus_namespace() -> None:
    docs = [d for d in yaml.safe_load_all(render_install.INSTALL_MANIFEST.read_text()) if d]
    assert docs[0] == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": NAMESPACE, "labels": {"app.kubernetes.io/name": "pykueue"}},
    }
    crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    assert len(crds) == len(render_install.expected_chart_crds())
    assert {"Deployment", "MutatingWebhookConfiguration", "ClusterRole"} <= {d["kind"] for d in docs}


# --- workloads: availability and hardening -------------------------------------------------------


def test_webhook_is_highly_available(default_objects: list[Obj]) -> None:
    webhook = one(default_objects, "Deployment", "pykueue-webhook")
    assert webhook["spec"]["replicas"] >= 2
    assert webhook["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    anti = webhook["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    term = anti["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert term["labelSelector"]["matchLabels"] == webhook["spec"]["selector"]["matchLabels"]
    pdb = one(default_objects, "PodDisruptionBudget", "pykueue-webhook")
    assert pdb["spec"]["selector"]["matchLabels"] == webhook["spec"]["selector"]["matchLabels"]
    assert pdb["spec"]["minAvailable"] < webhook["spec"]["replicas"]


def test_a_terminating_webhook_pod_keeps_serving_while_the_service_stops_routing_to_it(
    default_objects: list[Obj],
) -> None:
    webhook = one(default_objects, "Deployment", "pykueue-webhook")
    assert container(webhook)["lifecycle"] == {"preStop": {"sleep": {"seconds": 5}}}
    # The sleep and gunicorn's graceful stop (10 s) fit in the grace period.
    assert webhook["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= 5 + 10
    off = one(helm.render_objects(set_values={"webhook.preStopSleepSeconds": "0"}), "Deployment", "pykueue-webhook")
    assert "lifecycle" not in container(off)
    # The sleep action is GA in 1.34 and on by default since 1.30; before that it is not rendered.
    old = helm.run_helm("template", "pykueue", str(helm.CHART_DIR), "--namespace", NAMESPACE,
                        "--kube-version", "1.29.0").stdout  # fmt: skip
    on_129 = one([d for d in yaml.safe_load_all(old) if d], "Deployment", "pykueue-webhook")
    assert "lifecycle" not in container(on_129)


def test_hard_anti_affinity_is_required_scheduling() -> None:
    objects = helm.render_objects(set_values={"webhook.podAntiAffinity": "hard"})
    anti = one(objects, "Deployment", "pykueue-webhook")["spec"]["template"]["spec"]["affinity"][
        "podAntiAffinity"
    ]
    assert list(anti) == ["requiredDuringSchedulingIgnoredDuringExecution"]


def test_pdb_that_would_block_every_drain_is_refused() -> None:
    with pytest.raises(helm.HelmError, match=r"webhook.replicas \(1\) must be greater than"):
        helm.render(set_values={"webhook.replicas": "1"})


@pytest.mark.parametrize("name", ["pykueue-controller", "pykueue-webhook"])
def test_pods_are_hardened(default_objects: list[Obj], name: str) -> None:
    deployment = one(default_objects, "Deployment", name)
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert isinstance(pod["securityContext"]["runAsUser"], int) and pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    c = container(deployment)
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert "memory" in c["resources"]["limits"] and "cpu" in c["resources"]["requests"]
    assert {"startupProbe", "livenessProbe", "readinessProbe"} <= set(c)
    # The only writable paths are emptyDirs: /tmp (and the cert dir under it).
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
    assert mounts["/etc/pykueue"].get("readOnly") is True


def test_controller_command_line(default_objects: list[Obj]) -> None:
    controller = one(default_objects, "Deployment", "pykueue-controller")
    assert container(controller)["command"] == ["pykueue-controller"]
    args = args_of(controller)
    assert "--leader-elect" in args
    assert args["--namespace"] == NAMESPACE
    assert args["--config"] == "/etc/pykueue/config.yaml"
    assert args["--health-addr"] == "0.0.0.0:8081"
    assert args["--metrics-addr"] == "0.0.0.0:8080"
    assert args["--identity"] == "$(POD_NAME)"
    env = {e["name"] for e in container(controller)["env"]}
    assert "POD_NAME" in env


def rendered_config_file(objects: list[Obj], tmp_path: Path) -> Path:
    """The ConfigMap's config.yaml written where a test can pass it as --config."""
    path = tmp_path / "config.yaml"
    path.write_text(one(objects, "ConfigMap", "pykueue-manager-config")["data"]["config.yaml"])
    return path


def with_config(args: list[str], path: Path) -> list[str]:
    """A Deployment's arguments with --config pointing at ``path`` instead of the mounted file."""
    assert "--config=/etc/pykueue/config.yaml" in args
    return [f"--config={path}" if a.startswith("--config=") else a for a in args]


def test_controller_command_line_is_accepted_by_the_controller(default_objects: list[Obj], tmp_path: Path) -> None:
    """The controller's arguments and the rendered Configuration resolve as the chart means them:
    the listeners from the flags (the Pod's ports), the client limits from clientConnection."""
    from controller.main import build_parser, client_limits, listeners, load_configuration

    path = rendered_config_file(default_objects, tmp_path)
    args = build_parser().parse_args(
        with_config(container(one(default_objects, "Deployment", "pykueue-controller"))["args"], path)
    )
    assert args.leader_elect is True
    assert args.namespace == NAMESPACE
    assert (args.qps, args.burst) == (None, None), "the limits travel in the Configuration"
    config = load_configuration(args.config)
    limits = client_limits(config, args)
    assert (limits.qps, limits.burst) == (50.0, 100)
    addresses = listeners(config, args)
    assert (addresses.health, addresses.metrics) == ("0.0.0.0:8081", "0.0.0.0:8080")


def test_client_connection_in_the_values_config_wins_over_the_qps_value(tmp_path: Path) -> None:
    from pykueue.api.config import load_config

    objects = helm.render_objects(set_values={"controller.qps": "5", "controller.config.clientConnection.burst": "7"})
    config = load_config(rendered_config_file(objects, tmp_path))
    assert (config.client_connection.qps, config.client_connection.burst) == (5.0, 7)


def test_controller_replicas_and_leader_election_are_values() -> None:
    objects = helm.render_objects(set_values={"controller.replicas": "3", "controller.leaderElect": "false"})
    controller = one(objects, "Deployment", "pykueue-controller")
    assert controller["spec"]["replicas"] == 3
    assert "--no-leader-elect" in args_of(controller)


def test_webhook_command_line_self_provisioned(default_objects: list[Obj]) -> None:
    webhook = one(default_objects, "Deployment", "pykueue-webhook")
    assert container(webhook)["command"] == ["pykueue-webhook"]
    args = args_of(webhook)
    assert args["--cert-management"] == "internal"
    assert args["--cert-secret"] == "pykueue-webhook-server-cert"
    assert args["--service-name"] == "pykueue-webhook-service"
    assert args["--namespace"] == NAMESPACE
    assert args["--controller-username"] == f"system:serviceaccount:{NAMESPACE}:pykueue-controller"
    assert args["--port"] == "9443"
    secret = one(default_objects, "Secret", "pykueue-webhook-server-cert")
    assert "data" not in secret, "the chart must not ship key material"


def test_controller_username_follows_the_release_name() -> None:
    objects = helm.render_objects(release="team-a", namespace="queues")
    args = args_of(one(objects, "Deployment", "team-a-pykueue-webhook"))
    assert args["--controller-username"] == "system:serviceaccount:queues:team-a-pykueue-controller"
    assert one(objects, "ServiceAccount", "team-a-pykueue-controller")
    # The webhook program patches its CA bundle into these exact names, whatever the release.
    assert [c["metadata"]["name"] for c in webhook_configurations(objects)] == [
        "pykueue-mutating-webhook-configuration",
        "pykueue-validating-webhook-configuration",
    ]


def test_configuration_rendered_from_values() -> None:
    objects = helm.render_objects(set_values={"controller.config.manageJobsWithoutQueueName": "true"})
    config = yaml.safe_load(one(objects, "ConfigMap", "pykueue-manager-config")["data"]["config.yaml"])
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta1"
    assert config["kind"] == "Configuration"
    assert config["namespace"] == NAMESPACE
    assert config["manageJobsWithoutQueueName"] is True
    assert config["internalCertManagement"] == {
        "enable": True,
        "webhookServiceName": "pykueue-webhook-service",
        "webhookSecretName": "pykueue-webhook-server-cert",
    }
    # With every Job managed, the validating Job hook must see unlabelled Jobs too.
    validating = one(objects, "ValidatingWebhookConfiguration", "pykueue-validating-webhook-configuration")
    job_hook = next(h for h in validating["webhooks"] if h["rules"][0]["resources"] == ["jobs"])
    assert "objectSelector" not in job_hook


@pytest.mark.parametrize(
    "values",
    [
        {},
        CERT_MANAGER,
        {
            "controller.config.manageJobsWithoutQueueName": "true",
            "controller.config.waitForPodsReady.enable": "true",
        },
    ],
    ids=["default", "cert-manager", "customised"],
)
def test_rendered_configuration_loads_in_the_programs(tmp_path: Path, values: dict[str, str]) -> None:
    """Both programs read the ConfigMap with pykueue.api.config.load_config; it must accept it,
    and nothing in it may be refused at start (require_supported)."""
    from pykueue.api.config import load_config, require_supported

    objects = helm.render_objects(namespace=NAMESPACE, set_values=values)
    path = tmp_path / "config.yaml"
    path.write_text(one(objects, "ConfigMap", "pykueue-manager-config")["data"]["config.yaml"])
    config = require_supported(load_config(path), str(path))
    assert config.namespace == NAMESPACE
    assert (config.client_connection.qps, config.client_connection.burst) == (50.0, 100)
    assert config.internal_cert_management.enable is (values != CERT_MANAGER)
    assert config.internal_cert_management.webhook_secret_name == "pykueue-webhook-server-cert"
    assert config.integrations.frameworks == ("batch/job",)
    customised = "controller.config.manageJobsWithoutQueueName" in values
    assert config.manage_jobs_without_queue_name is customised
    assert config.wait_for_pods_ready.enable is customised


def test_a_configuration_the_programs_reject_is_caught(tmp_path: Path) -> None:
    """The check above can fail: a field load_config does not know is refused, naming it."""
    from pykueue.api.config import ConfigError, load_config

    objects = helm.render_objects(set_values={"controller.config.featureGates.TopologyAwareScheduling": "true"})
    path = tmp_path / "config.yaml"
    path.write_text(one(objects, "ConfigMap", "pykueue-manager-config")["data"]["config.yaml"])
    with pytest.raises(ConfigError, match="featureGates"):
        load_config(path)


@pytest.mark.parametrize("values", [{}, CERT_MANAGER], ids=["default", "cert-manager"])
def test_webhook_command_line_is_accepted_by_the_webhook(tmp_path: Path, values: dict[str, str]) -> None:
    """The webhook's arguments with the rendered Configuration: flags and file agree."""
    from webhook.main import parse_args

    objects = helm.render_objects(namespace=NAMESPACE, set_values=values)
    args = container(one(objects, "Deployment", "pykueue-webhook"))["args"]
    settings = parse_args(with_config(args, rendered_config_file(objects, tmp_path)))
    cert_management = "external" if values else "internal"
    assert settings.cert_management == cert_management
    assert settings.configuration.internal_cert_management.enable is (cert_management == "internal")
    assert settings.service_name == settings.configuration.internal_cert_management.webhook_service_name
    assert settings.cert_secret == settings.configuration.internal_cert_management.webhook_secret_name
    assert settings.namespace == NAMESPACE
    assert settings.cert_secret == "pykueue-webhook-server-cert"
    assert settings.service_name == "pykueue-webhook-service"
    assert settings.port == 9443 and settings.workers == 2
    assert str(settings.cert_dir).startswith("/tmp/"), "the only writable path is the /tmp emptyDir"


def test_external_url_replaces_the_service_reference() -> None:
    objects = helm.render_objects(set_values={"webhook.externalURL": "https://127.0.0.1:9443/"})
    for configuration in webhook_configurations(objects):
        for hook in configuration["webhooks"]:
            assert "service" not in hook["clientConfig"]
            assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:9443/")
            assert (
                hook["clientConfig"]["url"]
                .removeprefix("https://127.0.0.1:9443")
                .startswith(("/mutate-", "/validate-"))
            )


def test_configuration_change_rolls_the_pods() -> None:
    def checksum(objects: list[Obj]) -> str:
        deployment = one(objects, "Deployment", "pykueue-controller")
        return deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"]

    before = checksum(helm.render_objects())
    after = checksum(helm.render_objects(set_values={"controller.config.waitForPodsReady.enable": "true"}))
    assert before != after


# --- webhook configurations ----------------------------------------------------------------------


def webhook_configurations(objects: list[Obj]) -> list[Obj]:
    return [
        one(objects, "MutatingWebhookConfiguration", "pykueue-mutating-webhook-configuration"),
        one(objects, "ValidatingWebhookConfiguration", "pykueue-validating-webhook-configuration"),
    ]


def test_webhook_entries_fail_closed_and_target_the_service(default_objects: list[Obj]) -> None:
    service = one(default_objects, "Service", "pykueue-webhook-service")
    webhook = one(default_objects, "Deployment", "pykueue-webhook")
    assert service["spec"]["selector"] == webhook["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"][0]["targetPort"] == container(webhook)["ports"][0]["name"]
    names: set[str] = set()
    for configuration in webhook_configurations(default_objects):
        assert configuration["webhooks"], configuration["metadata"]["name"]
        for hook in configuration["webhooks"]:
            assert hook["name"] not in names
            names.add(hook["name"])
            assert hook["failurePolicy"] == "Fail"
            assert hook["sideEffects"] == "None"
            assert hook["admissionReviewVersions"] == ["v1"]
            assert "caBundle" not in hook["clientConfig"], "the CA bundle is injected, never rendered"
            ref = hook["clientConfig"]["service"]
            assert (ref["name"], ref["namespace"], ref["port"]) == (
                "pykueue-webhook-service",
                NAMESPACE,
                service["spec"]["ports"][0]["port"],
            )
            assert ref["path"].startswith(("/mutate-", "/validate-"))


def test_webhook_entries_match_the_webhook_registry(default_objects: list[Obj]) -> None:
    from webhook.registry import HOOKS, MUTATING_CONFIGURATION_NAME, VALIDATING_CONFIGURATION_NAME

    mutating, validating = webhook_configurations(default_objects)
    assert (mutating["metadata"]["name"], validating["metadata"]["name"]) == (
        MUTATING_CONFIGURATION_NAME,
        VALIDATING_CONFIGURATION_NAME,
    )
    rendered = {
        (
            hook["name"],
            hook["clientConfig"]["service"]["path"],
            configuration is mutating,
            tuple(rule["apiGroups"]),
            tuple(rule["apiVersions"]),
            tuple(rule["resources"]),
            tuple(rule["operations"]),
            rule["scope"],
        )
        for configuration in (mutating, validating)
        for hook in configuration["webhooks"]
        for rule in hook["rules"]
    }
    registered = {
        (h.name, h.path, h.mutating, (h.group,), h.versions, h.resources, h.operations, h.scope)
        for h in HOOKS
    }
    assert rendered == registered


def test_job_hooks_exclude_the_release_namespace(default_objects: list[Obj]) -> None:
    mutating, validating = webhook_configurations(default_objects)
    job_hooks = [
        h for c in (mutating, validating) for h in c["webhooks"] if h["rules"][0]["resources"] == ["jobs"]
    ]
    assert len(job_hooks) == 2
    for hook in job_hooks:
        (expression,) = hook["namespaceSelector"]["matchExpressions"]
        assert expression["key"] == "kubernetes.io/metadata.name"
        assert expression["operator"] == "NotIn"
        assert {NAMESPACE, "kube-system"} <= set(expression["values"])
    # Only labelled Jobs need validating; every Job is mutated (queue-name defaulting).
    mutating_job = next(h for h in mutating["webhooks"] if h["rules"][0]["resources"] == ["jobs"])
    validating_job = next(h for h in validating["webhooks"] if h["rules"][0]["resources"] == ["jobs"])
    assert "objectSelector" not in mutating_job
    assert validating_job["objectSelector"]["matchExpressions"][0]["key"] == "kueue.x-k8s.io/queue-name"
    for hook in mutating["webhooks"] + validating["webhooks"]:
        if hook["rules"][0]["apiGroups"] == ["kueue.x-k8s.io"]:
            assert "namespaceSelector" not in hook, "Kueue objects are checked wherever they live"


# --- RBAC ----------------------------------------------------------------------------------------

CORE_GROUPS = {
    "",
    "apps",
    "batch",
    "policy",
    "coordination.k8s.io",
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
    "scheduling.k8s.io",
    "events.k8s.io",
}


@pytest.mark.parametrize("variant", ["default", "cert-manager"])
def test_no_wildcards_in_rbac(
    default_objects: list[Obj], cert_manager_objects: list[Obj], variant: str
) -> None:
    objects = default_objects if variant == "default" else cert_manager_objects
    roles = find(objects, "ClusterRole") + find(objects, "Role")
    assert roles
    for role in roles:
        for rule in role["rules"]:
            assert "*" not in rule["verbs"], role["metadata"]["name"]
            assert "*" not in rule.get("resources", []), role["metadata"]["name"]
            assert "*" not in rule.get("apiGroups", []), role["metadata"]["name"]
            if set(rule["apiGroups"]) & CORE_GROUPS:
                assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"])


def test_each_program_has_its_own_service_account(default_objects: list[Obj]) -> None:
    controller = one(default_objects, "Deployment", "pykueue-controller")
    webhook = one(default_objects, "Deployment", "pykueue-webhook")
    controller_sa = controller["spec"]["template"]["spec"]["serviceAccountName"]
    webhook_sa = webhook["spec"]["template"]["spec"]["serviceAccountName"]
    assert (controller_sa, webhook_sa) == ("pykueue-controller", "pykueue-webhook")
    for binding in find(default_objects, "ClusterRoleBinding") + find(default_objects, "RoleBinding"):
        (subject,) = binding["subjects"]
        if _reads_the_front_proxy_ca(binding):
            assert subject["name"] == "pykueue-controller"
            continue
        assert binding["roleRef"]["name"] == subject["name"], "each role is bound to its own program only"


CONTROLLER_NEEDS = [
    ("kueue.x-k8s.io", "workloads", ["get", "list", "watch", "create", "patch", "delete"]),
    ("kueue.x-k8s.io", "workloads/status", ["patch", "update"]),
    ("kueue.x-k8s.io", "clusterqueues", ["get", "list", "watch"]),
    ("kueue.x-k8s.io", "clusterqueues/status", ["patch"]),
    ("kueue.x-k8s.io", "localqueues/status", ["patch"]),
    ("kueue.x-k8s.io", "admissionchecks/status", ["patch"]),
    ("kueue.x-k8s.io", "resourceflavors", ["get", "list", "watch"]),
    ("kueue.x-k8s.io", "cohorts", ["list", "watch"]),
    ("kueue.x-k8s.io", "workloadpriorityclasses", ["list", "watch"]),
    ("kueue.x-k8s.io", "provisioningrequestconfigs", ["list", "watch"]),
    ("kueue.x-k8s.io", "multikueueclusters/status", ["patch"]),
    ("batch", "jobs", ["get", "list", "watch", "patch", "update"]),
    ("batch", "jobs/status", ["patch"]),
    ("", "pods", ["list", "watch", "delete"]),
    ("", "events", ["create", "patch"]),
    ("", "nodes", ["get", "list", "watch"]),
    ("", "namespaces", ["get", "list", "watch"]),
    ("scheduling.k8s.io", "priorityclasses", ["get", "list", "watch"]),
    ("", "podtemplates", ["create", "get", "list", "watch", "delete"]),
    ("autoscaling.x-k8s.io", "provisioningrequests", ["create", "get", "list", "watch", "delete"]),
]


def test_controller_may_do_what_it_needs(default_objects: list[Obj]) -> None:
    for group, resource, verbs in CONTROLLER_NEEDS:
        for verb in verbs:
            assert allowed(default_objects, "pykueue-controller", verb, group, resource), (
                group,
                resource,
                verb,
            )
    for verb in ["get", "create", "update", "patch"]:
        assert allowed(
            default_objects, "pykueue-controller", verb, "coordination.k8s.io", "leases", namespace=NAMESPACE
        )


def test_controller_may_not_do_more(default_objects: list[Obj]) -> None:
    sa = "pykueue-controller"
    assert not allowed(default_objects, sa, "get", "", "secrets"), "no cluster-wide Secret access"
    assert not allowed(default_objects, sa, "get", "", "secrets", namespace="default")
    assert allowed(default_objects, sa, "get", "", "secrets", namespace=NAMESPACE), "MultiKueue kubeconfigs"
    assert not allowed(default_objects, sa, "list", "", "secrets", namespace=NAMESPACE), "read one by one"
    assert not allowed(default_objects, sa, "create", "batch", "jobs")
    assert not allowed(default_objects, sa, "create", "", "pods")
    assert not allowed(default_objects, sa, "patch", "", "nodes")
    for verb in ("update", "patch"):  # the provisioning check only creates and deletes them
        assert not allowed(default_objects, sa, verb, "", "podtemplates")
        assert not allowed(default_objects, sa, verb, "autoscaling.x-k8s.io", "provisioningrequests")
        assert not allowed(default_objects, sa, verb, "autoscaling.x-k8s.io", "provisioningrequests/status")
    assert not allowed(default_objects, sa, "get", "coordination.k8s.io", "leases"), (
        "leases only in its namespace"
    )
    assert not allowed(
        default_objects,
        sa,
        "patch",
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        name="pykueue-mutating-webhook-configuration",
    )


def test_webhook_rbac_is_scoped_to_its_own_objects(default_objects: list[Obj]) -> None:
    sa = "pykueue-webhook"
    secret = "pykueue-webhook-server-cert"
    # Exactly what webhook/certprovision.py does with it: get, update (replace) and create.
    for verb in ["get", "update", "create"]:
        assert allowed(default_objects, sa, verb, "", "secrets", namespace=NAMESPACE, name=secret)
    for verb in ["get", "update"]:
        assert not allowed(default_objects, sa, verb, "", "secrets", namespace=NAMESPACE, name="someone-else")
    assert not allowed(default_objects, sa, "patch", "", "secrets", namespace=NAMESPACE, name=secret)
    assert not allowed(default_objects, sa, "delete", "", "secrets", namespace=NAMESPACE, name=secret)
    assert not allowed(default_objects, sa, "list", "", "secrets", namespace=NAMESPACE)
    assert not allowed(default_objects, sa, "get", "", "secrets", name=secret), (
        "no cluster-wide Secret access"
    )
    for kind, name in [
        ("mutatingwebhookconfigurations", "pykueue-mutating-webhook-configuration"),
        ("validatingwebhookconfigurations", "pykueue-validating-webhook-configuration"),
    ]:
        for verb in ["get", "patch"]:
            assert allowed(default_objects, sa, verb, "admissionregistration.k8s.io", kind, name=name)
        assert not allowed(
            default_objects, sa, "patch", "admissionregistration.k8s.io", kind, name="other-webhook"
        )
        assert not allowed(default_objects, sa, "delete", "admissionregistration.k8s.io", kind, name=name)
    for resource in ["localqueues", "clusterqueues", "resourceflavors"]:
        assert allowed(default_objects, sa, "list", "kueue.x-k8s.io", resource)
        assert not allowed(default_objects, sa, "update", "kueue.x-k8s.io", resource)
    assert allowed(default_objects, sa, "get", "kueue.x-k8s.io", "cohorts")
    # webhook/cluster_state.py's optional reads (found on kind, where the webhook is its own user).
    for resource in ["workloadpriorityclasses", "admissionchecks"]:
        assert allowed(default_objects, sa, "get", "kueue.x-k8s.io", resource)
        assert not allowed(default_objects, sa, "list", "kueue.x-k8s.io", resource)
    assert allowed(default_objects, sa, "get", "", "namespaces")
    assert allowed(default_objects, sa, "get", "batch", "jobs")
    assert not allowed(default_objects, sa, "patch", "batch", "jobs")
    assert not allowed(default_objects, sa, "patch", "kueue.x-k8s.io", "workloads/status")


# --- cert-manager variant ------------------------------------------------------------------------


def test_cert_manager_variant(cert_manager_objects: list[Obj]) -> None:
    objects = cert_manager_objects
    certificate = one(objects, "Certificate", "pykueue-serving-cert")
    assert certificate["spec"]["secretName"] == "pykueue-webhook-server-cert"
    assert "pykueue-webhook-service.pykueue-system.svc" in certificate["spec"]["dnsNames"]
    issuer = one(objects, "Issuer", certificate["spec"]["issuerRef"]["name"])
    assert issuer["spec"] == {"selfSigned": {}}
    for configuration in webhook_configurations(objects):
        annotation = configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
        assert annotation == f"{NAMESPACE}/pykueue-serving-cert"
    webhook = one(objects, "Deployment", "pykueue-webhook")
    assert args_of(webhook)["--cert-management"] == "external"
    cert_volume = next(v for v in webhook["spec"]["template"]["spec"]["volumes"] if "secret" in v)
    assert cert_volume["secret"]["secretName"] == "pykueue-webhook-server-cert"
    assert [s["metadata"]["name"] for s in find(objects, "Secret")] == ["pykueue-visibility-server-cert"], (
        "cert-manager owns the webhook's Secret (the visibility API's is always self-provisioned)")
    config = yaml.safe_load(one(objects, "ConfigMap", "pykueue-manager-config")["data"]["config.yaml"])
    assert config["internalCertManagement"]["enable"] is False
    # cert-manager injects the bundle and writes the Secret, so the webhook needs neither right.
    sa = "pykueue-webhook"
    assert not allowed(
        objects,
        sa,
        "patch",
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        name="pykueue-mutating-webhook-configuration",
    )
    assert not allowed(
        objects, sa, "update", "", "secrets", namespace=NAMESPACE, name="pykueue-webhook-server-cert"
    )
    assert not allowed(objects, sa, "create", "", "secrets", namespace=NAMESPACE)
    assert not allowed(
        objects, sa, "get", "", "secrets", namespace=NAMESPACE, name="pykueue-webhook-server-cert"
    )
    assert not find(objects, "Role", "pykueue-webhook")
    # The CRDs' conversion webhook trusts the mounted ca.crt (webhook/crd_conversion.py MountedCaSync):
    # the injector cannot annotate the verbatim crds/, so the webhook patches exactly the Kueue CRDs.
    for plural in ("workloads", "clusterqueues", "admissionchecks"):
        assert allowed(objects, sa, "patch", "apiextensions.k8s.io", "customresourcedefinitions",
                       name=f"{plural}.kueue.x-k8s.io")
    assert not allowed(objects, sa, "patch", "apiextensions.k8s.io", "customresourcedefinitions",
                       name="certificates.cert-manager.io")
    cert_mount = next(m for m in webhook["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
                      if m["name"] == cert_volume["name"])
    assert cert_mount["readOnly"] is True  # tls.crt, tls.key and ca.crt, as cert-manager writes them


def test_cert_manager_with_an_existing_issuer() -> None:
    objects = helm.render_objects(
        set_values={
            **CERT_MANAGER,
            "certManager.issuerRef.name": "corp-ca",
            "certManager.issuerRef.kind": "ClusterIssuer",
        }
    )
    assert not find(objects, "Issuer")
    certificate = one(objects, "Certificate", "pykueue-serving-cert")
    assert certificate["spec"]["issuerRef"] == {"name": "corp-ca", "kind": "ClusterIssuer"}


def selects(selector: Obj, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector evaluated the way the Prometheus operator does."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        present = labels.get(expression["key"])
        if expression["operator"] == "In" and present not in expression["values"]:
            return False
    return True


def test_service_monitor_is_optional_and_scrapes_both_programs() -> None:
    objects = helm.render_objects(namespace=NAMESPACE, set_values={"metrics.serviceMonitor.enabled": "true"})
    monitor = one(objects, "ServiceMonitor", "pykueue")
    selected = [
        s for s in find(objects, "Service") if selects(monitor["spec"]["selector"], s["metadata"]["labels"])
    ]
    assert {s["metadata"]["name"] for s in selected} == {
        "pykueue-controller-metrics",
        "pykueue-webhook-service",
    }
    ports = {port["name"] for s in selected for port in s["spec"]["ports"]}
    endpoints = {e["port"]: e for e in monitor["spec"]["endpoints"]}
    assert set(endpoints) == ports == {"metrics", "webhook"}
    webhook_tls = endpoints["webhook"]["tlsConfig"]
    assert endpoints["webhook"]["scheme"] == "https"
    assert webhook_tls["ca"]["secret"] == {"name": "pykueue-webhook-server-cert", "key": "ca.crt"}
    assert webhook_tls["serverName"] == f"pykueue-webhook-service.{NAMESPACE}.svc"
    assert "insecureSkipVerify" not in webhook_tls
