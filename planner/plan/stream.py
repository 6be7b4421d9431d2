"""A sweep too large to hold in memory: the candidates evaluated a block at a time, every row
written to ``results.parquet`` (and ``results.csv`` when asked) as its block is done, and only
the leading options of each workload × model kept.

Blocks are units of work for an executor (:mod:`planner.executor`): each evaluates its rows of
the plan in closed form (:func:`planner.plan.sweep.evaluate_plan`, tensor-parallel sizes pruned
as in a whole run), writes them as one part of the Parquet dataset (and of the CSV), and returns
its eligible rows' ranking figures; this process ranks them with the leaders kept so far
(:func:`planner.plan.recommend.rank`, the plan's own rule), keeping the first ``keep`` of each
group. Memory is bounded by a few blocks in flight,
whatever the number of candidates. The leaders are then planned as a small run is
(:func:`planner.pipeline.plan` over their rows: simulation, workbook, report), and
:func:`settle` writes their planned rows over their closed-form ones in the parts that hold
them, so every file of the run gives each candidate one answer: a leader's devices and cost in
``results.parquet`` and ``results.csv`` are those the workbook and the report show.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from planner.catalog import Catalog
from planner.executor import Executor, InProcess
from planner.plan.candidates import Candidates, candidate_codes
from planner.plan.columns import ALL_KEYS, LAYOUT_DEFAULTS, PF_KEY, PLAN_KEYS, TP_KEY
from planner.plan.export import csv_text
from planner.plan.recommend import GROUP, ORDER, rank
from planner.plan.sweep import CHUNK_ROWS, Results, evaluate_plan, row_bounds
from planner.progress import Progress

#: Candidates a unit of work evaluates (a multiple of the sweep's chunk).
BLOCK_ROWS = 4 * CHUNK_ROWS

#: Options kept per workload × model for the workbook, the report and the simulation.
KEEP = 10

#: Above this many candidates a run streams its results instead of holding them.
STREAM_ABOVE = 200_000

PARQUET = "results.parquet"


class ParquetUnavailable(RuntimeError):
    """Writing results.parquet needs pyarrow (``pip install 'planner[large]'``)."""


@dataclass(frozen=True)
class Streamed:
    """What a streamed sweep leaves: its counts and the leading options' keys, in plan order."""

    candidates: int
    rows: int
    eligible: int
    leaders: pd.DataFrame

    def note(self, keep: int = KEEP) -> str:
        """What the workbook and the report hold of the sweep, in a sentence."""
        return (
            f"{self.candidates:,} candidates were evaluated ({self.rows:,} after tensor-parallel "
            f"sizes past the first that serves were dropped; {self.eligible:,} eligible); the "
            f"workbook and the report hold the leading {keep} options of each workload × model "
            f"({len(self.leaders):,} rows); every row is in {PARQUET}"
        )


_CODES: tuple[int, Candidates] | None = None


def codes_of(catalog: Catalog) -> Candidates:
    """The catalog's candidates as codes, computed once per process for the catalog last asked
    about (the run counts them, each unit reads its slice and turns only that into ids)."""
    global _CODES
    if _CODES is None or _CODES[0] != id(catalog):
        _CODES = (id(catalog), candidate_codes(catalog))
    return _CODES[1]


