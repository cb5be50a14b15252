"""The webhook through the real apiserver: kubectl sees its denials, patches, and warnings.

The apiserver applies the CRD schema (patterns, lengths, CEL) before it calls validating webhooks,
so each test asserts which layer answers. The concurrent-admission rules docs/design/api.md gives to the webhook
(StrictFIFO with concurrentAdmission, unique option names) are deliberately absent from the CRD and
assert the webhook's own denial; so do the rules only the webhook can check (names of this queue's
flavors, the option-name bound, Job state). A malformed option name is still caught by the CRD's
pattern, and that test says so.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import subprocess
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.builders import (
    ClusterQueueBuilder,
    JobBuilder,
    LocalQueueBuilder,
    SeedClusterQueueBuilder,
    WorkloadBuilder,
)
from tests.e2e.fixtures.webhook import WebhookHandle
from tests.e2e.helpers.kueue import KueueApi, make_queues
from tests.e2e.helpers.wait import wait_for

Obj = dict[str, Any]
CQ_WEBHOOK_DENIAL = 'admission webhook "vclusterqueue.kb.io" denied the request'
JOB_WEBHOOK_DENIAL = 'admission webhook "vjob.kb.io" denied the request'


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def kubectl_apply(cluster: Any, obj: Obj, *args: str) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("apply", "-f", "-", *args, input=json.dumps(obj), check=False)


def concurrent_cq(name: str, **concurrent: Any) -> Obj:
    cq = ClusterQueueBuilder(name).flavor("reservation", cpu="10").flavor("spot", cpu="10").obj()
    cq["spec"]["concurrentAdmission"] = {"onSuccess": "RemoveOther", **concurrent}
    return cq


@pytest.fixture
def cluster_queues(cluster: Any) -> Iterator[list[str]]:
    """Names of ClusterQueues a test created; removed afterwards (finalizer first: no controller here)."""
    names: list[str] = []
    yield names
    for name in names:
        cluster.kubectl(
            "patch",
            "clusterqueue",
            name,
            "--type=merge",
            "-p",
            '{"metadata":{"finalizers":null}}',
            check=False,
        )
        cluster.kubectl("delete", "clusterqueue", name, "--ignore-not-found", "--wait=false", check=False)


STRICT_FIFO_DENIAL = (
    'spec.concurrentAdmission: Invalid value: "object": concurrentAdmission is not supported with '
    "queueingStrategy StrictFIFO"
)
STRICT_FIFO_POLICY_DENIAL = (
    'spec.queueingStrategy: Invalid value: "StrictFIFO": StrictFIFO queueing strategy cannot be used when '
    "ConcurrentAdmissionPolicy is defined"
)


def test_strict_fifo_with_concurrent_admission_is_rejected_by_the_webhook(
    cluster: Any, webhook: WebhookHandle, cluster_queues: list[str]
) -> None:
    name = unique("strict")
    cluster_queues.append(name)  # removed again should the denial ever regress
    cq = concurrent_cq(name)
    cq["spec"]["queueingStrategy"] = "StrictFIFO"
    result = kubectl_apply(cluster, cq)
    assert result.returncode != 0
    assert CQ_WEBHOOK_DENIAL in result.stderr, result.stderr
    assert STRICT_FIFO_DENIAL in result.stderr, result.stderr


def test_switching_a_concurrent_queue_to_strict_fifo_is_rejected_by_the_webhook(
    cluster: Any, webhook: WebhookHandle, cluster_queues: list[str]
) -> None:
    """Denied in the words of the version patched: in v1beta1 on ``concurrentAdmission``; in
    v1beta2 (kubectl's preferred version), where the queue reads as Kueue's
    ``concurrentAdmissionPolicy``, in Kueue's words on ``queueingStrategy``."""
    name = unique("to-strict")
    cluster_queues.append(name)
    assert kubectl_apply(cluster, concurrent_cq(name)).returncode == 0
    for resource, denial in (("clusterqueues.v1beta1.kueue.x-k8s.io", STRICT_FIFO_DENIAL),
                             ("clusterqueue", STRICT_FIFO_POLICY_DENIAL)):
        result = cluster.kubectl(
            "patch", resource, name, "--type=merge", "-p", '{"spec":{"queueingStrategy":"StrictFIFO"}}', check=False
        )
        assert result.returncode != 0
        assert CQ_WEBHOOK_DENIAL in result.stderr, result.stderr
        assert denial in result.stderr, result.stderr
    stored = json.loads(cluster.kubectl("get", "clusterqueue", name, "-o", "json").stdout)
    assert stored["spec"]["queueingStrategy"] == "BestEffortFIFO"


def test_duplicate_option_names_are_rejected_by_the_webhook(
    cluster: Any, webhook: WebhookHandle, cluster_queues: list[str]
) -> None:
    name = unique("dup")
    cluster_queues.append(name)
    options = [
        {"name": "spot", "allowedResourceFlavors": ["spot"]},
        {"name": "spot", "allowedResourceFlavors": ["reservation"]},
    ]
    result = kubectl_apply(cluster, concurrent_cq(name, explicitOptions=options))
    assert result.returncode != 0
    assert CQ_WEBHOOK_DENIAL in result.stderr, result.stderr
    # The webhook's wording (docs/design/webhook.md): the key field and the value, not the apiserver's dump of the whole item.
    assert 'spec.concurrentAdmission.explicitOptions[1].name: Duplicate value: "spot"' in result.stderr, result.stderr


def test_malformed_option_name_is_rejected_by_the_crd_schema(cluster: Any, webhook: WebhookHandle) -> None:
    options = [{"name": "Spot_1", "allowedResourceFlavors": ["spot"]}]
    result = kubectl_apply(cluster, concurrent_cq(unique("bad"), explicitOptions=options))
    assert result.returncode != 0
    # The CRD's DNS-label pattern answers before the webhook is called.
    assert CQ_WEBHOOK_DENIAL not in result.stderr, result.stderr
    assert (
        'spec.concurrentAdmission.explicitOptions[0].name: Invalid value: "Spot_1": '
        "spec.concurrentAdmission.explicitOptions[0].name in body should match"
    ) in result.stderr, result.stderr


def test_option_name_too_long_for_option_workloads_is_rejected_by_the_webhook(
    cluster: Any, webhook: WebhookHandle
) -> None:
    name = "o" * 45  # a valid DNS label, but <workload>-option-<name> would not always fit
    options = [{"name": name, "allowedResourceFlavors": ["spot"]}]
    result = kubectl_apply(cluster, concurrent_cq(unique("long"), explicitOptions=options))
    assert result.returncode != 0
    assert CQ_WEBHOOK_DENIAL in result.stderr
    assert (
        f'spec.concurrentAdmission.explicitOptions[0].name: Invalid value: "{name}": must be no more than 40 '
        "characters" in result.stderr
    )


def test_option_flavors_must_belong_to_the_cluster_queue(cluster: Any, webhook: WebhookHandle) -> None:
    options = [{"name": "gpu", "allowedResourceFlavors": ["on-demand"]}]
    result = kubectl_apply(cluster, concurrent_cq(unique("flv"), explicitOptions=options))
    assert result.returncode != 0
    assert CQ_WEBHOOK_DENIAL in result.stderr
    assert (
        'spec.concurrentAdmission.explicitOptions[0].allowedResourceFlavors[0]: Unsupported value: "on-demand": '
        'supported values: "reservation", "spot"'
    ) in result.stderr


def test_valid_concurrent_cluster_queue_is_stored_with_finalizer(
    cluster: Any, webhook: WebhookHandle, cluster_queues: list[str]
) -> None:
    name = unique("ok")
    cluster_queues.append(name)
    options = [
        {"name": "res", "allowedResourceFlavors": ["reservation"]},
        {"name": "any", "allowedResourceFlavors": ["reservation", "spot"]},
    ]
    result = kubectl_apply(cluster, concurrent_cq(name, explicitOptions=options))
    assert result.returncode == 0, result.stderr
    stored = json.loads(cluster.kubectl("get", "clusterqueue", name, "-o", "json").stdout)
    assert stored["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]


def _job(cluster: Any, namespace: str, name: str) -> Obj:
    return json.loads(cluster.kubectl("get", "job", name, "-n", namespace, "-o", "json").stdout)


def test_queued_job_is_stored_suspended(cluster: Any, webhook: WebhookHandle, namespace: str) -> None:
    job = JobBuilder("queued", namespace).queue("team-a").requests(cpu="1").obj()
    assert "suspend" not in job["spec"]
    # A server-side dry run reaches the admission chain but never the controller (which would also
    # suspend a queued Job once stored): so `suspend: true` here is the mutating webhook's doing.
    dry_run = cluster.kubectl(
        "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(job), check=False
    )
    assert dry_run.returncode == 0, dry_run.stderr
    assert json.loads(dry_run.stdout)["spec"]["suspend"] is True
    result = kubectl_apply(cluster, job)
    assert result.returncode == 0, result.stderr
    assert _job(cluster, namespace, "queued")["spec"]["suspend"] is True


def test_unlabelled_job_gets_default_queue_and_is_suspended(
    cluster: Any, webhook: WebhookHandle, namespace: str
) -> None:
    assert kubectl_apply(cluster, LocalQueueBuilder("default", namespace, "cq-a").obj()).returncode == 0
    plain = JobBuilder("plain", namespace).requests(cpu="1").obj()
    assert kubectl_apply(cluster, plain).returncode == 0
    stored = _job(cluster, namespace, "plain")
    assert stored["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert stored["spec"]["suspend"] is True


def test_queue_name_of_running_job_is_immutable(
    cluster: Any, webhook: WebhookHandle, kueue: KueueApi, namespace: str
) -> None:
    job = JobBuilder("runner", namespace).queue("team-a").requests(cpu="1").run_seconds(-1).obj()
    assert kubectl_apply(cluster, job).returncode == 0
    # Suspended (no LocalQueue exists yet, so nothing admits it): moving it to another queue is fine.
    moved = cluster.kubectl(
        "label",
        "job",
        "runner",
        "-n",
        namespace,
        "--overwrite",
        "kueue.x-k8s.io/queue-name=team-b",
        check=False,
    )
    assert moved.returncode == 0, moved.stderr
    # The controller admits it through team-b and starts it; a Job unsuspended by hand would be
    # suspended again by the controller (it has no admitted Workload), so let admission run it.
    make_queues(kueue, namespace, "2", lq="team-b")
    wait_for(
        lambda: _job(cluster, namespace, "runner")["spec"].get("suspend") is False,
        timeout=60,
        message="the controller admits and starts the job",
    )
    denied = cluster.kubectl(
        "label",
        "job",
        "runner",
        "-n",
        namespace,
        "--overwrite",
        "kueue.x-k8s.io/queue-name=team-c",
        check=False,
    )
    assert denied.returncode != 0
    assert JOB_WEBHOOK_DENIAL in denied.stderr
    assert (
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "team-c": field is immutable while the job '
        "is running (not suspended)"
    ) in denied.stderr
    assert _job(cluster, namespace, "runner")["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-b"


def test_job_that_can_never_fit_gets_a_warning(
    cluster: Any, webhook: WebhookHandle, namespace: str, cluster_queues: list[str]
) -> None:
    cq_name = unique("small")
    cluster_queues.append(cq_name)
    assert (
        kubectl_apply(cluster, ClusterQueueBuilder(cq_name).flavor("default", cpu="4").obj()).returncode == 0
    )
    assert kubectl_apply(cluster, LocalQueueBuilder("small", namespace, cq_name).obj()).returncode == 0
    job = JobBuilder("huge", namespace).queue("small").parallelism(3).completions(3).requests(cpu="2").obj()
    result = kubectl_apply(cluster, job)
    assert result.returncode == 0, result.stderr
    assert (
        f'Warning: this job requests 6 cpu in total but ClusterQueue "{cq_name}" can provide at most 4 '
        "(nominal quota plus borrowing); it can never be admitted"
    ) in result.stderr
    fits = JobBuilder("fits", namespace).queue("small").parallelism(2).completions(2).requests(cpu="2").obj()
    result = kubectl_apply(cluster, fits)
    assert result.returncode == 0 and "Warning" not in result.stderr, result.stderr


def test_parent_workloads_are_written_only_by_the_controller(
    cluster: Any, webhook: WebhookHandle, namespace: str
) -> None:
    parent = WorkloadBuilder(unique("parent"), namespace).queue("team-a").podset(cpu="1").obj()
    parent["spec"]["workloadMode"] = {"type": "Parent"}
    as_user = kubectl_apply(cluster, parent, "--as=alice", "--as-group=system:masters")
    assert as_user.returncode != 0
    assert (
        "spec.workloadMode.type: Forbidden: Parent workloads are managed by the pykueue controller "
        f"({webhook.controller_username}); user 'alice' may not create or change them"
    ) in as_user.stderr
    # As the identity the webhook trusts as the controller: the test's own user on the local cluster,
    # the chart's controller service account on kind (impersonated with the admin's rights).
    as_controller = kubectl_apply(
        cluster, parent, f"--as={webhook.controller_username}", "--as-group=system:masters"
    )
    assert as_controller.returncode == 0, as_controller.stderr


def test_certificate_rotation_keeps_requests_succeeding(cluster: Any, webhook: WebhookHandle) -> None:
    """Delete the Secret (a forced rotation): a new CA and certificate are issued, injected and served."""

    def secret_ca() -> str:
        result = cluster.kubectl(
            "get",
            "secret",
            webhook.secret_name,
            "-n",
            webhook.namespace,
            "-o",
            "jsonpath={.data.ca\\.crt}",
            check=False,
        )
        return result.stdout.strip() if result.returncode == 0 else ""

    def bundles() -> list[str]:
        out = []
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            name = f"pykueue-{kind.removesuffix('webhookconfiguration')}-webhook-configuration"
            obj = json.loads(cluster.kubectl("get", kind, name, "-o", "json").stdout)
            out += [hook["clientConfig"].get("caBundle", "") for hook in obj["webhooks"]]
        return out

    old_ca = wait_for(secret_ca, timeout=30, message="the certificate Secret has a CA")
    served_before = served_certificate(webhook)
    probe = concurrent_cq(unique("probe"))
    outcomes: list[int] = []

    def admitted_through_the_webhook() -> None:
        """A server dry run of the probe; the finalizer shows the mutating webhook answered it."""
        result = cluster.kubectl(
            "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(probe), check=False
        )
        outcomes.append(result.returncode)
        assert result.returncode == 0, f"a request failed during rotation: {result.stderr}"
        assert json.loads(result.stdout)["metadata"].get("finalizers") == ["kueue.x-k8s.io/resource-in-use"]

    def rotated() -> bool:
        admitted_through_the_webhook()
        new_ca = secret_ca()
        if not new_ca or new_ca == old_ca:
            return False
        new_ca_pem = base64.b64decode(new_ca)
        if not all(new_ca_pem in base64.b64decode(bundle) for bundle in bundles()):
            return False
        return served_certificate(webhook) != served_before if served_before is not None else True

    cluster.kubectl("delete", "secret", webhook.secret_name, "-n", webhook.namespace)
    wait_for(rotated, timeout=60, interval=0.5, message="a new certificate is issued, injected and served")
    # Requests keep succeeding on the new certificate, and the old CA is still trusted meanwhile.
    for _ in range(5):
        admitted_through_the_webhook()
    assert set(outcomes) == {0}
    # The validating webhook answers on the new certificate too.
    strict = concurrent_cq(unique("probe-strict"))
    strict["spec"]["queueingStrategy"] = "StrictFIFO"
    denied = cluster.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(strict), check=False)
    assert denied.returncode != 0
    assert CQ_WEBHOOK_DENIAL in denied.stderr, denied.stderr
    assert all(base64.b64decode(old_ca) in base64.b64decode(bundle) for bundle in bundles())
    assert webhook.alive()


def served_certificate(webhook: WebhookHandle) -> bytes | None:
    """The DER certificate the local webhook presents now (None when it runs in the cluster)."""
    if webhook.local_url is None:
        return None
    url = urlparse(webhook.local_url)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with (
        socket.create_connection((url.hostname, url.port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=url.hostname) as tls,
    ):
        return tls.getpeercert(binary_form=True)


def _reserve(
    cluster: Any, namespace: str, name: str, *, pod_set: str = "main", count: int = 1
) -> subprocess.CompletedProcess[str]:
    """Write a quota reservation into the Workload's status, as the controller does on admission."""
    status = {
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": "reserved",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {
                        "name": pod_set,
                        "flavors": {"cpu": "default"},
                        "resourceUsage": {"cpu": "1"},
                        "count": count,
                    }
                ],
            },
        }
    }
    return cluster.kubectl(
        "patch",
        "workload",
        name,
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
        check=False,
    )


