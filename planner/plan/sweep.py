"""The batch planner: cross catalogs into candidates and evaluate every metric over the table.

This layer adds no arithmetic of its own. It looks inputs up from the input tables
(:mod:`planner.plan.tables`) and calls each metric function (:mod:`planner.model.memory`,
:mod:`planner.model.latency`) once over whole columns, in dependency order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from planner.catalog import Catalog, Hardware, Precision
from planner.model.metric import Metric, MetricError, metrics, ordered
from planner.plan.tables import (
    ALL_KEYS,
    CANDIDATE,
    GLOBALS,
    KEYS,
    LOOKUPS,
    SIM_LOOKUPS,
    TP_KEY,
    InputTables,
    Lookup,
    input_tables,
    record_simulation_inputs,
)


@dataclass(frozen=True)
class Results:
    """The evaluated plan: one row per candidate, and the inputs it was computed from."""

    table: pd.DataFrame
    inputs: InputTables
    metrics: list[Metric]
    lookups: list[Lookup]
    skipped: list[str]

    @property
    def key_columns(self) -> list[str]:
        return list(ALL_KEYS)


def compute_format_for(hardware: Hardware, precision: Precision) -> str | None:
    """The compute format a precision runs at on a device: its own, else its fallback, else None."""
    for fmt in (precision.compute, precision.compute_fallback):
        if fmt is not None and fmt in hardware.compute:
            return fmt
    return None


def skipped_pairs(catalog: Catalog) -> list[str]:
    """Why some combinations are not evaluated at all (no compute rate, no interconnect)."""
    notes = []
    for h in catalog.hardware:
        for p in catalog.precisions:
            if compute_format_for(h, p) is None:
                formats = p.compute + (f" or {p.compute_fallback}" if p.compute_fallback else "")
                notes.append(f"{h.id} × {p.id}: the device has no {formats} compute rate")
        if h.interconnect_bandwidth is None and any(
            t > 1 for t in catalog.assumptions.tensor_parallel_sizes
        ):
            notes.append(f"{h.id}: no interconnect_bandwidth, so no tensor parallelism was tried")
    return notes


def candidates(catalog: Catalog) -> pd.DataFrame:
    """Every combination to evaluate, as a table of ids.

    With ``scenarios.yaml``, the union of each scenario's cross product (a list left out means
    every entry); without it, every hardware × model × precision × workload. Rows are ordered by
    workload, model, precision, then hardware, so that a workload's options sit together.
    A device without the precision's compute format (or its fallback) is left out; so are
    tensor-parallel sizes above 1 on a device without an interconnect figure.
    """
    all_ids = {
        "hardware": [h.id for h in catalog.hardware],
        "model": [m.id for m in catalog.models],
        "precision": [p.id for p in catalog.precisions],
        "workload": [w.id for w in catalog.workloads],
    }
    position = {k: {v: i for i, v in enumerate(ids)} for k, ids in all_ids.items()}
    runs = np.array(
        [
            compute_format_for(h, p) is not None
            for h in catalog.hardware
            for p in catalog.precisions
        ],
        dtype=bool,
    ).reshape(len(catalog.hardware), -1)
    linked = np.array([h.interconnect_bandwidth is not None for h in catalog.hardware], bool)
    sizes = np.array(sorted(set(catalog.assumptions.tensor_parallel_sizes)), dtype=np.int64)
    chosen = [
        {
            "hardware": s.hardware or all_ids["hardware"],
            "model": s.models or all_ids["model"],
            "precision": s.precisions or all_ids["precision"],
            "workload": s.workloads or all_ids["workload"],
        }
        for s in catalog.scenarios
    ] or [all_ids]
    codes = []
    for lists in chosen:
        w, m, p, h, t = np.meshgrid(
            *(
                np.array([position[k][v] for v in lists[k]], dtype=np.int64)
                for k in ("workload", "model", "precision", "hardware")
            ),
            np.arange(len(sizes)),
            indexing="ij",
        )
        w, m, p, h, t = (a.ravel() for a in (w, m, p, h, t))
        keep = runs[h, p] & ((sizes[t] <= 1) | linked[h])
        codes.append(np.stack([w[keep], m[keep], p[keep], h[keep], t[keep]], axis=1))
    rows = np.concatenate(codes)
    if chosen != [all_ids]:  # the union of the scenarios, in catalog order, each row once
        rows = np.unique(rows, axis=0)
    ids = {k: np.array(all_ids[k], dtype=object) for k in all_ids}
    return pd.DataFrame(
        {
            "hardware": ids["hardware"][rows[:, 3]],
            "model": ids["model"][rows[:, 1]],
            "precision": ids["precision"][rows[:, 2]],
            "workload": ids["workload"][rows[:, 0]],
            TP_KEY: sizes[rows[:, 4]],
        },
        columns=ALL_KEYS,
    )


def useful_parallelism(table: pd.DataFrame) -> pd.Series:
    """Rows to keep: for each combination, tensor-parallel sizes up to the first that meets the
    targets (or, when none does, the first whose replica holds a sequence; else all)."""
    keys = [table[k] for k in KEYS]
    tp = table[TP_KEY].astype(float)
    first_meeting = tp.where(table["meets_targets"].astype(bool)).groupby(keys).transform("min")
    first_fitting = tp.where(table["replica_fits"].astype(bool)).groupby(keys).transform("min")
    limit = first_meeting.fillna(first_fitting)
    return limit.isna() | (tp <= limit)


def _per_row_column(
    sheet: pd.DataFrame, ids: np.ndarray, prefixes: np.ndarray, suffix: str
) -> np.ndarray:
    """For each row, the sheet value at (id, prefix + suffix); NaN where there is none."""
    # The sheet's columns are one level, so stacking them gives a Series (id, column) -> value.
    long = cast("pd.Series", sheet.stack(future_stack=True))
    wanted = pd.MultiIndex.from_arrays([ids, [f"{p}{suffix}" for p in prefixes]])
    return pd.to_numeric(long.reindex(wanted), errors="coerce").to_numpy(dtype=float)


def lookup_values(
    lookup: Lookup,
    plan: Mapping[str, Any] | pd.DataFrame,
    inputs: InputTables,
    rows: dict[tuple[str, str], np.ndarray] | None = None,
) -> np.ndarray:
    """The values of one looked-up column for every plan row (sheet value × scale); ``plan``
    maps the key columns (and any ``column_from``) to their values. ``rows`` keeps, per sheet and
    key, the sheet row of every plan row (-1: none), so that each key is matched once."""
    sheet = inputs.sheets[lookup.sheet].set_index("id")
    ids = np.asarray(plan[lookup.key])
    if lookup.column_from is None and sheet.empty:
        return np.full(len(ids), np.nan, dtype=object if lookup.kind == "text" else float)
    if lookup.column_from is None:
        rows = {} if rows is None else rows
        at = rows.get((lookup.sheet, lookup.key))
        if at is None:
            at = rows[(lookup.sheet, lookup.key)] = sheet.index.get_indexer(pd.Index(ids))

        def column(name: str) -> np.ndarray:
            values = sheet[name].to_numpy()
            taken = values[np.maximum(at, 0)] if len(values) else np.full(len(at), np.nan)
            return np.where(at >= 0, taken, np.nan)

        values = column(lookup.column)
        if lookup.fallback_column is not None:
            values = np.where(pd.isna(values), column(lookup.fallback_column), values)
    else:
        values = _per_row_column(sheet, ids, np.asarray(plan[lookup.column_from]), lookup.column)
        if lookup.fallback_from:
            fallback = _per_row_column(
                sheet, ids, np.asarray(plan[lookup.fallback_from]), lookup.column
            )
            values = np.where(np.isnan(values), fallback, values)
    if lookup.kind == "text":
        return values.astype(object)
    return values.astype(float) * lookup.scale


def evaluate(
    catalog: Catalog,
    metric_names: list[str] | None = None,
    simulated: pd.DataFrame | None = None,
) -> Results:
    """Evaluate every metric for every candidate of ``catalog``.

    ``simulated`` is the table of :func:`planner.serving.sizing.simulate_candidates` (keyed by the
    five key columns); its figures reach the plan through the ``Simulated`` input sheet.
    Tensor-parallel sizes beyond the first that serves the workload are dropped (see
    :func:`useful_parallelism`).
    """
    results = evaluate_plan(catalog, candidates(catalog), metric_names, simulated)
    table = results.table
    if metric_names is None and len(table):
        table = table[useful_parallelism(table)].reset_index(drop=True)
    return Results(table, results.inputs, results.metrics, results.lookups, results.skipped)


def evaluate_subset(
    catalog: Catalog, hardware: str, model: str, precision: str, workload: str
) -> Results:
    """Evaluate the single candidate named by its four ids, at the tensor-parallel size the
    sweep would keep last for it."""
    tp = min(catalog.assumptions.tensor_parallel_sizes)
    plan = candidates(catalog)
    plan = plan[
        (plan.hardware == hardware)
        & (plan.model == model)
        & (plan.precision == precision)
        & (plan.workload == workload)
    ]
    if len(plan):
        rows = evaluate_plan(catalog, plan.reset_index(drop=True)).table
        tp = int(rows.loc[useful_parallelism(rows)][TP_KEY].max())
    single = pd.DataFrame([(hardware, model, precision, workload, tp)], columns=ALL_KEYS)
    return evaluate_plan(catalog, single)


def _with_candidate_ids(simulated: pd.DataFrame | None) -> pd.DataFrame | None:
    if simulated is None or simulated.empty:
        return simulated
    out = simulated.copy()
    m = metrics()[CANDIDATE]
    out[CANDIDATE] = m.func(*(out[k].to_numpy(dtype=object) for k in m.inputs))
    return out


def evaluate_metric(
    m: Metric, scope: Mapping[str, Any], n: int, keys: Mapping[str, Any] | None = None
) -> np.ndarray:
    """``m`` over whole columns (``scope`` maps names to columns or numbers), as ``n`` values.

    A division by zero or an undefined result (0/0, ∞ − ∞) raises :class:`MetricError` naming
    the metric and the first candidate concerned: a metric that means to skip such rows says so
    with ``where`` around its divisor, so no such value is ever silently carried on.
    """
    args = [scope[i] for i in m.inputs]
    try:
        with np.errstate(divide="raise", invalid="raise"):
            value = m.func(*args)
    except FloatingPointError as exc:
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.broadcast_to(np.asarray(m.func(*args), dtype=float), (n,))
        finite_inputs = np.logical_and.reduce(
            [
                np.isfinite(np.broadcast_to(np.asarray(a, dtype=float), (n,)))
                for a in args
                if np.asarray(a).dtype.kind in "fiub"
            ]
            or [np.ones(n, bool)]
        )
        bad = np.flatnonzero(~np.isfinite(values) & finite_inputs)
        where = ""
        if len(bad) and keys is not None and CANDIDATE in keys:
            where = f" (first: candidate {np.asarray(keys[CANDIDATE])[bad[0]]})"
        elif len(bad):
            where = f" (first: row {bad[0] + 1})"
        raise MetricError(
            f"metric {m.name} = {m.formula_text()}: {exc}{where}; its formula must cover "
            "these inputs"
        ) from None
    return np.broadcast_to(np.asarray(value), (n,)).copy()


def evaluate_plan(
    catalog: Catalog,
    plan: pd.DataFrame,
    metric_names: list[str] | None = None,
    simulated: pd.DataFrame | None = None,
) -> Results:
    """Evaluate every metric for the candidates listed in ``plan`` (a table of the five keys).

    Order: the keys; metrics of the keys alone (the candidate id); every input looked up by
    id; then every other metric in dependency order.
    """
    inputs = input_tables(catalog, _with_candidate_ids(simulated))
    lookups = [*LOOKUPS, *SIM_LOOKUPS]
    n = len(plan)
    columns: dict[str, object] = {k: plan[k].to_numpy() for k in ALL_KEYS}
    scope: dict[str, object] = dict(columns)
    for g in GLOBALS:
        scope[g.name] = inputs.globals[g.cell] * g.scale
    metrics = ordered(metric_names, set(scope) | {lk.name for lk in lookups})

    def compute(m: Metric) -> None:
        scope[m.name] = columns[m.name] = evaluate_metric(m, scope, n, columns)

    keys_only = [m for m in metrics if set(m.inputs) <= set(ALL_KEYS)]
    for m in keys_only:
        compute(m)
    rows: dict[tuple[str, str], np.ndarray] = {}
    for lookup in lookups:
        scope[lookup.name] = columns[lookup.name] = lookup_values(lookup, columns, inputs, rows)
    for m in metrics:
        if m not in keys_only:
            compute(m)
    table = pd.DataFrame(columns)
    for m in metrics:
        if m.kind == "bool":
            table[m.name] = table[m.name].astype(bool)
    if CANDIDATE in table:
        record_simulation_inputs(inputs, table)
    return Results(
        table=table,
        inputs=inputs,
        metrics=metrics,
        lookups=lookups,
        skipped=skipped_pairs(catalog),
    )
