"""The batch planner: cross catalogs into candidates and evaluate every metric over the table.

This layer adds no arithmetic of its own. It looks inputs up from the input tables
(:mod:`planner.tables`) and calls each metric function (:mod:`planner.memory`,
:mod:`planner.latency`) once over whole columns, in dependency order.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import latency, memory  # noqa: F401  (importing registers their metrics)
from .catalog import Catalog
from .metric import REGISTRY, Metric, ordered
from .tables import GLOBALS, KEYS, LOOKUPS, InputTables, Lookup, input_tables


@dataclass(frozen=True)
class Results:
    """The evaluated plan: one row per candidate, and the inputs it was computed from."""

    table: pd.DataFrame
    inputs: InputTables
    metrics: list[Metric]
    lookups: list[Lookup]

    @property
    def key_columns(self) -> list[str]:
        return list(KEYS)


def candidates(catalog: Catalog) -> pd.DataFrame:
    """Every combination to evaluate, as a table of ids.

    With ``scenarios.yaml``, the union of each scenario's cross product (a list left out means
    every entry); without it, every hardware × model × precision × workload. Rows are ordered by
    workload, model, precision, then hardware, so that a workload's options sit together.
    """
    all_ids = {
        "hardware": [h.id for h in catalog.hardware],
        "model": [m.id for m in catalog.models],
        "precision": [p.id for p in catalog.precisions],
        "workload": [w.id for w in catalog.workloads],
    }
    scenario_lists = [
        {
            "hardware": s.hardware or all_ids["hardware"],
            "model": s.models or all_ids["model"],
            "precision": s.precisions or all_ids["precision"],
            "workload": s.workloads or all_ids["workload"],
        }
        for s in catalog.scenarios
    ] or [all_ids]
    rows: dict[tuple[str, str, str, str], None] = {}
    for lists in scenario_lists:
        for w, m, p, h in itertools.product(
            lists["workload"], lists["model"], lists["precision"], lists["hardware"]
        ):
            rows.setdefault((h, m, p, w))
    order = {k: {v: i for i, v in enumerate(all_ids[k])} for k in all_ids}
    keys = sorted(
        rows,
        key=lambda r: (
            order["workload"][r[3]],
            order["model"][r[1]],
            order["precision"][r[2]],
            order["hardware"][r[0]],
        ),
    )
    return pd.DataFrame(keys, columns=list(KEYS))


def lookup_values(lookup: Lookup, plan: pd.DataFrame, inputs: InputTables) -> np.ndarray:
    """The values of one looked-up column for every plan row (sheet value × scale)."""
    sheet = inputs.sheets[lookup.sheet].set_index("id")
    ids = plan[lookup.key].to_numpy()
    if lookup.column_from is None:
        values = sheet[lookup.column].reindex(ids).to_numpy()
    else:
        wanted = plan[lookup.column_from].to_numpy()
        values = np.array(
            [
                sheet.at[i, f"{w}{lookup.column}"] if f"{w}{lookup.column}" in sheet else np.nan
                for i, w in zip(ids, wanted, strict=True)
            ],
            dtype=float,
        )
    if lookup.kind == "text":
        return values.astype(object)
    return values.astype(float) * lookup.scale


def evaluate(catalog: Catalog, metric_names: list[str] | None = None) -> Results:
    """Evaluate every metric for every candidate of ``catalog``."""
    return evaluate_plan(catalog, candidates(catalog), metric_names)


def evaluate_subset(
    catalog: Catalog, hardware: str, model: str, precision: str, workload: str
) -> Results:
    """Evaluate the single candidate named by its four ids."""
    plan = pd.DataFrame([(hardware, model, precision, workload)], columns=list(KEYS))
    return evaluate_plan(catalog, plan)


def evaluate_plan(
    catalog: Catalog, plan: pd.DataFrame, metric_names: list[str] | None = None
) -> Results:
    """Evaluate every metric for the candidates listed in ``plan`` (a table of ids)."""
    inputs = input_tables(catalog)
    columns: dict[str, object] = {k: plan[k].to_numpy() for k in KEYS}
    for lookup in LOOKUPS:
        columns[lookup.name] = lookup_values(lookup, pd.DataFrame(columns), inputs)
    scope: dict[str, object] = dict(columns)
    for g in GLOBALS:
        scope[g.name] = inputs.globals[g.cell] * g.scale
    metrics = ordered(metric_names, set(scope))
    n = len(plan)
    with np.errstate(divide="ignore", invalid="ignore"):
        for m in metrics:
            value = m.func(*(scope[i] for i in m.inputs))
            value = np.broadcast_to(np.asarray(value), (n,)).copy()
            scope[m.name] = value
            columns[m.name] = value
    table = pd.DataFrame(columns)
    for m in metrics:
        if m.kind == "bool":
            table[m.name] = table[m.name].astype(bool)
    return Results(table=table, inputs=inputs, metrics=metrics, lookups=list(LOOKUPS))


def metric(name: str) -> Metric:
    """The registered metric called ``name``."""
    return REGISTRY[name]
