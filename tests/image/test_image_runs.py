"""The pykueue image, built by hack/build-images.sh with no registry, runs as the chart runs it.

These need a Docker daemon (``make image-test`` starts one with hack/ensure-docker.sh) and are
not part of ``tests/e2e``. What they prove, on a real container runtime:

- the image runs as the unprivileged numeric user the chart's ``runAsNonRoot`` relies on, and
  ships no package manager (no pip, nothing to bootstrap one again);
- no layer holds the CA bundle that pip used during the build (a BuildKit secret);
- both programs start from it with a read-only root file system, all capabilities dropped and
  ``no-new-privileges``, against a real (local) apiserver: the webhook provisions its own
  certificate and answers the apiserver, the controller takes its leader lease and admits a Job.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import tarfile
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hack.localcluster import LocalCluster, LocalClusterError
from tests.e2e.helpers.wait import wait_for

ROOT = Path(__file__).resolve().parents[2]
IMAGE_USER = "65532:65532"
# The pod settings of charts/pykueue/templates/*-deployment.yaml, as docker flags.
HARDENED = ["--read-only", "--tmpfs", "/tmp", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]


def docker(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


@pytest.fixture(scope="session")
def image() -> str:
    """The image under test: $PYKUEUE_IMAGE if set, else built (or found cached) by the script."""
    if os.environ.get("PYKUEUE_IMAGE"):
        ref = os.environ["PYKUEUE_IMAGE"]
        docker("image", "inspect", ref)
        return ref
    result = subprocess.run(
        [str(ROOT / "hack" / "build-images.sh"), "pykueue"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f"hack/build-images.sh pykueue failed: {result.stderr.strip()}"
    return result.stdout.strip().splitlines()[-1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_runs_as_the_numeric_non_root_user_with_no_package_manager(image: str) -> None:
    assert docker("image", "inspect", image, "--format", "{{.Config.User}}").stdout.strip() == IMAGE_USER
    ids = docker("run", "--rm", *HARDENED, image, "id", "-u").stdout.strip()
    assert ids == "65532"
    probe = (
        "import importlib.util as u, shutil; "
        "print(u.find_spec('pip') is None, u.find_spec('ensurepip') is None, shutil.which('apt-get') is None "
        "or 'apt')"
    )
    out = docker("run", "--rm", *HARDENED, "--entrypoint", "python3", image, "-c", probe).stdout.split()
    # pip and ensurepip are gone; the Debian base keeps dpkg/apt as python:slim does, but the
    # numeric user cannot use them and the root file system is read-only.
    assert out[:2] == ["True", "True"], out
    for program in ("pykueue-webhook", "pykueue-controller"):
        usage = docker("run", "--rm", *HARDENED, image, program, "--help").stdout
        assert usage.startswith(f"usage: {program}"), usage[:200]


def test_no_layer_holds_the_pip_ca_bundle(image: str, tmp_path: Path) -> None:
    """The bundle passed as the `pip-ca` secret appears in no layer except as Debian's own file.

    Debian's ca-certificates package writes /etc/ssl/certs/ca-certificates.crt; any other file
    with the bundle's bytes (e.g. /run/secrets/pip-ca baked in) would mean the secret leaked.
    """
    bundle = Path(os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt")
    if not bundle.is_file():
        pytest.fail(f"no CA bundle at {bundle} to look for (set PIP_CERT)", pytrace=False)
    digest = hashlib.sha256(bundle.read_bytes()).hexdigest()
    archive = tmp_path / "image.tar"
    docker("save", "-o", str(archive), image)
    leaks: list[str] = []
    members = 0
    with tarfile.open(archive) as saved:
        for layer in saved.getmembers():
            if not layer.name.endswith("layer.tar"):
                continue
            layer_file = saved.extractfile(layer)
            assert layer_file is not None
            with tarfile.open(fileobj=layer_file) as files:
                for member in files:
                    members += 1
                    if "secrets" in member.name.split("/") and member.name.startswith("run/"):
                        leaks.append(member.name)
                    if not member.isfile() or member.size != bundle.stat().st_size:
                        continue
                    content = files.extractfile(member)
                    assert content is not None
                    if hashlib.sha256(content.read()).hexdigest() == digest and member.name != (
                        "etc/ssl/certs/ca-certificates.crt"
                    ):
                        leaks.append(member.name)
    assert members > 1000, f"only {members} files in the saved image: the layers were not read"
    assert leaks == []


@pytest.fixture(scope="module")
def local_cluster() -> Iterator[LocalCluster]:
    cluster = LocalCluster(os.environ.get("PYKUEUE_CLUSTER_NAME") or "pykueue-image")
    try:
        cluster.up()
    except LocalClusterError as err:
        pytest.fail(f"could not bring up the local cluster: {err}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.down()


def _container(name: str, image: str, kubeconfig_dir: str, *command: str) -> None:
    docker(
        "run", "-d", "--name", name, "--network", "host", *HARDENED,
        "-v", f"{kubeconfig_dir}:/kube:ro", image, *command,
    )  # fmt: skip


def _logs(name: str) -> str:
    result = docker("logs", "--tail", "30", name, check=False)
    return (result.stdout + result.stderr)[-4000:]


def test_webhook_and_controller_containers_admit_a_job(image: str, local_cluster: LocalCluster) -> None:
    cluster = local_cluster
    suffix = uuid.uuid4().hex[:6]
    names = [f"pykueue-image-webhook-{suffix}", f"pykueue-image-controller-{suffix}"]
    with tempfile.TemporaryDirectory() as kube_dir:
        # The admin kubeconfig embeds its certificates; a copy the numeric user may read.
        kubeconfig = Path(kube_dir) / "config"
        kubeconfig.write_text(Path(cluster.kubeconfig).read_text())
        kubeconfig.chmod(0o644)
        os.chmod(kube_dir, 0o755)
        username = cluster.kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}").stdout
        webhook_port, health_port = free_port(), free_port()
        try:
            _container(
                names[0], image, kube_dir,
                "pykueue-webhook", "--kubeconfig", "/kube/config",
                "--local-url", f"https://127.0.0.1:{webhook_port}", "--bind", "127.0.0.1",
                "--port", str(webhook_port), "--namespace", "pykueue-system",
                "--cert-dir", "/tmp/certs", "--controller-username", username.strip(),
            )  # fmt: skip
            wait_for(
                lambda: _webhook_answers(cluster), timeout=120, interval=1,
                message=f"the webhook container never answered the apiserver; logs:\n{_logs(names[0])}",
            )  # fmt: skip
            identity = f"image-test-{suffix}"
            _container(
                names[1], image, kube_dir,
                "pykueue-controller", "--kubeconfig", "/kube/config", "--leader-elect",
                "--identity", identity, "--health-addr", f"127.0.0.1:{health_port}",
                "--metrics-addr", f"127.0.0.1:{free_port()}",
            )  # fmt: skip
            wait_for(
                lambda: _http_ok(f"http://127.0.0.1:{health_port}/readyz"), timeout=120, interval=1,
                message=f"the controller container never became ready; logs:\n{_logs(names[1])}",
            )  # fmt: skip
            _admits_a_job(cluster, suffix, names)
        finally:
            for name in names:
                docker("rm", "-f", name, check=False)
            for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
                name = f"pykueue-{kind.removesuffix('webhookconfiguration')}-webhook-configuration"
                cluster.kubectl("delete", kind, name, "--ignore-not-found", check=False)


def _webhook_answers(cluster: LocalCluster) -> bool:
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "probe"}}
    result = cluster.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(flavor), check=False)
    return result.returncode == 0 and "kueue.x-k8s.io/resource-in-use" in (
        json.loads(result.stdout)["metadata"].get("finalizers") or []
    )


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _admits_a_job(cluster: LocalCluster, suffix: str, names: list[str]) -> None:
    ns, flavor, cq = f"image-{suffix}", f"image-{suffix}", f"image-{suffix}"
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": flavor}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": cq},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
            "metadata": {"name": "main", "namespace": ns}, "spec": {"clusterQueue": cq},
        },
        {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "job", "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "main"}},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "500m"}}}]}}},
        },
    ]  # fmt: skip
    try:
        for obj in objects:
            created = json.loads(cluster.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(obj)).stdout)
        # The webhook suspended the Job at creation (the object as stored says so); the
        # controller's admission unsuspends it.
        assert created["kind"] == "Job" and created["spec"]["suspend"] is True, created["spec"]

        def admitted() -> bool:
            job = json.loads(cluster.kubectl("get", "job", "job", "-n", ns, "-o", "json").stdout)
            return job["spec"].get("suspend") is False

        wait_for(
            admitted, timeout=90, interval=1,
            message=f"the Job was never admitted; controller logs:\n{_logs(names[1])}",
        )  # fmt: skip
        workloads = json.loads(cluster.kubectl("get", "workloads", "-n", ns, "-o", "json").stdout)["items"]
        assert len(workloads) == 1
        assert workloads[0]["status"]["admission"]["clusterQueue"] == cq
    finally:
        cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the workload holds the flavor/queue finalizers briefly
            if cluster.kubectl("delete", "clusterqueue", cq, "--ignore-not-found", check=False).returncode == 0:
                break
            time.sleep(1)
        cluster.kubectl("delete", "resourceflavor", flavor, "--ignore-not-found", "--wait=false", check=False)
