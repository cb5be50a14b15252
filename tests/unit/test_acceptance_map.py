"""docs/acceptance.md names only tests that exist.

The acceptance map is the evidence that an issue is resolved, so a renamed or deleted test must
not leave it pointing at nothing. This parses every test reference in the map and fails naming
each one that does not resolve. The forms the map uses:

- ``unit/api/test_x.py`` or ``e2e/test_y.py``: a test file (``unit/`` is ``tests/unit/``);
- ``unit/api/test_x.py::test_name[id|other id]``: a test function in it, and those cases of it
  among the tests pytest collects from the file;
- ``::test_other``: another function of the file referenced last in the same section;
- ``test_prefix_…`` (an ellipsis) and ``test_cohort_*``: any test function with that prefix or
  matching that pattern; ``e2e/…::test_x`` is a function in some e2e file;
- `` `test_name` `` in backticks, bare: a function of a file referenced earlier in the same row;
- `` `test_x.py` `` in backticks, bare: a test file somewhere under ``tests/``;
- ``unit/x/test_y.py`` (N tests): a file with N test functions, or N tests collected by pytest.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ACCEPTANCE = ROOT / "docs" / "acceptance.md"
TESTS = ROOT / "tests"
ELLIPSIS = "…"

_NAME = rf"[A-Za-z_][\w*{ELLIPSIS}]*"
_REFERENCE = re.compile(
    rf"(?P<full>(?<![\w/.])(?P<tree>unit|e2e)/(?P<path>(?:[\w/]+\.py|{ELLIPSIS}))"
    rf"(?:::(?P<full_test>{_NAME})(?:\[(?P<full_ids>[^\]]*)\])?)?)"
    rf"|(?P<cont>(?<![\w.])::(?P<cont_test>{_NAME})(?:\[(?P<cont_ids>[^\]]*)\])?)"
    rf"|`(?P<bare_file>test_\w+\.py)`"
    rf"|`(?P<bare_test>test_[\w*{ELLIPSIS}]+)(?:\[[^\]]*\])?`"
)
_COUNT_CLAIM = re.compile(r"^`?\s*\((\d+) tests\b")
_TEST_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(test_\w+)\s*\(", re.MULTILINE)


@dataclass
class Problem:
    line: int
    reference: str
    reason: str

    def __str__(self) -> str:
        return f"docs/acceptance.md:{self.line}: {self.reference}: {self.reason}"


@dataclass
class _Context:
    """What a continuation refers to: the last file of the section, the files of the row."""

    section_file: Path | None = None
    tree_files: list[Path] | None = None  # set when the last reference was `e2e/…`
    row_files: list[Path] = field(default_factory=list)


@cache
def functions_in(path: Path) -> frozenset[str]:
    """Names of the test functions defined in `path` (top level or in a class)."""
    return frozenset(_TEST_DEF.findall(path.read_text()))


def _matches(pattern: str, names: frozenset[str]) -> bool:
    if pattern.endswith(ELLIPSIS):
        prefix = pattern.removesuffix(ELLIPSIS)
        return any(name.startswith(prefix) for name in names)
    if "*" in pattern:
        return bool(fnmatch.filter(names, pattern))
    return pattern in names


def _found_in(pattern: str, files: list[Path]) -> bool:
    return any(_matches(pattern, functions_in(path)) for path in files)


def _rel(path: Path) -> str:
    return str(path.relative_to(TESTS))


def check_map(text: str) -> tuple[list[Problem], int]:
    """Every unresolved reference in `text` (an acceptance map), and how many references it had."""
    problems: list[Problem] = []
    checked = 0
    context = _Context()
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("#"):
            context = _Context()
            continue
        context.row_files = []
        for match in _REFERENCE.finditer(line):
            checked += 1
            problem = _check_one(match, line, context)
            if problem is not None:
                problems.append(Problem(number, match.group(0).strip("`"), problem))
    return problems, checked


def _check_one(match: re.Match[str], line: str, context: _Context) -> str | None:
    """Resolve one reference, updating `context`; return why it does not resolve, or None."""
    if match.group("full"):
        tree = TESTS / match.group("tree")
        if match.group("path") == ELLIPSIS:
            context.section_file, context.tree_files = None, sorted(tree.rglob("test_*.py"))
        else:
            path = tree / match.group("path")
            if not path.is_file():
                return f"no file tests/{match.group('tree')}/{match.group('path')}"
            context.section_file, context.tree_files = path, None
            context.row_files.append(path)
            claim = _COUNT_CLAIM.match(line[match.end() :])
            if claim and not match.group("full_test"):
                problem = _check_count(path, int(claim.group(1)))
                if problem is not None:
                    return problem
        test = match.group("full_test")
        return None if test is None else _check_test(test, context, match.group("full_ids"))
    if match.group("cont"):
        return _check_test(match.group("cont_test"), context, match.group("cont_ids"))
    if match.group("bare_file"):
        found = sorted(TESTS.rglob(match.group("bare_file")))
        if not found:
            return "no such file under tests/"
        context.row_files.extend(found)
        return None
    pattern = match.group("bare_test")
    if not context.row_files:
        return "a bare test name with no file before it in its row"
    if not _found_in(pattern, context.row_files):
        return f"no test function {pattern} in {', '.join(_rel(p) for p in context.row_files)}"
    return None


def _check_count(path: Path, claimed: int) -> str | None:
    """A claimed count is either the file's test functions or the tests pytest collects from it
    (parametrised cases counted); pytest is asked only when the functions do not match."""
    functions = len(functions_in(path))
    if claimed == functions:
        return None
    ids = collected(path)
    total = None if ids is None else len(ids)
    if claimed == total:
        return None
    return f"says {claimed} tests, {_rel(path)} has {functions} test functions and {total} collected tests"


@cache
def collected(path: Path) -> frozenset[str] | None:
    """The test ids pytest collects from `path` (``test_name[param id]``), None if collection fails."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if result.returncode != 0:
        return None
    prefix = f"{path.relative_to(ROOT)}::"
    return frozenset(
        line.removeprefix(prefix) for line in result.stdout.splitlines() if line.startswith(prefix)
    )


