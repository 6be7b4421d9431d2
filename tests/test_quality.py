"""The library stays lint-clean (ruff) and type-checked (mypy), as CI runs the tests."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install '.[test]')")
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=REPO, capture_output=True, text=True
    )


def test_ruff_finds_nothing():
    result = _run("ruff", "check", "planner", "tests", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing():
    result = _run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def _imports(root: Path) -> dict[str, set[str]]:
    """For every module of the ``planner`` package, the package's modules it imports anywhere
    (at the top, inside functions, or for type checking only)."""
    modules = {}
    for path in root.rglob("*.py"):
        name = ".".join(path.with_suffix("").relative_to(root.parent).parts)
        modules[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:  # relative: up from the module's package, then down
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join([*parts, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                found = [target, *(f"{target}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            else:
                continue
            graph[module] |= {f for f in found if f in modules and f != module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import one another, directly or round a loop."""
    reach = {m: set(graph[m]) for m in graph}
    changed = True
    while changed:
        changed = False
        for m in reach:
            more = set().union(*(reach[n] for n in reach[m])) - reach[m]
            if more:
                reach[m] |= more
                changed = True
    groups = {
        frozenset({m} | {n for n in reach[m] if m in reach[n]}) for m in graph if m in reach[m]
    }
    return sorted(sorted(g) for g in groups)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_two_modules_import_each_other():
    """Imports flow one way: a module never reaches itself through the modules it imports."""
    graph = _imports(REPO / "planner")
    assert len(graph) > 30 and graph["planner.plan.sweep"]
    assert _cycles(graph) == []
