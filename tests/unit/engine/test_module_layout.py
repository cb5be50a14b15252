"""The engine's modules import one another without a cycle, type-only imports included.

The parts (quota cache, queue manager, cycle, options, visibility) each take what they need
explicitly; none reaches back into the ``Engine`` that coordinates them. A cycle, even one hidden
behind ``TYPE_CHECKING``, is the sign that a part started reading another's internals again.
"""

from __future__ import annotations

import ast
from pathlib import Path

import controller.engine

PACKAGE = Path(controller.engine.__file__).parent


def _imports(path: Path) -> set[str]:
    """Engine modules that ``path`` imports (relative or absolute, at any level of the file)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module is None:
                found.update(alias.name for alias in node.names)
            elif node.level == 1 and node.module is not None:
                found.add(node.module.split(".")[0])
            elif node.level == 0 and node.module is not None and node.module.startswith("controller.engine."):
                found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("controller.engine."):
                    found.add(alias.name.split(".")[2])
    return found


def _graph(package: Path) -> dict[str, set[str]]:
    modules = {path.stem: path for path in package.glob("*.py") if path.stem != "__init__"}
    return {name: _imports(path) & modules.keys() for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a path of module names, or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)) is not None:
            return found
    return None


def test_the_engine_modules_have_no_import_cycle() -> None:
    graph = _graph(PACKAGE)
    assert {"engine", "quota_cache", "queue_manager", "cycle"} <= graph.keys()
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_check_finds_a_type_only_cycle(tmp_path: Path) -> None:
    (tmp_path / "engine.py").write_text("from .cycle import run_cycle\n")
    (tmp_path / "cycle.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .engine import Engine\n"
    )
    (tmp_path / "records.py").write_text("")
    assert _cycle(_graph(tmp_path)) == ["cycle", "engine", "cycle"]


def test_the_parts_do_not_import_the_engine() -> None:
    graph = _graph(PACKAGE)
    assert [name for name, imports in graph.items() if "engine" in imports] == []
