"""Metric definitions: a registry of pure formula functions with their units and sources.

Each metric is one function decorated with :func:`metric`. Its argument names are the names of
the quantities it needs (inputs looked up from the catalogs, or other metrics), so the batch
planner can evaluate metrics over a table in dependency order, and the workbook can render each
one as a formula over the cells of the same row (see :mod:`planner.model.expr`).
"""

from __future__ import annotations

import functools
import heapq
import importlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from planner.model.expr import Expr, trace

Kind = Literal["number", "integer", "bool", "text"]


@functools.cache
def _traced(func: Callable[..., Any], inputs: tuple[str, ...]) -> Expr:
    return trace(func, inputs)


@dataclass(frozen=True)
class Metric:
    """A named quantity computed by ``func`` from the quantities named in ``inputs``."""

    name: str
    func: Callable[..., Any]
    inputs: tuple[str, ...]
    unit: str
    description: str
    source: str = ""
    kind: Kind = "number"
    group: str = ""
    restates: str | None = None  # the metric this one restates in another unit

    def expression(self) -> Expr:
        """The metric traced into a formula tree over its input names (traced once: a tree is
        never changed once built)."""
        return _traced(self.func, self.inputs)

    def formula_text(self) -> str:
        """The formula over the names of its inputs, e.g. ``2*layers*kv_heads*...``."""
        return self.expression().render(lambda name: name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)


class MetricError(Exception):
    """A metric divided by zero or produced an undefined value (0/0, ∞ − ∞) for some candidate:
    a formula that does not cover its inputs, never a result to carry on with silently."""


#: Every metric in definition order, by name, filled by :func:`metric` as the modules of
#: :data:`METRIC_MODULES` are imported; read it through :func:`metrics`.
REGISTRY: dict[str, Metric] = {}

#: The modules that define metrics, in the order their definitions register.
METRIC_MODULES = (
    "planner.model.capacity",
    "planner.model.cost",
    "planner.model.facility",
    "planner.model.latency",
    "planner.model.prefix",
    "planner.model.speculative",
    "planner.model.memory",
    "planner.model.engine",
    "planner.model.load",
    "planner.model.margins",
    "planner.model.calibration",
    "planner.model.parallel",
    "planner.model.pipeline",
    "planner.model.disaggregated",
)


#: The module that defined each metric, so that the order does not depend on which module a
#: program happened to import first.
_DEFINED_IN: dict[str, str] = {}
_ORDERED: dict[str, Metric] = {}


def defined_in(name: str) -> str:
    """The module that defined metric ``name`` ("" for one it does not know)."""
    return _DEFINED_IN.get(name, "")


def _caller_module() -> str:
    frame = inspect.currentframe()
    caller = frame.f_back.f_back if frame and frame.f_back else None
    return str(caller.f_globals.get("__name__", "")) if caller else ""


def metrics() -> dict[str, Metric]:
    """Every metric by name, in definition order within the order of :data:`METRIC_MODULES`:
    imports them explicitly, so the registry is whole, and in the same order, whichever module
    asked first."""
    for module in METRIC_MODULES:
        importlib.import_module(module)
    if len(_ORDERED) != len(REGISTRY):
        rank = {m: i for i, m in enumerate(METRIC_MODULES)}
        names = sorted(
            enumerate(REGISTRY),
            key=lambda item: (rank.get(_DEFINED_IN.get(item[1], ""), len(rank)), item[0]),
        )
        _ORDERED.clear()
        _ORDERED.update((name, REGISTRY[name]) for _, name in names)
    return _ORDERED


#: A cross-reference of a docstring (``:func:`planner.model.memory.kv_bytes_per_token```),
#: its last name the group; and a literal (````fp8````), its text the group.
_REFERENCE = re.compile(r":(?:func|meth|data|class|attr|mod):`~?(?:[\w.]*\.)?([^`.]+)`")
_LITERAL = re.compile(r"``([^`]+)``")


def plain_text(doc: str) -> str:
    """A docstring's text as its readers see it in a workbook or a report: each
    cross-reference by the name it refers to, each literal without its marks.
    ``(:func:`planner.model.cost.nodes_needed`)`` reads ``(nodes_needed)``."""
    return _LITERAL.sub(r"\1", _REFERENCE.sub(r"\1", doc))


