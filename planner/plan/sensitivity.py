"""What would change the decision: the plan re-evaluated with one input moved by 10 %.

A signer asks how fragile a recommendation is. For each of a few plausible errors in the inputs
(more traffic than forecast, less of the datasheet bandwidth or compute achieved, dearer devices)
the closed form is evaluated again and each workload's line of the ask (:mod:`deployment`) is
compared with the unmoved one: a different model, device, precision, parallelism, device count
or advice is a change. The comparison is in closed form on both sides (the simulated figures
were computed at the unmoved inputs), so it says which input the decision hangs on, not by how
much latency moves.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from planner.catalog import Catalog, Hardware, Workload
from planner.catalog.engines import DEFAULT_ENGINE, caches_prefixes
from planner.plan.columns import prefill_parallel_of
from planner.plan.deployment import Ask, Line, ask
from planner.plan.sweep import evaluate


def _more_traffic(workload: Workload, factor: float = 1.1) -> Workload:
    """The workload with its users (rounded up) or its arrival rate × ``factor``."""
    if workload.concurrency is not None:
        users = max(math.ceil(workload.concurrency * factor - 1e-9), 1)
        return workload.model_copy(update={"concurrency": users})
    arrival = workload.arrival
    if arrival is not None and arrival.rate is not None:
        return workload.model_copy(
            update={"arrival": arrival.model_copy(update={"rate": arrival.rate * factor})}
        )
    return workload  # a replayed trace keeps its times


def _dearer(hardware: Hardware, factor: float = 1.1) -> Hardware:
    """The hardware with its purchase and rental prices × ``factor``."""
    price = hardware.price
    update = {
        name: getattr(price, name) * factor
        for name in ("purchase_usd", "cloud_usd_per_hour")
        if getattr(price, name) is not None
    }
    return hardware.model_copy(update={"price": price.model_copy(update=update)})


def _efficiency(name: str, factor: float) -> Callable[[Catalog], Catalog]:
    """Scale an efficiency, assumed and fitted, never past 1 (the datasheet)."""

    def change(catalog: Catalog) -> Catalog:
        a = catalog.assumptions
        update = {name: min(getattr(a, name) * factor, 1.0)}
        fits = tuple(
            fit.model_copy(update={name: min(getattr(fit, name) * factor, 1.0)})
            if getattr(fit, name, None) is not None
            else fit
            for fit in catalog.calibration
        )
        return dataclasses.replace(
            catalog, assumptions=a.model_copy(update=update), calibration=fits
        )

    return change


def _traffic(factor: float) -> Callable[[Catalog], Catalog]:
    return lambda c: dataclasses.replace(
        c, workloads=tuple(_more_traffic(w, factor) for w in c.workloads)
    )


def _prices(factor: float) -> Callable[[Catalog], Catalog]:
    return lambda c: dataclasses.replace(c, hardware=tuple(_dearer(h, factor) for h in c.hardware))


def caching_applies(catalog: Catalog, workload: Workload) -> bool:
    """Whether the plan counts prefix caching for ``workload``: the engine keeps prefixes and
    the workload says what its prompts share."""
    prefix = workload.prefix
    if prefix is None or not caches_prefixes(catalog.assumptions.engine):
        return False
    return prefix.tokens > 0 or prefix.measured_hit_ratio is not None


def without_prefix_caching(catalog: Catalog) -> Catalog:
    """The catalog with the engine's prefix caching off (the default engine's profile where the
    assumptions name none), every other input as given."""
    engine = catalog.assumptions.engine or DEFAULT_ENGINE
    off = engine.model_copy(update={"prefix_caching": False})
    return dataclasses.replace(
        catalog, assumptions=catalog.assumptions.model_copy(update={"engine": off})
    )


#: The uncertain inputs, each as the change that scales it by a factor.
INPUTS: list[tuple[str, Callable[[float], Callable[[Catalog], Catalog]]]] = [
    ("traffic", _traffic),
    ("bandwidth efficiency", lambda f: _efficiency("bandwidth_efficiency", f)),
    ("compute efficiency", lambda f: _efficiency("compute_efficiency", f)),
    ("device prices", _prices),
]

#: The input changes tried, in the order a decision is said to hang on them.
CHANGES: list[tuple[str, Callable[[Catalog], Catalog]]] = [
    ("+10 % traffic", _traffic(1.1)),
    ("−10 % bandwidth efficiency", _efficiency("bandwidth_efficiency", 0.9)),
    ("−10 % compute efficiency", _efficiency("compute_efficiency", 0.9)),
    ("+10 % device prices", _prices(1.1)),
]


def _decision(line: Line | None) -> tuple[Any, ...] | None:
    if line is None:
        return None
    row = line.row
    return (
        line.model,
        line.advice,
        row["hardware"],
        row["precision"],
        int(row["tensor_parallel"]),
        prefill_parallel_of(row),
        float(row["devices_needed"]),
    )


def closed_ask(catalog: Catalog, rows: pd.DataFrame | None = None) -> Ask:
    """The ask of the plan evaluated in closed form (over ``rows`` where given)."""
    return ask(catalog, evaluate(catalog, rows=rows).table)


def lines_of(
    catalog: Catalog, rows: pd.DataFrame | None = None, base: Ask | None = None
) -> dict[str, Line]:
    """Each workload's line of the ask, by workload, the plan evaluated in closed form (over
    ``rows`` where given); of ``base``, that ask of the same catalog and rows, where the
    caller has it."""
    found = base if base is not None else closed_ask(catalog, rows)
    return {line.workload: line for line in found.lines}


def what_changes(
    catalog: Catalog, rows: pd.DataFrame | None = None, base: Ask | None = None
) -> dict[str, list[tuple[str, Line | None]]]:
    """For each workload, the input changes of :data:`CHANGES` that change its line of the ask,
    with the line they lead to (None: nothing would serve it); ``rows`` (candidates, as
    :func:`planner.plan.sweep.evaluate` takes them) plans only those on every side; ``base``:
    :func:`closed_ask` of the unmoved catalog and rows, where the caller has it."""
    base_lines = lines_of(catalog, rows, base)
    changed: dict[str, list[tuple[str, Line | None]]] = {w.id: [] for w in catalog.workloads}
    for label, change in CHANGES:
        moved = lines_of(change(catalog), rows)
        for workload in changed:
            before, after = base_lines.get(workload), moved.get(workload)
            if _decision(before) != _decision(after):
                changed[workload].append((label, after))
    return changed


#: How far each uncertain input is moved, down and up, for the tornado.
SWING = 0.2


@dataclass(frozen=True)
class Bar:
    """One input of the tornado: the ask's cost over the period and its devices with the input
    lowered and raised by the swing, and which of the two changes a line of the ask."""

    label: str
    low_usd: float
    high_usd: float
    low_devices: float
    high_devices: float
    flips: tuple[str, ...]  # "lowered", "raised"

    @property
    def swing_usd(self) -> float:
        return abs(self.high_usd - self.low_usd)


def _ask_totals(
    catalog: Catalog, rows: pd.DataFrame | None = None, base: Ask | None = None
) -> tuple[float, float, dict[str, Any]]:
    plan = base if base is not None else closed_ask(catalog, rows)
    decisions = {line.workload: _decision(line) for line in plan.lines}
    return plan.total("period_usd"), plan.total("devices"), decisions


def tornado(
    catalog: Catalog,
    swing: float = 0.2,
    rows: pd.DataFrame | None = None,
    base: Ask | None = None,
) -> tuple[float, float, list[Bar]]:
    """The ask's cost over the period and devices at the inputs as given, and per uncertain
    input (:data:`INPUTS`) the same with that input × (1 − swing) and × (1 + swing), widest
    first. In closed form on every side, like :func:`what_changes`, over ``rows`` where given
    (``base``: :func:`closed_ask` of the inputs as given, where the caller has it)."""
    base_usd, base_devices, given = _ask_totals(catalog, rows, base)
    bars = []
    for label, scaled in INPUTS:
        low_usd, low_devices, low = _ask_totals(scaled(1 - swing)(catalog), rows)
        high_usd, high_devices, high = _ask_totals(scaled(1 + swing)(catalog), rows)
        flips = tuple(
            name for name, moved in (("lowered", low), ("raised", high)) if moved != given
        )
        bars.append(Bar(label, low_usd, high_usd, low_devices, high_devices, flips))
    return base_usd, base_devices, sorted(bars, key=lambda b: -b.swing_usd)
