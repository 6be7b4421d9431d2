"""A metric's formula as the report's appendix prints it: short formulas as the formula layer
renders them, long ones with their repeated parts named once.

A few metrics (the open-loop batch's fixed point above all) trace into formulas of nearly ten
thousand characters, because each of the four lines of a step time appears in each branch of
the fixed point; printed whole they took five pages of the appendix. Naming each part that
repeats (``x1 = …``), the largest saving first, prints the same formula in a tenth of the
space: every name stands for exactly the text it replaces, so the formula is unchanged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from planner.model.expr import BinOp, Call, Compare, Expr, Ref
from planner.model.metric import Metric

#: formulas at most this long print as they are [characters]
LONG_CHARACTERS = 600
#: a part shorter than this is not worth a name [characters]
SHORTEST_PART = 40
#: at most this many named parts per formula
MOST_PARTS = 12


@dataclass(frozen=True)
class Formula:
    """A formula to print: its text and the parts it names, each (name, text)."""

    text: str
    parts: tuple[tuple[str, str], ...] = ()


def _children(e: Expr) -> list[Expr]:
    if isinstance(e, (BinOp, Compare)):
        return [e.left, e.right]
    if isinstance(e, Call):
        return list(e.args)
    return []


def _rebuild(e: Expr, kids: list[Expr]) -> Expr:
    if isinstance(e, BinOp):
        return BinOp(e.op, kids[0], kids[1])
    if isinstance(e, Compare):
        return Compare(e.op, kids[0], kids[1])
    assert isinstance(e, Call)
    return Call(e.func, tuple(kids))


def _texts(e: Expr) -> Callable[[Expr], str]:
    """A renderer of the nodes under ``e`` by name, each rendered once."""
    seen: dict[int, str] = {}

    def text(node: Expr) -> str:
        if id(node) not in seen:
            seen[id(node)] = node.render(lambda name: name)
        return seen[id(node)]

    return text


def _substitute(e: Expr, text: str, name: str, render: Callable[[Expr], str]) -> Expr:
    """``e`` with every part that renders as ``text`` replaced by the name ``name``."""
    if render(e) == text:
        return Ref(name)
    kids = _children(e)
    if not kids:
        return e
    return _rebuild(e, [_substitute(k, text, name, render) for k in kids])


def _most_repeated(e: Expr) -> str | None:
    """The repeated compound part whose naming saves the most characters, if any."""
    render = _texts(e)
    nodes, stack = [], [e]
    while stack:
        node = stack.pop()
        if _children(node):
            nodes.append(node)
            stack.extend(_children(node))
    counts = Counter(render(n) for n in nodes if n is not e)
    best = max(
        ((len(t) * (c - 1), t) for t, c in counts.items() if c > 1 and len(t) >= SHORTEST_PART),
        default=None,
    )
    return best[1] if best else None


def printed(m: Metric) -> Formula:
    """The metric's formula as the appendix prints it (see the module's docstring)."""
    text = m.formula_text()
    if len(text) <= LONG_CHARACTERS:
        return Formula(text)
    expr = m.expression()
    parts: list[tuple[str, Expr]] = []
    for i in range(1, MOST_PARTS + 1):
        repeated = _most_repeated(expr)
        if repeated is None:
            break
        name = f"x{i}"
        parts = [(n, _substitute(p, repeated, name, _texts(p))) for n, p in parts]
        render = _texts(expr)
        found = _found(expr, repeated, render)
        parts.append((name, found))
        expr = _substitute(expr, repeated, name, render)
    return Formula(
        expr.render(lambda n: n),
        tuple((n, p.render(lambda n: n)) for n, p in parts),
    )


def _found(e: Expr, text: str, render: Callable[[Expr], str]) -> Expr:
    """The first part of ``e`` that renders as ``text``."""
    stack = [e]
    while stack:
        node = stack.pop()
        if render(node) == text:
            return node
        stack.extend(_children(node))
    raise ValueError(f"{text!r} is not a part of the formula")  # pragma: no cover
