"""Kueue's visibility API served by pykueue-controller through the apiserver's aggregation layer.

The ``visibility`` fixture (tests/e2e/fixtures/visibility.py) runs the controller with
``--visibility-addr`` and registers it with the shipped APIServices. Every request
goes through the apiserver (``kubectl get --raw``), so authentication, the front proxy and
authorization are the real ones; ``--as`` impersonates a user without or with a role.
Two tests need the local cluster's controller process: one reads the served certificate on its
port, one restarts it with ``waitForPodsReady.blockAdmission`` (the chart's controller is
configured at install time).
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.builders import (
    AdmissionCheckBuilder,
    LocalQueueBuilder,
    ResourceFlavorBuilder,
    SeedClusterQueueBuilder,
)
from tests.e2e.fixtures.controller import ControllerHandle, configuration, wait_for_pods_ready
from tests.e2e.helpers.check_controller import flavor_check_controller
from tests.e2e.helpers.kueue import (
    KueueApi,
    condition,
    holds_quota,
    is_admitted,
    is_true,
    make_queues,
    submit,
    unique,
)
from tests.e2e.helpers.wait import wait_for

GROUP = "visibility.kueue.x-k8s.io"


def _raw(cluster: Any, path: str, *, user: str | None = None) -> subprocess.CompletedProcess[str]:
    args = ["get", "--raw", path]
    if user:
        args += ["--as", user]
    return cluster.kubectl(*args, check=False)


def _get(cluster: Any, path: str, user: str | None = None) -> dict[str, Any]:
    result = _raw(cluster, path, user=user)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _cq_view(cluster: Any, cq: str, version: str = "v1beta1", query: str = "") -> list[tuple[str, int, int]]:
    body = _get(cluster, f"/apis/{GROUP}/{version}/clusterqueues/{cq}/pendingworkloads{query}")
    assert body["kind"] == "PendingWorkloadsSummary" and body["apiVersion"] == f"{GROUP}/{version}"
    return [
        (i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in body["items"]
    ]


def _available(cluster: Any, name: str) -> bool:
    result = cluster.kubectl("get", "apiservice", name, "-o", "json", check=False)
    if result.returncode != 0:
        return False
    obj = json.loads(result.stdout)
    return any(c["type"] == "Available" and c["status"] == "True" for c in obj.get("status", {}).get("conditions", []))


def test_api_services_available_with_the_controllers_ca(cluster: Any, visibility: Any) -> None:
    for version in ("v1beta1", "v1beta2"):
        wait_for(lambda v=version: _available(cluster, f"{v}.{GROUP}"), timeout=60, message=f"{version} Available")
        obj = json.loads(cluster.kubectl("get", "apiservice", f"{version}.{GROUP}", "-o", "json").stdout)
        assert obj["spec"].get("caBundle"), "the controller publishes its CA; TLS is verified"
        assert not obj["spec"].get("insecureSkipTLSVerify")
    resources = _get(cluster, f"/apis/{GROUP}/v1beta1")
    assert {r["name"] for r in resources["resources"]} >= {
        "clusterqueues/pendingworkloads",
        "localqueues/pendingworkloads",
    }


def test_positions_follow_admission_priority_and_deletion(
    cluster: Any, visibility: Any, kueue: KueueApi, namespace: str
) -> None:
    wait_for(lambda: _available(cluster, f"v1beta1.{GROUP}"), timeout=60, message="APIService Available")
    _, cq = make_queues(kueue, namespace, cpu="1")
    submit(kueue, namespace, "first")
    wait_for(lambda: is_admitted(kueue.workload(namespace, "first")), timeout=30, message="first admitted")
    for name in ("a", "b", "c"):
        submit(kueue, namespace, name)
    expected = [("a", 0, 0), ("b", 1, 1), ("c", 2, 2)]
    wait_for(lambda: _cq_view(cluster, cq) == expected, timeout=30, message="a, b, c pending in creation order")
    assert _cq_view(cluster, cq, "v1beta2") == expected
    assert _cq_view(cluster, cq, query="?offset=1&limit=1") == [("b", 1, 1)]

    submit(kueue, namespace, "urgent", priority=100)
    wait_for(
        lambda: _cq_view(cluster, cq) == [("urgent", 0, 0), ("a", 1, 1), ("b", 2, 2), ("c", 3, 3)],
        timeout=30,
        message="a higher-priority workload goes to the front",
    )
    item = _get(cluster, f"/apis/{GROUP}/v1beta1/clusterqueues/{cq}/pendingworkloads")["items"][0]
    assert item["priority"] == 100 and item["localQueueName"] == "lq"
    assert item["metadata"]["namespace"] == namespace and item["metadata"]["creationTimestamp"]

    kueue.custom.delete_namespaced_custom_object("kueue.x-k8s.io", "v1beta1", namespace, "workloads", "a")
    wait_for(
        lambda: _cq_view(cluster, cq) == [("urgent", 0, 0), ("b", 1, 1), ("c", 2, 2)],
        timeout=30,
        message="a deleted workload leaves the queue",
    )
    kueue.finish(kueue.workload(namespace, "first"))
    wait_for(lambda: is_admitted(kueue.workload(namespace, "urgent")), timeout=30, message="urgent admitted")
    wait_for(
        lambda: _cq_view(cluster, cq) == [("b", 0, 0), ("c", 1, 1)],
        timeout=30,
        message="an admitted workload leaves the queue and everyone moves up",
    )
    lq_view = _get(cluster, f"/apis/{GROUP}/v1beta1/namespaces/{namespace}/localqueues/lq/pendingworkloads")
    assert [(i["metadata"]["name"], i["positionInLocalQueue"]) for i in lq_view["items"]] == [("b", 0), ("c", 1)]
    missing = _raw(cluster, f"/apis/{GROUP}/v1beta1/clusterqueues/no-such-queue/pendingworkloads")
    assert missing.returncode != 0 and "not found" in missing.stderr.lower(), missing.stderr


def test_rbac_no_role_is_forbidden_batch_user_sees_own_namespace(
    cluster: Any, visibility: Any, kueue: KueueApi, namespace: str
) -> None:
    wait_for(lambda: _available(cluster, f"v1beta1.{GROUP}"), timeout=60, message="APIService Available")
    _, cq = make_queues(kueue, namespace, cpu="0")
    submit(kueue, namespace, "waiting")
    lq_path = f"/apis/{GROUP}/v1beta1/namespaces/{namespace}/localqueues/lq/pendingworkloads"
    cq_path = f"/apis/{GROUP}/v1beta1/clusterqueues/{cq}/pendingworkloads"

    denied = _raw(cluster, lq_path, user="nobody")
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower(), denied.stderr
    assert 'User "nobody" cannot get resource "localqueues/pendingworkloads"' in denied.stderr

    cluster.kubectl("create", "rolebinding", "batch-user", "-n", namespace, "--clusterrole=kueue-batch-user-role",
                    "--user=alice")
    wait_for(
        lambda: [i["metadata"]["name"] for i in _get(cluster, lq_path, user="alice")["items"]] == ["waiting"],
        timeout=30,
        message="a batch user sees their namespace's LocalQueue view",
    )
    cq_denied = _raw(cluster, cq_path, user="alice")
    assert cq_denied.returncode != 0 and "forbidden" in cq_denied.stderr.lower()
    other = _raw(cluster, f"/apis/{GROUP}/v1beta1/namespaces/default/localqueues/lq/pendingworkloads", user="alice")
    assert other.returncode != 0 and "forbidden" in other.stderr.lower()

    cluster.kubectl("create", "clusterrolebinding", f"batch-admin-{namespace}", "--clusterrole=kueue-batch-admin-role",
                    "--user=root-of-queues")
    try:
        wait_for(
            lambda: [i["metadata"]["name"] for i in _get(cluster, cq_path, user="root-of-queues")["items"]] == ["waiting"],
            timeout=30,
            message="a batch admin sees the ClusterQueue view",
        )
    finally:
        cluster.kubectl("delete", "clusterrolebinding", f"batch-admin-{namespace}", check=False)


def test_kubectl_pykueue_pending_is_a_kubectl_plugin(
    cluster: Any, visibility: Any, kueue: KueueApi, namespace: str, tmp_path: Any, monkeypatch: Any
) -> None:
    """``kubectl pykueue pending``: kubectl finds the ``kubectl-pykueue`` executable on PATH (here a
    wrapper for the entry point, as ``pip install`` would make it) and the plugin prints positions."""
    import os
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    plugin = tmp_path / "kubectl-pykueue"
    plugin.write_text(f"#!/bin/sh\nPYTHONPATH={repo} exec {sys.executable} -m pykueue.cli.kubectl_pykueue \"$@\"\n")
    plugin.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    wait_for(lambda: _available(cluster, f"v1beta1.{GROUP}"), timeout=60, message="APIService Available")
    _, cq = make_queues(kueue, namespace, cpu="0")
    submit(kueue, namespace, "low", priority=1)
    submit(kueue, namespace, "high", priority=9)

    kubectl = str(cluster._kubectl_binary())

    def listed(*args: str) -> list[list[str]]:
        # kubectl refuses flags before a plugin's name, so the kubeconfig travels in $KUBECONFIG.
        result = subprocess.run([kubectl, "pykueue", "pending", *args], capture_output=True, text=True, timeout=60,
                                env={**os.environ, "KUBECONFIG": cluster.kubeconfig}, check=True)
        return [line.split() for line in result.stdout.splitlines()[1:]]

    wait_for(lambda: listed("-n", namespace) == [[namespace, "high", "lq", "9", "0", "0"],
                                                 [namespace, "low", "lq", "1", "1", "1"]],
             timeout=30, message="the plugin lists the LocalQueue's pending workloads in order")
    assert listed("--cluster-queue", cq, "--offset", "1") == [[namespace, "low", "lq", "1", "1", "1"]]


@pytest.mark.needs_local_cluster  # it reads the served certificate on the local process's port
def test_available_after_certificate_rotation(cluster: Any, visibility: Any, kueue: KueueApi, namespace: str) -> None:
    """Emptying the certificate Secret makes the controller issue a new CA and serving certificate:
    it serves the new one, publishes the new CA first in the caBundle (the old one kept while
    replicas switch) and the APIService stays Available with requests answered."""
    import base64
    import ssl

    from pykueue.tls.certs import split_pem_certificates

    secret_name = "pykueue-visibility-server-cert"
    wait_for(lambda: _available(cluster, f"v1beta1.{GROUP}"), timeout=60, message="APIService Available")
    _, cq = make_queues(kueue, namespace, cpu="0")
    submit(kueue, namespace, "waiting")
    wait_for(lambda: _cq_view(cluster, cq) == [("waiting", 0, 0)], timeout=30, message="answered before")

    def bundle() -> list[bytes]:
        obj = json.loads(cluster.kubectl("get", "apiservice", f"v1beta1.{GROUP}", "-o", "json").stdout)
        return split_pem_certificates(base64.b64decode(obj["spec"]["caBundle"]))

    def secret_data() -> dict[str, bytes]:
        obj = json.loads(cluster.kubectl("get", "secret", "-n", "pykueue-system", secret_name, "-o", "json").stdout)
        return {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}

    old_ca = secret_data()["ca.crt"]
    assert bundle()[0] == old_ca
    cluster.kubectl("patch", "secret", "-n", "pykueue-system", secret_name, "--type=json",
                    "-p", '[{"op": "remove", "path": "/data"}]')
    new_ca = wait_for(lambda: (secret_data().get("ca.crt") not in (None, old_ca)) and secret_data()["ca.crt"],
                      timeout=30, message="a new CA issued")
    wait_for(lambda: bundle() == [new_ca, old_ca], timeout=30, message="the new CA first in the caBundle, the old kept")

    def served_certificate() -> bytes:
        pem = ssl.get_server_certificate(("127.0.0.1", visibility.visibility_port), timeout=5)
        return pem.encode()

    new_cert = secret_data()["tls.crt"]
    wait_for(lambda: ssl.DER_cert_to_PEM_cert(ssl.PEM_cert_to_DER_cert(served_certificate().decode()))
             == ssl.DER_cert_to_PEM_cert(ssl.PEM_cert_to_DER_cert(new_cert.decode())),
             timeout=30, message="the server presents the new certificate")
    wait_for(lambda: _available(cluster, f"v1beta1.{GROUP}") and _available(cluster, f"v1beta2.{GROUP}"),
             timeout=60, message="both APIServices Available after the rotation")
    assert _cq_view(cluster, cq) == [("waiting", 0, 0)]


def _explain(cluster: Any, namespace: str, name: str) -> dict[str, Any]:
    return _get(cluster, f"/apis/{GROUP}/v1beta1/namespaces/{namespace}/workloads/{name}/explain")


def test_explain_answers_and_the_suggested_change_admits(
    cluster: Any, visibility: Any, kueue: KueueApi, namespace: str
) -> None:
    """Blocked by quota (the missing amount and the workload ahead are named; raising the quota by
    that much admits both), then in a stopped queue (resuming, as suggested, admits it). "It is
    next" is shown below where blockAdmission holds the cycle back; "next, by the next scheduling
    cycle" only in tests/unit/engine/test_explain.py: in a live cluster it is admitted within a cycle."""
    wait_for(lambda: _available(cluster, f"v1beta1.{GROUP}"), timeout=60, message="APIService Available")
    flavor, cq = make_queues(kueue, namespace, cpu="1")
    submit(kueue, namespace, "running")
    wait_for(lambda: is_admitted(kueue.workload(namespace, "running")), timeout=30, message="running admitted")
    submit(kueue, namespace, "ahead", cpu="1")
    submit(kueue, namespace, "mine", cpu="2")

    answer = wait_for(lambda: (a := _explain(cluster, namespace, "mine")).get("positionInClusterQueue") == 1 and a,
                      timeout=30, message="explain for a quota-blocked workload")
    assert answer["state"] == "Pending" and answer["clusterQueue"] == cq
    assert answer["ahead"] == {"count": 1, "first": [{"namespace": namespace, "name": "ahead"}]}
    assert answer["dryRun"]["outcome"] == "DoesNotFit"
    assert answer["resources"] == [{"flavor": flavor, "resource": "cpu", "requested": "2", "free": "0",
                                    "nominalQuota": "1", "cohortCanLend": "0", "missing": "2"}]
    assert answer["suggestion"].startswith(f"free 2 of cpu in flavor {flavor}")

    # The suggested change for "ahead" is 1 cpu, for "mine" 2 more: raise the quota by 3.
    cq_obj = kueue.get("ClusterQueue", cq)
    groups = cq_obj["spec"]["resourceGroups"]
    groups[0]["flavors"][0]["resources"][0]["nominalQuota"] = "4"
    kueue.patch("ClusterQueue", cq, {"spec": {"resourceGroups": groups}})
    wait_for(lambda: is_admitted(kueue.workload(namespace, "mine")) and is_admitted(kueue.workload(namespace, "ahead")),
             timeout=30, message="raising the quota by the missing amounts admits both")
    assert _explain(cluster, namespace, "mine")["state"] == "HoldsQuota"

    kueue.finish(kueue.workload(namespace, "running"))  # 1 cpu free again
    kueue.patch("ClusterQueue", cq, {"spec": {"stopPolicy": "Hold"}})
    # Submit only once the controller has stopped the queue: on a fast machine a workload sent at
    # once may still be admitted into the quota just freed.
    wait_for(lambda: any(c["type"] == "Active" and c["status"] == "False"
                         for c in (kueue.get("ClusterQueue", cq) or {}).get("status", {}).get("conditions", [])),
             timeout=30, message="the ClusterQueue stopped")
    submit(kueue, namespace, "held", cpu="0.5")
    answer = wait_for(lambda: (a := _explain(cluster, namespace, "held")).get("clusterQueueActive") is False and a,
                      timeout=30, message="explain for a workload in a stopped queue")
    assert answer["clusterQueueInactive"]["reason"] == "Stopped"
    assert "set spec.stopPolicy to None" in answer["suggestion"]
    kueue.patch("ClusterQueue", cq, {"spec": {"stopPolicy": "None"}})
    wait_for(lambda: is_admitted(kueue.workload(namespace, "held")), timeout=30, message="resuming admits it")