def test_workload_status_writes_are_validated(cluster: Any, webhook: WebhookHandle, namespace: str) -> None:
    name = unique("wl")
    workload = WorkloadBuilder(name, namespace).queue("team-a").podset(cpu="1").obj()
    assert kubectl_apply(cluster, workload).returncode == 0
    denied = _reserve(cluster, namespace, name, pod_set="other")
    assert denied.returncode != 0
    assert 'admission webhook "vworkload.kb.io" denied the request' in denied.stderr
    assert 'status.admission.podSetAssignments[0].name: Not found: "other"' in denied.stderr
    allowed = _reserve(cluster, namespace, name)
    assert allowed.returncode == 0, allowed.stderr
    # No controller or ClusterQueue backs this reservation: remove it before the invariant check.
    cluster.kubectl("delete", "workload", name, "-n", namespace, "--wait=true")


# --- rules only the webhook enforces, one per family (the CRD schema cannot see them) ---------------


def _two_flavor_queue(name: str) -> SeedClusterQueueBuilder:
    return SeedClusterQueueBuilder(name).flavor("reservation", cpu="10").flavor("spot", cpu="10")


WEBHOOK_ONLY_CLUSTER_QUEUE_RULES: list[tuple[str, Callable[[str], Obj], list[str]]] = [
    (
        # Kueue's CRD accepts a negative quantity (its pattern allows "-"); both webhooks deny it.
        "quotas are not negative",
        lambda name: SeedClusterQueueBuilder(name).flavor("spot", cpu="-2").obj(),
        ['spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value: "-2": '
         "must be greater than or equal to 0"],
    ),
    (
        # allowedResourceFlavors is an atomic list: the apiserver does not de-duplicate it.
        "allowed flavors of an option are unique",
        lambda name: _two_flavor_queue(name).option("any", "spot", "reservation", "spot").obj(),
        ['spec.concurrentAdmission.explicitOptions[0].allowedResourceFlavors[2]: Duplicate value: "spot"'],
    ),
    (
        "RemoveBelowTarget target is a flavor of the queue",
        lambda name: _two_flavor_queue(name).concurrent("RemoveBelowTarget", target="gpu").obj(),
        [
            'spec.concurrentAdmission.removeBelowTargetConfig.targetResourceFlavor: Unsupported value: "gpu": '
            'supported values: "reservation", "spot"'
        ],
    ),
    (
        "options per flavor need exactly one resource group",
        lambda name: (
            SeedClusterQueueBuilder(name)
            .flavor("reservation", cpu="10")
            .flavor("gpu", **{"nvidia.com/gpu": "2"})
            .concurrent("RemoveOther")
            .obj()
        ),
        [
            "spec.resourceGroups: Invalid value: 2: must have exactly one resource group when "
            "concurrentAdmission has no explicitOptions"
        ],
    ),
    (
        "fallback rules name flavors of the queue and fit their trigger",
        lambda name: (
            _two_flavor_queue(name)
            .fallback_rule("gpu", timeout="5m")
            .fallback_rule("spot", "AdmissionCheckRejected", timeout="5m")
            .obj()
        ),
        [
            'spec.flavorFungibility.fallbackStrategy.rules[0].name: Unsupported value: "gpu": '
            'supported values: "reservation", "spot", "*"',
            "spec.flavorFungibility.fallbackStrategy.rules[1].timeout: Forbidden: a timeout does not apply "
            "to trigger AdmissionCheckRejected",
        ],
    ),
]


