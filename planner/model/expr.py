"""The formula layer: one definition per metric, evaluated in Python and rendered to Excel.

A metric is an ordinary pure Python function of named quantities, e.g.::

    def kv_bytes_per_token(layers, kv_heads, head_dim, kv_bytes_per_value):
        return 2 * layers * kv_heads * head_dim * kv_bytes_per_value

Called with numbers (or numpy arrays, or pandas Series) it computes values. Called with
:class:`Ref` symbols it *traces* itself into an expression tree, which :func:`to_excel` renders as
a spreadsheet formula (``2*G2*H2*I2*K2``). Python values and workbook formulas therefore come from
the same code and cannot drift apart.

Functions that Python's operators cannot express (floor, min, max, a conditional) are spelled with
the helpers here (:func:`floor`, :func:`minimum`, :func:`maximum`, :func:`where`, ...), which
dispatch on their arguments: numpy for values, an expression node for symbols.

Rendering keeps the evaluation order of Python exactly (left-associative, parentheses wherever
Python grouped differently), so that the spreadsheet engine performs the same floating-point
operations in the same order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

# Precedence of Excel operators, higher binds tighter.
_PRECEDENCE = {"cmp": 1, "&": 2, "+": 3, "-": 3, "*": 4, "/": 4}
_ATOM = 10


class Expr:
    """A node of a formula. Operators build new nodes; nothing is evaluated."""

    precedence = _ATOM

    # arithmetic ---------------------------------------------------------------------------
    def __add__(self, other: Any) -> Expr:
        return BinOp("+", self, lift(other))

    def __radd__(self, other: Any) -> Expr:
        return BinOp("+", lift(other), self)

    def __sub__(self, other: Any) -> Expr:
        return BinOp("-", self, lift(other))

    def __rsub__(self, other: Any) -> Expr:
        return BinOp("-", lift(other), self)

    def __mul__(self, other: Any) -> Expr:
        return BinOp("*", self, lift(other))

    def __rmul__(self, other: Any) -> Expr:
        return BinOp("*", lift(other), self)

    def __truediv__(self, other: Any) -> Expr:
        return BinOp("/", self, lift(other))

    def __rtruediv__(self, other: Any) -> Expr:
        return BinOp("/", lift(other), self)

    def __neg__(self) -> Expr:
        return BinOp("-", Const(0), self)

    # comparisons and logic ----------------------------------------------------------------
    def __le__(self, other: Any) -> Expr:
        return Compare("<=", self, lift(other))

    def __lt__(self, other: Any) -> Expr:
        return Compare("<", self, lift(other))

    def __ge__(self, other: Any) -> Expr:
        return Compare(">=", self, lift(other))

    def __gt__(self, other: Any) -> Expr:
        return Compare(">", self, lift(other))

    # ``x == 0`` inside a metric must trace to ``x=0``, not to Python's identity test (FALSE)
    def __eq__(self, other: Any) -> Expr:  # type: ignore[override]
        return Compare("=", self, lift(other))

    def __ne__(self, other: Any) -> Expr:  # type: ignore[override]
        return Compare("<>", self, lift(other))

    __hash__ = object.__hash__  # nodes stay usable as keys: identity, as before

    def __and__(self, other: Any) -> Expr:
        return Call("AND", (self, lift(other)))

    def __rand__(self, other: Any) -> Expr:
        return Call("AND", (lift(other), self))

    def __or__(self, other: Any) -> Expr:
        return Call("OR", (self, lift(other)))

    def __ror__(self, other: Any) -> Expr:
        return Call("OR", (lift(other), self))

    def __bool__(self) -> bool:
        raise TypeError(
            "a formula has no truth value while it is being traced: use expr.where(), "
            "not `if`, inside a metric"
        )

    def render(self, ref: Callable[[str], str]) -> str:
        raise NotImplementedError  # pragma: no cover - every node class overrides it


@dataclass(frozen=True, eq=False)
class Ref(Expr):
    """A named quantity: a column of the plan, or a named cell of the workbook."""

    name: str

    def render(self, ref: Callable[[str], str]) -> str:
        return ref(self.name)


@dataclass(frozen=True, eq=False)
class Const(Expr):
    """A literal number, boolean or text."""

    value: float | int | bool | str

    def render(self, ref: Callable[[str], str]) -> str:
        v = self.value
        if isinstance(v, bool):
            return "TRUE()" if v else "FALSE()"
        if isinstance(v, str):
            return '"' + v.replace('"', '""') + '"'
        if isinstance(v, int):
            return str(v) if v >= 0 else f"({v})"
        if math.isnan(v):
            return "NA()"  # a missing value, as blank lookups give
        if not math.isfinite(v):
            raise ValueError(f"cannot write {v!r} into a formula")
        text = repr(float(v)).upper()
        if text.endswith(".0"):
            text = text[:-2]
        return text if v >= 0 else f"({text})"


@dataclass(frozen=True, eq=False)
class BinOp(Expr):
    """An arithmetic operation, left-associative as in Python and Excel."""

    op: str
    left: Expr
    right: Expr

    @property
    def precedence(self) -> int:  # type: ignore[override]
        return _PRECEDENCE[self.op]

    def render(self, ref: Callable[[str], str]) -> str:
        p = self.precedence
        left = self.left.render(ref)
        if self.left.precedence < p:
            left = f"({left})"
        right = self.right.render(ref)
        # Same precedence on the right: Python grouped it first, so must the spreadsheet.
        if self.right.precedence <= p:
            right = f"({right})"
        return f"{left}{self.op}{right}"


@dataclass(frozen=True, eq=False)
class Compare(Expr):
    """A comparison giving TRUE or FALSE."""

    op: str
    left: Expr
    right: Expr
    precedence = _PRECEDENCE["cmp"]

    def render(self, ref: Callable[[str], str]) -> str:
        left = self.left.render(ref)
        right = self.right.render(ref)
        if self.left.precedence <= self.precedence:
            left = f"({left})"
        if self.right.precedence <= self.precedence:
            right = f"({right})"
        return f"{left}{self.op}{right}"


@dataclass(frozen=True, eq=False)
class Call(Expr):
    """A spreadsheet function call, e.g. ``MAX(a,b)``."""

    func: str
    args: tuple[Expr, ...]

    def render(self, ref: Callable[[str], str]) -> str:
        return f"{self.func}({','.join(a.render(ref) for a in self.args)})"


@dataclass(frozen=True, eq=False)
class Raw(Expr):
    """A formula fragment written by a renderer (a lookup), with named holes for references."""

    template: str
    names: tuple[str, ...] = ()

    def render(self, ref: Callable[[str], str]) -> str:
        return self.template.format(**{n: ref(n) for n in self.names})


def lift(value: Any) -> Expr:
    """Wrap a Python literal as a :class:`Const`; leave expressions alone."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, int, float, str, np.integer, np.floating, np.bool_)):
        return Const(value.item() if hasattr(value, "item") else value)
    raise TypeError(f"cannot use {type(value).__name__} in a formula")