def _waiting_for_pods(kueue: KueueApi) -> list[str]:
    """Admitted, unfinished workloads without ``PodsReady`` in any namespace: blockAdmission waits
    for every one of them, those of earlier tests (namespaces still being deleted) included."""
    listed = kueue.custom.list_cluster_custom_object("kueue.x-k8s.io", kueue.version, "workloads")["items"]
    return [f"{wl['metadata']['namespace']}/{wl['metadata']['name']}" for wl in listed
            if is_admitted(wl) and not is_true(wl, "Finished") and not is_true(wl, "PodsReady")]


@pytest.mark.needs_local_cluster  # it restarts the controller with waitForPodsReady.blockAdmission
def test_explain_a_workload_that_is_next_while_block_admission_waits_for_pods(
    cluster: Any, visibility: Any, kueue: KueueApi, namespace: str, controller: ControllerHandle
) -> None:
    """"It is next", in a state where the next workload fits and is first yet no cycle admits it:
    waitForPodsReady.blockAdmission admits nothing while an admitted workload's pods are not
    ready. The answer names that workload; making its pods ready, as suggested, admits the one
    called next (and only it: the next answer names it as what the last one waits for)."""
    config = configuration(waitForPodsReady=wait_for_pods_ready(timeout="5m", block_admission=True))
    wait_for(lambda: not _waiting_for_pods(kueue), timeout=120,
             message="no admitted workload of an earlier test left to block admission")
    with controller.configured(config):
        wait_for(lambda: _available(cluster, f"v1beta1.{GROUP}"), timeout=60, message="APIService Available")
        flavor, cq = make_queues(kueue, namespace, cpu="3")
        submit(kueue, namespace, "first")
        wait_for(lambda: is_admitted(kueue.workload(namespace, "first")), timeout=30, message="first admitted")
        submit(kueue, namespace, "next")
        submit(kueue, namespace, "last")
        wait_for(lambda: _explain(cluster, namespace, "last").get("positionInClusterQueue") == 1, timeout=30,
                 message="next and last queued")
        blockade = ("(waitForPodsReady.blockAdmission: nothing is admitted while an admitted workload's pods are "
                    "not ready)")

        answer = _explain(cluster, namespace, "next")
        assert (answer["state"], answer["clusterQueue"], answer["positionInClusterQueue"]) == ("Pending", cq, 0)
        assert answer["dryRun"]["outcome"] == "Fits" and answer["dryRun"]["flavors"] == {"main": {"cpu": flavor}}
        assert answer["resources"] == [{"flavor": flavor, "resource": "cpu", "requested": "1", "free": "2",
                                        "nominalQuota": "3", "cohortCanLend": "0", "missing": "0"}]
        assert answer["admissionBlockedBy"] == [{"namespace": namespace, "name": "first"}]
        assert answer["suggestion"] == (f"it is next: it fits now and will be admitted once the pods of "
                                        f"{namespace}/first are ready {blockade}")
        last = _explain(cluster, namespace, "last")
        assert last["dryRun"]["outcome"] == "Fits" and last["admissionBlockedBy"] == answer["admissionBlockedBy"]
        assert last["suggestion"] == (f"it fits now, after the 1 workload(s) ahead of it, once the pods of "
                                      f"{namespace}/first are ready {blockade}")
        assert not holds_quota(kueue.workload(namespace, "next"))

        kueue.set_pods_ready(namespace, "first")  # the suggested change
        wait_for(lambda: is_admitted(kueue.workload(namespace, "next")), timeout=30,
                 message="next is admitted once first's pods are ready")
        last = wait_for(lambda: (a := _explain(cluster, namespace, "last")).get("positionInClusterQueue") == 0 and a,
                        timeout=30, message="last moves up")
        assert last["admissionBlockedBy"] == [{"namespace": namespace, "name": "next"}]
        assert last["suggestion"] == (f"it is next: it fits now and will be admitted once the pods of "
                                      f"{namespace}/next are ready {blockade}")
        assert not holds_quota(kueue.workload(namespace, "last"))
        kueue.set_pods_ready(namespace, "next")
        wait_for(lambda: is_admitted(kueue.workload(namespace, "last")), timeout=30,
                 message="last is admitted once next's pods are ready")
        for name in ("first", "next", "last"):  # leave nothing for a later test's blockAdmission to wait for
            kueue.finish(kueue.workload(namespace, name))


