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


#: The layers of ``planner``, lowest first: a package may import only those to its left.
LAYERS = (
    "model", "catalog", "plan", "serving", "measure", "deploy", "outputs", "diff", "pipeline",
    "cli_deploy", "cli",
)  # fmt: skip

#: Top-level helpers any layer may use; they import no layer.
LEAVES = ("executor", "progress", "resources", "cleanup")


def _layer(module: str) -> str | None:
    """The layer or leaf ``planner.<name>...`` belongs to (None: the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a layer to the importer's right, or of a layer by a leaf, as
    ``importer -> imported``."""
    found = []
    for module, imported in sorted(graph.items()):
        mine = _layer(module)
        for target in sorted(imported):
            theirs = _layer(target)
            if mine is None or theirs is None or theirs == mine or theirs in LEAVES:
                continue
            if mine in LEAVES or LAYERS.index(theirs) > LAYERS.index(mine):
                found.append(f"{module} -> {target}")
    return found


def test_the_layer_checker_finds_an_upward_import():
    graph = {
        "planner.plan.stream": {"planner.outputs.runs", "planner.model.units"},
        "planner.outputs.runs": {"planner.plan.sweep", "planner.progress"},
        "planner.progress": {"planner.plan.sweep"},
        "planner.cli": {"planner.pipeline"},
    }
    assert _upward(graph) == [
        "planner.plan.stream -> planner.outputs.runs",
        "planner.progress -> planner.plan.sweep",
    ]


def test_every_package_imports_only_the_layers_below_it():
    """model ← catalog ← plan ← serving ← measure ← deploy ← outputs ← diff ← pipeline ←
    cli_deploy ← cli: each imports only those to its left (anywhere in a module, inside
    functions too), and the leaves (executor, progress, resources, cleanup) none of them."""
    graph = _imports(REPO / "planner")
    layers = {_layer(m) for m in graph} - {None}
    assert layers <= set(LAYERS) | set(LEAVES), sorted(layers - set(LAYERS) - set(LEAVES))
    assert _upward(graph) == []
