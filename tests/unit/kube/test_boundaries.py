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