def metric(
    unit: str,
    *,
    source: str = "",
    kind: Kind = "number",
    group: str = "",
    into: dict[str, Metric] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a formula function as a metric named after the function.

    The first paragraph of the docstring becomes the metric's description (in the workbook's
    Notes sheet and the report's appendix), as plain text (:func:`plain_text`). The function
    itself is returned unchanged, so it stays an ordinary pure function that tests call with
    numbers. ``into``: a registry of its own (a sheet's metrics that are no Plan column),
    instead of :data:`REGISTRY`.
    """

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        name = func.__name__
        registry = REGISTRY if into is None else into
        if name in registry:
            raise ValueError(f"metric {name!r} is defined twice")
        doc = inspect.getdoc(func) or ""
        description = plain_text(doc.split("\n\n")[0].replace("\n", " ").strip())
        if not description:
            raise ValueError(f"metric {name!r} needs a docstring")
        registry[name] = Metric(
            name=name,
            func=func,
            inputs=tuple(inspect.signature(func).parameters),
            unit=unit,
            description=description,
            source=source,
            kind=kind,
            group=group,
        )
        if into is None:
            _DEFINED_IN[name] = func.__module__
        return func

    return register


def derived(
    name: str, of: str, func: Callable[[Any], Any], unit: str, description: str, group: str = ""
) -> None:
    """Register a metric that restates another in a unit people read (GiB, ms)."""
    if name in REGISTRY:
        raise ValueError(f"metric {name!r} is defined twice")
    REGISTRY[name] = Metric(name, func, (of,), unit, description, group=group, restates=of)
    _DEFINED_IN[name] = _caller_module()


def rebound(
    name: str,
    of: str,
    inputs: dict[str, str],
    description: str,
    into: dict[str, Metric] | None = None,
) -> None:
    """Register a metric that is the formula of metric ``of`` over other inputs (``inputs`` maps
    each of its input names to the one to read instead): the same physics at another operating
    point, with one definition. ``into``: the registry of both, instead of :data:`REGISTRY`."""
    registry = REGISTRY if into is None else into
    if name in registry:
        raise ValueError(f"metric {name!r} is defined twice")
    base = registry[of]
    unknown = set(inputs) - set(base.inputs)
    if unknown:
        raise ValueError(f"metric {of!r} has no inputs {sorted(unknown)}")
    registry[name] = Metric(
        name,
        base.func,
        tuple(inputs.get(i, i) for i in base.inputs),
        base.unit,
        description,
        source=base.source,
        kind=base.kind,
        group=base.group,
    )
    if into is None:
        _DEFINED_IN[name] = _caller_module()


GROUP_ORDER = ("keys", "memory", "latency", "serving", "cost")


def ordered(names: list[str] | None, available: set[str]) -> list[Metric]:
    """Metrics in an order where each comes after everything it reads.

    Among the metrics that are ready, the first by group (:data:`GROUP_ORDER`) and then by
    definition order goes next, so columns keep a readable order. ``available`` are the names the
    table already has (looked-up inputs and global assumptions). Raises ``ValueError`` naming any
    metric whose inputs can never be satisfied.
    """
    registry = metrics()
    index = {name: i for i, name in enumerate(registry)}

    def rank(m: Metric) -> tuple[int, int]:
        group = GROUP_ORDER.index(m.group) if m.group in GROUP_ORDER else len(GROUP_ORDER)
        return group, index[m.name]

    pending = {n: registry[n] for n in (names or list(registry))}
    # Kahn's order, the ready metric of least rank first: each metric waits for the inputs that
    # are pending metrics; an input neither available nor pending never comes
    waiting = {n: {i for i in m.inputs if i not in available} for n, m in pending.items()}
    readers: dict[str, list[str]] = {}
    for n, inputs in waiting.items():
        for i in inputs:
            readers.setdefault(i, []).append(n)
    ready = [(rank(pending[n]), n) for n, inputs in waiting.items() if not inputs]
    heapq.heapify(ready)
    result: list[Metric] = []
    while ready:
        _, name = heapq.heappop(ready)
        result.append(pending[name])
        for reader in readers.get(name, ()):
            waiting[reader].discard(name)
            if not waiting[reader]:
                heapq.heappush(ready, (rank(pending[reader]), reader))
    if len(result) < len(pending):
        done = set(available) | {m.name for m in result}
        missing = {
            m.name: sorted(set(m.inputs) - done) for m in pending.values() if m.name not in done
        }
        raise ValueError(f"metrics with inputs nobody provides: {missing}")
    return result