def _check_test(pattern: str, context: _Context, ids: str | None) -> str | None:
    """`pattern` names a test function of the current file; `ids` (``a|b``) cases pytest collects."""
    if context.tree_files is not None:
        return None if _found_in(pattern, context.tree_files) else f"no test function {pattern} in any file"
    if context.section_file is None:
        return "a ::test reference with no file before it in its section"
    if not _found_in(pattern, [context.section_file]):
        return f"no test function {pattern} in {_rel(context.section_file)}"
    if ids is None:
        return None
    cases = collected(context.section_file)
    if cases is None:
        return f"pytest cannot collect {_rel(context.section_file)}"
    missing = [case for case in ids.split("|") if f"{pattern}[{case}]" not in cases]
    return f"no case {', '.join(missing)} of {pattern} in {_rel(context.section_file)}" if missing else None


def test_every_test_the_acceptance_map_names_exists() -> None:
    problems, checked = check_map(ACCEPTANCE.read_text())
    assert checked > 300, f"only {checked} references parsed: has the map's format changed?"
    assert not problems, "stale references in docs/acceptance.md:\n" + "\n".join(map(str, problems))


# ---------------------------------------------------------------- the checker itself can fail

_REAL = "unit/test_quantity.py"


def _real_test() -> str:
    return sorted(functions_in(TESTS / _REAL))[0]


def _problems(text: str) -> list[str]:
    return [problem.reason for problem in check_map(text)[0]]


def test_a_missing_file_is_reported() -> None:
    assert _problems("| x | | `unit/test_no_such_file.py::test_a` |") == [
        "no file tests/unit/test_no_such_file.py"
    ]


def test_a_missing_function_is_reported_also_through_a_continuation() -> None:
    real = _real_test()
    text = f"| x | | `{_REAL}::{real}`, `::test_renamed_away[case]` |\n| y | | `::{real}` |"
    assert _problems(text) == ["no test function test_renamed_away in unit/test_quantity.py"]


def test_a_continuation_does_not_cross_a_heading() -> None:
    text = f"| x | | `{_REAL}::{_real_test()}` |\n## Next issue\n| y | | `::{_real_test()}` |"
    assert _problems(text) == ["a ::test reference with no file before it in its section"]


def test_prefixes_patterns_and_bare_names_resolve_against_their_row() -> None:
    real = _real_test()
    good = f"| x | | `{_REAL}` (`{real[:8]}*`, `{real}`), `::{real[:-2]}{ELLIPSIS}` |"
    assert _problems(good) == []
    bad = f"| x | | `{_REAL}` (`test_gone`) |\n| y | | `{real}` |"
    assert _problems(bad) == [
        "no test function test_gone in unit/test_quantity.py",
        "a bare test name with no file before it in its row",
    ]


def test_a_wrong_test_count_is_reported() -> None:
    count = len(functions_in(TESTS / _REAL))
    assert _problems(f"`{_REAL}` ({count} tests)") == []
    ids = collected(TESTS / _REAL)
    assert ids is not None and len(ids) >= count
    assert _problems(f"`{_REAL}` ({len(ids)} tests)") == []
    assert _problems(f"`{_REAL}` ({len(ids) + 1} tests)") == [
        f"says {len(ids) + 1} tests, unit/test_quantity.py has {count} test functions and {len(ids)} collected tests"
    ]


def test_parametrised_cases_must_be_collected() -> None:
    ids = collected(TESTS / _REAL)
    assert ids is not None
    cases = sorted(case for case in ids if "[" in case)
    assert len(cases) >= 2, "test_quantity.py is expected to have parametrised cases"
    (name, first), (_, second) = (case.removesuffix("]").split("[", 1) for case in cases[:2])
    assert _problems(f"`{_REAL}::{name}[{first}|{second}]`") == []
    assert _problems(f"`{_REAL}::{name}[{first}|no such case]`") == [
        f"no case no such case of {name} in unit/test_quantity.py"
    ]