@pytest.mark.parametrize(
    ("make", "messages"),
    [case[1:] for case in WEBHOOK_ONLY_CLUSTER_QUEUE_RULES],
    ids=[case[0] for case in WEBHOOK_ONLY_CLUSTER_QUEUE_RULES],
)
def test_webhook_only_cluster_queue_rules(
    cluster: Any, webhook: WebhookHandle, make: Callable[[str], Obj], messages: list[str]
) -> None:
    result = kubectl_apply(cluster, make(unique("webhook-only")))
    assert result.returncode != 0
    assert CQ_WEBHOOK_DENIAL in result.stderr, result.stderr
    for message in messages:
        assert message in result.stderr, result.stderr


def _set_pod_count(cluster: Any, namespace: str, name: str, count: int) -> subprocess.CompletedProcess[str]:
    patch = [{"op": "replace", "path": "/spec/podSets/0/count", "value": count}]
    return cluster.kubectl(
        "patch", "workload", name, "-n", namespace, "--type=json", "-p", json.dumps(patch), check=False
    )


def test_pod_sets_are_immutable_while_the_workload_holds_quota(
    cluster: Any, webhook: WebhookHandle, namespace: str
) -> None:
    name = unique("wl")
    assert (
        kubectl_apply(
            cluster, WorkloadBuilder(name, namespace).queue("team-a").podset(cpu="1").obj()
        ).returncode
        == 0
    )
    try:
        before = _set_pod_count(cluster, namespace, name, 2)
        assert before.returncode == 0, f"pending workloads may still change: {before.stderr}"
        reserved = _reserve(cluster, namespace, name, count=2)
        assert reserved.returncode == 0, reserved.stderr
        denied = _set_pod_count(cluster, namespace, name, 3)
        assert denied.returncode != 0
        assert 'admission webhook "vworkload.kb.io" denied the request' in denied.stderr, denied.stderr
        assert "spec.podSets: Invalid value:" in denied.stderr
        assert "field is immutable while the workload holds a quota reservation" in denied.stderr
        stored = json.loads(cluster.kubectl("get", "workload", name, "-n", namespace, "-o", "json").stdout)
        assert stored["spec"]["podSets"][0]["count"] == 2
    finally:
        # No controller or ClusterQueue backs this reservation: remove it before the invariant check.
        cluster.kubectl("delete", "workload", name, "-n", namespace, "--wait=true", check=False)


