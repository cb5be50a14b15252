"""The layering docs/design/README.md promises, checked on the source: one module talks to the Kubernetes API,
and the two programs share only ``pykueue``.

Imports are read with ``ast`` (including imports inside functions), so a lazy import cannot slip
past the rule the way a text search might.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
# The official client (and the HTTP stack under it) is used only in pykueue/kube.
API_CLIENT_PACKAGES = ("kubernetes", "urllib3")
API_ACCESS_PACKAGE = "pykueue/kube"


def imported_modules(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def sources(*top_levels: str) -> list[Path]:
    return sorted(path for top in top_levels for path in (REPO / top).rglob("*.py"))


def top_package(module: str) -> str:
    return module.split(".", 1)[0]


def offending_imports(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(REPO)} imports {module}"
        for path in files
        for module in imported_modules(path)
        if top_package(module) in forbidden
    ]


def test_the_sources_are_found() -> None:
    """Guard against a vacuous pass: the walks below must see the real trees."""
    assert REPO / "pykueue/kube/transport.py" in sources("pykueue")
    assert any(top_package(m) == "kubernetes" for m in imported_modules(REPO / "pykueue/kube/transport.py"))


def test_only_pykueue_kube_uses_the_kubernetes_client() -> None:
    outside = [
        path
        for path in sources("pykueue", "controller", "webhook")
        if not path.is_relative_to(REPO / API_ACCESS_PACKAGE)
    ]
    assert offending_imports(outside, API_CLIENT_PACKAGES) == []


@pytest.mark.parametrize(
    ("tree", "forbidden"),
    [("webhook", ("controller",)), ("controller", ("webhook",)), ("pykueue", ("controller", "webhook"))],
)
def test_programs_share_only_pykueue(tree: str, forbidden: tuple[str, ...]) -> None:
    assert offending_imports(sources(tree), forbidden) == []


# Inside the controller, the shared layers never reach up into a feature area, and the feature
# areas meet only where docs/design/README.md says they do.
CONTROLLER_LAYERS: dict[str, tuple[str, ...]] = {
    # package: controller packages it must not import
    "controller/runtime": ("core", "jobs", "concurrentadmission", "provisioning", "engine", "workload"),
    "controller/engine": ("core", "jobs", "concurrentadmission", "provisioning", "workload", "runtime"),
    "controller/workload": ("core", "jobs", "concurrentadmission", "provisioning", "engine"),
    "controller/jobs": ("core", "provisioning"),
    "controller/concurrentadmission": ("core", "jobs", "provisioning"),
    "controller/provisioning": ("core", "jobs", "concurrentadmission", "multikueue", "engine"),
}


def controller_area(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "controller" else None


@pytest.mark.parametrize("package", sorted(CONTROLLER_LAYERS))
def test_controller_layers_import_only_downwards(package: str) -> None:
    files = sources(package)
    assert files, f"no sources under {package}"
    forbidden = CONTROLLER_LAYERS[package]
    offending = [
        f"{path.relative_to(REPO)} imports {module}"
        for path in files
        for module in imported_modules(path)
        if controller_area(module) in forbidden
    ]
    assert offending == []


def test_the_layer_check_sees_controller_imports() -> None:
    """Guard against a vacuous pass: a known upward-free import is classified by its area."""
    modules = set(imported_modules(REPO / "controller/core/workload_controller.py"))
    assert {controller_area(m) for m in modules} >= {"workload", "runtime"}