def _block(shared: tuple[Catalog, Path, bool], bounds: tuple[int, int]) -> tuple[int, pd.DataFrame]:
    """A unit of work: the rows ``start`` to ``stop`` − 1 of the plan, evaluated and written
    as one part of the Parquet dataset (and of the CSV, without its header); returns how many
    rows were written and the eligible ones' ranking columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    catalog, folder, with_csv = shared
    start, stop = bounds
    rows = codes_of(catalog).table(start, stop)
    results = evaluate_plan(catalog, rows, prune_parallelism=True)
    table = results.table
    part = folder / f"part-{start:012d}"
    arrow = pa.Table.from_pandas(_arrow_frame(table, text_columns(results)), preserve_index=False)
    pq.write_table(arrow, part.with_suffix(".parquet"))
    if with_csv:
        part.with_suffix(".csv").write_text(csv_text(table, header=False), encoding="utf-8")
    return len(table), table[table["eligible"].astype(bool)][RANKED]


def text_columns(results: Results) -> frozenset[str]:
    """The columns that hold text by definition (ids, the lookups and metrics of kind text),
    written as text in every part even where a block holds none (a column of a simulated
    figure's words is empty in closed form)."""
    named = [*ALL_KEYS, *(lk.name for lk in results.lookups if lk.kind == "text")]
    named += [m.name for m in results.metrics if m.kind == "text"]
    return frozenset(named) - {TP_KEY}


def blocks(codes: Candidates, rows: int = BLOCK_ROWS) -> list[tuple[int, int]]:
    """The plan's units of work: row ranges of about ``rows`` that never split one
    combination's tensor-parallel sizes (:func:`planner.plan.sweep.row_bounds` on the codes)."""
    return row_bounds(list(codes.codes[:, :4].T), len(codes), rows)


def _arrow_frame(table: pd.DataFrame, text: frozenset[str] = frozenset()) -> pd.DataFrame:
    """The table with one type per column whatever the block: text as text (a categorical's
    categories differ from block to block; a column named in ``text`` even when empty), flags
    as flags, numbers as floats, the tensor-parallel size as an integer."""
    out: dict[str, pd.Series] = {}
    for name, column in table.items():
        name = str(name)
        if name == TP_KEY:
            out[name] = column.astype(np.int64)
        elif name in text:
            out[name] = column.astype(object).where(column.notna(), None).astype("string")
        elif pd.api.types.is_bool_dtype(column):
            out[name] = column.astype(bool)
        elif pd.api.types.is_numeric_dtype(column):
            out[name] = column.astype(np.float64)
        else:
            out[name] = column.astype(object).where(column.notna(), None).astype("string")
    return pd.DataFrame(out)


def _leading(frame: pd.DataFrame, keep: int) -> pd.DataFrame:
    """The first ``keep`` eligible options of each group by the plan's ranking rule."""
    if frame.empty:
        return frame
    frame = frame.reset_index(drop=True)
    ranks = rank(frame)["rank"].to_numpy()
    return frame[(ranks >= 1) & (ranks <= keep)]


RANKED = [*dict.fromkeys([*ALL_KEYS, *GROUP, *ORDER, "eligible"])]


def stream(
    catalog: Catalog,
    parquet: Path,
    executor: Executor | None = None,
    keep: int = KEEP,
    csv: Path | None = None,
    progress: Progress | None = None,
    block_rows: int = BLOCK_ROWS,
    join_csv: bool = True,
) -> Streamed:
    """Evaluate every candidate of ``catalog`` a block at a time into the Parquet dataset
    ``parquet`` (a folder of one part per block, in plan order) and ``csv``, keeping the
    leading ``keep`` options of each workload × model. Each worker writes its own parts, so
    the workers share the writing too. Without ``join_csv`` the CSV stays in parts beside the
    Parquet ones until :func:`settle` joins them."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:  # pragma: no cover - the test extra installs it
        raise ParquetUnavailable(
            "a sweep this large writes results.parquet, which needs pyarrow: "
            "pip install 'planner[large]'"
        ) from None
    plan = codes_of(catalog)
    units = blocks(plan, block_rows)
    parquet.mkdir()
    tell = progress or (lambda stage, done, total: None)
    tell("evaluating", 0, len(plan))
    leaders = pd.DataFrame(columns=RANKED)
    rows = eligible = 0
    work = (executor or InProcess()).map(_block, (catalog, parquet, csv is not None), units)
    for (_, stop), (written, chosen) in zip(units, work, strict=True):
        rows += written
        eligible += len(chosen)
        leaders = _leading(pd.concat([leaders, chosen], ignore_index=True), keep)
        tell("evaluating", stop, len(plan))
    if csv is not None and join_csv:
        _join_csv(parquet, csv)
    return Streamed(len(plan), rows, eligible, _in_plan_order(plan, leaders))


def _join_csv(folder: Path, csv: Path) -> None:
    """The CSV parts the workers wrote, in plan order under one header, as ``csv``."""
    import pyarrow.parquet as pq

    first = min(folder.glob("part-*.parquet"))
    header = csv_text(pd.DataFrame(columns=pq.read_schema(first).names))
    with csv.open("w", encoding="utf-8", newline="") as out:
        out.write(header)
        for part in sorted(folder.glob("part-*.csv")):
            with part.open(encoding="utf-8", newline="") as piece:
                shutil.copyfileobj(piece, out)
            part.unlink()


def _in_plan_order(plan: Candidates, leaders: pd.DataFrame) -> pd.DataFrame:
    """The leaders' keys as rows of the plan, in its order: matched on the candidates' codes
    (one integer a row), so a plan of millions of rows is never turned into text."""
    if leaders.empty:
        return plan.table(0, 0)
    every = np.zeros(len(plan), dtype=np.int64)
    wanted = np.zeros(len(leaders), dtype=np.int64)
    for column, key in enumerate(("workload", "model", "precision", "hardware")):
        values = pd.Index(plan.ids[key])
        every = every * len(values) + plan.codes[:, column]
        wanted = wanted * len(values) + values.get_indexer(pd.Index(leaders[key].astype(str)))
    sizes = pd.Index(plan.sizes)
    every = every * len(sizes) + plan.codes[:, 4]
    wanted = wanted * len(sizes) + sizes.get_indexer(pd.Index(leaders[TP_KEY].astype(np.int64)))
    for column, (key, default) in enumerate(LAYOUT_DEFAULTS.items(), start=5):  # sizes, 0/1
        span = int(max(plan.codes[:, column].max(initial=0), default)) + 1
        layout = leaders[key].astype(np.int64) if key in leaders else default
        every = every * span + plan.codes[:, column]
        wanted = wanted * span + np.asarray(layout)
    devices = pd.Index(plan.ids["hardware"])
    own = leaders["hardware"].astype(str)
    other = leaders[PF_KEY].fillna("").astype(str) if PF_KEY in leaders else own
    prompts = own.where(other == "", other)
    every = every * len(devices) + plan.codes[:, 9]
    wanted = wanted * len(devices) + devices.get_indexer(pd.Index(prompts.astype(str)))
    chosen = np.flatnonzero(np.isin(every, wanted))
    return Candidates(plan.codes[chosen], plan.ids, plan.sizes).table()


def _key_index(frame: pd.DataFrame) -> pd.MultiIndex:
    """The candidates' keys as text (a tensor-parallel size ``2`` and ``2.0`` alike), with
    their layouts."""
    keys = frame[list(ALL_KEYS)].copy()
    for key, default in {TP_KEY: 0, **LAYOUT_DEFAULTS}.items():
        keys[key] = frame[key].astype(np.int64) if key in frame else default
    keys[PF_KEY] = frame[PF_KEY].fillna("") if PF_KEY in frame else ""
    return pd.MultiIndex.from_frame(keys.astype(str))


def _settle_part(text: frozenset[str], item: tuple[Path, pd.DataFrame, bool]) -> int:
    """A unit of work: the closed-form rows of one part whose candidates ``planned`` holds
    replaced by their planned rows (cast to the part's types), written through a temporary
    file renamed over the part, and over its CSV part when there is one; returns the rows
    replaced."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path, planned, with_csv = item
    part = pq.read_table(path)
    held = part.select([k for k in PLAN_KEYS if k in part.column_names]).to_pandas()
    where = _key_index(held).get_indexer(_key_index(planned))
    planned = planned[where >= 0]
    where = where[where >= 0]
    if not len(where):
        return 0
    frame = _arrow_frame(planned[part.column_names].reset_index(drop=True), text)
    fresh = pa.Table.from_pandas(frame, preserve_index=False).cast(part.schema)
    order = np.arange(part.num_rows)
    order[where] = part.num_rows + np.arange(len(where))
    settled = pa.concat_tables([part, fresh]).take(pa.array(order))
    temporary = path.with_name(f".{path.name}.settling")
    pq.write_table(settled, temporary)
    os.replace(temporary, path)
    if with_csv:
        csv_part = path.with_suffix(".csv")
        temporary = csv_part.with_name(f".{csv_part.name}.settling")
        temporary.write_text(csv_text(settled.to_pandas(), header=False), encoding="utf-8")
        os.replace(temporary, csv_part)
    return len(where)


def settle(
    parquet: Path,
    planned: Results,
    executor: Executor | None = None,
    csv: Path | None = None,
) -> int:
    """Write each planned leader's row (simulated, sized, ranked: ``planned``, the plan of
    :attr:`Streamed.leaders`) over its closed-form row in the Parquet part that holds it, and
    in its CSV part, then join the CSV parts into ``csv``: so a candidate's figures are the same
    in every file of the run. Returns the rows replaced."""
    import pyarrow.parquet as pq

    table = planned.table.reset_index(drop=True)
    items = []
    if not table.empty:
        keys = _key_index(table)
        for path in sorted(parquet.glob("part-*.parquet")):  # the parts holding a leader
            names = [k for k in PLAN_KEYS if k in pq.read_schema(path).names]
            held = _key_index(pq.read_table(path, columns=names).to_pandas())
            mine = keys.isin(held)
            if mine.any():
                items.append((path, table[mine], csv is not None))
    work = (executor or InProcess()).map(_settle_part, text_columns(planned), items)
    replaced = sum(work)
    if csv is not None:
        _join_csv(parquet, csv)
    return replaced