def _stopped(kueue: KueueApi, cq: str) -> bool:
    conditions = ((kueue.get("ClusterQueue", cq) or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Active" and c["status"] == "False" for c in conditions)


def test_explain_after_preemption_names_the_victim_the_cycle_then_evicts(
    cluster: Any, visibility: Any, kueue: KueueApi, namespace: str
) -> None:
    """The queue is held while the answer is read (a live cycle would preempt within a second);
    resuming it, the cycle preempts the very workload the dry run named."""
    wait_for(lambda: _available(cluster, f"v1beta1.{GROUP}"), timeout=60, message="APIService Available")
    flavor, cq = make_queues(kueue, namespace, cpu="1", preemption=("LowerPriority",))
    submit(kueue, namespace, "low", priority=0)
    wait_for(lambda: is_admitted(kueue.workload(namespace, "low")), timeout=30, message="low admitted")
    kueue.patch("ClusterQueue", cq, {"spec": {"stopPolicy": "Hold"}})
    wait_for(lambda: _stopped(kueue, cq), timeout=30, message="the ClusterQueue stopped")
    submit(kueue, namespace, "high", priority=10)
    answer = wait_for(lambda: (a := _explain(cluster, namespace, "high")).get("dryRun") and a,
                      timeout=30, message="explain for the high-priority workload")
    assert answer["state"] == "Pending" and answer["clusterQueueActive"] is False
    assert answer["dryRun"]["outcome"] == "FitsAfterPreemption"
    assert answer["dryRun"]["flavors"] == {"main": {"cpu": flavor}}
    assert answer["preemptionVictims"] == [
        {"namespace": namespace, "name": "low", "clusterQueue": cq, "reason": "InClusterQueue"}]
    assert answer["resources"] == [{"flavor": flavor, "resource": "cpu", "requested": "1", "free": "0",
                                    "nominalQuota": "1", "cohortCanLend": "0", "missing": "1"}]
    kueue.patch("ClusterQueue", cq, {"spec": {"stopPolicy": "None"}})
    wait_for(lambda: is_admitted(kueue.workload(namespace, "high")), timeout=30, message="high admitted")
    low = kueue.workload(namespace, "low")
    assert (condition(low, "Preempted") or {}).get("reason") == "InClusterQueue", low["status"]
    assert (condition(low, "Evicted") or {}).get("reason") == "Preempted", low["status"]


def test_explain_a_workload_that_fits_behind_the_head_of_a_strict_fifo_queue(
    cluster: Any, visibility: Any, kueue: KueueApi, namespace: str
) -> None:
    """What is admitted next: the head that does not fit blocks a StrictFIFO queue; the one behind
    it fits now and is admitted as soon as the head is gone."""
    wait_for(lambda: _available(cluster, f"v1beta1.{GROUP}"), timeout=60, message="APIService Available")
    flavor, _ = make_queues(kueue, namespace, cpu="2", strategy=("StrictFIFO",))
    submit(kueue, namespace, "running", cpu="1")
    wait_for(lambda: is_admitted(kueue.workload(namespace, "running")), timeout=30, message="running admitted")
    submit(kueue, namespace, "big", cpu="2")
    wait_for(lambda: _explain(cluster, namespace, "big").get("positionInClusterQueue") == 0, timeout=30,
             message="big queued")
    submit(kueue, namespace, "small", cpu="1")
    small = wait_for(lambda: (a := _explain(cluster, namespace, "small")).get("positionInClusterQueue") == 1 and a,
                     timeout=30, message="small queued behind big")
    assert small["dryRun"]["outcome"] == "Fits" and small["dryRun"]["flavors"] == {"main": {"cpu": flavor}}
    assert small["ahead"] == {"count": 1, "first": [{"namespace": namespace, "name": "big"}]}
    assert small["suggestion"].startswith("it fits now, after the 1 workload(s) ahead of it")
    big = _explain(cluster, namespace, "big")
    assert big["dryRun"]["outcome"] == "DoesNotFit" and big["ahead"] == {"count": 0, "first": []}
    assert big["resources"] == [{"flavor": flavor, "resource": "cpu", "requested": "2", "free": "1",
                                 "nominalQuota": "2", "cohortCanLend": "0", "missing": "1"}]
    assert big["suggestion"].startswith(f"free 1 of cpu in flavor {flavor}")
    assert not is_admitted(kueue.workload(namespace, "small"))
    cluster.kubectl("delete", "workload", "big", "-n", namespace)
    wait_for(lambda: is_admitted(kueue.workload(namespace, "small")), timeout=30,
             message="small is admitted once the head is gone")


def test_explain_waiting_on_admission_checks_gives_each_checks_state(
    cluster: Any, visibility: Any, kueue: KueueApi, namespace: str
) -> None:
    """The check controller's own words, as stored in status.admissionChecks: Pending while the
    quota is held, then admitted once Ready; after a Rejected check the deactivated workload's
    answer quotes the check's message from its Evicted condition."""
    wait_for(lambda: _available(cluster, f"v1beta1.{GROUP}"), timeout=60, message="APIService Available")
    check = unique("capacity")
    kueue.create(AdmissionCheckBuilder(check).obj())
    kueue.set_active_condition("AdmissionCheck", check, True)
    _, cq = make_queues(kueue, namespace, cpu="4", admission_checks=(check,))
    submit(kueue, namespace, "mine")
    wait_for(lambda: holds_quota(kueue.workload(namespace, "mine")), timeout=30, message="mine reserves quota")
    kueue.set_check_state(namespace, "mine", check, "Pending", "waiting for capacity, ETA 5m")
    answer = wait_for(lambda: (a := _explain(cluster, namespace, "mine")).get("admissionCheckStates", [{}])[0]
                      .get("message") and a, timeout=30, message="explain shows the check's message")
    assert (answer["state"], answer["admitted"], answer["clusterQueue"], answer["admissionChecks"]) == (
        "HoldsQuota", False, cq, [check])
    [state] = answer["admissionCheckStates"]
    assert (state["name"], state["state"], state["message"]) == (check, "Pending", "waiting for capacity, ETA 5m")
    assert answer["suggestion"] == (f"it holds quota in ClusterQueue {cq} and waits for admission check(s): "
                                    f"{check} is Pending (waiting for capacity, ETA 5m)")

    kueue.set_check_state(namespace, "mine", check, "Ready", "capacity found")
    wait_for(lambda: is_admitted(kueue.workload(namespace, "mine")), timeout=30, message="admitted once Ready")
    answer = wait_for(lambda: (a := _explain(cluster, namespace, "mine")).get("admitted") and a, timeout=30,
                      message="explain says admitted")
    assert answer["suggestion"] == "it is admitted; nothing to change"
    assert [(s["state"], s["message"]) for s in answer["admissionCheckStates"]] == [("Ready", "capacity found")]

    submit(kueue, namespace, "doomed")
    wait_for(lambda: holds_quota(kueue.workload(namespace, "doomed")), timeout=30, message="doomed reserves quota")
    kueue.set_check_state(namespace, "doomed", check, "Rejected", "no capacity in any zone")
    wait_for(lambda: kueue.workload(namespace, "doomed")["spec"].get("active") is False, timeout=30,
             message="a Rejected check deactivates the workload")
    # The eviction resets the checks to Pending; the Evicted condition keeps the check's words.
    answer = wait_for(lambda: (a := _explain(cluster, namespace, "doomed")).get("state") == "Deactivated" and a,
                      timeout=30, message="explain says deactivated")
    assert answer["suggestion"].startswith("it is deactivated (DeactivatedDueToAdmissionCheck: "), answer
    assert "no capacity in any zone" in answer["suggestion"], answer


def test_explain_names_a_flavor_excluded_by_a_fallback_and_offers_only_the_others(
    cluster: Any, visibility: Any, kueue: KueueApi, namespace: str
) -> None:
    """docs/design/fallbacks.md: an admission check rejects Spot; Spot is then excluded, and the
    answer weighs only On-demand, which a filler holds."""
    wait_for(lambda: _available(cluster, f"v1beta1.{GROUP}"), timeout=60, message="APIService Available")
    spot, on_demand = unique("spot"), unique("on-demand")
    for flavor in (spot, on_demand):
        kueue.create(ResourceFlavorBuilder(flavor).obj())
    check = unique("capacity")
    kueue.create(AdmissionCheckBuilder(check).obj())
    kueue.set_active_condition("AdmissionCheck", check, True)
    cq = unique("cq")
    kueue.create(SeedClusterQueueBuilder(cq).flavor(spot, cpu="1").flavor(on_demand, cpu="2")
                 .admission_checks(check).fallback().fallback_rule(spot, "AdmissionCheckRejected").obj())
    kueue.create(LocalQueueBuilder("lq", namespace, cq).obj())
    with flavor_check_controller(kueue, namespace, check, {spot}):
        submit(kueue, namespace, "filler", cpu="2")  # more than Spot has: it goes to On-demand
        wait_for(lambda: is_admitted(kueue.workload(namespace, "filler")), timeout=30, message="filler admitted")
        submit(kueue, namespace, "mine", cpu="1")
        answer = wait_for(lambda: (a := _explain(cluster, namespace, "mine")).get("excludedFlavors") and a.get("state")
                          == "Pending" and a, timeout=60, message="Spot rejected and excluded")
        assert answer["excludedFlavors"] == [spot]
        assert answer["dryRun"]["outcome"] == "DoesNotFit"
        assert answer["resources"] == [{"flavor": on_demand, "resource": "cpu", "requested": "1", "free": "0",
                                        "nominalQuota": "2", "cohortCanLend": "0", "missing": "1"}]
        assert answer["suggestion"].startswith(f"free 1 of cpu in flavor {on_demand}")
        kueue.finish(kueue.workload(namespace, "filler"))
        wait_for(lambda: is_admitted(kueue.workload(namespace, "mine")), timeout=30, message="mine admitted")
    admission = kueue.workload(namespace, "mine")["status"]["admission"]
    assert admission["podSetAssignments"][0]["flavors"] == {"cpu": on_demand}