def _symbolic(*args: Any) -> bool:
    return any(isinstance(a, Expr) for a in args)


# Functions usable inside metrics ------------------------------------------------------------


def floor(x: Any) -> Any:
    """Largest integer not above ``x`` (Excel ``INT``, which also rounds negatives down)."""
    if _symbolic(x):
        return Call("INT", (lift(x),))
    return np.floor(x)


def ceil(x: Any) -> Any:
    """Round up to a whole number, away from zero (Excel ``ROUNDUP(x,0)``); ⌈x⌉ for x ≥ 0.

    Python computes exactly what the spreadsheet does for negative ``x`` as well.
    """
    if _symbolic(x):
        return Call("ROUNDUP", (lift(x), Const(0)))
    return np.sign(x) * np.ceil(np.abs(x))


#: Plain Python numbers: the simulation's step times call metrics with such scalars, thousands
#: of times a run, and :func:`minimum` and :func:`maximum` then skip numpy's call overhead.
_SCALARS = (float, int)


def minimum(a: Any, b: Any) -> Any:
    """Element-wise minimum (Excel ``MIN``); NaN wins, as in numpy."""
    if type(a) in _SCALARS and type(b) in _SCALARS:
        return math.nan if a != a or b != b else (a if a <= b else b)
    if _symbolic(a, b):
        return Call("MIN", (lift(a), lift(b)))
    return np.minimum(a, b)