# --- manageJobsWithoutQueueName: the webhook on a Configuration file ------------------------------

MANAGED_NAMESPACE_LABEL = "pykueue.dev/e2e-manage-unqueued"


@pytest.mark.needs_local_cluster
def test_manage_jobs_without_queue_name_suspends_unlabelled_jobs_in_selected_namespaces(
    cluster: Any, webhook: WebhookHandle, namespace: str
) -> None:
    """It restarts the webhook on another Configuration, which only the local webhook process allows (the
    chart's webhook is configured at install time), so it needs the local cluster."""
    unselected = unique("e2e-unselected")
    cluster.kubectl("create", "namespace", unselected)
    try:
        cluster.kubectl("label", "namespace", namespace, f"{MANAGED_NAMESPACE_LABEL}=true")
        config = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta1",
            "kind": "Configuration",
            "manageJobsWithoutQueueName": True,
            "managedJobsNamespaceSelector": {"matchLabels": {MANAGED_NAMESPACE_LABEL: "true"}},
        }
        with webhook.configured(config):
            assert (
                kubectl_apply(cluster, JobBuilder("unqueued", namespace).requests(cpu="1").obj()).returncode
                == 0
            )
            stored = _job(cluster, namespace, "unqueued")
            assert stored["spec"]["suspend"] is True, "an unqueued Job in a selected namespace is queued"
            assert "kueue.x-k8s.io/queue-name" not in (stored["metadata"].get("labels") or {})
            outside = JobBuilder("unqueued", unselected).requests(cpu="1").obj()
            assert kubectl_apply(cluster, outside).returncode == 0
            assert not _job(cluster, unselected, "unqueued")["spec"].get("suspend"), (
                "other namespaces are left alone"
            )
        # Back on the default Configuration, the same Job in the same namespace is created running.
        again = JobBuilder("unqueued-again", namespace).requests(cpu="1").obj()
        assert kubectl_apply(cluster, again).returncode == 0
        assert not _job(cluster, namespace, "unqueued-again")["spec"].get("suspend")
    finally:
        cluster.kubectl("delete", "namespace", unselected, "--wait=false", check=False)
