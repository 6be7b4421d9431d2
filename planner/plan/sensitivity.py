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
from typing import Any

from planner.catalog import Catalog, Hardware, Workload
from planner.plan.deployment import Line, ask
from planner.plan.sweep import evaluate


def _more_traffic(workload: Workload) -> Workload:
    if workload.concurrency is not None:
        return workload.model_copy(update={"concurrency": math.ceil(workload.concurrency * 1.1)})
    arrival = workload.arrival
    if arrival is not None and arrival.rate is not None:
        return workload.model_copy(
            update={"arrival": arrival.model_copy(update={"rate": arrival.rate * 1.1})}
        )
    return workload  # a replayed trace keeps its times


def _dearer(hardware: Hardware) -> Hardware:
    price = hardware.price
    update = {
        name: getattr(price, name) * 1.1
        for name in ("purchase_usd", "cloud_usd_per_hour")
        if getattr(price, name) is not None
    }
    return hardware.model_copy(update={"price": price.model_copy(update=update)})


def _assume(**scales: float) -> Callable[[Catalog], Catalog]:
    """Scale assumptions, and the same figures where calibration fitted them."""

    def change(catalog: Catalog) -> Catalog:
        a = catalog.assumptions
        update = {name: getattr(a, name) * factor for name, factor in scales.items()}
        fits = tuple(
            fit.model_copy(
                update={
                    name: getattr(fit, name) * factor
                    for name, factor in scales.items()
                    if getattr(fit, name, None) is not None
                }
            )
            for fit in catalog.calibration
        )
        return dataclasses.replace(
            catalog, assumptions=a.model_copy(update=update), calibration=fits
        )

    return change


#: The input changes tried, in the order a decision is said to hang on them.
CHANGES: list[tuple[str, Callable[[Catalog], Catalog]]] = [
    (
        "+10 % traffic",
        lambda c: dataclasses.replace(c, workloads=tuple(map(_more_traffic, c.workloads))),
    ),
    ("−10 % bandwidth efficiency", _assume(bandwidth_efficiency=0.9)),
    ("−10 % compute efficiency", _assume(compute_efficiency=0.9)),
    (
        "+10 % device prices",
        lambda c: dataclasses.replace(c, hardware=tuple(map(_dearer, c.hardware))),
    ),
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
        float(row["devices_needed"]),
    )


def _lines(catalog: Catalog) -> dict[str, Line]:
    return {line.workload: line for line in ask(catalog, evaluate(catalog).table).lines}


def what_changes(catalog: Catalog) -> dict[str, list[tuple[str, Line | None]]]:
    """For each workload, the input changes of :data:`CHANGES` that change its line of the ask,
    with the line they lead to (None: nothing would serve it)."""
    base = _lines(catalog)
    changed: dict[str, list[tuple[str, Line | None]]] = {w.id: [] for w in catalog.workloads}
    for label, change in CHANGES:
        moved = _lines(change(catalog))
        for workload in changed:
            before, after = base.get(workload), moved.get(workload)
            if _decision(before) != _decision(after):
                changed[workload].append((label, after))
    return changed