def maximum(a: Any, b: Any) -> Any:
    """Element-wise maximum (Excel ``MAX``); NaN wins, as in numpy."""
    if type(a) in _SCALARS and type(b) in _SCALARS:
        return math.nan if a != a or b != b else (a if a >= b else b)
    if _symbolic(a, b):
        return Call("MAX", (lift(a), lift(b)))
    return np.maximum(a, b)


def where(condition: Any, if_true: Any, if_false: Any) -> Any:
    """``if_true`` where ``condition`` holds, else ``if_false`` (Excel ``IF``)."""
    if _symbolic(condition, if_true, if_false):
        return Call("IF", (lift(condition), lift(if_true), lift(if_false)))
    scalars = np.ndim(condition) == np.ndim(if_true) == np.ndim(if_false) == 0
    if scalars and isinstance(if_true, str) != isinstance(if_false, str):
        return if_true if condition else if_false  # a number or a text, as the cell shows it
    result = np.where(condition, if_true, if_false)
    return result.item() if result.ndim == 0 else result


def power(base: Any, exponent: Any) -> Any:
    """``base`` raised to ``exponent`` (Excel ``POWER``; ``^`` binds differently there)."""
    if _symbolic(base, exponent):
        return Call("POWER", (lift(base), lift(exponent)))
    return np.power(base, exponent)


def exp(x: Any) -> Any:
    """e raised to ``x`` (Excel ``EXP``)."""
    if _symbolic(x):
        return Call("EXP", (lift(x),))
    return np.exp(x)


def log(x: Any) -> Any:
    """The natural logarithm of ``x`` (Excel ``LN``)."""
    if _symbolic(x):
        return Call("LN", (lift(x),))
    return np.log(x)


# Functions over a range of cells: a list or array of values in Python, a range in the workbook
# (the name of the range is a symbol that the renderer maps to ``A5:A28``).


def _values(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=float)


def total(values: Any) -> Any:
    """Sum of a range (Excel ``SUM``)."""
    if _symbolic(values):
        return Call("SUM", (lift(values),))
    return np.sum(_values(values))


def greatest(values: Any) -> Any:
    """Largest value of a range (Excel ``MAX`` over a range; :func:`maximum` compares two)."""
    if _symbolic(values):
        return Call("MAX", (lift(values),))
    return np.max(_values(values))


def least(values: Any) -> Any:
    """Smallest value of a range (Excel ``MIN`` over a range; :func:`minimum` compares two)."""
    if _symbolic(values):
        return Call("MIN", (lift(values),))
    return np.min(_values(values))


def largest(values: Any, k: Any) -> Any:
    """The ``k``-th largest value of a range, 1 the largest (Excel ``LARGE``); NaN where ``k``
    is not a position of the range (the spreadsheet's ``#NUM!``)."""
    if _symbolic(values, k):
        return Call("LARGE", (lift(values), lift(k)))
    ranked = np.sort(_values(values))[::-1]
    if not np.isfinite(k) or not 1 <= k <= len(ranked):
        return math.nan
    return ranked[int(k) - 1]


def pick(values: Any, position: Any) -> Any:
    """The value at ``position`` of a range, 1 the first (Excel ``INDEX``); NaN where it is not a
    position of the range (the spreadsheet's ``#REF!``)."""
    if _symbolic(values, position):
        return Call("INDEX", (lift(values), lift(position)))
    array = _values(values)
    if not np.isfinite(position) or not 1 <= position <= len(array):
        return math.nan
    return array[int(position) - 1]


def sum_product(*ranges: Any) -> Any:
    """Sum of the element-wise product of ranges of one length (Excel ``SUMPRODUCT``); of one
    range, its sum. Comparisons inside give 1 or 0 per element, as in the spreadsheet."""
    if _symbolic(*ranges):
        return Call("SUMPRODUCT", tuple(lift(r) for r in ranges))
    product = _values(ranges[0])
    for r in ranges[1:]:
        product = product * _values(r)
    return np.sum(product)


