"""The batch planner: cross catalogs into candidates and evaluate every metric over the table.

This layer adds no arithmetic of its own. It looks inputs up from the input tables
(:mod:`planner.plan.tables`) and calls each metric function (:mod:`planner.model.memory`,
:mod:`planner.model.latency`) once over whole columns, in dependency order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from planner.catalog import Catalog
from planner.catalog.engines import series_warning
from planner.catalog.workloads import length_summary
from planner.model.metric import Metric, MetricError, metrics, ordered
from planner.plan.candidates import candidates, skipped_pairs
from planner.plan.columns import EP_KEY, LAYOUT_DEFAULTS, PD_KEY, PF_KEY, PLAN_KEYS, PP_KEY
from planner.plan.selection import simulable
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
    #: what a reader should know of how the run was made (a streamed sweep's leading options)
    notes: list[str] = field(default_factory=list)

    @property
    def key_columns(self) -> list[str]:
        return list(PLAN_KEYS)


def engine_notes(catalog: Catalog) -> list[str]:
    """What a reader must know of the engine the plan sizes its pool by: a release planned with
    another series' constants, and a ``max_model_len`` shorter than a workload's longest request
    (the engine refuses every such request, so no option serves that workload)."""
    engine = catalog.assumptions.engine
    if engine is None:
        return []
    warning = series_warning(engine)
    notes = [] if warning is None else [warning]
    if engine.max_model_len is not None:
        for workload in catalog.workloads:
            longest = length_summary(catalog, workload, "prompt")[2] + workload.max_output_tokens
            if longest > engine.max_model_len:
                notes.append(
                    f"The engine's max_model_len ({engine.max_model_len:,} tokens) is shorter "
                    f"than workload {workload.id}'s longest request ({longest:,.0f} tokens: "
                    f"its longest prompt and promised output): the engine refuses such "
                    f"requests, so no option serves {workload.id}"
                )
    return notes


def useful_parallelism(table: pd.DataFrame, combination: Sequence[str] = tuple(KEYS)) -> pd.Series:
    """Rows to keep: for each combination (of hardware, model, precision and workload, or the
    columns named) and layout (expert-parallel size, serving layout), replica sizes up to the
    first that meets the targets (or, when none does, the first whose replica holds a
    sequence; else all). An expert-parallel layout is one size: it is always kept. A pipeline
    of several nodes is one more size of the tensor-parallel layout, its devices: tried where
    no replica within a node meets the targets (or holds a sequence)."""
    layouts = [k for k in [*LAYOUT_DEFAULTS, PF_KEY] if k in table and k != PP_KEY]
    keys = [table[k] for k in [*combination, *layouts]]
    tp = table[TP_KEY].astype(float)
    first_meeting = tp.where(table["meets_targets"].astype(bool)).groupby(keys).transform("min")
    first_fitting = tp.where(table["replica_fits"].astype(bool)).groupby(keys).transform("min")
    limit = first_meeting.fillna(first_fitting)
    return limit.isna() | (tp <= limit)


def _per_row_column(
    grid: tuple[np.ndarray, dict[str, int]], at: np.ndarray, prefixes: np.ndarray, suffix: str
) -> np.ndarray:
    """For each row, the value in sheet row ``at`` (-1: none) of the column named prefix +
    suffix, from ``grid`` (the sheet's numbers and the position of each column); NaN where
    there is none."""
    numbers, position = grid
    names, codes = np.unique(np.asarray(prefixes, dtype=object).astype(str), return_inverse=True)
    column = np.array([position.get(f"{p}{suffix}", -1) for p in names], dtype=np.int64)[codes]
    found = (at >= 0) & (column >= 0)
    values = np.full(len(at), np.nan)
    values[found] = numbers[at[found], column[found]]
    return values


class SheetCache:
    """The input sheets keyed by id (and as a grid of numbers), made once for all the chunks of
    a plan, and for the current chunk the sheet row of each plan row per sheet and key (-1:
    none)."""

    def __init__(self, inputs: InputTables) -> None:
        self.inputs = inputs
        self.keyed: dict[str, pd.DataFrame] = {}
        self.grids: dict[str, tuple[np.ndarray, dict[str, int]]] = {}
        self.rows: dict[tuple[str, str], np.ndarray] = {}

    def sheet(self, name: str) -> pd.DataFrame:
        if name not in self.keyed:
            self.keyed[name] = self.inputs.sheets[name].set_index("id")
        return self.keyed[name]

    def grid(self, name: str) -> tuple[np.ndarray, dict[str, int]]:
        """The sheet's cells as numbers (NaN where a cell is not one) and each column's
        position."""
        if name not in self.grids:
            sheet = self.sheet(name)
            numbers = [pd.to_numeric(sheet[c], errors="coerce").to_numpy(float) for c in sheet]
            grid = np.column_stack(numbers) if numbers else np.empty((len(sheet), 0))
            self.grids[name] = (grid, {str(c): i for i, c in enumerate(sheet.columns)})
        return self.grids[name]

    def at(self, sheet: str, key: str, ids: np.ndarray) -> np.ndarray:
        """The sheet row of each of ``ids`` (-1: none), matched once a chunk per sheet and
        key."""
        found = self.rows.get((sheet, key))
        if found is None:  # each distinct id matched once, then spread over the rows
            codes, distinct = pd.factorize(ids)
            known = self.sheet(sheet).index.get_indexer(pd.Index(distinct, dtype=object))
            found = self.rows[(sheet, key)] = np.append(known, -1)[codes]
        return found


def lookup_values(
    lookup: Lookup,
    plan: Mapping[str, Any] | pd.DataFrame,
    inputs: InputTables,
    cache: SheetCache | None = None,
) -> np.ndarray:
    """The values of one looked-up column for every plan row (sheet value × scale); ``plan``
    maps the key columns (and any ``column_from``) to their values. ``cache`` keeps what one plan
    (or one chunk of it) can share between lookups, so that each key is matched once."""
    cache = SheetCache(inputs) if cache is None else cache
    sheet = cache.sheet(lookup.sheet)
    ids = np.asarray(plan[lookup.key])
    if lookup.column_from is None and sheet.empty:
        return np.full(len(ids), np.nan, dtype=object if lookup.kind == "text" else float)
    at = cache.at(lookup.sheet, lookup.key, ids)
    if lookup.column_from is None:

        def column(name: str) -> np.ndarray:
            values = sheet[name].to_numpy()
            taken = values[np.maximum(at, 0)] if len(values) else np.full(len(at), np.nan)
            return np.where(at >= 0, taken, np.nan)

        values = column(lookup.column)
        if lookup.fallback_column is not None:
            values = np.where(pd.isna(values), column(lookup.fallback_column), values)
    else:
        grid = cache.grid(lookup.sheet)
        values = _per_row_column(grid, at, np.asarray(plan[lookup.column_from]), lookup.column)
        if lookup.fallback_from:
            fallback = _per_row_column(
                grid, at, np.asarray(plan[lookup.fallback_from]), lookup.column
            )
            values = np.where(np.isnan(values), fallback, values)
    if lookup.kind == "text":
        return values.astype(object)
    return values.astype(float) * lookup.scale


def evaluate(
    catalog: Catalog,
    metric_names: list[str] | None = None,
    simulated: pd.DataFrame | None = None,
    columns: list[str] | None = None,
    rows: pd.DataFrame | None = None,
) -> Results:
    """Evaluate every metric for every candidate of ``catalog``.

    ``simulated`` is the table of :func:`planner.serving.sizing.simulate_candidates` (keyed by the
    five key columns); its figures reach the plan through the ``Simulated`` input sheet.
    Tensor-parallel sizes beyond the first that serves the workload are dropped (see
    :func:`useful_parallelism`). ``columns`` keeps only those columns (besides the keys) in
    the table: every metric is still evaluated, a chunk at a time. ``rows`` evaluates only those
    candidates (rows of :func:`candidates`, such as a streamed sweep's leading options).
    """
    return evaluate_plan(
        catalog,
        candidates(catalog) if rows is None else rows,
        metric_names,
        simulated,
        columns=columns,
        prune_parallelism=metric_names is None,
    )


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
        one_stage = rows[PP_KEY] == 1
        tp = int(rows.loc[useful_parallelism(rows) & one_stage][TP_KEY].max())
    single = pd.DataFrame(
        [(hardware, model, precision, workload, tp, 1, 1, 0, 0, "")], columns=PLAN_KEYS
    )
    return evaluate_plan(catalog, single)


def _with_candidate_ids(simulated: pd.DataFrame | None) -> pd.DataFrame | None:
    if simulated is None or simulated.empty:
        return simulated
    out = simulated.copy()
    m = metrics()[CANDIDATE]
    layout = {k: np.full(len(out), v, np.int64) for k, v in LAYOUT_DEFAULTS.items()}
    layout[PF_KEY] = np.full(len(out), "", dtype=object)
    columns = (out[k].to_numpy(dtype=object) if k in out else layout[k] for k in m.inputs)
    out[CANDIDATE] = m.func(*columns)
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


CHUNK_ROWS = 1 << 14
"""Rows evaluated together: large enough that numpy's per-call cost vanishes, small enough that
a chunk's columns stay in the processor's cache and a million candidates fit in memory."""


def chunk_bounds(plan: pd.DataFrame, rows: int = CHUNK_ROWS) -> list[tuple[int, int]]:
    """Consecutive row ranges of about ``rows`` rows that never split the tensor-parallel sizes
    of one hardware × model × precision × workload (they sit together in :func:`candidates`)."""
    return row_bounds([plan[k].to_numpy() for k in KEYS], len(plan), rows)


def row_bounds(keys: Sequence[np.ndarray], n: int, rows: int) -> list[tuple[int, int]]:
    """Consecutive ranges of about ``rows`` of ``n`` rows, each cut moved on past the rows whose
    ``keys`` all equal the row before (a combination's tensor-parallel sizes stay together)."""
    cuts = [0]
    while True:
        at = cuts[-1] + rows
        while at < n and all(k[at] == k[at - 1] for k in keys):
            at += 1
        if at >= n:
            break
        cuts.append(at)
    return list(zip(cuts, [*cuts[1:], n], strict=True))


class _Column:
    """One column of the plan table, filled a chunk at a time into storage of its final size.

    Numbers and flags go into one array. Text with repeated values (statuses, ids of hardware
    or models) is kept as codes into its distinct values and becomes a categorical whose
    categories are sorted, so that sorting and grouping read as on the text; text that is mostly
    distinct (the candidate id) stays an array of strings. Which, the first chunk decides.
    """

    def __init__(self, rows: int, dtype: Any) -> None:
        self.values = np.empty(rows, dtype=dtype)
        self.codes: np.ndarray | None = None
        self.distinct: dict[Any, int] = {}

    def put(self, at: int, values: np.ndarray) -> None:
        if self.values.dtype != object:
            self.values[at : at + len(values)] = values
            return
        if self.codes is None and at > 0:  # the first chunk chose plain strings
            self.values[at : at + len(values)] = values
            return
        codes, uniques = pd.factorize(values)
        if self.codes is None:
            if not len(values) or 2 * len(uniques) > len(values):  # mostly distinct: as is
                self.values[at : at + len(values)] = values
                return
            self.codes = np.empty(len(self.values), dtype=np.int32)
        known = [self.distinct.setdefault(u, len(self.distinct)) for u in uniques]
        self.codes[at : at + len(values)] = np.array([*known, -1], dtype=np.int32)[codes]

    def finish(self, rows: int) -> Any:
        if self.codes is None:
            return self.values[:rows]
        distinct = np.array(list(self.distinct), dtype=object)
        codes = self.codes[:rows]
        if not all(isinstance(v, str) for v in distinct):  # mixed kinds: plain objects
            return np.where(codes >= 0, distinct[np.maximum(codes, 0)], np.nan)
        order = np.argsort(distinct.astype(str))
        rank = np.empty(len(order) + 1, dtype=np.int32)
        rank[order] = np.arange(len(order))
        rank[-1] = -1
        return pd.Categorical.from_codes(rank[codes], categories=pd.Index(distinct[order]))


@dataclass(frozen=True)
class _Order:
    """What a plan computes and in what order: the constants (global assumptions), the metrics
    of the keys alone, the lookups, every later metric in dependency order, the columns kept
    (``names``) and the kind of each."""

    constants: dict[str, Any]
    metrics: list[Metric]
    keys_only: list[Metric]
    lookups: list[Lookup]
    later: list[Metric]
    names: list[str]
    kinds: dict[str, str]

    @classmethod
    def of(
        cls, inputs: InputTables, metric_names: list[str] | None, columns: list[str] | None
    ) -> _Order:
        lookups = [*LOOKUPS, *SIM_LOOKUPS]
        constants = {g.name: inputs.globals[g.cell] * g.scale for g in GLOBALS}
        given = set(PLAN_KEYS) | set(constants) | {lk.name for lk in lookups}
        metrics = ordered(metric_names, given)
        keys_only = [m for m in metrics if set(m.inputs) <= set(PLAN_KEYS)]
        later = [m for m in metrics if m not in keys_only]
        names = [*PLAN_KEYS, *(m.name for m in keys_only), *(lk.name for lk in lookups)]
        names += [m.name for m in later]
        if columns is not None:
            names = [c for c in names if c in PLAN_KEYS or c in columns]
        kinds = {m.name: m.kind for m in metrics} | {lk.name: lk.kind for lk in lookups}
        return cls(constants, metrics, keys_only, lookups, later, names, kinds)

    def chunk(self, keys: dict[str, Any], inputs: InputTables, cache: SheetCache) -> dict[str, Any]:
        """Every column of one chunk of rows (``keys``: its key columns): the metrics of the
        keys, every lookup, then every later metric."""
        chunk: dict[str, Any] = dict(keys)
        scope: dict[str, Any] = {**self.constants, **chunk}
        n = len(next(iter(keys.values())))
        for m in self.keys_only:
            scope[m.name] = chunk[m.name] = evaluate_metric(m, scope, n, chunk)
        cache.rows = {}
        for lookup in self.lookups:
            scope[lookup.name] = chunk[lookup.name] = lookup_values(lookup, chunk, inputs, cache)
        for m in self.later:
            scope[m.name] = chunk[m.name] = evaluate_metric(m, scope, n, chunk)
        return chunk


def _useful_rows(chunk: Mapping[str, Any]) -> np.ndarray:
    """Which rows of a chunk :func:`useful_parallelism` keeps (a chunk never splits the
    tensor-parallel sizes of one combination)."""
    frame = pd.DataFrame(
        {
            "combination": _runs(*(chunk[k] for k in KEYS)),
            **{
                k: chunk[k]
                for k in (TP_KEY, *LAYOUT_DEFAULTS, PF_KEY, "meets_targets", "replica_fits")
            },
        }
    )
    return useful_parallelism(frame, ["combination"]).to_numpy()


def evaluate_plan(
    catalog: Catalog,
    plan: pd.DataFrame,
    metric_names: list[str] | None = None,
    simulated: pd.DataFrame | None = None,
    columns: list[str] | None = None,
    prune_parallelism: bool = False,
) -> Results:
    """Evaluate every metric for the candidates listed in ``plan`` (a table of the five keys,
    and the expert-parallel size where it has one: 1 where not).

    Order, within each chunk of rows (:func:`chunk_bounds`): the keys; metrics of the keys alone
    (the candidate id); every input looked up by id; then every other metric in dependency order.
    ``prune_parallelism`` drops the rows :func:`useful_parallelism` rejects as each chunk is
    done; ``columns`` keeps only those (and the keys).
    """
    inputs = input_tables(catalog, _with_candidate_ids(simulated))
    order = _Order.of(inputs, metric_names, columns)
    names = order.names
    keys = {k: plan[k].to_numpy() for k in ALL_KEYS}
    for layout, default in LAYOUT_DEFAULTS.items():  # a table of tensor-parallel layouts only
        keys[layout] = plan[layout].to_numpy() if layout in plan else np.full(len(plan), default)
    keys[PF_KEY] = (
        plan[PF_KEY].to_numpy(dtype=object)
        if PF_KEY in plan
        else np.full(len(plan), "", dtype=object)
    )
    bounds = chunk_bounds(plan)
    out = {
        name: _Column(len(plan), _dtype(keys.get(name), order.kinds.get(name))) for name in names
    }
    del plan  # the key columns are in ``keys``: at a million candidates, memory counts
    cache = SheetCache(inputs)
    filled = 0
    for start, stop in bounds:
        chunk = order.chunk({k: v[start:stop] for k, v in keys.items()}, inputs, cache)
        keep: Any = _useful_rows(chunk) if prune_parallelism else slice(None)
        for name in names:
            out[name].put(filled, chunk[name][keep])
        filled += int(keep.sum()) if isinstance(keep, np.ndarray) else stop - start
    table = pd.DataFrame({name: out.pop(name).finish(filled) for name in names}, copy=False)
    if filled <= CHUNK_ROWS:  # one block per type, as pandas likes it, while that costs little
        table = table.copy()
    if CANDIDATE in table:
        record_simulation_inputs(inputs, table)
    return Results(
        table=table,
        inputs=inputs,
        metrics=order.metrics,
        lookups=order.lookups,
        skipped=skipped_pairs(catalog),
        notes=engine_notes(catalog) + _start_notes(catalog, table) + _layout_notes(table),
    )


def _start_notes(catalog: Catalog, table: pd.DataFrame) -> list[str]:
    """A ``max_model_len`` no candidate's pool can hold: the engine would start on none."""
    engine = catalog.assumptions.engine
    if engine is None or engine.max_model_len is None or "engine_starts" not in table:
        return []
    if len(table) == 0 or table["engine_starts"].astype(bool).any():
        return []
    return [
        f"The engine's max_model_len ({engine.max_model_len:,} tokens) needs more KV cache than "
        f"any candidate's pool holds: the engine would start on none of them"
    ]


def _layout_notes(table: pd.DataFrame) -> list[str]:
    """Expert-parallel candidates whose all-to-all is hidden under their arithmetic, and
    disaggregated ones serving a closed loop or tasks of several requests, are planned in closed
    form: the simulation sizes none of them."""
    notes = []
    closed_form = ~simulable(table)
    none = pd.Series(False, index=table.index)
    experts = table[EP_KEY] > 1 if EP_KEY in table else none
    hidden = (
        table["expert_alltoall_hidden"].astype(bool) if "expert_alltoall_hidden" in table else none
    )
    hidden = experts & hidden
    if count := int(hidden.sum()):
        notes.append(
            f"{count:,} expert-parallel candidates are planned in closed form only: their "
            "all-to-all is hidden under their arithmetic (expert_overlap above 0), which the "
            "simulation does not step"
        )
    pools = table[PD_KEY] > 0 if PD_KEY in table else pd.Series(False, index=table.index)
    if count := int((pools & ~hidden & closed_form).sum()):
        notes.append(
            f"{count:,} disaggregated candidates are planned in closed form only: they serve a "
            "closed loop or tasks of several requests, whose next request waits for an answer "
            "through both pools, which the pools' simulation does not follow"
        )
    return notes


def _dtype(key: np.ndarray | None, kind: str | None) -> Any:
    """The type a column holds: its key's, else its metric's kind (numbers are floats)."""
    if key is not None:
        return key.dtype
    return {"bool": bool, "text": object}.get(kind or "", float)


def _runs(*columns: np.ndarray) -> np.ndarray:
    """A number for each run of consecutive rows whose ``columns`` are all equal."""
    changed = np.zeros(len(columns[0]), dtype=bool)
    for c in columns:
        changed[1:] |= c[1:] != c[:-1]
    return np.cumsum(changed)
