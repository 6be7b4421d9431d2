"""The shape of planner's code: no function too branchy to read, no module too long to hold.

A function's cyclomatic complexity is radon's (``radon cc``: one plus a branch for each
``if``, loop, ``except``, boolean operator and comprehension clause); a method, a closure and a
class (its methods' average plus one) each count as a block, as ``radon cc`` lists them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_visit

PLANNER = Path(__file__).resolve().parent.parent / "planner"

#: radon cyclomatic complexity a block may reach (``radon cc -n C planner`` lists nothing above).
MOST_COMPLEXITY = 20
#: Lines a module may hold.
MOST_LINES = 600


def modules() -> list[Path]:
    return sorted(PLANNER.rglob("*.py"))


def blocks(found: list, outer: str = "") -> Iterator[tuple[str, int, int]]:
    """(qualified name, first line, complexity) of every block radon finds, nested ones too."""
    for block in found:
        name = f"{outer}{block.fullname if not outer else block.name}"
        yield name, block.lineno, block.complexity
        yield from blocks(getattr(block, "closures", []), name + ".")
        yield from blocks(getattr(block, "inner_classes", []), name + ".")


def complex_blocks(path: Path) -> list[str]:
    """``path:line name (complexity)`` for each block in ``path`` above the limit."""
    where = path.relative_to(PLANNER.parent)
    return [
        f"{where}:{line} {name} ({complexity})"
        for name, line, complexity in blocks(cc_visit(path.read_text()))
        if complexity > MOST_COMPLEXITY
    ]


def test_the_complexity_walk_finds_methods_and_closures() -> None:
    code = "class A:\n def m(self):\n  def inner():\n   return 1\n  return inner\n"
    assert [name for name, _, _ in blocks(cc_visit(code))] == ["A", "A.m", "A.m.inner"]


def test_no_function_is_above_the_complexity_limit() -> None:
    offenders = [entry for path in modules() for entry in complex_blocks(path)]
    assert not offenders, (
        f"{len(offenders)} blocks above cyclomatic complexity {MOST_COMPLEXITY}:\n"
        + "\n".join(offenders)
    )


def test_no_module_is_above_the_line_limit() -> None:
    lengths = {path: len(path.read_text().splitlines()) for path in modules()}
    offenders = [
        f"{path.relative_to(PLANNER.parent)} ({lines} lines)"
        for path, lines in sorted(lengths.items())
        if lines > MOST_LINES
    ]
    assert not offenders, f"modules above {MOST_LINES} lines:\n" + "\n".join(offenders)


def test_every_package_is_installed() -> None:
    """Every folder of planner/ with an __init__.py is listed in pyproject.toml's packages, so a
    non-editable install (as CI's) carries it."""
    import tomllib

    root = Path(__file__).resolve().parent.parent
    listed = set(
        tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(root).parts)
        for init in (root / "planner").rglob("__init__.py")
    }
    assert found <= listed, f"not in pyproject.toml's packages: {sorted(found - listed)}"