def _excel_text(value: Any) -> str:
    """How a spreadsheet's ``&`` turns a value into text: whole numbers without ``.0``."""
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if number.is_integer() and abs(number) < _EXACT:
            return str(int(number))
    return str(value)


def concat(*parts: Any) -> Any:
    """Text joined end to end (Excel ``&``)."""
    if _symbolic(*parts):
        node = lift(parts[0])
        for part in parts[1:]:
            node = BinOp("&", node, lift(part))
        return node
    texts = [_texts(p) for p in parts]
    shape = np.broadcast_shapes(*(t.shape for t in texts))
    if not shape:  # every part one value: a plain str
        return "".join(str(t.item()) for t in texts)
    columns = [np.broadcast_to(t, shape).ravel().tolist() for t in texts]
    joined = np.empty(int(np.prod(shape)), dtype=object)
    joined[:] = ["".join(row) for row in zip(*columns, strict=True)]
    return joined.reshape(shape)


#: Whole numbers below this are written without ".0" through an integer (exact in a float).
_EXACT = 2.0**53


def _texts(value: Any) -> np.ndarray:
    """:func:`_excel_text` of every element, as an object array of str, vectorised by dtype."""
    a = np.asarray(value)
    if a.dtype.kind == "f":
        whole = np.isfinite(a) & (np.abs(a) < _EXACT) & (a == np.trunc(np.nan_to_num(a)))
        ints = np.where(whole, a, 0).astype(np.int64).astype(str)
        return np.where(whole, ints, a.astype(str)).astype(object)
    if a.dtype.kind in "iuUS":
        return a.astype(str).astype(object)
    flat = a.ravel()
    out = np.empty(flat.shape, dtype=object)
    missing = np.asarray(pd.isna(flat), dtype=bool)
    none = np.array([v is None for v in flat], dtype=bool) if missing.any() else missing
    out[none] = "None"
    out[missing & ~none] = "nan"
    present = flat[~missing]
    kind = pd.api.types.infer_dtype(present, skipna=False)
    if kind == "string":
        out[~missing] = present
    elif kind in ("floating", "integer", "mixed-integer-float"):
        out[~missing] = _texts(present.astype(float))
    else:
        out[~missing] = [_excel_text(v) for v in present]
    return out.reshape(a.shape)


def is_missing(x: Any) -> Any:
    """Whether ``x`` is missing: NaN in Python, ``#N/A`` in the workbook (Excel ``ISNA``)."""
    if _symbolic(x):
        return Call("ISNA", (lift(x),))
    return np.isnan(x)


def is_number(x: Any) -> Any:
    """Whether ``x`` holds a number: not NaN in Python; in the workbook neither ``#N/A`` nor a
    text such as "not simulated" (Excel ``ISNUMBER``)."""
    if _symbolic(x):
        return Call("ISNUMBER", (lift(x),))
    return np.logical_not(np.isnan(np.asarray(x, dtype=float)))


def logical_not(x: Any) -> Any:
    """Logical negation (Excel ``NOT``)."""
    if _symbolic(x):
        return Call("NOT", (lift(x),))
    return np.logical_not(x)


# Tracing and evaluation --------------------------------------------------------------------


def trace(func: Callable[..., Any], names: tuple[str, ...]) -> Expr:
    """The expression that ``func`` builds when every argument is a symbol of the same name."""
    return lift(func(*(Ref(n) for n in names)))


def to_excel(expr: Expr, ref: Callable[[str], str]) -> str:
    """Render ``expr`` as an Excel formula (with the leading ``=``); ``ref`` maps names to cells."""
    return "=" + expr.render(ref)


def evaluate(func: Callable[..., Any], names: tuple[str, ...], values: Mapping[str, Any]) -> Any:
    """Call ``func`` on the values named by its arguments (columns, arrays or numbers)."""
    return func(*(values[n] for n in names))
